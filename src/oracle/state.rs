//! `state`: chaining with `previous_response_id`, stateless requests, and the per-request
//! configuration (instructions and tools are never inherited).

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks;
use super::facts::{Facts, conversation_of};
use super::verdict::CheckResult;
use crate::scenario::{StateMode, tool_names};
use crate::tools::json_equal;
use crate::wire::replay::message_text;
use crate::wire::request::{item_id, item_type};

/// The `state` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if f.requests.is_empty() {
        return Vec::new();
    }
    let mut out = vec![config_resent(f)];
    match f.state {
        StateMode::PreviousResponseId if f.requests.len() > 1 => {
            out.push(chained(f));
            out.push(no_resend(f));
        }
        StateMode::Stateless => {
            out.push(store_false(f));
            out.push(include_encrypted(f));
            if f.requests.len() > 1 {
                out.push(input_replayed(f));
            }
        }
        StateMode::Conversation => {
            out.push(conversation(f));
            if f.requests.len() > 1 {
                out.push(no_resend(f));
            }
        }
        StateMode::PreviousResponseId => {}
    }
    out
}

fn config_resent(f: &Facts) -> CheckResult {
    let task = &f.scenario.task;
    let expected: BTreeSet<String> = tool_names(f.scenario).into_iter().collect();
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        let label = Facts::request_label(position);
        if let Some(instructions) = &task.instructions {
            problems.extend(instructions_problem(f, position, instructions));
        }
        let sent: BTreeSet<String> = request
            .body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<&String> = expected.difference(&sent).collect();
        if !missing.is_empty() {
            problems.push(format!(
                "{label} does not send the tool(s) {}: tools are not inherited, every request must carry the task's tools",
                missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        let extra: Vec<&String> = sent.difference(&expected).collect();
        if !extra.is_empty() {
            problems.push(format!(
                "{label} offers the model tool(s) the task does not: {} (the task's tools are the whole registry)",
                extra.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        for tool in request
            .body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = tool["name"].as_str().unwrap_or_default();
            if let Some(registered) = f.registry.get(name)
                && !json_equal(&tool["parameters"], &registered.definition["parameters"])
            {
                problems.push(format!("{label} sends tool '{name}' with parameters that differ from the task's definition"));
            }
        }
        match request.body.get("model").and_then(Value::as_str) {
            Some(model) if model == task.model => {}
            other => problems.push(format!(
                "{label} asks for model {}: the task's model is '{}'",
                other.map_or("(none)".to_owned(), |m| format!("'{m}'")),
                task.model
            )),
        }
    }
    checks::STATE_CONFIG_RESENT.judge(
        problems,
        format!(
            "all {} request(s) carry the task's model, instructions and tools",
            f.requests.len()
        ),
    )
}

/// Whether request `position` gives the model the task's instructions: as the
/// `instructions` parameter, or as a system or developer message in the context the model
/// sees (its input plus what its chain or conversation carries). The parameter is never
/// inherited; an input item is.
fn instructions_problem(f: &Facts, position: usize, expected: &str) -> Option<String> {
    let label = Facts::request_label(position);
    let body = &f.requests[position].body;
    if let Some(sent) = body.get("instructions").and_then(Value::as_str) {
        return (sent.trim() != expected.trim()).then(|| {
            format!(
                "{label} sends `instructions` that differ from the task's: {:?}",
                crate::transcript::clip(sent, 80)
            )
        });
    }
    let carried: Vec<(String, String)> = f
        .context_of(position)
        .iter()
        .filter(|item| item_type(item) == "message")
        .filter_map(|item| {
            let role = item.get("role").and_then(Value::as_str)?;
            matches!(role, "system" | "developer")
                .then(|| Some((role.to_owned(), message_text(item)?)))?
        })
        .collect();
    if carried
        .iter()
        .any(|(_, text)| text.trim() == expected.trim())
    {
        return None;
    }
    if let Some((role, text)) = carried.first() {
        return Some(format!(
            "{label} has no `instructions`, and the {role} message in its context differs from the task's instructions: {:?}",
            crate::transcript::clip(text, 80)
        ));
    }
    let why = if position == 0 {
        String::new()
    } else if body
        .get("previous_response_id")
        .is_some_and(|v| !v.is_null())
    {
        ": the `instructions` parameter is not inherited through previous_response_id, so each request must send it again (or carry the instructions as a system or developer input item, which the chain keeps)".to_owned()
    } else if conversation_of(body).is_some() {
        ": the `instructions` parameter is not inherited through a conversation, so each request must send it again".to_owned()
    } else {
        ": a request without previous_response_id or a conversation inherits nothing, so it must carry them itself".to_owned()
    };
    Some(format!(
        "{label} gives the model the task's instructions neither as `instructions` nor as a system or developer message in its context{why}"
    ))
}

fn chained(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    for position in 1..f.requests.len() {
        let Some(latest) = f.latest_served_before(position) else {
            continue;
        };
        let label = Facts::request_label(position);
        match f.requests[position]
            .body
            .get("previous_response_id")
            .and_then(Value::as_str)
        {
            None => problems.push(format!(
                "{label} has no previous_response_id: expected {}, the response it continues",
                latest.id
            )),
            Some(id) if id == latest.id => {}
            Some(id) => {
                let which = f
                    .served
                    .iter()
                    .position(|s| s.id == id)
                    .map(|i| format!(" (response {}, a stale one)", i + 1))
                    .unwrap_or_default();
                problems.push(format!(
                    "{label} chains to {id}{which}: expected {}, the latest response",
                    latest.id
                ));
            }
        }
    }
    checks::STATE_CHAINED.judge(
        problems,
        "every follow-up request chains to the latest response",
    )
}

fn no_resend(f: &Facts) -> CheckResult {
    let task_input: Vec<Value> = match &f.scenario.task.input {
        Value::String(text) => vec![serde_json::json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    let mut problems = Vec::new();
    for position in 1..f.requests.len() {
        let request = f.requests[position];
        if request.body.get("previous_response_id").is_none()
            && request.body.get("conversation").is_none()
        {
            continue;
        }
        let stored: BTreeSet<&str> = f
            .served
            .iter()
            .filter(|s| s.request < position)
            .flat_map(|s| s.output.iter().filter_map(item_id))
            .collect();
        for (index, item) in Facts::input_of(request).iter().enumerate() {
            let repeated_output = item_id(item).is_some_and(|id| stored.contains(id));
            if repeated_output || task_input.contains(item) {
                problems.push(format!(
                    "{}: input[{index}] resends an item the server already holds ({}): with previous_response_id or a conversation send only the new items",
                    Facts::request_label(position),
                    item_id(item).unwrap_or("the user's first message")
                ));
            }
        }
    }
    checks::STATE_NO_RESEND.judge(problems, "chained requests send only new items")
}

fn store_false(f: &Facts) -> CheckResult {
    let problems = f.requests_lacking(
        |body| body.get("store") == Some(&Value::Bool(false)),
        "does not send `store: false`: in stateless mode nothing may be stored",
    );
    checks::STATE_STORE_FALSE.judge(problems, "every request sends store: false")
}

fn include_encrypted(f: &Facts) -> CheckResult {
    let problems = f.requests_lacking(
        |body| {
            body.get("include")
                .and_then(Value::as_array)
                .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"))
        },
        "does not ask for `include: [\"reasoning.encrypted_content\"]`: without it a store:false response may carry no reasoning to replay",
    );
    checks::STATE_INCLUDE_ENCRYPTED.judge(
        problems,
        "every request includes reasoning.encrypted_content",
    )
}

fn conversation(f: &Facts) -> CheckResult {
    let first = f.requests.first().and_then(|r| conversation_of(&r.body));
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        let label = Facts::request_label(position);
        match conversation_of(&request.body) {
            None => problems.push(format!("{label} carries no `conversation`: in conversation mode every request names the conversation")),
            Some(id) if Some(&id) != first.as_ref() => {
                problems.push(format!("{label} names conversation {id}, not {} like the first request", first.as_deref().unwrap_or("?")))
            }
            Some(_) => {}
        }
        if request
            .body
            .get("previous_response_id")
            .is_some_and(|v| !v.is_null())
        {
            problems.push(format!(
                "{label} sends previous_response_id beside a conversation"
            ));
        }
    }
    checks::STATE_CONVERSATION.judge(problems, "every request continues the same conversation")
}

/// The text of a user message item, whatever its form (string content or text parts).
fn user_text(item: &Value) -> Option<String> {
    if item.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    match item.get("content") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .concat(),
        ),
        _ => None,
    }
}

/// Stateless: every request carries the task's own input again; without it the model
/// answers a conversation that never asked anything.
fn input_replayed(f: &Facts) -> CheckResult {
    let task_input = match &f.scenario.task.input {
        Value::String(text) => vec![serde_json::json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    let expected: Vec<String> = task_input.iter().filter_map(user_text).collect();
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate().skip(1) {
        let sent: Vec<String> = Facts::input_of(request)
            .iter()
            .filter_map(user_text)
            .collect();
        for text in expected.iter().filter(|t| !sent.contains(t)) {
            problems.push(format!(
                "{} does not replay the task's user input {:?}: in stateless mode every request carries the whole conversation",
                Facts::request_label(position),
                crate::transcript::clip(text, 60)
            ));
        }
    }
    checks::STATE_INPUT_REPLAYED.judge(problems, "every request replays the task's input")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{self, Conversation, PreviousResponseId, Stateless};

    const CASE: &str = "state/01-instructions-every-request";

    /// Plays `CASE` correctly except that `change` rewrites each request after the first.
    fn run_with(state: StateMode, change: impl Fn(&mut serde_json::Value)) -> Run {
        let run = Run::case(CASE, state);
        let mut body = run.first_body();
        loop {
            let response = run.create(&body);
            if calls(&response).is_empty() {
                return run;
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
            change(&mut body);
        }
    }

    #[test]
    fn config_resent_passes_a_correct_run_in_every_mode() {
        for state in [PreviousResponseId, Stateless] {
            let run = Run::case(CASE, state);
            run.correct();
            assert_passes(&run.judge_completed(), "state/config-resent");
        }
    }

    #[test]
    fn config_resent_fails_instructions_sent_once() {
        let judgement = run_with(PreviousResponseId, |body| {
            body.as_object_mut().unwrap().remove("instructions");
        })
        .judge_completed();
        assert_fails(
            &judgement,
            "state/config-resent",
            "request 2 gives the model the task's instructions neither as `instructions` nor as a system or developer message in its context: the `instructions` parameter is not inherited through previous_response_id",
        );
    }

    #[test]
    fn config_resent_accepts_instructions_as_a_system_message_the_chain_carries() {
        let run = Run::case(CASE, PreviousResponseId);
        let mut body = run.first_body();
        let instructions = body
            .as_object_mut()
            .unwrap()
            .remove("instructions")
            .unwrap();
        let mut input = vec![json!({"role": "system", "content": instructions})];
        input.extend(body["input"].as_array().unwrap().iter().cloned());
        body["input"] = json!(input);
        loop {
            let response = run.create(&body);
            if calls(&response).is_empty() {
                break;
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
        assert_passes(&run.judge_completed(), "state/config-resent");
    }

    #[test]
    fn config_resent_fails_a_system_message_with_other_words() {
        let run = Run::case(CASE, Stateless);
        let mut body = run.first_body();
        body.as_object_mut().unwrap().remove("instructions");
        let mut input = vec![json!({"role": "developer", "content": "Be helpful."})];
        input.extend(body["input"].as_array().unwrap().iter().cloned());
        body["input"] = json!(input);
        run.create(&body);
        assert_fails(
            &run.judge_failed("api_error"),
            "state/config-resent",
            "the developer message in its context differs from the task's instructions",
        );
    }

    #[test]
    fn config_resent_fails_a_missing_tool_and_another_model() {
        let judgement = run_with(Stateless, |body| {
            body["tools"] = json!([]);
            body["model"] = json!("gpt-4o");
        })
        .judge_completed();
        assert_fails(
            &judgement,
            "state/config-resent",
            "does not send the tool(s) convert_currency, get_weather",
        );
        assert_fails(
            &judgement,
            "state/config-resent",
            "asks for model 'gpt-4o': the task's model is 'gpt-5'",
        );
    }

    #[test]
    fn a_single_request_gives_chaining_nothing_to_judge() {
        let run = Run::answer_only(PreviousResponseId);
        run.correct();
        let judgement = run.judge_completed();
        assert_passes(&judgement, "state/config-resent");
        assert_not_judged(&judgement, "state/chained");
        assert_not_judged(&judgement, "state/no-resend");
    }

    #[test]
    fn chained_passes_and_fails_a_stale_previous_response_id() {
        let run = Run::case(CASE, PreviousResponseId);
        run.correct();
        assert_passes(&run.judge_completed(), "state/chained");

        let run = Run::case(CASE, PreviousResponseId);
        let first = run.first_body();
        let one = run.create(&first);
        let second = run.next_body(&first, &one, &run.execute(&one));
        let two = run.create(&second);
        let mut third = run.next_body(&second, &two, &run.execute(&two));
        third["previous_response_id"] = one["id"].clone();
        run.create(&third);
        assert_fails(
            &run.judge_failed("api_error"),
            "state/chained",
            "request 3 chains to",
        );
    }

    #[test]
    fn no_resend_fails_the_history_resent_beside_previous_response_id() {
        let run = Run::case(CASE, PreviousResponseId);
        run.correct();
        assert_passes(&run.judge_completed(), "state/no-resend");

        let run = Run::case(CASE, PreviousResponseId);
        let first = run.first_body();
        let one = run.create(&first);
        let mut second = run.next_body(&first, &one, &run.execute(&one));
        let mut input = first["input"].as_array().unwrap().clone();
        input.extend(second["input"].as_array().unwrap().iter().cloned());
        second["input"] = json!(input);
        run.create(&second);
        assert_fails(
            &run.judge_failed("api_error"),
            "state/no-resend",
            "input[0] resends an item the server already holds (the user's first message)",
        );
    }

    #[test]
    fn store_false_and_include_encrypted_fail_when_left_out() {
        let run = Run::case(CASE, Stateless);
        run.correct();
        let judgement = run.judge_completed();
        assert_passes(&judgement, "state/store-false");
        assert_passes(&judgement, "state/include-encrypted");

        let run = Run::case(CASE, Stateless);
        let mut first = run.first_body();
        first["store"] = json!(true);
        first.as_object_mut().unwrap().remove("include");
        run.create(&first);
        let judgement = run.judge_failed("api_error");
        assert_fails(
            &judgement,
            "state/store-false",
            "request 1 does not send `store: false`",
        );
        assert_fails(
            &judgement,
            "state/include-encrypted",
            "request 1 does not ask for",
        );
    }

    #[test]
    fn input_replayed_fails_a_stateless_request_without_the_user_input() {
        let judgement = run_with(Stateless, |body| {
            let input: Vec<_> = body["input"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|item| item["role"] != "user")
                .cloned()
                .collect();
            body["input"] = json!(input);
        })
        .judge_completed();
        assert_fails(
            &judgement,
            "state/input-replayed",
            "request 2 does not replay the task's user input",
        );
    }

    #[test]
    fn conversation_passes_and_fails_a_chain_instead_of_the_conversation() {
        let run = Run::case("state/02-conversation-mode", Conversation);
        run.correct();
        assert_passes(&run.judge_completed(), "state/conversation");

        let run = Run::case("state/02-conversation-mode", Conversation);
        let first = run.first_body();
        let one = run.create(&first);
        let mut second = run.next_body(&first, &one, &run.execute(&one));
        second.as_object_mut().unwrap().remove("conversation");
        second["previous_response_id"] = one["id"].clone();
        run.create(&second);
        assert_fails(
            &run.judge_failed("api_error"),
            "state/conversation",
            "request 2 carries no `conversation`",
        );
    }
}
