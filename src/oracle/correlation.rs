//! `call-id`: every pending call answered exactly once, with its own `call_id`, and with
//! the result of that very call.

use serde_json::Value;

use super::checks;
use super::facts::{Facts, output_text};
use super::verdict::CheckResult;
use crate::tools::{CallValidity, json_equal};
use crate::wire::request::{call_id, item_type};

/// The `call-id` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if f.calls.is_empty() {
        return Vec::new();
    }
    let mut out = vec![answered(f), own_id(f)];
    out.extend(executed_as_issued(f));
    out.extend(result_matches(f));
    out
}

fn answered(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut answered = 0;
    for (index, served) in f.served.iter().enumerate() {
        if served.calls.is_empty() || served.status != "completed" {
            continue;
        }
        match f.request_after(index) {
            None if f.is_last_round(index) => {}
            None => {
                for &c in &served.calls {
                    problems.push(format!(
                        "{} issued {}, and the controller never sent its output: it made no further request",
                        f.response_label(index),
                        f.calls[c].describe()
                    ));
                }
            }
            Some((position, request)) => {
                for &c in &served.calls {
                    let call = &f.calls[c];
                    match Facts::outputs_for(request, &call.call_id).len() {
                        0 => problems.push(format!(
                            "{} has no function_call_output for {} from {}: expected exactly one",
                            Facts::request_label(position),
                            call.describe(),
                            f.response_label(index)
                        )),
                        1 => answered += 1,
                        n => problems.push(format!(
                            "{} answers {} {n} times: expected exactly one function_call_output",
                            Facts::request_label(position),
                            call.describe()
                        )),
                    }
                }
            }
        }
    }
    checks::CALL_ID_ANSWERED.judge(
        problems,
        format!("{answered} pending call(s) each answered exactly once in the next request"),
    )
}

fn own_id(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut seen = 0;
    for (position, request) in f.requests.iter().enumerate() {
        for item in Facts::input_of(request) {
            if item_type(&item) != "function_call_output" {
                continue;
            }
            seen += 1;
            let id = call_id(&item).unwrap_or_default();
            if f.call_by_id(id).is_some() {
                continue;
            }
            let expected = if let Some(call) = f.call_by_item_id(id) {
                format!(
                    " (the item id of {}), expected {}",
                    call.describe(),
                    call.call_id
                )
            } else if let Some(call) = f.calls.iter().find(|c| c.name == id) {
                format!(
                    " (a tool name), expected the call_id of the call, e.g. {}",
                    call.call_id
                )
            } else {
                " which matches no call the model issued".to_owned()
            };
            problems.push(format!(
                "{}: function_call_output carries call_id '{id}'{expected}",
                Facts::request_label(position)
            ));
        }
    }
    checks::CALL_ID_OWN_ID.judge(
        problems,
        format!(
            "{seen} function_call_output item(s) all carry the call_id of a call the model issued"
        ),
    )
}

/// Judged over the valid calls of completed responses: dispatching an invalid or
/// unfinished call is its own finding (`dispatch/*`, `terminal/unfinished-not-executed`),
/// whatever it was dispatched with.
fn executed_as_issued(f: &Facts) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut judged = 0;
    for call in f
        .actionable_calls()
        .filter(|c| c.validity == CallValidity::Valid)
    {
        for execution in f.executions_of(&call.call_id) {
            judged += 1;
            if execution.name != call.name
                || !call
                    .parsed
                    .as_ref()
                    .is_some_and(|p| json_equal(p, &execution.arguments))
            {
                problems.push(format!(
                    "the backend was asked to run {} {} under {}, which the model issued as {} {}",
                    execution.name, execution.arguments, call.call_id, call.name, call.arguments
                ));
            }
        }
    }
    (judged > 0).then(|| {
        checks::CALL_ID_EXECUTED_AS_ISSUED.judge(
            problems,
            format!("{judged} execution(s) ran the tool and arguments of the call whose call_id they carried"),
        )
    })
}

fn result_matches(f: &Facts) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut diff = None;
    let mut judged = 0;
    let results: Vec<(&str, Value)> = f
        .tools
        .iter()
        .filter(|t| t.status == 200)
        .filter_map(|t| Some((t.call_id.as_deref()?, t.response.get("result")?.clone())))
        .collect();
    for (index, served) in f.served.iter().enumerate() {
        let Some((position, request)) = f.request_after(index) else {
            continue;
        };
        for &c in &served.calls {
            let call = &f.calls[c];
            let Some((_, expected)) = results.iter().find(|(id, _)| *id == call.call_id) else {
                continue;
            };
            let outputs = Facts::outputs_for(request, &call.call_id);
            let Some(output) = outputs.first() else {
                continue;
            };
            judged += 1;
            let text = output_text(output);
            let actual: Option<Value> = serde_json::from_str(&text).ok();
            let others: Vec<&str> = results
                .iter()
                .filter(|(id, result)| {
                    *id != call.call_id
                        && !json_equal(result, expected)
                        && actual.as_ref().is_some_and(|a| carries(a, result))
                })
                .map(|(id, _)| *id)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let own = actual.as_ref().is_some_and(|a| carries(a, expected));
            if own && others.is_empty() {
                continue;
            }
            let problem = if own {
                format!(
                    "{}: the output for {} carries its result and also the result of {}: expected that call's result alone",
                    Facts::request_label(position),
                    call.describe(),
                    others.join(", ")
                )
            } else {
                let whose = others
                    .first()
                    .map(|id| format!(" (that is the result of {id})"))
                    .unwrap_or_default();
                format!(
                    "{}: the output for {} is {}{whose}; expected the backend's result for that call, {}",
                    Facts::request_label(position),
                    call.describe(),
                    crate::transcript::clip(&text, 120),
                    expected
                )
            };
            problems.push(problem);
            if diff.is_none() {
                diff = Some((
                    pretty(expected),
                    actual.as_ref().map_or(text.clone(), pretty),
                ));
            }
        }
    }
    (judged > 0).then(|| {
        checks::CALL_ID_RESULT_MATCHES.judge(
            problems,
            format!(
                "{judged} output(s) carry the backend's result for their own call and no other's"
            ),
        )
        .with_diff(diff)
    })
}

/// Whether an output value carries `result`: it is the result, or a one-level envelope
/// around it (`{"result": ...}`, `{"ok": true, "data": ...}`, `[...]`).
fn carries(output: &Value, result: &Value) -> bool {
    json_equal(output, result)
        || match output {
            Value::Object(fields) => fields.values().any(|v| json_equal(v, result)),
            Value::Array(items) => items.iter().any(|v| json_equal(v, result)),
            _ => false,
        }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
