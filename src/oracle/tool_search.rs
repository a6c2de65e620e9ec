//! `dispatch/loaded-from-catalogue`: a client tool search is answered with tools of the
//! task's own catalogue, its deferred tools, each as the task defines it.
//! `dispatch/hosted-not-answered`: a server-executed search is replayed, never answered.

use serde_json::Value;

use super::checks;
use super::facts::{Facts, IssuedCall};
use super::verdict::CheckResult;
use crate::json_compare::json_equal;
use crate::tools::Registry;
use crate::wire::call_kind::TOOL_SEARCH;
use crate::wire::request::item_type;

/// Judged when the model issued a client tool search, and when the server ran one.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = Vec::new();
    out.extend(loaded_from_catalogue(f));
    out.extend(hosted_not_answered(f));
    out
}

/// A server-executed search's items are the server's: a `tool_search_output` without a
/// call_id that is not one the server made is the controller answering a hosted search.
fn hosted_not_answered(f: &Facts) -> Option<CheckResult> {
    let hosted =
        |item: &&Value| item_type(item) == TOOL_SEARCH.call && item["execution"] == "server";
    if !f
        .served
        .iter()
        .any(|s| s.output.iter().any(|item| hosted(&item)))
    {
        return None;
    }
    let made: Vec<&Value> = f
        .served
        .iter()
        .flat_map(|s| &s.output)
        .filter(|item| item_type(item) == TOOL_SEARCH.answer)
        .collect();
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        for item in Facts::input_of(request) {
            let unpaired = item_type(&item) == TOOL_SEARCH.answer
                && item.get("call_id").is_none_or(Value::is_null);
            if unpaired && !made.iter().any(|own| own["id"] == item["id"]) {
                problems.push(format!(
                    "{}: sends a tool_search_output of its own, {}, for a tool search the server ran (execution server): replay the server's tool_search_call and tool_search_output as given, and answer neither",
                    f.request_label(position),
                    crate::text::clip(&item.to_string(), 120)
                ));
            }
        }
    }
    Some(checks::DISPATCH_HOSTED_NOT_ANSWERED.judge(
        problems,
        "no server-executed tool search was answered by the controller",
    ))
}

fn loaded_from_catalogue(f: &Facts) -> Option<CheckResult> {
    let searches: Vec<&IssuedCall> = f.calls.iter().filter(|c| c.kind == TOOL_SEARCH).collect();
    if searches.is_empty() {
        return None;
    }
    let registry = Registry::new(f.scenario);
    let catalogue = registry.deferred();
    let mut problems = Vec::new();
    let mut loaded = 0;
    for call in searches {
        let Some((position, request)) = f.request_after(call.response) else {
            continue;
        };
        let answers = Facts::outputs_for(request, &call.call_id);
        let Some(answer) = answers.iter().find(|a| item_type(a) == TOOL_SEARCH.answer) else {
            continue;
        };
        for tool in answer["tools"].as_array().into_iter().flatten() {
            loaded += 1;
            let name = tool["name"].as_str().unwrap_or_default();
            match catalogue.iter().find(|own| own["name"] == name) {
                None => problems.push(format!(
                    "{}: the tool_search_output for {} loads '{name}', which is no deferred tool of the task (expected one of: {})",
                    f.request_label(position),
                    call.describe(),
                    names(&catalogue)
                )),
                Some(own) if !json_equal(own, tool) => problems.push(format!(
                    "{}: the tool_search_output for {} loads '{name}' as {}, not as the task defines it, {}",
                    f.request_label(position),
                    call.describe(),
                    crate::text::clip(&tool.to_string(), 160),
                    crate::text::clip(&own.to_string(), 160)
                )),
                Some(_) => {}
            }
        }
    }
    Some(checks::DISPATCH_LOADED_FROM_CATALOGUE.judge(
        problems,
        format!("the {loaded} tool(s) loaded by tool searches are the task's deferred tools, as it defines them"),
    ))
}

fn names(catalogue: &[&Value]) -> String {
    let names: Vec<&str> = catalogue
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
