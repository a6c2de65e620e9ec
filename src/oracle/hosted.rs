//! `hosted`: the items of hosted tools (`web_search_call`, `mcp_call`, ...), which the
//! server ran. A stateless controller replays them as given, as it does every output
//! item, and no controller runs them or answers them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::contract::StateMode;
use crate::json_compare::json_equal;
use crate::transcript::ToolRequestKind;
use crate::wire::call_kind::{self, MCP_APPROVAL};
use crate::wire::hosted;
use crate::wire::request::{call_id, item_type};

/// An item the server made for a hosted tool, or an MCP approval request: served
/// response `served` holds it.
struct Made<'v> {
    served: usize,
    item: &'v Value,
}

impl Made<'_> {
    fn id(&self) -> &str {
        self.item["id"].as_str().unwrap_or_default()
    }

    /// `ws_... (web_search_call)`, with the tool's name where it has one.
    fn describe(&self) -> String {
        let kind = item_type(self.item);
        match self.item["name"].as_str() {
            Some(name) => format!("{} ({kind} {name})", self.id()),
            None => format!("{} ({kind})", self.id()),
        }
    }
}

fn made<'v>(f: &'v Facts) -> Vec<Made<'v>> {
    f.served
        .iter()
        .enumerate()
        .flat_map(|(served, response)| {
            response
                .output
                .iter()
                .filter(|item| {
                    let kind = item_type(item);
                    hosted::of_item(kind).is_some() || kind == MCP_APPROVAL.call
                })
                .map(move |item| Made { served, item })
        })
        .collect()
}

/// The `hosted` checks, judged in runs whose responses hold hosted items.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let made = made(f);
    if made.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if matches!(f.state, StateMode::Stateless | StateMode::Replay) {
        out.push(replayed(f, &made));
    }
    out.push(not_dispatched(f, &made));
    out
}

/// The value without its `null` fields, at any depth: an SDK that writes an absent
/// optional field as `null` replays the same item.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The first field whose value differs between two objects.
fn first_difference(sent: &Value, replayed: &Value) -> String {
    let empty = serde_json::Map::new();
    let (a, b) = (
        sent.as_object().unwrap_or(&empty),
        replayed.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .find(|key| {
            !a.get(*key)
                .zip(b.get(*key))
                .is_some_and(|(x, y)| json_equal(x, y))
        })
        .map_or_else(String::new, |key| {
            format!(
                " (`{key}` was {}, replayed as {})",
                a.get(key).map_or("absent".to_owned(), Value::to_string),
                b.get(key).map_or("absent".to_owned(), Value::to_string)
            )
        })
}

/// Each item is in every later request's input, as sent (up to key order and `null`
/// fields), or as an `item_reference` to it. Each item is reported once, where it is
/// first missing or altered.
fn replayed(f: &Facts, made: &[Made]) -> CheckResult {
    let mut problems = Vec::new();
    let mut judged = 0;
    for item in made {
        let sent = without_nulls(item.item);
        let first_later = f.served[item.served].request + 1;
        for (position, request) in f.requests.iter().enumerate().skip(first_later) {
            judged += 1;
            let input = Facts::input_of(request);
            let copy = input
                .iter()
                .find(|candidate| candidate["id"].as_str() == Some(item.id()));
            let problem = match copy {
                None => Some(format!(
                    "{}: {} is left out of the replay: expected it as the server sent it",
                    f.request_label(position),
                    item.describe()
                )),
                Some(copy) if item_type(copy) == "item_reference" => None,
                Some(copy) if json_equal(&sent, &without_nulls(copy)) => None,
                Some(copy) => Some(format!(
                    "{}: {} is replayed altered{}: expected it as the server sent it",
                    f.request_label(position),
                    item.describe(),
                    first_difference(&sent, &without_nulls(copy))
                )),
            };
            if let Some(problem) = problem {
                problems.push(problem);
                break;
            }
        }
    }
    checks::HOSTED_REPLAYED.judge(
        problems,
        format!(
            "{} hosted item(s) replayed as sent ({judged} replay(s) judged)",
            made.len()
        ),
    )
}

/// No backend request runs a hosted tool or an MCP tool, and no answer item names a
/// hosted item.
fn not_dispatched(f: &Facts, made: &[Made]) -> CheckResult {
    let registry: BTreeSet<String> = crate::scenario::tool_names(f.scenario)
        .into_iter()
        .collect();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for item in made {
        let kind = item_type(item.item);
        if let Some(hosted) = hosted::of_item(kind)
            && hosted.tool_type != "mcp"
        {
            names.insert(hosted.tool_type);
            names.insert(hosted.item);
        }
        if let Some(name) = item.item["name"].as_str()
            && !registry.contains(name)
        {
            names.insert(name);
        }
    }
    let by_id = |id: &str| made.iter().find(|item| item.id() == id);
    let mut problems = Vec::new();
    for exchange in f.tools.iter().filter(|t| t.kind == ToolRequestKind::Call) {
        let id = exchange.call_id.as_deref().unwrap_or_default();
        let item = by_id(id).or_else(|| {
            made.iter().find(|item| {
                item.item["name"].as_str() == Some(exchange.name.as_str())
                    || hosted::of_item(item_type(item.item))
                        .is_some_and(|kind| kind.tool_type == exchange.name)
            })
        });
        if names.contains(exchange.name.as_str()) || by_id(id).is_some() {
            problems.push(format!(
                "the controller ran '{}' on the backend (call_id {}): {} is run by the server, never by the controller",
                exchange.name,
                if id.is_empty() { "(none)" } else { id },
                item.map_or_else(|| "a hosted tool".to_owned(), Made::describe)
            ));
        }
    }
    let mut reported = BTreeSet::new();
    for (position, request) in f.requests.iter().enumerate() {
        for answer in Facts::input_of(request) {
            let kind = item_type(&answer);
            if !call_kind::of_answer(kind).is_some_and(|kind| kind.runs_on_client()) {
                continue;
            }
            let Some(item) = call_id(&answer).and_then(by_id) else {
                continue;
            };
            if reported.insert(item.id().to_owned()) {
                problems.push(format!(
                    "{}: a {kind} answers {}: the server ran it, so it takes no answer",
                    f.request_label(position),
                    item.describe()
                ));
            }
        }
    }
    checks::HOSTED_NOT_DISPATCHED.judge(
        problems,
        format!(
            "{} hosted item(s) and MCP approval request(s), none run or answered by the controller",
            made.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{self, PreviousResponseId, Stateless};

    const SEARCH: &str = "hosted/01-search-and-code";

    /// Plays the case's two rounds, the replay's items passed through `replayed`.
    fn play(state: StateMode, replayed: impl Fn(Vec<Value>) -> Vec<Value>) -> Run {
        let run = Run::case(SEARCH, state);
        let first = run.first_body();
        let response = run.create(&first);
        let outputs = run.execute(&response);
        let mut next = run.next_body(&first, &response, &outputs);
        if state == Stateless {
            let items = next["input"].as_array().cloned().unwrap_or_default();
            next["input"] = json!(replayed(items));
        }
        run.create(&next);
        run
    }

    #[test]
    fn a_replay_as_sent_passes_and_a_chained_run_is_not_judged_for_it() {
        let judgement = play(Stateless, |items| items).judge_completed();
        assert_all_pass(&judgement, &["hosted/replayed", "hosted/not-dispatched"]);
        let judgement = play(PreviousResponseId, |items| items).judge_completed();
        assert_not_judged(&judgement, "hosted/replayed");
        assert_passes(&judgement, "hosted/not-dispatched");
    }

    #[test]
    fn a_replay_with_null_fields_added_passes() {
        let judgement = play(Stateless, |mut items| {
            for item in &mut items {
                if item["type"] == "web_search_call" {
                    item["extra"] = Value::Null;
                }
            }
            items
        })
        .judge_completed();
        assert_passes(&judgement, "hosted/replayed");
    }

    #[test]
    fn a_dropped_hosted_item_fails_replayed_naming_it() {
        let judgement = play(Stateless, |items| {
            items
                .into_iter()
                .filter(|item| item["type"] != "code_interpreter_call")
                .collect()
        })
        .judge_completed();
        assert_fails_with(
            &judgement,
            "hosted/replayed",
            &["(code_interpreter_call)", "left out of the replay"],
        );
    }

    #[test]
    fn an_altered_hosted_item_fails_replayed_naming_the_field() {
        let judgement = play(Stateless, |mut items| {
            for item in &mut items {
                if item["type"] == "file_search_call" {
                    item["queries"] = json!(["beach"]);
                }
            }
            items
        })
        .judge_completed();
        assert_fails_with(
            &judgement,
            "hosted/replayed",
            &["(file_search_call)", "replayed altered", "`queries`"],
        );
    }

    #[test]
    fn a_hosted_item_run_or_answered_fails_not_dispatched() {
        let run = Run::case(SEARCH, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let search = response["output"][0].clone();
        assert_eq!(search["type"], "web_search_call");
        run.send(
            "POST",
            "/tools/call/web_search",
            Some(&json!({"call_id": search["id"], "arguments": {}, "principal": "user-1"})),
        );
        let mut outputs = run.execute(&response);
        outputs
            .push(json!({"type": "function_call_output", "call_id": search["id"], "output": "{}"}));
        run.create(&run.next_body(&first, &response, &outputs));
        let judgement = run.judge_completed();
        assert_fails_with(
            &judgement,
            "hosted/not-dispatched",
            &[
                "ran 'web_search' on the backend",
                "a function_call_output answers",
            ],
        );
    }
}
