//! The normalized transcript: what a controller sent in one case, with everything that
//! changes from run to run replaced by stable placeholders, so two runs of the same
//! controller compare equal and a change in what it sends stands out. Snapshots and
//! replay drift compare these.
//!
//! Response, item and call ids are renumbered in order of first appearance (`resp_1`,
//! `fc_1`, `call_1`...), consistently across the whole transcript; encrypted content,
//! approval tokens, program fingerprints and request ids are replaced, and secrets
//! redacted by the one redactor (`redact`), as everywhere loopcheck writes; drops
//! ports and temporary paths from strings; leaves out durations and timestamps; and keeps
//! only the headers that describe the request (not the client's platform, retry count or
//! connection). Tool-backend exchanges between two model requests are listed in the order
//! of the calls they serve, since a controller may run calls in parallel.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ControllerResult, ModelExchange, ToolExchange, ToolRequestKind, Transcript, Unfinished,
};
use crate::contract::StateMode;
use crate::redact::Redactor;

/// The version of the normalized transcript's format.
///
/// Changelog:
/// - 1: `{"format", "case", "state", "steps": [{"model": {"method", "path", "headers",
///   "body", "answer": {"status", "turn"?, "response_status"?, "fault"?, "rejected_by"?,
///   "streamed"?}}} | {"tool": {"kind", "name", "call_id"?, "arguments", "principal"?,
///   "approval"?, "status", "response"}}], "result"?, "unfinished"?}`; compatible
///   addition: a tool step's `delay_ms` (a held answer of a slow tool), when not 0; a
///   model step's `connection` (the WebSocket connection a `response.create` came on)
///   and `warm_up` (one with `generate: false`), when set.
pub const NORMALIZED_FORMAT: u32 = 1;

/// One case run, normalized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Normalized {
    /// [`NORMALIZED_FORMAT`].
    pub format: u32,
    /// The case id.
    pub case: String,
    /// The state mode.
    pub state: StateMode,
    /// Every exchange, in order.
    pub steps: Vec<Step>,
    /// The controller's result line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ControllerResult>,
    /// How it ended without one: `timed-out` or the reason there was no result line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<String>,
}

impl Normalized {
    /// A transcript with no exchange and no result.
    pub fn empty() -> Self {
        Self {
            format: NORMALIZED_FORMAT,
            case: String::new(),
            state: StateMode::PreviousResponseId,
            steps: Vec::new(),
            result: None,
            unfinished: None,
        }
    }
}

/// One exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A request to the fake Responses API.
    Model(ModelStep),
    /// A request to the fixture tool backend.
    Tool(ToolStep),
}

/// A model request and how it was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelStep {
    /// HTTP method.
    pub method: String,
    /// Path and query, ids renumbered.
    pub path: String,
    /// The headers that describe the request.
    pub headers: BTreeMap<String, String>,
    /// The body as sent, normalized.
    pub body: Value,
    /// The WebSocket connection it came on (numbered from 1 in each run), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<u32>,
    /// A WebSocket warm-up (`generate: false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm_up: bool,
    /// How the fake server answered it.
    pub answer: Answer,
}

/// How a model request was answered: which scripted turn, or which fault or rejection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The 0-based script turn served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// The served response's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<String>,
    /// The scripted fault answered instead (`429`, `dropped`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// The strict-emulation rule that rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_by: Option<String>,
    /// Answered as a stream of events.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
}

/// A tool-backend request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolStep {
    /// `call` or `approval`.
    pub kind: String,
    /// The tool.
    pub name: String,
    /// The call_id sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The arguments sent.
    pub arguments: Value,
    /// The principal sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The approval token sent with a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// HTTP status answered.
    pub status: u16,
    /// The answer, normalized.
    pub response: Value,
    /// How long the answer was held (a scripted slow tool), when it was.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Headers that say nothing about what the controller asked for: the client's platform
/// and version, its retry count and timeouts, the connection, and what the body's length
/// already says. `authorization` is redacted when recorded.
fn volatile_header(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "content-length"
            | "connection"
            | "accept-encoding"
            | "user-agent"
            | "authorization"
            | "traceparent"
            | "tracestate"
    ) || name.starts_with("x-stainless-")
}

/// Values that change from run to run, by the placeholder kind they get.
static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?P<id>(?:resp|rs|fc|fco|msg|cm|cmo|conv|item)_[0-9a-f]{48})\b",
        r"|\b(?P<call>call_[0-9A-Za-z]{24})\b",
        r"|\b(?P<apr>apr_[0-9a-f]{24})\b",
        r"|\b(?P<fp>fp_[0-9A-Za-z]{43})\b",
        r"|\b(?P<req>req_[0-9a-f]{32})\b",
        r"|(?P<enc>gAAAAAB[0-9A-Za-z_-]{20,}={0,2})",
        r"|(?P<port>(?:127\.0\.0\.1|localhost):[0-9]{2,5})",
        r"|(?P<temp>/tmp/loopcheck-[0-9A-Za-z._-]+)",
    ))
    .expect("the volatile-value pattern compiles")
});

/// Renumbers volatile values in order of first appearance.
#[derive(Default)]
struct Placeholders {
    seen: HashMap<String, String>,
    counts: HashMap<String, usize>,
}

impl Placeholders {
    fn placeholder(&mut self, value: &str, kind: &str) -> String {
        if let Some(known) = self.seen.get(value) {
            return known.clone();
        }
        let count = self.counts.entry(kind.to_owned()).or_insert(0);
        *count += 1;
        let placeholder = match kind {
            "enc" => format!("[encrypted_content {count}]"),
            "port" => "127.0.0.1:[port]".to_owned(),
            "temp" => "[temp]".to_owned(),
            prefix => format!("{prefix}_{count}"),
        };
        self.seen.insert(value.to_owned(), placeholder.clone());
        placeholder
    }

    fn text(&mut self, text: &str) -> String {
        // Secrets first: a key is redacted whole, never renumbered in part.
        let text = crate::redact::installed().text(text);
        VOLATILE
            .replace_all(&text, |caps: &Captures| {
                let (name, matched) = ["id", "call", "apr", "fp", "req", "enc", "port", "temp"]
                    .iter()
                    .find_map(|name| caps.name(name).map(|m| (*name, m.as_str())))
                    .expect("one group matched");
                let kind = match name {
                    "id" => matched.split('_').next().unwrap_or("item"),
                    other => other,
                };
                self.placeholder(matched, kind)
            })
            .into_owned()
    }

    fn value(&mut self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(key, v)| (key.clone(), self.value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Gives numbers to the ids in `value` without keeping the result: a response's ids
    /// are numbered when the server sends them, before the controller echoes them.
    fn see(&mut self, value: &Value) {
        let _ = self.value(value);
    }
}

/// A transcript's exchanges in a stable order: model exchanges as they came, and the
/// tool exchanges between two of them in the order of the calls they serve (approval
/// before execution, attempts in order).
fn canonical_order(transcript: &Transcript) -> Vec<Entry<'_>> {
    let mut issued: Vec<String> = Vec::new();
    let mut entries: Vec<Entry<'_>> = Vec::new();
    let mut window: Vec<&ToolExchange> = Vec::new();
    let mut tools = transcript.tools.iter().peekable();
    for model in &transcript.model {
        while let Some(tool) = tools.next_if(|t| t.seq < model.seq) {
            window.push(tool);
        }
        entries.extend(in_call_order(&mut window, &issued).map(Entry::Tool));
        if let Some(served) = model.served() {
            issued.extend(
                served["output"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|item| item["type"] == "function_call")
                    .filter_map(|item| item["call_id"].as_str().map(str::to_owned)),
            );
        }
        entries.push(Entry::Model(model));
    }
    window.extend(tools);
    entries.extend(in_call_order(&mut window, &issued).map(Entry::Tool));
    entries
}

/// Drains tool exchanges sorted by the position of their call among the calls issued,
/// approvals before executions, then in arrival order.
fn in_call_order<'w, 'a>(
    window: &'w mut Vec<&'a ToolExchange>,
    issued: &[String],
) -> std::vec::Drain<'w, &'a ToolExchange> {
    let position = |t: &ToolExchange| {
        t.call_id
            .as_deref()
            .and_then(|id| issued.iter().position(|i| i == id))
            .unwrap_or(usize::MAX)
    };
    window.sort_by_key(|t| (position(t), t.kind != ToolRequestKind::Approval, t.seq));
    window.drain(..)
}

enum Entry<'a> {
    Model(&'a ModelExchange),
    Tool(&'a ToolExchange),
}

/// Normalizes one case run's transcript.
pub fn normalize(case: &str, state: StateMode, transcript: &Transcript) -> Normalized {
    let mut redactor = Placeholders::default();
    let mut steps = Vec::new();
    for entry in canonical_order(transcript) {
        match entry {
            Entry::Model(m) => {
                let path = redactor.text(&m.path);
                let headers = m
                    .headers
                    .iter()
                    .filter(|(name, _)| !volatile_header(name))
                    .map(|(name, value)| (name.clone(), redactor.text(value)))
                    .collect();
                let body = redactor.value(&m.body);
                let served = m.served();
                if let Some(served) = served {
                    redactor.see(served);
                } else {
                    redactor.see(&m.response);
                }
                steps.push(Step::Model(ModelStep {
                    method: m.method.clone(),
                    path,
                    headers,
                    body,
                    connection: m.connection,
                    warm_up: m.warm_up,
                    answer: Answer {
                        status: m.status,
                        turn: m.turn,
                        response_status: served
                            .unwrap_or(&m.response)
                            .get("status")
                            .and_then(Value::as_str)
                            // A poll that finds the run unfinished, whichever word the
                            // API used for it.
                            .map(|status| match (m.method.as_str(), status) {
                                ("GET", "queued") => "in_progress",
                                (_, status) => status,
                            })
                            .map(str::to_owned),
                        fault: m.fault.as_ref().map(|f| {
                            if f.dropped {
                                "dropped".to_owned()
                            } else {
                                f.status.map_or("delayed".to_owned(), |s| s.to_string())
                            }
                        }),
                        rejected_by: m.rejected_by.clone(),
                        streamed: m.stream.is_some(),
                    },
                }));
            }
            Entry::Tool(t) => {
                let text =
                    |r: &mut Placeholders, v: &Option<String>| v.as_deref().map(|s| r.text(s));
                steps.push(Step::Tool(ToolStep {
                    kind: t.kind.as_str().to_owned(),
                    name: t.name.clone(),
                    call_id: text(&mut redactor, &t.call_id),
                    arguments: redactor.value(&t.arguments),
                    principal: text(&mut redactor, &t.principal),
                    approval: text(&mut redactor, &t.approval),
                    status: t.status,
                    response: redactor.value(&t.response),
                    delay_ms: t.delay_ms,
                }));
            }
        }
    }
    let result = transcript.result.as_ref().map(|r| ControllerResult {
        status: r.status.clone(),
        output_text: r.output_text.as_deref().map(|s| redactor.text(s)),
        reason: r.reason.clone(),
        detail: r.detail.as_deref().map(|s| redactor.text(s)),
    });
    let unfinished = transcript.unfinished.as_ref().map(|u| match u {
        Unfinished::TimedOut { .. } => "timed-out".to_owned(),
        Unfinished::StartupTimedOut { .. } => "startup-timed-out".to_owned(),
        Unfinished::NoResult { why } => redactor.text(why),
        Unfinished::StoppedOverLimit { .. } => "stopped-over-limit".to_owned(),
    });
    Normalized {
        format: NORMALIZED_FORMAT,
        case: case.to_owned(),
        state,
        steps,
        result,
        unfinished,
    }
}

/// Placeholders a normalization gives, to renumber them within one value.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?P<kind>resp|rs|fc|fco|msg|cm|cmo|conv|item|call|apr|fp|req)_[0-9]+\b",
        r"|\[encrypted_content [0-9]+\]",
    ))
    .expect("the placeholder pattern compiles")
});

/// `value` with its volatile values numbered within it alone: the raw ids of a live
/// request and the placeholders a whole transcript's normalization gave the same
/// request both come out as `resp_1`, `call_1`... in order of first appearance, so one
/// request compares with its recording wherever it came in the run.
pub fn renumbered_alone(value: &Value) -> Value {
    let fresh = Placeholders::default().value(value);
    let mut again = Placeholders::default();
    let mut renumber = |text: &str| -> String {
        PLACEHOLDER
            .replace_all(text, |caps: &Captures| {
                let kind = caps.name("kind").map_or("enc", |m| m.as_str());
                again.placeholder(&caps[0], kind)
            })
            .into_owned()
    };
    fn walk(value: &Value, renumber: &mut impl FnMut(&str) -> String) -> Value {
        match value {
            Value::String(text) => Value::String(renumber(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, renumber)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(key, v)| (key.clone(), walk(v, renumber)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    walk(&fresh, &mut renumber)
}

/// The user's JSON pointers on the bodies of normalized steps.
pub fn redact_steps(steps: &mut [Value], redactor: &Redactor) {
    for step in steps {
        let bodies: &[&str] = if step.get("model").is_some() {
            &["/model/body"]
        } else {
            &["/tool/arguments", "/tool/response"]
        };
        for pointer in bodies {
            if let Some(body) = step.pointer_mut(pointer) {
                redactor.body(body);
            }
        }
    }
}

#[cfg(test)]
mod renumbering {
    use serde_json::json;

    use super::renumbered_alone;

    #[test]
    fn raw_ids_and_a_transcripts_placeholders_number_alike_within_one_value() {
        let raw = json!({"previous_response_id": format!("resp_{}", "0a".repeat(24)),
            "input": [{"call_id": "call_AbCdEfGhIjKlMnOpQrStUvWx"},
                {"call_id": "call_ZyXwVuTsRqPoNmLkJiHgFeDc"}]});
        let placeholders = json!({"previous_response_id": "resp_7",
            "input": [{"call_id": "call_4"}, {"call_id": "call_5"}]});
        assert_eq!(renumbered_alone(&raw), renumbered_alone(&placeholders));
        assert_eq!(
            renumbered_alone(&placeholders)["input"][1]["call_id"],
            "call_2"
        );
    }
}

/// Normalized runs built by hand, for the tests that compare them.
#[cfg(test)]
pub(crate) mod test_steps {
    use serde_json::Value;

    use super::{Answer, ModelStep, NORMALIZED_FORMAT, Normalized, Step};
    use crate::contract::StateMode;

    /// A `POST /v1/responses` step sending `body`, answered with `answer`.
    pub fn request(body: Value, answer: Answer) -> Step {
        Step::Model(ModelStep {
            method: "POST".to_owned(),
            path: "/v1/responses".to_owned(),
            headers: Default::default(),
            body,
            connection: None,
            warm_up: false,
            answer,
        })
    }

    /// A run of `case` in `state` that took `steps` and ended without a result.
    pub fn normalized(case: &str, state: StateMode, steps: Vec<Step>) -> Normalized {
        Normalized {
            format: NORMALIZED_FORMAT,
            case: case.to_owned(),
            state,
            steps,
            result: None,
            unfinished: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_are_renumbered_in_order_of_first_appearance_everywhere() {
        let mut r = Placeholders::default();
        let fc = format!("fc_{}", "a".repeat(48));
        let call = "call_AbCdEfGhIjKlMnOpQrStUvWx";
        let first =
            r.value(&json!({"id": fc, "call_id": call, "output": format!("{call} failed")}));
        assert_eq!(
            first,
            json!({"id": "fc_1", "call_id": "call_1", "output": "call_1 failed"})
        );
        let other = format!("fc_{}", "b".repeat(48));
        assert_eq!(r.text(&other), "fc_2");
        assert_eq!(r.text(&fc), "fc_1");
        assert_eq!(
            r.text("http://127.0.0.1:41234/v1"),
            "http://127.0.0.1:[port]/v1"
        );
        assert_eq!(r.text("key sk-loopcheck-abcdefgh123"), "key [redacted]");
        assert_eq!(
            r.text("/tmp/loopcheck-case-Ab12/task.json"),
            "[temp]/task.json"
        );
    }

    #[test]
    fn volatile_headers_are_left_out() {
        assert!(volatile_header("x-stainless-retry-count"));
        assert!(volatile_header("user-agent"));
        assert!(!volatile_header("content-type"));
        assert!(!volatile_header("openai-beta"));
    }
}
