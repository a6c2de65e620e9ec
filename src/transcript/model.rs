//! The transcript's records: each exchange with the fake API and the tool backend, and how the run ended.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ControllerResult, LazyJson, RecordedHeaders};
use crate::redact::Redactor;

/// Everything that happened in one case run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Transcript {
    /// Model API exchanges, in arrival order.
    pub model: Vec<ModelExchange>,
    /// Tool backend exchanges (calls and approvals), in arrival order.
    pub tools: Vec<ToolExchange>,
    /// Webhook events the server POSTed to the controller's endpoint, one per attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<WebhookDelivery>,
    /// The controller's result line, as parsed.
    pub result: Option<ControllerResult>,
    /// How the controller ended when it gave no valid result: killed at the timeout, or
    /// finished without a result line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<Unfinished>,
    /// What the process did (absent for in-process controllers).
    pub process: Option<ProcessRecord>,
    /// What happened to WebSocket connections besides their creates: opened, refused
    /// messages, closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sockets: Vec<SocketEvent>,
}

/// What happened on a WebSocket connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SocketEventKind {
    /// The upgrade was accepted.
    Opened,
    /// A message that is no client event the server takes, answered with an error event.
    Refused,
    /// The connection ended: a close frame either way, or the transport went.
    Closed,
}

/// One thing that happened on a WebSocket connection that is not a model exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketEvent {
    /// Global order across every exchange.
    pub seq: u64,
    /// Milliseconds since the session started.
    pub at_ms: u64,
    /// The connection's number in its session (from 1).
    pub connection: u32,
    /// What happened.
    pub kind: SocketEventKind,
    /// The close code, for `closed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// Why: the error sent for a refused message; the reason, or who closed, for a close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Transcript {
    /// Redacts what the controller printed and reported (its output, result line and why
    /// it gave none), and with `bodies` what it sent (request bodies, tool arguments):
    /// a replayed recording is judged redacted, as the recording was written.
    pub fn redact(&mut self, redactor: &Redactor, bodies: bool) {
        let text = |text: &mut String| {
            if let Cow::Owned(redacted) = redactor.text(text) {
                *text = redacted;
            }
        };
        if let Some(process) = &mut self.process {
            text(&mut process.stdout);
            text(&mut process.stderr);
        }
        if let Some(result) = &mut self.result {
            result.output_text.iter_mut().for_each(text);
            result.detail.iter_mut().for_each(text);
        }
        if let Some(Unfinished::NoResult { why }) = &mut self.unfinished {
            text(why);
        }
        if bodies {
            for exchange in &mut self.model {
                redactor.body(&mut exchange.body);
            }
            for exchange in &mut self.tools {
                redactor.body(&mut exchange.arguments);
            }
        }
    }
}

/// Why a controller gave no valid result (judged by `terminal/finished` and
/// `terminal/result-line`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Unfinished {
    /// Still running at the case timeout, and killed.
    TimedOut {
        /// How long it had run.
        after_ms: u64,
    },
    /// A persistent worker that had not taken its first case line at the start-up
    /// timeout, and was killed.
    StartupTimedOut {
        /// How long it had been starting.
        after_ms: u64,
    },
    /// Stopped by loopcheck once its model requests passed the case's request limit:
    /// a loop with no round limit (judged by `budget/max-rounds`).
    StoppedOverLimit {
        /// The model requests it had made.
        requests: usize,
        /// The model requests the case's budget allows.
        budget: usize,
        /// The request limit it passed.
        limit: usize,
    },
    /// Ended without a valid result line.
    NoResult {
        /// What was wrong with what it printed.
        why: String,
    },
}

/// One HTTP request to the fake Responses API and its answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelExchange {
    /// Global order across model and tool exchanges.
    pub seq: u64,
    /// Milliseconds since the session started.
    pub at_ms: u64,
    /// HTTP method.
    pub method: String,
    /// Request path (with query).
    pub path: String,
    /// Request headers, lowercase names, secrets redacted.
    pub headers: RecordedHeaders,
    /// The request body: JSON when it parsed, else the raw text as a string.
    pub body: LazyJson,
    /// True when `body` holds raw text that was not JSON.
    pub body_unparsed: bool,
    /// HTTP status answered.
    pub status: u16,
    /// The answer body (for a stream, the array of its events).
    pub response: LazyJson,
    /// The strict-emulation rule that rejected the request, if any (`E1`..`E13`, ...).
    pub rejected_by: Option<String>,
    /// 0-based index of the script turn served, for accepted create requests.
    pub turn: Option<usize>,
    /// The transport fault answered instead of the turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultRecord>,
    /// For a streamed answer: what was sent and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamRecord>,
    /// For a background create: the terminal response the turn will become.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_response: Option<LazyJson>,
    /// The WebSocket connection (numbered from 1 in each session) a `response.create`
    /// came on; absent for HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<u32>,
    /// A WebSocket `response.create` with `generate: false`: a warm-up, answered with a
    /// response without output that is no model turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm_up: bool,
}

impl ModelExchange {
    /// True for `POST .../responses` (a model request).
    pub fn is_create(&self) -> bool {
        self.method == "POST"
            && self
                .path
                .split('?')
                .next()
                .is_some_and(|p| p.ends_with("/responses"))
    }

    /// The served response, when this create request got a scripted turn (for a
    /// background create, the terminal response it became).
    pub fn served(&self) -> Option<&Value> {
        self.turn
            .map(|_| self.final_response.as_deref().unwrap_or(&self.response))
    }

    /// Whether the turn served to this request was a failed response.
    pub fn served_failed(&self) -> bool {
        self.served()
            .is_some_and(|response| response["status"] == "failed")
    }

    /// Whether the strict emulation of the real API rejected the request (a request past
    /// the script's end, rule `script`, is not the API's rejection).
    pub fn rejected_by_api(&self) -> bool {
        self.rejected_by
            .as_deref()
            .is_some_and(|rule| rule != "script")
    }

    /// The `x-stainless-retry-count` the client sent, if any.
    pub fn retry_count(&self) -> Option<u32> {
        self.headers
            .get("x-stainless-retry-count")
            .and_then(|v| v.trim().parse().ok())
    }
}

/// A transport fault answered to one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// HTTP status (none when the connection was dropped).
    pub status: Option<u16>,
    /// The delay the answer asked for (`retry-after-ms`, or `retry-after` in ms).
    pub retry_after_ms: Option<u64>,
    /// `x-should-retry`, when sent.
    pub should_retry: Option<bool>,
    /// The connection was closed without an answer.
    pub dropped: bool,
    /// The answer was delayed this long.
    pub delay_ms: u64,
}

/// What a streamed answer sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// Events planned.
    pub planned: usize,
    /// Events actually written.
    pub sent: usize,
    /// The connection was closed before the terminal event, on purpose.
    pub cut: bool,
    /// The type of the last event planned (`response.completed`, `error`, ...).
    pub last_type: Option<Cow<'static, str>>,
    /// Global order number at which each call's `output_item.done` was written.
    pub call_done_seq: BTreeMap<String, u64>,
    /// Global order number at which the stream ended.
    pub ended_seq: Option<u64>,
}

/// One request to the fixture tool backend.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolExchange {
    /// Global order across model and tool exchanges.
    pub seq: u64,
    /// Milliseconds since the session started.
    pub at_ms: u64,
    /// `call` or `approval`.
    pub kind: ToolRequestKind,
    /// Tool name (from the path for calls, from the body for approvals).
    pub name: String,
    /// `call_id` the controller sent.
    pub call_id: Option<String>,
    /// Arguments the controller sent.
    pub arguments: Value,
    /// Principal the controller sent.
    pub principal: Option<String>,
    /// Approval token the controller sent with a call.
    pub approval: Option<String>,
    /// HTTP status answered.
    pub status: u16,
    /// The answer body.
    pub response: Value,
    /// True when this request had a side effect (first successful execution of a call_id).
    pub effect: bool,
    /// How long the answer was held (a scripted slow tool); 0 when answered at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

/// One attempt at delivering a webhook event to the controller's registered endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// Global order across exchanges and deliveries (taken when the attempt ended).
    pub seq: u64,
    /// Milliseconds since the session started.
    pub at_ms: u64,
    /// The event's `id` (and `webhook-id` header).
    pub event_id: String,
    /// The event's `type`, e.g. `response.completed`.
    pub event_type: String,
    /// The response the event names (`data.id`).
    pub response_id: String,
    /// Signed with a key the controller was never given, naming a response that does
    /// not exist: a receiver must reject it.
    pub forged: bool,
    /// 1 for the first attempt; retries follow a non-2xx answer.
    pub attempt: u32,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Why no answer came (refused, timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// What a tool-backend request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRequestKind {
    /// `POST /call/{name}`.
    Call,
    /// `POST /approvals`.
    Approval,
}

impl ToolRequestKind {
    /// `call` or `approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Call => "call",
            Self::Approval => "approval",
        }
    }
}

/// How the controller process ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// Exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Standard output (capped).
    pub stdout: String,
    /// Standard error (capped).
    pub stderr: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}
