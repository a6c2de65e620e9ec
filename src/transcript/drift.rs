//! Drift: what changed between two normalized transcripts of the same case, item by item,
//! each change named by the request (or tool exchange) and the field or item it touches:
//! "request 2 (POST /v1/responses): `max_output_tokens` is new: 256".

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::normalize::{ModelStep, Normalized, Step, ToolStep};
use crate::json_compare::json_equal;

/// What comparing a case run with its snapshot, or with its recording, found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComparisonStatus {
    /// The run sent what the snapshot or the recording holds.
    Matched,
    /// The run sent something else: the case is `drift`.
    Drifted,
    /// There was no snapshot; one was written as `.snap.new` for review.
    New,
    /// There was no snapshot, and under CI that is a failure (`drift`).
    Missing,
    /// `--update-snapshots` wrote the run as the new snapshot.
    Updated,
    /// The snapshot file could not be read: the case is `error`.
    Unreadable,
}

/// A case run compared with its snapshot or its recording, as reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparison {
    /// The snapshot or cassette file.
    pub path: PathBuf,
    /// What the comparison found.
    pub status: ComparisonStatus,
    /// For drift: each change, named by request and item; for an unreadable file, why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// For drift: a unified diff of the two transcripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Most characters of a value quoted in a change.
const QUOTE: usize = 100;

/// One difference, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Where: `request 2 (POST /v1/responses)`, `tool exchange 1 (call get_stock)`, `result`.
    pub at: String,
    /// What changed, from the expected (snapshot, recording) to the actual run.
    pub what: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

fn quote(value: &Value) -> String {
    crate::text::clip(&value.to_string(), QUOTE)
}

/// Every change from `expected` to `actual`, in order; empty when they agree.
pub fn changes(expected: &Normalized, actual: &Normalized) -> Vec<Change> {
    let mut out = Vec::new();
    let (mut requests, mut tools) = (0, 0);
    for (index, pair) in expected
        .steps
        .iter()
        .map(Some)
        .chain(std::iter::repeat(None))
        .zip(actual.steps.iter().map(Some).chain(std::iter::repeat(None)))
        .take(expected.steps.len().max(actual.steps.len()))
        .enumerate()
    {
        let label = |step: &Step, requests: usize, tools: usize| match step {
            Step::Model(m) => format!("request {requests} ({} {})", m.method, m.path),
            Step::Tool(t) => format!("tool exchange {tools} ({} {})", t.kind, t.name),
        };
        let step = pair.1.or(pair.0).expect("one side has this step");
        match step {
            Step::Model(_) => requests += 1,
            Step::Tool(_) => tools += 1,
        }
        let at = label(step, requests, tools);
        match pair {
            (Some(Step::Model(e)), Some(Step::Model(a))) => model(&at, e, a, &mut out),
            (Some(Step::Tool(e)), Some(Step::Tool(a))) => tool(&at, e, a, &mut out),
            (Some(e), Some(_)) => out.push(Change {
                at,
                what: format!(
                    "exchange {} is of another kind: expected {}",
                    index + 1,
                    label(e, requests, tools)
                ),
            }),
            (None, Some(_)) => out.push(Change {
                at,
                what: "is new: the expected run has no such exchange here".to_owned(),
            }),
            (Some(_), None) => out.push(Change {
                at,
                what: "is gone: the run ended before it".to_owned(),
            }),
            (None, None) => {}
        }
    }
    if expected.result != actual.result || expected.unfinished != actual.unfinished {
        let describe = |n: &Normalized| match (&n.result, &n.unfinished) {
            (Some(r), _) => serde_json::to_string(r).unwrap_or_default(),
            (None, Some(why)) => format!("no result ({why})"),
            (None, None) => "no result".to_owned(),
        };
        out.push(Change {
            at: "result".to_owned(),
            what: format!("{} instead of {}", describe(actual), describe(expected)),
        });
    }
    out
}

fn model(at: &str, expected: &ModelStep, actual: &ModelStep, out: &mut Vec<Change>) {
    let mut push = |what: String| {
        out.push(Change {
            at: at.to_owned(),
            what,
        })
    };
    if (&expected.method, &expected.path) != (&actual.method, &actual.path) {
        push(format!(
            "goes to {} {} instead of {} {}",
            actual.method, actual.path, expected.method, expected.path
        ));
    }
    for (name, value) in &actual.headers {
        match expected.headers.get(name) {
            None => push(format!("header `{name}` is new: {value:?}")),
            Some(was) if was != value => {
                push(format!("header `{name}` is {value:?} instead of {was:?}"))
            }
            Some(_) => {}
        }
    }
    for name in expected.headers.keys() {
        if !actual.headers.contains_key(name) {
            push(format!("header `{name}` is gone"));
        }
    }
    match (expected.connection, actual.connection) {
        (was, now) if was == now => {}
        (Some(was), None) => push(format!(
            "came over HTTP instead of WebSocket connection {was}"
        )),
        (None, Some(now)) => push(format!(
            "came over WebSocket connection {now} instead of HTTP"
        )),
        (Some(was), Some(now)) => push(format!(
            "came on WebSocket connection {now} instead of connection {was}"
        )),
        (None, None) => {}
    }
    fields(&expected.body, &actual.body, &mut push);
    if expected.answer != actual.answer {
        push(format!(
            "was answered {} instead of {}",
            serde_json::to_string(&actual.answer).unwrap_or_default(),
            serde_json::to_string(&expected.answer).unwrap_or_default()
        ));
    }
}

/// Top-level keys of a body; `input` and `tools` item by item.
fn fields(expected: &Value, actual: &Value, push: &mut impl FnMut(String)) {
    let (Some(e), Some(a)) = (expected.as_object(), actual.as_object()) else {
        if !json_equal(expected, actual) {
            push(format!(
                "the body is {} instead of {}",
                quote(actual),
                quote(expected)
            ));
        }
        return;
    };
    for (key, value) in a {
        match e.get(key) {
            None => push(format!("`{key}` is new: {}", quote(value))),
            Some(was) if json_equal(was, value) => {}
            Some(Value::Array(was)) if matches!(key.as_str(), "input" | "tools") => {
                items(key, was, value.as_array().map_or(&[][..], |v| v), push)
            }
            Some(was) => push(format!(
                "`{key}` is {} instead of {}",
                quote(value),
                quote(was)
            )),
        }
    }
    for key in e.keys() {
        if !a.contains_key(key) {
            push(format!("`{key}` is gone (was {})", quote(&e[key])));
        }
    }
}

fn items(key: &str, expected: &[Value], actual: &[Value], push: &mut impl FnMut(String)) {
    for index in 0..expected.len().max(actual.len()) {
        match (expected.get(index), actual.get(index)) {
            (Some(e), Some(a)) if !json_equal(e, a) => {
                let kind = a["type"].as_str().or(a["role"].as_str()).unwrap_or("item");
                let mut detail = Vec::new();
                if let (Some(eo), Some(ao)) = (e.as_object(), a.as_object()) {
                    for (field, value) in ao {
                        match eo.get(field) {
                            None => detail.push(format!("`{field}` is new: {}", quote(value))),
                            Some(was) if !json_equal(was, value) => detail.push(format!(
                                "`{field}` is {} instead of {}",
                                quote(value),
                                quote(was)
                            )),
                            Some(_) => {}
                        }
                    }
                    for field in eo.keys().filter(|f| !ao.contains_key(*f)) {
                        detail.push(format!("`{field}` is gone"));
                    }
                } else {
                    detail.push(format!("{} instead of {}", quote(a), quote(e)));
                }
                push(format!(
                    "{key}[{index}] ({kind}) changed: {}",
                    detail.join(", ")
                ));
            }
            (None, Some(a)) => push(format!("{key}[{index}] is new: {}", quote(a))),
            (Some(e), None) => push(format!("{key}[{index}] is gone (was {})", quote(e))),
            _ => {}
        }
    }
}

fn tool(at: &str, expected: &ToolStep, actual: &ToolStep, out: &mut Vec<Change>) {
    let e = serde_json::to_value(expected).unwrap_or_default();
    let a = serde_json::to_value(actual).unwrap_or_default();
    fields(&e, &a, &mut |what| {
        out.push(Change {
            at: at.to_owned(),
            what,
        })
    });
}

/// A change as it reads with its request (or exchange) numbers taken out, and the first
/// number taken out: "request 2 (POST /v1/responses): `max_output_tokens` is new: 256"
/// and the same change at request 3 are one change, `request (POST /v1/responses):
/// `max_output_tokens` is new: 256`, which is how drift over many requests and many case
/// runs is grouped. Numbers inside a quoted value are the value's and stay.
pub fn grouping_key(change: &str) -> (String, Option<u64>) {
    let mut key = String::with_capacity(change.len());
    let mut first = None;
    let mut rest = change;
    while !rest.is_empty() {
        // Outside quotes: the text up to the next `"` (or the end).
        let end = rest.find('"').unwrap_or(rest.len());
        let (plain, after) = rest.split_at(end);
        key.push_str(&numbers_out(plain, &mut first));
        // Inside quotes: copied as is, up to the closing unescaped `"`.
        let Some(quoted) = after.strip_prefix('"') else {
            break;
        };
        let mut escaped = false;
        let close = quoted
            .char_indices()
            .find(|&(_, c)| {
                let closes = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                closes
            })
            .map_or(quoted.len(), |(at, _)| at + 1);
        key.push('"');
        key.push_str(&quoted[..close]);
        rest = &quoted[close..];
    }
    (key, first)
}

/// `plain` with each `request N` and `exchange N` made `request` and `exchange`; the
/// first N goes to `first` when it has none yet.
fn numbers_out(plain: &str, first: &mut Option<u64>) -> String {
    static NUMBERED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\b(request|exchange) ([0-9]+)\b").expect("the pattern compiles")
    });
    NUMBERED
        .replace_all(plain, |caps: &regex::Captures<'_>| {
            if first.is_none() {
                *first = caps[2].parse().ok();
            }
            caps[1].to_owned()
        })
        .into_owned()
}

/// A unified line diff of the two transcripts' renderings, expected (-) against actual
/// (+), with a few lines of context.
pub fn text_diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::StateMode;
    use crate::transcript::normalize::Answer;
    use crate::transcript::normalize::test_steps::normalized;

    fn request(body: Value) -> Step {
        let answer = Answer {
            status: 200,
            turn: Some(0),
            response_status: Some("completed".to_owned()),
            fault: None,
            rejected_by: None,
            streamed: false,
        };
        crate::transcript::normalize::test_steps::request(body, answer)
    }

    fn run(steps: Vec<Step>) -> Normalized {
        normalized("c", StateMode::Stateless, steps)
    }

    /// The changes from `expected` to `actual`, as the report words them.
    fn described(expected: &Normalized, actual: &Normalized) -> Vec<String> {
        changes(expected, actual)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_new_field_is_named_with_its_request() {
        let expected = run(vec![
            request(json!({"model": "gpt-5"})),
            request(json!({"model": "gpt-5"})),
        ]);
        let actual = run(vec![
            request(json!({"model": "gpt-5"})),
            request(json!({"model": "gpt-5", "max_output_tokens": 256})),
        ]);
        assert_eq!(
            described(&expected, &actual),
            ["request 2 (POST /v1/responses): `max_output_tokens` is new: 256"]
        );
        assert!(changes(&expected, &expected).is_empty());
    }

    #[test]
    fn an_input_item_that_changed_is_named_by_index_and_field() {
        let item = |text: &str| json!({"type": "function_call_output", "call_id": "call_1", "output": text});
        let expected = run(vec![request(json!({"input": [item("8")]}))]);
        let actual = run(vec![request(json!({"input": [item("9"), item("1")]}))]);
        assert_eq!(
            described(&expected, &actual),
            [
                "request 1 (POST /v1/responses): input[0] (function_call_output) changed: `output` is \"9\" instead of \"8\"",
                "request 1 (POST /v1/responses): input[1] is new: {\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"1\"}",
            ]
        );
    }

    #[test]
    fn the_same_change_at_another_request_has_the_same_key() {
        let at =
            |n: u32| format!("request {n} (POST /v1/responses): `max_output_tokens` is new: 256");
        let (key, first) = grouping_key(&at(2));
        assert_eq!(
            key,
            "request (POST /v1/responses): `max_output_tokens` is new: 256"
        );
        assert_eq!(first, Some(2));
        assert_eq!(grouping_key(&at(3)).0, key);
        assert_ne!(
            grouping_key("request 2 (POST /v1/responses): `max_output_tokens` is new: 512").0,
            key,
            "another value is another change"
        );
        assert_eq!(
            grouping_key("tool exchange 4 (call get_weather): `status` is 500 instead of 200"),
            (
                "tool exchange (call get_weather): `status` is 500 instead of 200".to_owned(),
                Some(4)
            )
        );
        assert_eq!(
            grouping_key("result: {} instead of no result"),
            ("result: {} instead of no result".to_owned(), None)
        );
    }

    #[test]
    fn numbers_in_a_quoted_value_stay_in_the_key() {
        let change = r#"request 1 (POST /v1/responses): `instructions` is "see request 7, \"exchange 2\"" instead of "x""#;
        assert_eq!(
            grouping_key(change).0,
            r#"request (POST /v1/responses): `instructions` is "see request 7, \"exchange 2\"" instead of "x""#
        );
        let near = "request 3 matches no recorded request; the closest is recorded request 3, which differs in 1 way(s): `store` is new: true";
        assert_eq!(
            grouping_key(near),
            (
                "request matches no recorded request; the closest is recorded request, which differs in 1 way(s): `store` is new: true".to_owned(),
                Some(3)
            )
        );
    }

    #[test]
    fn a_missing_request_is_named() {
        let expected = run(vec![request(json!({})), request(json!({}))]);
        let actual = run(vec![request(json!({}))]);
        assert_eq!(
            described(&expected, &actual),
            ["request 2 (POST /v1/responses): is gone: the run ended before it"]
        );
    }
}
