//! `dispatch/loaded-from-catalogue`: a client tool search is answered with tools of the
//! task's own catalogue, its deferred tools, each as the task defines it.

use serde_json::Value;

use super::checks;
use super::facts::{Facts, IssuedCall};
use super::verdict::CheckResult;
use crate::json_compare::json_equal;
use crate::tools::Registry;
use crate::wire::call_kind::TOOL_SEARCH;
use crate::wire::request::item_type;

/// Judged when the model issued a client tool search.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let searches: Vec<&IssuedCall> = f.calls.iter().filter(|c| c.kind == TOOL_SEARCH).collect();
    if searches.is_empty() {
        return Vec::new();
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
    vec![checks::DISPATCH_LOADED_FROM_CATALOGUE.judge(
        problems,
        format!("the {loaded} tool(s) loaded by tool searches are the task's deferred tools, as it defines them"),
    )]
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
