//! `reasoning`: in stateless mode, every prior output item replayed verbatim and in order,
//! reasoning items with their `encrypted_content` and right before the item they produced.
//! Judged from what the controller sent, not from what the server rejected: stripping
//! `fc_` ids and dropping reasoning passes the real API silently, yet loses the model's
//! reasoning.

use serde_json::Value;

use super::facts::{Facts, identity};
use super::verdict::CheckResult;
use crate::scenario::{Level, StateMode};
use crate::wire::request::{item_id, item_type};

/// The `reasoning` checks (stateless mode only; the server carries reasoning otherwise).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if f.state != StateMode::Stateless {
        return Vec::new();
    }
    let replays: Vec<(usize, Vec<Value>)> = (1..f.requests.len())
        .map(|position| (position, Facts::input_of(f.requests[position])))
        .collect();
    let prior_items = |position: usize| -> Vec<(usize, &Value)> {
        f.served
            .iter()
            .enumerate()
            .filter(|(_, s)| s.request < position)
            .flat_map(|(index, s)| s.output.iter().map(move |item| (index, item)))
            .collect()
    };
    let any_reasoning = replays.iter().any(|(position, _)| {
        prior_items(*position)
            .iter()
            .any(|(_, item)| item["type"] == "reasoning")
    });
    let mut out = Vec::new();
    if any_reasoning {
        out.push(replayed(f, &replays, &prior_items));
        out.push(input_shape(&replays));
    }
    if replays
        .iter()
        .any(|(position, _)| !prior_items(*position).is_empty())
    {
        out.push(in_order(f, &replays, &prior_items));
    }
    out
}

type Prior<'p> = dyn Fn(usize) -> Vec<(usize, &'p Value)> + 'p;

fn replayed<'p>(
    f: &Facts,
    replays: &[(usize, Vec<Value>)],
    prior_items: &Prior<'p>,
) -> CheckResult {
    let mut problems = Vec::new();
    let mut count = 0;
    for (position, input) in replays {
        for (served, item) in prior_items(*position) {
            if item["type"] != "reasoning" {
                continue;
            }
            count += 1;
            let id = item["id"].as_str().unwrap_or_default();
            let label = Facts::request_label(*position);
            let from = f.response_label(served);
            match input.iter().find(|i| item_type(i) == "reasoning" && item_id(i) == Some(id)) {
                None => problems.push(format!(
                    "{label} does not replay reasoning item {id} from {from}: in stateless mode every reasoning item must be sent back"
                )),
                Some(sent) => match sent.get("encrypted_content").and_then(Value::as_str) {
                    None => problems.push(format!(
                        "{label} replays reasoning item {id} without its encrypted_content: expected it verbatim"
                    )),
                    Some(content) if Some(content) != item["encrypted_content"].as_str() => problems.push(format!(
                        "{label} replays reasoning item {id} with an altered encrypted_content: expected it byte for byte as {from} sent it"
                    )),
                    Some(_) => {}
                },
            }
        }
    }
    CheckResult::judge(
        "reasoning/replayed",
        Level::Must,
        problems,
        format!("{count} reasoning replay(s), each with its encrypted_content intact"),
    )
}

fn input_shape(replays: &[(usize, Vec<Value>)]) -> CheckResult {
    let mut problems = Vec::new();
    for (position, input) in replays {
        for (index, item) in input.iter().enumerate() {
            if item_type(item) == "reasoning" && item.get("status").is_some_and(|s| !s.is_null()) {
                problems.push(format!(
                    "{}: input[{index}] is a reasoning item with `status`, an output-only field the API rejects in input",
                    Facts::request_label(*position)
                ));
            }
        }
    }
    CheckResult::judge(
        "reasoning/input-shape",
        Level::Must,
        problems,
        "replayed reasoning items carry no output-only fields",
    )
}

/// Where a prior output item sits in a replayed input: by id, by call_id for a call
/// replayed without its id, by text for a message replayed without its id.
fn find(input: &[Value], item: &Value) -> Option<usize> {
    if let Some(pos) = input
        .iter()
        .position(|i| identity(i).is_some() && identity(i) == identity(item))
    {
        return Some(pos);
    }
    match item["type"].as_str() {
        Some("function_call") => input.iter().position(|i| {
            item_type(i) == "function_call" && i.get("call_id") == item.get("call_id")
        }),
        Some("message") => input.iter().position(|i| {
            item_type(i) == "message"
                && i.get("role") == Some(&Value::from("assistant"))
                && item_id(i).is_none()
                && i.get("content") == item.get("content")
        }),
        _ => None,
    }
}

fn in_order<'p>(
    f: &Facts,
    replays: &[(usize, Vec<Value>)],
    prior_items: &Prior<'p>,
) -> CheckResult {
    let mut problems = Vec::new();
    let mut count = 0;
    for (position, input) in replays {
        let label = Facts::request_label(*position);
        let items = prior_items(*position);
        let mut last: Option<(usize, String)> = None;
        for (k, (served, item)) in items.iter().enumerate() {
            let id = item["id"].as_str().unwrap_or_default();
            let kind = item["type"].as_str().unwrap_or_default();
            let Some(at) = find(input, item) else {
                // A missing reasoning item is reported by `reasoning/replayed`.
                if kind != "reasoning" {
                    problems.push(format!(
                        "{label} does not replay {kind} {id} from {}: every prior output item must be sent back, in order",
                        f.response_label(*served)
                    ));
                }
                continue;
            };
            count += 1;
            if let Some((previous_at, previous_id)) = &last
                && at < *previous_at
            {
                problems.push(format!(
                    "{label} replays {kind} {id} at input[{at}], before {previous_id} at input[{previous_at}]: expected the order the model produced them in"
                ));
            }
            if kind == "reasoning"
                && let Some((_, next)) = items.get(k + 1)
                && items[k + 1].0 == *served
                && find(input, next) != Some(at + 1)
            {
                problems.push(format!(
                    "{label}: reasoning item {id} at input[{at}] is not immediately followed by the item it produced ({} {})",
                    next["type"].as_str().unwrap_or_default(),
                    next["id"].as_str().unwrap_or_default()
                ));
            }
            last = Some((at, id.to_owned()));
        }
    }
    CheckResult::judge(
        "reasoning/items-in-order",
        Level::Must,
        problems,
        format!("{count} prior output item replay(s), all in the model's order"),
    )
}
