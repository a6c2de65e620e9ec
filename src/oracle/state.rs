//! `state`: chaining with `previous_response_id`, stateless requests, and the per-request
//! configuration (instructions and tools are never inherited).

use std::collections::BTreeSet;

use serde_json::Value;

use super::facts::Facts;
use super::verdict::CheckResult;
use crate::scenario::{Level, StateMode, tool_names};
use crate::wire::request::item_id;

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
            match request.body.get("instructions").and_then(Value::as_str) {
                None => problems.push(format!(
                    "{label} has no instructions: they are not inherited through previous_response_id, so every request must carry the task's instructions"
                )),
                Some(sent) if sent != instructions => problems.push(format!(
                    "{label} sends instructions that differ from the task's"
                )),
                Some(_) => {}
            }
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
    }
    CheckResult::judge(
        "state/config-resent",
        Level::Must,
        problems,
        format!(
            "all {} request(s) carry the task's instructions and tools",
            f.requests.len()
        ),
    )
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
    CheckResult::judge(
        "state/chained",
        Level::Must,
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
    CheckResult::judge(
        "state/no-resend",
        Level::Should,
        problems,
        "chained requests send only new items",
    )
}

fn store_false(f: &Facts) -> CheckResult {
    let problems = f
        .requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.body.get("store") != Some(&Value::Bool(false)))
        .map(|(position, _)| {
            format!(
                "{} does not send `store: false`: in stateless mode nothing may be stored",
                Facts::request_label(position)
            )
        })
        .collect();
    CheckResult::judge(
        "state/store-false",
        Level::Must,
        problems,
        "every request sends store: false",
    )
}

fn include_encrypted(f: &Facts) -> CheckResult {
    let problems = f
        .requests
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            !r.body
                .get("include")
                .and_then(Value::as_array)
                .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"))
        })
        .map(|(position, _)| {
            format!(
                "{} does not ask for `include: [\"reasoning.encrypted_content\"]`: without it a store:false response may carry no reasoning to replay",
                Facts::request_label(position)
            )
        })
        .collect();
    CheckResult::judge(
        "state/include-encrypted",
        Level::Should,
        problems,
        "every request includes reasoning.encrypted_content",
    )
}

fn conversation(f: &Facts) -> CheckResult {
    let id_of = |body: &Value| -> Option<String> {
        match body.get("conversation") {
            Some(Value::String(id)) => Some(id.clone()),
            Some(other) => other.get("id").and_then(Value::as_str).map(str::to_owned),
            None => None,
        }
    };
    let first = f.requests.first().and_then(|r| id_of(&r.body));
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        let label = Facts::request_label(position);
        match id_of(&request.body) {
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
    CheckResult::judge(
        "state/conversation",
        Level::Must,
        problems,
        "every request continues the same conversation",
    )
}
