//! `state`: chaining with `previous_response_id`, stateless and replayed requests, and the per-request
//! configuration (instructions and tools are never inherited).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::checks;
use super::facts::{Facts, conversation_of};
use super::verdict::CheckResult;
use crate::json_compare::json_equal;
use crate::scenario::fixtures;
use crate::scenario::{StateMode, ToolRef};
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
            out.extend(include_encrypted(f));
            if f.requests.len() > 1 {
                out.push(input_replayed(f));
            }
        }
        // Storage is left on: `store: false` and `include` are not asked, the history is.
        StateMode::Replay => {
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
    let expected = task_tools(f);
    let mut problems = Vec::new();
    let mut changed: BTreeMap<(String, String, String, String), Vec<usize>> = BTreeMap::new();
    for (position, request) in f.requests.iter().enumerate() {
        let label = f.request_label(position);
        if let Some(instructions) = &task.instructions {
            problems.extend(instructions_problem(f, position, instructions));
        }
        let sent: Vec<&Value> = request
            .body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let missing: Vec<String> = expected
            .iter()
            .filter(|want| !sent.iter().any(|tool| tool_key(tool) == tool_key(want)))
            .map(tool_key)
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "{label} does not send the tool(s) {}: tools are not inherited, every request must carry the task's tools",
                missing.join(", ")
            ));
        }
        // What the model may call: the definitions, narrowed by `allowed_tools` when the
        // request restricts them that way; a definition outside it is offered to no one.
        let allowed = allowed_tools(&request.body);
        let callable = |key: &str| allowed.as_ref().is_none_or(|allowed| allowed.contains(key));
        let restricted_by = if allowed.is_some() {
            " (allowed by `tool_choice.allowed_tools`)"
        } else {
            ""
        };
        let extra: BTreeSet<String> = sent
            .iter()
            .map(|tool| tool_key(tool))
            .filter(|key| callable(key))
            .filter(|key| !expected.iter().any(|want| &tool_key(want) == key))
            .collect();
        if !extra.is_empty() {
            problems.push(format!(
                "{label} offers the model tool(s) the task does not: {}{restricted_by} (the task's tools are the whole registry)",
                extra.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        let withheld: Vec<String> = expected
            .iter()
            .map(tool_key)
            .filter(|key| !missing.contains(key) && !callable(key))
            .collect();
        if !withheld.is_empty() {
            problems.push(format!(
                "{label} sends the tool(s) {} but leaves them out of `tool_choice.allowed_tools`, so the model cannot call them: every request must let the model call the task's tools",
                withheld.join(", ")
            ));
        }
        for tool in &sent {
            let key = tool_key(tool);
            let Some(want) = expected.iter().find(|want| tool_key(want) == key) else {
                continue;
            };
            for (field, theirs, ours) in definition_differences(want, tool) {
                let at = changed
                    .entry((key.clone(), field, theirs, ours))
                    .or_default();
                at.push(position + 1);
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
    // One line per difference, however many requests repeat it.
    for ((key, field, theirs, ours), at) in changed {
        let which = match at.as_slice() {
            [one] => format!("request {one}"),
            [first @ .., last] => format!(
                "requests {} and {last}",
                first
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            [] => continue,
        };
        problems.push(format!(
            "{which} send{} tool '{key}' with `{field}` {theirs}: the task's definition has {ours}",
            if at.len() == 1 { "s" } else { "" }
        ));
    }
    checks::STATE_CONFIG_RESENT.judge(
        problems,
        format!(
            "all {} request(s) carry the task's model, instructions and tool definitions",
            f.requests.len()
        ),
    )
}

/// The task's tool definitions as the task gives them to the controller (fixture names
/// resolved), hosted tools included.
fn task_tools(f: &Facts) -> Vec<Value> {
    f.scenario
        .task
        .tools
        .iter()
        .map(|tool| match tool {
            ToolRef::Fixture(name) => fixtures::definition(name).unwrap_or(Value::Null),
            ToolRef::Inline(definition) => definition.clone(),
        })
        .collect()
}

/// The tools a request's `tool_choice` of type `allowed_tools` lets the model call (by
/// [`tool_key`]), whatever its `mode`; `None` when `tool_choice` does not restrict the
/// tool list that way (the API reference, "Allowed tools").
fn allowed_tools(body: &Value) -> Option<BTreeSet<String>> {
    let choice = body.get("tool_choice")?;
    if choice.get("type").and_then(Value::as_str) != Some("allowed_tools") {
        return None;
    }
    Some(
        choice
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(tool_key)
            .collect(),
    )
}

/// What identifies a tool in a request: a function's name, a hosted tool's type (a
/// hosted tool such as `programmatic_tool_calling` has no name).
fn tool_key(tool: &Value) -> String {
    tool.get("name")
        .or_else(|| tool.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)")
        .to_owned()
}

/// The value a tool definition field means when it is left out or null, where the API
/// documents one. For a function tool (the API reference, "Function tool"): an omitted
/// `strict` is strict mode, an omitted `allowed_callers` allows direct calls only, and the
/// optional switches are off; an absent, null or empty `description` all mean "no
/// description". For hosted tools, the defaults their SDK types document (Python
/// `types/responses/web_search_tool.py`, `tool.py` `ImageGeneration`), so a framework
/// that spells them out sends the same tool.
fn field_default(tool_type: &str, field: &str) -> Option<Value> {
    let text = |value: &str| Some(Value::String(value.to_owned()));
    match (tool_type, field) {
        (_, "strict") => Some(Value::Bool(true)),
        (_, "allowed_callers") => Some(serde_json::json!(["direct"])),
        (_, "defer_loading" | "async") => Some(Value::Bool(false)),
        (_, "description") => Some(Value::String(String::new())),
        (kind, "search_context_size") if kind.starts_with("web_search") => text("medium"),
        ("image_generation", "action" | "background" | "moderation" | "quality" | "size") => {
            text("auto")
        }
        ("image_generation", "output_compression") => Some(Value::from(100)),
        ("image_generation", "output_format") => text("png"),
        ("image_generation", "partial_images") => Some(Value::from(0)),
        _ => None,
    }
}

/// A definition field that says how the result is delivered, not what the tool is: an
/// image generation's `partial_images` (some clients must ask for partial images to
/// stream one, others leave it at 0; the evidence on what the API requires is mixed).
fn presentation_only(tool_type: &str, field: &str) -> bool {
    tool_type == "image_generation" && field == "partial_images"
}

/// A definition's `type`; a definition without one is a function tool.
fn tool_type(definition: &Value) -> &str {
    definition["type"].as_str().unwrap_or("function")
}

/// What a definition field means: its value, or the API's default when it is absent or
/// null; `None` when it means nothing (absent without a default).
fn field_meaning(definition: &Value, field: &str) -> Option<Value> {
    match definition.get(field) {
        None | Some(Value::Null) => field_default(tool_type(definition), field),
        Some(value) => Some(value.clone()),
    }
}

/// Whether two values of a definition field mean the same: equal as JSON (key order and
/// number spelling aside), where `allowed_callers` and a schema's `required` list are sets.
fn same_meaning(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(key, a)| {
                    y.get(key).is_some_and(|b| match (key.as_str(), a, b) {
                        ("required", Value::Array(_), Value::Array(_)) => same_set(a, b),
                        _ => same_meaning(a, b),
                    })
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_meaning(a, b))
        }
        _ => json_equal(a, b),
    }
}

fn same_set(a: &Value, b: &Value) -> bool {
    let set = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(Value::to_string)
            .collect()
    };
    set(a) == set(b)
}

/// The first place inside two differing values where they part, as a path suffix
/// (`.properties.sku.pattern`) and the two values there, so a message can point at it.
fn first_difference(a: &Value, b: &Value, path: String) -> (String, Option<Value>, Option<Value>) {
    if let (Value::Object(x), Value::Object(y)) = (a, b) {
        let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
        for key in keys {
            match (x.get(key), y.get(key)) {
                (Some(a), Some(b)) if key == "required" && same_set(a, b) => {}
                (Some(a), Some(b)) if same_meaning(a, b) => {}
                (Some(a), Some(b)) => return first_difference(a, b, format!("{path}.{key}")),
                (a, b) => return (format!("{path}.{key}"), a.cloned(), b.cloned()),
            }
        }
    }
    (path, Some(a.clone()), Some(b.clone()))
}

/// Each field where the sent definition means something else than the task's: the
/// field (a path into it for a nested difference), the sent value and the task's, shown.
fn definition_differences(task: &Value, sent: &Value) -> Vec<(String, String, String)> {
    let empty = serde_json::Map::new();
    let fields: BTreeSet<&String> = task
        .as_object()
        .unwrap_or(&empty)
        .keys()
        .chain(sent.as_object().unwrap_or(&empty).keys())
        .collect();
    let mut out = Vec::new();
    for field in fields {
        if presentation_only(tool_type(task), field) {
            continue;
        }
        match (field_meaning(sent, field), field_meaning(task, field)) {
            (Some(a), Some(b)) if field == "allowed_callers" && same_set(&a, &b) => {}
            (Some(a), Some(b)) if same_meaning(&a, &b) => {}
            (Some(a), Some(b)) if a.is_object() && b.is_object() => {
                let (path, a, b) = first_difference(&a, &b, field.clone());
                out.push((path, shown(a.as_ref()), shown(b.as_ref())));
            }
            (None, None) => {}
            _ => out.push((
                field.clone(),
                shown_field(sent, field),
                shown_field(task, field),
            )),
        }
    }
    out
}

/// A top-level definition field for a message: its value, or that it is absent and
/// what the API takes it to mean then.
fn shown_field(definition: &Value, field: &str) -> String {
    match (
        definition.get(field),
        field_default(tool_type(definition), field),
    ) {
        (None | Some(Value::Null), Some(Value::String(_)) | None) => "(none)".to_owned(),
        (None | Some(Value::Null), Some(default)) => format!("(none, which means {default})"),
        (value, _) => shown(value),
    }
}

/// A definition value for a message, short; an absent one as "(none)".
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "(none)".to_owned(),
        Some(Value::String(text)) if text.is_empty() => "(none)".to_owned(),
        Some(value) => crate::text::clip(&value.to_string(), 80),
    }
}

/// Whether request `position` gives the model the task's instructions: as the
/// `instructions` parameter, or as a system or developer message in the context the model
/// sees (its input plus what its chain or conversation carries). The parameter is never
/// inherited; an input item is.
fn instructions_problem(f: &Facts, position: usize, expected: &str) -> Option<String> {
    let label = f.request_label(position);
    let body = &f.requests[position].body;
    if let Some(sent) = body.get("instructions").and_then(Value::as_str) {
        return (sent.trim() != expected.trim()).then(|| {
            format!(
                "{label} sends `instructions` that differ from the task's: {:?}",
                crate::text::clip(sent, 80)
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
            crate::text::clip(text, 80)
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
        let label = f.request_label(position);
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
                    f.request_label(position),
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

/// `state/include-encrypted` (SHOULD): without storage a reasoning item goes back whole
/// only with its `encrypted_content`. The API populates it by default on every create
/// (the official SDK's `ResponseReasoningItem.encrypted_content`: "populated by default
/// for reasoning items returned by `POST /v1/responses` and WebSocket `response.create`
/// requests"), and the fake does too, so leaving `include` out is no defect by itself.
/// The check fails a request that did not ask and got a reasoning item without it (a
/// recording made where it was not served), which the loop then cannot replay whole;
/// whether what was served went back whole is `reasoning/replayed`'s. Judged only where
/// reasoning was served.
fn include_encrypted(f: &Facts) -> Option<CheckResult> {
    let asks = |position: usize| {
        f.requests[position]
            .body
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"))
    };
    let mut problems = Vec::new();
    let (mut items, mut asked, mut by_default) = (0, 0, 0);
    for (index, served) in f.served.iter().enumerate() {
        let reasoning: Vec<&Value> = served
            .output
            .iter()
            .filter(|item| item["type"] == "reasoning")
            .collect();
        if reasoning.is_empty() {
            continue;
        }
        items += reasoning.len();
        if asks(served.request) {
            asked += 1;
            continue;
        }
        by_default += 1;
        for item in reasoning {
            if item["encrypted_content"].as_str().is_none_or(str::is_empty) {
                problems.push(format!(
                    "{} does not ask for `include: [\"reasoning.encrypted_content\"]`, and {} serves reasoning item {} without its encrypted_content: with store:false it cannot go back whole; ask for it",
                    f.request_label(served.request),
                    f.response_label(index),
                    item["id"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    (items > 0).then(|| {
        checks::STATE_INCLUDE_ENCRYPTED.judge(
            problems,
            format!(
                "{items} reasoning item(s) served with their encrypted_content ({asked} response(s) to a request asking for it, {by_default} populated by default)"
            ),
        )
    })
}

fn conversation(f: &Facts) -> CheckResult {
    let first = f.requests.first().and_then(|r| conversation_of(&r.body));
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        let label = f.request_label(position);
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

/// Stateless and replay: every request carries the task's own input again; without it the model
/// answers a conversation that never asked anything.
fn input_replayed(f: &Facts) -> CheckResult {
    let task_input = match &f.scenario.task.input {
        Value::String(text) => vec![serde_json::json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    let expected: Vec<String> = task_input.iter().filter_map(user_text).collect();
    let compactions = super::compaction::compactions(f);
    let mut problems = Vec::new();
    for position in 1..f.requests.len() {
        // After a server-side compaction the items before its item may be dropped, the
        // user's input among them: the compaction item carries them.
        if super::compaction::latest_before(&compactions, position).is_some_and(|c| !c.standalone) {
            continue;
        }
        let sent: Vec<String> = f
            .history_sent(position)
            .iter()
            .filter_map(user_text)
            .collect();
        for text in expected.iter().filter(|t| !sent.contains(t)) {
            problems.push(format!(
                "{} does not replay the task's user input {:?}: in {} mode every request carries the whole conversation",
                f.request_label(position),
                crate::text::clip(text, 60),
                f.state
            ));
        }
    }
    checks::STATE_INPUT_REPLAYED.judge(problems, "every request replays the task's input")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::Judgement;
    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{self, Conversation, PreviousResponseId, Replay, Stateless};

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
            let run = Run::played(CASE, state);
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
        assert_fails_with(
            &judgement,
            "state/config-resent",
            &[
                "does not send the tool(s) convert_currency, get_weather",
                "asks for model 'gpt-4o': the task's model is 'gpt-5'",
            ],
        );
    }

    const TOOLS: &str = "state/03-tool-definitions-resent";

    /// Plays `TOOLS` correctly except that `change` rewrites the tool list of every request.
    fn tools_changed(state: StateMode, change: impl Fn(&mut Vec<serde_json::Value>)) -> Judgement {
        tools_changed_from(state, 0, change)
    }

    /// [`tools_changed`] from request position `from` on.
    fn tools_changed_from(
        state: StateMode,
        from: usize,
        change: impl Fn(&mut Vec<serde_json::Value>),
    ) -> Judgement {
        let run = Run::case(TOOLS, state);
        let mut body = run.first_body();
        for position in 0.. {
            let mut tools = body["tools"].as_array().unwrap().clone();
            if position >= from {
                change(&mut tools);
            }
            body["tools"] = json!(tools);
            let response = run.create(&body);
            if calls(&response).is_empty() {
                return run.judge_completed();
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
        unreachable!()
    }

    /// The function tool `name` in a tool list.
    fn tool<'a>(
        tools: &'a mut [serde_json::Value],
        name: &str,
    ) -> &'a mut serde_json::Map<String, serde_json::Value> {
        tools
            .iter_mut()
            .find(|t| t["name"] == name)
            .and_then(|t| t.as_object_mut())
            .unwrap()
    }

    #[test]
    fn config_resent_passes_the_task_definitions_sent_as_they_are() {
        for state in [PreviousResponseId, Stateless] {
            let run = Run::played(TOOLS, state);
            assert_passes(&run.judge_completed(), "state/config-resent");
        }
    }

    #[test]
    fn config_resent_passes_definitions_that_mean_the_same() {
        let judgement = tools_changed(Stateless, |tools| {
            let flights = tool(tools, "find_flights");
            // `strict` defaults to true on the Responses API.
            flights.remove("strict");
            // Sets in another order, a number spelled as a float.
            flights["allowed_callers"] = json!(["programmatic", "direct"]);
            flights["parameters"]["required"] =
                json!(["max_stops", "date", "destination", "origin"]);
            flights["parameters"]["properties"]["max_stops"]["maximum"] = json!(2.0);
            // Null is the same as absent.
            flights.insert("output_schema".into(), json!(null));
            flights.insert("defer_loading".into(), json!(false));
        });
        assert_passes(&judgement, "state/config-resent");
    }

    #[test]
    fn hosted_definitions_that_spell_out_the_api_defaults_mean_the_same() {
        use super::definition_differences;
        let web = json!({"type": "web_search"});
        let spelled = json!({"type": "web_search", "search_context_size": "medium"});
        assert!(definition_differences(&web, &spelled).is_empty());
        let narrowed = json!({"type": "web_search", "search_context_size": "high"});
        assert_eq!(definition_differences(&web, &narrowed).len(), 1);
        let image = json!({"type": "image_generation", "size": "1024x1024"});
        let spelled = json!({"type": "image_generation", "size": "1024x1024",
            "action": "auto", "background": "auto", "moderation": "auto", "quality": "auto",
            "output_compression": 100, "output_format": "png", "partial_images": 1});
        assert!(definition_differences(&image, &spelled).is_empty());
        let other =
            json!({"type": "image_generation", "size": "1024x1024", "output_format": "jpeg"});
        assert_eq!(definition_differences(&image, &other).len(), 1);
        // A function tool keeps its own defaults only.
        let function = json!({"type": "function", "name": "f"});
        let sized = json!({"type": "function", "name": "f", "search_context_size": "medium"});
        assert_eq!(definition_differences(&function, &sized).len(), 1);
    }

    #[test]
    fn config_resent_fails_a_dropped_or_changed_description() {
        let judgement = tools_changed(PreviousResponseId, |tools| {
            tool(tools, "find_flights").remove("description");
            tool(tools, "get_fare_rules")["description"] = json!("Fare rules.");
        });
        assert_fails_with(
            &judgement,
            "state/config-resent",
            &[
                "requests 1, 2 and 3 send tool 'find_flights' with `description` (none): the task's definition has \"Search scheduled flights between two airports on one day. Read-only.\"",
                "requests 1, 2 and 3 send tool 'get_fare_rules' with `description` \"Fare rules.\": the task's definition has \"The change and refund rules",
            ],
        );
    }

    #[test]
    fn config_resent_names_each_request_that_drops_a_description_once() {
        let judgement = tools_changed_from(Stateless, 2, |tools| {
            tool(tools, "find_flights").remove("description");
        });
        let message = &check(&judgement, "state/config-resent").message;
        assert_fails(
            &judgement,
            "state/config-resent",
            "request 3 sends tool 'find_flights' with `description` (none)",
        );
        assert!(!message.contains("request 2"), "{message}");
    }

    #[test]
    fn config_resent_fails_strict_switched_either_way() {
        let judgement = tools_changed(PreviousResponseId, |tools| {
            tool(tools, "find_flights")["strict"] = json!(false);
            tool(tools, "get_fare_rules").remove("strict");
        });
        assert_fails_with(
            &judgement,
            "state/config-resent",
            &[
                "requests 1, 2 and 3 send tool 'find_flights' with `strict` false: the task's definition has true",
                "requests 1, 2 and 3 send tool 'get_fare_rules' with `strict` (none, which means true): the task's definition has false",
            ],
        );
    }

    #[test]
    fn config_resent_fails_allowed_callers_stripped_or_altered() {
        let judgement = tools_changed(PreviousResponseId, |tools| {
            tool(tools, "find_flights").remove("allowed_callers");
        });
        assert_fails(
            &judgement,
            "state/config-resent",
            "requests 1, 2 and 3 send tool 'find_flights' with `allowed_callers` (none, which means [\"direct\"]): the task's definition has [\"direct\",\"programmatic\"]",
        );
        let judgement = tools_changed(PreviousResponseId, |tools| {
            tool(tools, "find_flights")["allowed_callers"] = json!(["programmatic"]);
        });
        assert_fails(
            &judgement,
            "state/config-resent",
            "with `allowed_callers` [\"programmatic\"]: the task's definition has [\"direct\",\"programmatic\"]",
        );
    }

    #[test]
    fn config_resent_fails_an_output_schema_stripped_or_altered() {
        // Plays program/09 with get_stock's definition edited in both requests.
        let play = |change: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
            let run = Run::case("program/09-output-schema-resent", PreviousResponseId);
            let edit = |body: &mut serde_json::Value| {
                let mut tools = body["tools"].as_array().unwrap().clone();
                change(tool(&mut tools, "get_stock"));
                body["tools"] = json!(tools);
            };
            let mut first = run.first_body();
            edit(&mut first);
            let response = run.create(&first);
            let mut outputs = run.execute(&response);
            for (output, call) in outputs.iter_mut().zip(calls(&response)) {
                output["caller"] = call["caller"].clone();
            }
            let mut second = run.next_body(&first, &response, &outputs);
            edit(&mut second);
            run.create(&second);
            run.judge_completed()
        };
        assert_passes(&play(&|_| {}), "state/config-resent");
        assert_fails(
            &play(&|get_stock| {
                get_stock.remove("output_schema");
            }),
            "state/config-resent",
            "requests 1 and 2 send tool 'get_stock' with `output_schema` (none): the task's definition has {\"type\":\"object\"",
        );
        assert_fails(
            &play(&|get_stock| {
                get_stock["output_schema"]["properties"]["available_units"] =
                    json!({"type": "string"});
            }),
            "state/config-resent",
            "requests 1 and 2 send tool 'get_stock' with `output_schema.properties.available_units.type` \"string\": the task's definition has \"number\"",
        );
    }

    #[test]
    fn config_resent_names_the_parameter_that_differs() {
        let judgement = tools_changed(Stateless, |tools| {
            tool(tools, "find_flights")["parameters"]["properties"]["max_stops"]["maximum"] =
                json!(3);
            tool(tools, "get_fare_rules")["parameters"]["required"] =
                json!(["fare_id", "language"]);
        });
        assert_fails_with(
            &judgement,
            "state/config-resent",
            &[
                "requests 1, 2 and 3 send tool 'find_flights' with `parameters.properties.max_stops.maximum` 3: the task's definition has 2",
                "send tool 'get_fare_rules' with `parameters.required` [\"fare_id\",\"language\"]: the task's definition has [\"fare_id\"]",
            ],
        );
    }

    #[test]
    fn config_resent_fails_the_hosted_tool_dropped() {
        let judgement = tools_changed(PreviousResponseId, |tools| {
            tools.retain(|t| t["type"] == "function");
        });
        assert_fails(
            &judgement,
            "state/config-resent",
            "request 1 does not send the tool(s) programmatic_tool_calling",
        );
    }

    /// Plays `TOOLS` correctly except that `change` rewrites every request body.
    fn bodies_changed(state: StateMode, change: impl Fn(&mut serde_json::Value)) -> Judgement {
        let run = Run::case(TOOLS, state);
        let mut body = run.first_body();
        loop {
            change(&mut body);
            let response = run.create(&body);
            // The fake takes every `tool_choice` the API takes, and echoes it.
            assert_eq!(response["status"], "completed", "{response}");
            assert_eq!(response["tool_choice"], body["tool_choice"]);
            if calls(&response).is_empty() {
                return run.judge_completed();
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
    }

    /// Adds a tool of the controller's own beside the task's and restricts the model to
    /// the tools `allowed` names.
    fn restricted_to(body: &mut serde_json::Value, allowed: &[&str]) {
        let tools = body["tools"].as_array_mut().unwrap();
        if !tools.iter().any(|t| t["name"] == "debug_dump") {
            tools.push(json!({
                "type": "function",
                "name": "debug_dump",
                "description": "Dump the agent's state.",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": false},
                "strict": true
            }));
        }
        let allowed: Vec<_> = allowed
            .iter()
            .map(|name| match *name {
                "programmatic_tool_calling" => json!({"type": name}),
                _ => json!({"type": "function", "name": name}),
            })
            .collect();
        body["tool_choice"] = json!({"type": "allowed_tools", "mode": "auto", "tools": allowed});
    }

    const TASK_TOOLS: [&str; 3] = [
        "find_flights",
        "get_fare_rules",
        "programmatic_tool_calling",
    ];

    #[test]
    fn config_resent_passes_extra_tools_the_model_is_not_allowed_to_call() {
        for state in [PreviousResponseId, Stateless] {
            let judgement = bodies_changed(state, |body| restricted_to(body, &TASK_TOOLS));
            assert_passes(&judgement, "state/config-resent");
        }
    }

    #[test]
    fn config_resent_fails_allowed_tools_that_let_the_model_call_another_tool() {
        let mut allowed = TASK_TOOLS.to_vec();
        allowed.push("debug_dump");
        let judgement = bodies_changed(Stateless, |body| restricted_to(body, &allowed));
        assert_fails(
            &judgement,
            "state/config-resent",
            "request 1 offers the model tool(s) the task does not: debug_dump (allowed by `tool_choice.allowed_tools`)",
        );
    }

    #[test]
    fn config_resent_fails_allowed_tools_that_withhold_a_task_tool() {
        let judgement = bodies_changed(PreviousResponseId, |body| {
            restricted_to(body, &["find_flights", "programmatic_tool_calling"])
        });
        assert_fails(
            &judgement,
            "state/config-resent",
            "request 1 sends the tool(s) get_fare_rules but leaves them out of `tool_choice.allowed_tools`, so the model cannot call them",
        );
    }

    #[test]
    fn a_single_request_gives_chaining_nothing_to_judge() {
        let run = Run::answer_only(PreviousResponseId);
        run.correct();
        let judgement = run.judge_completed();
        assert_passes(&judgement, "state/config-resent");
        assert_none_judged(&judgement, &["state/chained", "state/no-resend"]);
    }

    #[test]
    fn chained_passes_and_fails_a_stale_previous_response_id() {
        let run = Run::played(CASE, PreviousResponseId);
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
        let run = Run::played(CASE, PreviousResponseId);
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
    fn store_false_fails_when_left_out() {
        let run = Run::played(CASE, Stateless);
        assert_passes(&run.judge_completed(), "state/store-false");

        let run = Run::case(CASE, Stateless);
        let mut first = run.first_body();
        first["store"] = json!(true);
        run.create(&first);
        assert_fails(
            &run.judge_failed("api_error"),
            "state/store-false",
            "request 1 does not send `store: false`",
        );
    }

    const REASONING: &str = "reasoning/01-encrypted-retention";

    /// Plays `REASONING` statelessly and correctly, asking for the encrypted content or
    /// not.
    fn reasoning_run(ask: bool) -> Run {
        let run = Run::case(REASONING, Stateless);
        let mut first = run.first_body();
        if !ask {
            first.as_object_mut().unwrap().remove("include");
        }
        run.play_from(first);
        run
    }

    /// Removes `encrypted_content` from every reasoning item the fake served, as a
    /// recording made where it was not populated would hold them.
    fn served_without_encrypted_content(transcript: &mut crate::transcript::Transcript) {
        for exchange in &mut transcript.model {
            let mut response: Value = (*exchange.response).clone();
            for item in response["output"].as_array_mut().into_iter().flatten() {
                if item["type"] == "reasoning" {
                    item.as_object_mut().unwrap().remove("encrypted_content");
                }
            }
            exchange.response = response.into();
        }
    }

    #[test]
    fn include_encrypted_passes_reasoning_served_by_default_and_replayed_whole() {
        for ask in [true, false] {
            let judgement = reasoning_run(ask).judge_completed();
            assert_all_pass(
                &judgement,
                &[
                    "wire/accepted",
                    "state/include-encrypted",
                    "reasoning/replayed",
                ],
            );
            let message = &check(&judgement, "state/include-encrypted").message;
            let expected = if ask {
                "3 response(s) to a request asking for it, 0 populated by default"
            } else {
                "0 response(s) to a request asking for it, 3 populated by default"
            };
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn include_encrypted_fails_reasoning_served_without_content_to_a_request_that_did_not_ask() {
        let judgement = reasoning_run(false).judge_edited(
            json!({"status": "completed"}),
            served_without_encrypted_content,
        );
        assert_fails_with(
            &judgement,
            "state/include-encrypted",
            &[
                "request 1 does not ask for `include: [\"reasoning.encrypted_content\"]`, and response 1 (resp_",
                "serves reasoning item rs_",
                "without its encrypted_content: with store:false it cannot go back whole",
            ],
        );
        // A request that asked is not to blame for what the server left out.
        let judgement = reasoning_run(true).judge_edited(
            json!({"status": "completed"}),
            served_without_encrypted_content,
        );
        assert_passes(&judgement, "state/include-encrypted");
    }

    #[test]
    fn include_encrypted_is_not_judged_without_reasoning() {
        let judgement = Run::played(CASE, Stateless).judge_completed();
        assert_not_judged(&judgement, "state/include-encrypted");
    }

    #[test]
    fn replay_mode_asks_for_the_history_but_not_for_storage_off() {
        let run = Run::case(CASE, Replay);
        assert!(run.first_body().get("store").is_none());
        run.correct();
        let judgement = run.judge_completed();
        assert_all_pass(&judgement, &["state/config-resent", "state/input-replayed"]);
        for id in [
            "state/store-false",
            "state/include-encrypted",
            "state/chained",
            "state/no-resend",
        ] {
            assert_not_judged(&judgement, id);
        }

        let judgement = run_with(Replay, drop_user_input).judge_completed();
        assert_fails(
            &judgement,
            "state/input-replayed",
            "in replay mode every request carries the whole conversation",
        );
    }

    /// Leaves the task's user input out of a request's replayed input.
    fn drop_user_input(body: &mut Value) {
        let input: Vec<Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["role"] != "user")
            .cloned()
            .collect();
        body["input"] = json!(input);
    }

    #[test]
    fn input_replayed_fails_a_stateless_request_without_the_user_input() {
        let judgement = run_with(Stateless, drop_user_input).judge_completed();
        assert_fails(
            &judgement,
            "state/input-replayed",
            "request 2 does not replay the task's user input",
        );
    }

    #[test]
    fn conversation_passes_and_fails_a_chain_instead_of_the_conversation() {
        let run = Run::played("state/02-conversation-mode", Conversation);
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
