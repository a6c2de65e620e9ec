//! The scenario file model: one conformance case.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{Delivery, StateMode};

/// The newest scenario format version this build reads (it reads every older one too).
///
/// Changelog:
/// - 1: first version (task, fixture tool behaviour, script of turns, expected outcome);
///   compatible additions: `task.stream`, `task.background`, turn `faults`, `stream`,
///   `polls`, `program` / `program_output` items, call `caller`, tool `unavailable`;
///   an `endless` turn may be empty (a model that keeps answering with nothing).
/// - 2: recordings (`loopcheck record`): a turn may hold a `recorded` response (and its
///   stream events with their delays) served verbatim instead of `output`; a top-level
///   `recorded` section holds the normalized requests the recording saw, which a replay
///   is compared with. A fault's `body` that is JSON is served as JSON.
///   Compatible additions: a scenario's `origin`; a deny rule's `after`; a stream's
///   `interleave`; optional budgets `task.deadline_ms`, `task.max_tool_calls`,
///   `task.tool_timeout_ms`, and a tool's `slow` answers (`when`, `delay_ms`,
///   `attempts`); a stream's `done_delay_ms` and `terminal_delay_ms`; a tool's `rate_limited` answers (`when`,
///   `attempts`, `retry_after`, `retry_after_ms`) and an `unavailable` rule without
///   `attempts` (a tool that stays down); a case's `deliveries`; `mcp_approval` and
///   `hosted` output items; an `unavailable` rule's `retry_after_ms`.
///   Also compatible: `shell_call`, `local_shell_call` and `apply_patch_call` items, and
///   inline tools known by their type (`{type: shell}`, `local_shell`, `apply_patch`);
///   `task.compact_after_rounds`, `task.context_management`, `task.text_format` and
///   `task.include`, and `compaction` output items; a turn's `computer_call` output
///   items (`action` or `actions`, `pending_safety_checks`); a call's `namespace`, and
///   `namespace` tools; `tool_search_call` and `tool_search_output` output items.
///   Also compatible: the `recorded` section's `match_on` (requests matched by key, not
///   order) and `continues` (the turn each recorded request continued).
pub const FORMAT_VERSION: u32 = 2;

/// For `skip_serializing_if`: a field at its default is left out of a written scenario.
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// RFC 2119 level of a case or a check.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// MUST: a failure is a `fail`.
    Must,
    /// SHOULD: a failure is `non-strict`.
    Should,
    /// MAY: a failure is `info`.
    May,
}

impl Level {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Must => "must",
            Self::Should => "should",
            Self::May => "may",
        }
    }

    /// The weaker of two levels (a MUST check inside a SHOULD case weighs as SHOULD).
    pub fn weakest(self, other: Self) -> Self {
        self.max(other)
    }
}

fn default_states() -> Vec<StateMode> {
    vec![StateMode::PreviousResponseId, StateMode::Stateless]
}

/// One conformance case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The format version the file is written in: 1, or 2 (the newest, [`FORMAT_VERSION`]).
    pub format: u32,
    /// Stable id, `area/name` (e.g. `correlation/05-parallel-same-tool`).
    pub id: String,
    /// What the case probes and why it matters.
    pub summary: String,
    /// How much a failure of this case weighs.
    pub level: Level,
    /// Where the case's rule comes from: `guide: <rule>`, or `report: owner/repo#N` for
    /// a public bug report the case reproduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Free tags for filtering.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tags: Vec<String>,
    /// The task handed to the controller.
    pub task: TaskSpec,
    /// The state modes the case runs in.
    #[serde(default = "default_states")]
    pub states: Vec<StateMode>,
    /// The deliveries the case runs in. By default a case runs with JSON responses and
    /// again streamed, for controllers that declare `stream`; a `task.stream: true` case
    /// runs streamed only, and a background case or a recording as it is written. A case
    /// runs over the WebSocket mode only when it lists `websocket` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<Delivery>>,
    /// Scripted behaviour of the fixture tools, by tool name.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tools: BTreeMap<String, ToolBehaviour>,
    /// The model's turns, one per accepted request.
    pub script: Vec<Turn>,
    /// What a correct controller reports.
    pub expect: Expectation,
    /// For a recording: what the controller sent when it was recorded; a replay that
    /// sends something else is `drift`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Recorded>,
}

/// What a recording saw the controller send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    /// The upstream it was recorded from.
    pub upstream: String,
    /// The user's redaction rules (JSON pointers), applied to a replay before it is
    /// compared, as they were to the recording.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact_json: Vec<String>,
    /// The user's redaction rules (regular expressions), likewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact_regex: Vec<String>,
    /// How a replay matches requests to recorded turns (`[method, path, body]`): by key,
    /// the first unused turn whose request has the same; absent, in recorded order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub match_on: Option<crate::transcript::request_key::MatchOn>,
    /// By turn: the turn whose response its request continued (`previous_response_id`),
    /// so a request matched by key continues the same conversation it did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continues: Vec<Option<usize>>,
    /// Every exchange, normalized.
    #[schemars(with = "serde_json::Value")]
    pub transcript: crate::transcript::normalize::Normalized,
}

impl Scenario {
    /// The area: the part of the id before the first `/`.
    pub fn area(&self) -> &str {
        self.id.split('/').next().unwrap_or(&self.id)
    }

    /// The delivery the file asks for: `websocket` when `task.websocket` is set, `stream`
    /// when `task.stream` is.
    pub fn delivery(&self) -> Delivery {
        if self.task.websocket {
            Delivery::WebSocket
        } else if self.task.stream {
            Delivery::Stream
        } else {
            Delivery::Json
        }
    }

    /// The deliveries the case runs in: the file's `deliveries`, else every delivery its
    /// script allows. A streamed case's stream is what it probes, so it runs streamed
    /// only; a background run is polled, not streamed; a recording replays as recorded.
    pub fn run_deliveries(&self) -> Vec<Delivery> {
        if let Some(deliveries) = &self.deliveries {
            return deliveries.clone();
        }
        let as_written = self.task.stream
            || self.task.websocket
            || self.task.background
            || self.script.iter().any(|turn| turn.recorded.is_some());
        if as_written {
            vec![self.delivery()]
        } else {
            vec![Delivery::Json, Delivery::Stream]
        }
    }

    /// The case as run with `delivery`: the same script, served as JSON bodies or as
    /// events, and a task that asks for that delivery. The socket carries events, so a
    /// run over it is a streamed one too (a controller in socket mode ignores `stream`).
    pub fn delivered(&self, delivery: Delivery) -> Self {
        let mut scenario = self.clone();
        scenario.task.stream = matches!(delivery, Delivery::Stream | Delivery::WebSocket);
        scenario.task.websocket = delivery == Delivery::WebSocket;
        scenario.deliveries = Some(vec![delivery]);
        scenario
    }

    /// The state modes the case runs in: its `states`, with `replay` right after
    /// `stateless`. A loop that replays every item with storage left on faces what a
    /// stateless one does, so every stateless case judges it too, without each file
    /// naming the mode.
    pub fn run_states(&self) -> Vec<StateMode> {
        let mut out = Vec::with_capacity(self.states.len() + 1);
        for state in &self.states {
            if !out.contains(state) {
                out.push(*state);
            }
            if *state == StateMode::Stateless && !self.states.contains(&StateMode::Replay) {
                out.push(StateMode::Replay);
            }
        }
        out
    }
}

fn default_model() -> String {
    "gpt-5".to_owned()
}
fn default_max_rounds() -> u32 {
    6
}
fn default_principal() -> String {
    "user-1".to_owned()
}

/// The task: what the controller is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Model name to send.
    #[serde(default = "default_model")]
    pub model: String,
    /// The first request's `input`: a string or an array of input items.
    pub input: Value,
    /// Instructions to send with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Tools: the name of a built-in fixture tool, or an inline function definition.
    pub tools: Vec<ToolRef>,
    /// Tools whose every call needs an approval first.
    #[serde(default, skip_serializing_if = "is_default")]
    pub approval_required: Vec<String>,
    /// The most model requests the controller may make.
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
    /// The identity tools run for.
    #[serde(default = "default_principal")]
    pub principal: String,
    /// The controller must stream (`stream: true`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub stream: bool,
    /// The controller must use the Responses API's WebSocket mode: one connection to
    /// `/responses`, a `response.create` event per request, each response's events read
    /// to its terminal one. Set by a run over the `websocket` delivery.
    #[serde(default, skip_serializing_if = "is_default")]
    pub websocket: bool,
    /// The controller must run responses in the background and poll them.
    #[serde(default, skip_serializing_if = "is_default")]
    pub background: bool,
    /// Total wall time for the case, from the controller's start: after it, no new model
    /// request and no tool execution, and a failure with reason `timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// The most tool executions (distinct call_ids sent to the backend) for the case; a
    /// call beyond it is not executed and the loop fails with reason `max_tool_calls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// How long the controller waits for one tool request before it answers the call
    /// with an error output (or retries it under the same call_id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<u64>,
    /// Compaction: once this many responses have been answered, the controller compacts
    /// its context (`POST /v1/responses/compact`) and carries on from the compacted
    /// output (capability `compaction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_after_rounds: Option<u32>,
    /// Server-side compaction: the `context_management` list (`[{"type": "compaction",
    /// "compact_threshold": N}]`) the controller sends with every request, so that a
    /// response may carry a `compaction` item (capability `compaction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Value>,
    /// Extra `include` values the controller sends with every request, beside those its
    /// state mode needs (e.g. `message.output_text.logprobs`, for which the fake sends
    /// each output text's token log probabilities).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Structured output: the `text.format` config (`{"type": "json_schema", "name",
    /// "schema", "strict"?}`) the controller sends with every request, and the schema
    /// the final message must parse into before it is reported (capability `text_format`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_format: Option<Value>,
}

impl TaskSpec {
    /// Whether the task sets any of the optional budgets (capability `budgets`).
    pub fn has_budgets(&self) -> bool {
        self.deadline_ms.is_some()
            || self.max_tool_calls.is_some()
            || self.tool_timeout_ms.is_some()
    }
}

/// A tool in the task: a built-in fixture name or an inline definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolRef {
    /// A tool of the built-in fixture toolset (see `loopcheck::tools::fixtures`).
    Fixture(String),
    /// A full `{"type": "function", ...}` definition.
    Inline(Value),
}

/// How one fixture tool answers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolBehaviour {
    /// Results by arguments: the first rule whose `when` matches gives the result.
    #[serde(default, skip_serializing_if = "is_default")]
    pub results: Vec<ResultRule>,
    /// The result when no rule matches (default: an echo of the tool and arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Authorization denials (HTTP 403 from the backend).
    #[serde(default, skip_serializing_if = "is_default")]
    pub deny: Vec<DenyRule>,
    /// Approval decisions for calls to this tool.
    #[serde(default, skip_serializing_if = "is_default")]
    pub approvals: Vec<ApprovalRule>,
    /// Transient failures (HTTP 503) before a call succeeds.
    #[serde(default, skip_serializing_if = "is_default")]
    pub unavailable: Vec<UnavailableRule>,
    /// Slow answers: a tool that does not answer in time.
    #[serde(default, skip_serializing_if = "is_default")]
    pub slow: Vec<SlowRule>,
    /// A field added to each result (when it is an object), holding the number of that
    /// execution of the tool (1, 2, ...): two identical calls make two bookings with two
    /// numbers, so a controller that runs one of them only, or swaps their results, shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numbered: Option<String>,
    /// Rate limiting (HTTP 429, with the delay to wait before retrying) before a call is
    /// served.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rate_limited: Vec<RateLimitRule>,
}

/// A rate-limited tool backend: the first `attempts` requests for a matching call get
/// HTTP 429 carrying `retry-after` (seconds) and/or `retry-after-ms`; later ones are
/// served normally. Without `attempts` every request is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitRule {
    /// Only for arguments matching this subset (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// How many attempts are refused (per call_id); absent: every attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// The `retry-after` header, whole seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The `retry-after-ms` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl RateLimitRule {
    /// The wait the answer asks for, in ms: `retry-after-ms` when given (it is the more
    /// precise, and the SDKs read it first), else `retry-after`.
    pub fn delay_ms(&self) -> Option<u64> {
        self.retry_after_ms
            .or(self.retry_after.map(|seconds| seconds.saturating_mul(1000)))
    }
}

/// A slow tool: the first `attempts` requests for a matching call are decided (and
/// executed) when they arrive, but answered only after `delay_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowRule {
    /// Only for arguments matching this subset (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// How long each held answer waits.
    pub delay_ms: u64,
    /// How many attempts are held (per call_id).
    pub attempts: u32,
}

/// A backend failure: the first `attempts` requests for a matching call get HTTP 503,
/// later ones are served normally; without `attempts` the tool stays down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnavailableRule {
    /// Only for arguments matching this subset (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// How many attempts fail (per call_id); absent: every attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// A `retry-after-ms` header on the 503, so a client that honours it retries that
    /// soon instead of after its own backoff (absent: no header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// A result for matching arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultRule {
    /// Argument subset to match (every key given must be equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// The result returned.
    pub result: Value,
}

/// A denial for a principal and/or resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyRule {
    /// Only for this principal (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Only for arguments matching this subset (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// Only once this many calls of the tool have run: a permission revoked during the
    /// case, which a controller that caches results or authority never sees.
    #[serde(default, skip_serializing_if = "is_default")]
    pub after: u32,
    /// The backend's message.
    pub message: String,
}

/// An approval decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Only for arguments matching this subset (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// Whether the call is approved.
    pub approved: bool,
    /// Why (sent back when denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `Response.status` of a scripted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TurnStatus {
    /// Normal end (also of a tool-call turn).
    #[default]
    Completed,
    /// Cut short; `incomplete_reason` says why.
    Incomplete,
    /// Failed; `error` says why.
    Failed,
}

/// One model turn: the response to one accepted request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Output items in order.
    #[serde(default, skip_serializing_if = "is_default")]
    pub output: Vec<OutputSpec>,
    /// The response status.
    #[serde(default, skip_serializing_if = "is_default")]
    pub status: TurnStatus,
    /// `incomplete_details.reason` (default `max_output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    /// `error` of a failed response (default: a `server_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnError>,
    /// When true, this (last) turn repeats for every later request with fresh ids: a
    /// model that never stops calling tools.
    #[serde(default, skip_serializing_if = "is_default")]
    pub endless: bool,
    /// Transport faults answered to the first attempts at this turn, one per attempt;
    /// the attempt after the last fault is served the turn.
    #[serde(default, skip_serializing_if = "is_default")]
    pub faults: Vec<Fault>,
    /// How the turn is streamed when the request asks for a stream.
    #[serde(default, skip_serializing_if = "is_default")]
    pub stream: StreamSpec,
    /// Background mode: polls that still see the response queued or in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polls: Option<u32>,
    /// A response recorded from a real API, served verbatim instead of `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<RecordedTurn>,
    /// Over the WebSocket mode: once this turn's response is written whole, the server
    /// closes the connection (1001, its time limit reached), as the API does when a
    /// connection's 60 minutes are up, so the controller must reconnect mid-loop.
    #[serde(default, skip_serializing_if = "is_default")]
    pub close_connection: bool,
}

/// A response as a real API sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordedTurn {
    /// The Response object (for a stream, the terminal event's; for a background run,
    /// the terminal one the polls reached).
    pub response: Value,
    /// For a streamed answer: every event as it arrived, with the wait before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<RecordedEvent>,
}

/// One server-sent event as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordedEvent {
    /// Milliseconds since the previous event (or the request).
    #[serde(default)]
    pub after_ms: u64,
    /// The event's JSON.
    pub event: Value,
}

/// One transport fault, answered instead of (or, with only `delay_ms`, before) the turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// HTTP status (429 rate limit, 500 server error, 503 overloaded, 400, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `retry-after` header, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
    /// `retry-after-ms` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// `x-should-retry` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_retry: Option<bool>,
    /// A raw (non-JSON) body, e.g. an edge proxy's HTML page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Close the connection without any response.
    #[serde(default, skip_serializing_if = "is_default")]
    pub drop: bool,
    /// Wait this long before answering (alone: a slow but successful answer).
    #[serde(default, skip_serializing_if = "is_default")]
    pub delay_ms: u64,
}

impl Fault {
    /// True when the attempt is still served the turn (a pure delay).
    pub fn is_delay_only(&self) -> bool {
        self.status.is_none() && !self.drop
    }
}

/// How a streamed turn is delivered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    /// Characters per argument/text delta (default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_size: Option<usize>,
    /// Split function-call arguments at these character offsets instead (hostile
    /// boundaries, e.g. inside a string value).
    #[serde(default, skip_serializing_if = "is_default")]
    pub split_at: Vec<usize>,
    /// Stream consecutive function calls side by side: their argument deltas alternate
    /// between the calls instead of following one another.
    #[serde(default, skip_serializing_if = "is_default")]
    pub interleave: bool,
    /// Write the body this many bytes at a time (1 splits inside multi-byte characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<usize>,
    /// Wait between events.
    #[serde(default, skip_serializing_if = "is_default")]
    pub delay_ms: u64,
    /// Wait this long before each function call's `response.output_item.done` instead of
    /// `delay_ms`: the call's arguments have all arrived, but the call is not done yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_delay_ms: Option<u64>,
    /// Wait this long before the terminal event instead of `delay_ms`: the items are all
    /// done, but the response is still in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_delay_ms: Option<u64>,
    /// Close the connection after this many events, before the terminal event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_after: Option<usize>,
    /// End the stream with an in-stream `error` event after this many events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StreamError>,
}

/// An in-stream `error` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamError {
    /// Events sent before it.
    pub after: usize,
    /// `flat` (documented) or `nested` (as actually sent).
    #[serde(default, skip_serializing_if = "is_default")]
    pub shape: ErrorShape,
    /// Error code.
    #[serde(default = "default_stream_error_code")]
    pub code: String,
    /// Message.
    #[serde(default = "default_stream_error_message")]
    pub message: String,
}

fn default_stream_error_code() -> String {
    "server_error".to_owned()
}
fn default_stream_error_message() -> String {
    "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.".to_owned()
}

/// The two shapes of an in-stream `error` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorShape {
    /// `{"type":"error","error":{...}}`: what the API actually sends.
    #[default]
    Nested,
    /// `{"type":"error","code","message","param"}`: the documented shape.
    Flat,
}

/// `Response.error` of a failed turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnError {
    /// Error code (e.g. `server_error`).
    pub code: String,
    /// Message.
    pub message: String,
}

/// One compact output item, expanded into a full wire item when served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum OutputSpec {
    /// A reasoning item with encrypted content.
    Reasoning(ReasoningSpec),
    /// An assistant message.
    Message(MessageSpec),
    /// An assistant message whose content is a refusal.
    Refusal(String),
    /// A function call.
    Call(CallSpec),
    /// A call to a `custom` tool: free-form text input.
    #[serde(rename = "custom_call")]
    CustomCall(CustomCallSpec),
    /// An MCP approval request: the model asks to call an `mcp` tool whose server
    /// requires approval; the controller answers with an `mcp_approval_response`.
    #[serde(rename = "mcp_approval")]
    McpApproval(McpApprovalSpec),
    /// An item of a hosted tool the server ran (`web_search_call`, `file_search_call`,
    /// `code_interpreter_call`, `image_generation_call`, `mcp_call`, `mcp_list_tools`):
    /// its fields as the API writes them, `type` included; the fake adds its `id`, and a
    /// `status` of `completed` where the kind has one and none is given. An `mcp_call`'s
    /// `arguments` may be an object (sent as its JSON text).
    Hosted(serde_json::Map<String, Value>),
    /// A `shell_call`: commands for the `shell` tool.
    #[serde(rename = "shell_call")]
    ShellCall(ShellCallSpec),
    /// A `local_shell_call`: one command for the `local_shell` tool.
    #[serde(rename = "local_shell_call")]
    LocalShellCall(LocalShellCallSpec),
    /// An `apply_patch_call`: one file operation for the `apply_patch` tool.
    #[serde(rename = "apply_patch_call")]
    ApplyPatchCall(ApplyPatchCallSpec),
    /// A call to the `computer` tool: an action (or a batch of them) to perform.
    #[serde(rename = "computer_call")]
    ComputerCall(ComputerCallSpec),
    /// A `tool_search_call`: a search of the task's deferred tools.
    #[serde(rename = "tool_search_call")]
    ToolSearchCall(ToolSearchCallSpec),
    /// A `tool_search_output` the server made for a server-executed search before it.
    #[serde(rename = "tool_search_output")]
    ToolSearchOutput(ToolSearchOutputSpec),
    /// A `program` item of programmatic tool calling.
    Program(ProgramSpec),
    /// A `program_output` item: the program's result.
    #[serde(rename = "program_output")]
    ProgramOutput(ProgramOutputSpec),
    /// A `compaction` item: server-side compaction (`context_management` on create)
    /// replaced the context before it with an opaque `encrypted_content`.
    Compaction(CompactionSpec),
}

/// A scripted compaction item: its id and encrypted content are drawn when served.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionSpec {}

/// A scripted call to a `custom` tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomCallSpec {
    /// Tool name as the model emits it.
    pub name: String,
    /// The free-form input text, sent verbatim.
    pub input: String,
}

/// A scripted MCP approval request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpApprovalSpec {
    /// The label of the task's `mcp` tool whose server offers the tool.
    pub server_label: String,
    /// The MCP tool's name.
    pub name: String,
    /// Arguments: an object (serialized to a JSON string), or a string sent verbatim.
    pub arguments: Value,
}

impl McpApprovalSpec {
    /// The `arguments` string as sent on the wire.
    pub fn arguments_string(&self) -> std::borrow::Cow<'_, str> {
        match &self.arguments {
            Value::String(raw) => raw.into(),
            other => serde_json::to_string(other)
                .expect("a JSON value serializes")
                .into(),
        }
    }
}

/// A scripted `shell_call`: its `action`, as the model emits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellCallSpec {
    /// The commands to run, in order.
    pub commands: Vec<String>,
    /// The time limit for the commands, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// How many characters of each command's output to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_length: Option<u64>,
    /// The `label` of an earlier `program` item, for a call made by that program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
}

/// A scripted `local_shell_call`: its `exec` action's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalShellCallSpec {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Environment variables to set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The time limit, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The user to run it as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The directory to run it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
}

/// A scripted `apply_patch_call`: its `operation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchCallSpec {
    /// `create_file`, `update_file` or `delete_file`.
    #[serde(rename = "type")]
    pub operation: PatchOperation,
    /// The file's path.
    pub path: String,
    /// The diff to apply (none for `delete_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The `label` of an earlier `program` item, for a call made by that program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
}

/// What an `apply_patch_call` does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchOperation {
    /// Create the file from the diff.
    CreateFile,
    /// Change the file by the diff.
    UpdateFile,
    /// Delete the file.
    DeleteFile,
}

impl ShellCallSpec {
    /// The call's `action` on the wire: the scripted fields but `caller`.
    pub fn action(&self) -> Value {
        let mut action = serde_json::json!({"commands": self.commands});
        if let Some(timeout_ms) = self.timeout_ms {
            action["timeout_ms"] = timeout_ms.into();
        }
        if let Some(length) = self.max_output_length {
            action["max_output_length"] = length.into();
        }
        action
    }
}

impl LocalShellCallSpec {
    /// The call's `exec` action on the wire: every field of the SDK's
    /// `LocalShellCallAction`, the optional ones `null` when not scripted.
    pub fn action(&self) -> Value {
        serde_json::json!({
            "type": "exec",
            "command": self.command,
            "env": self.env,
            "timeout_ms": self.timeout_ms,
            "user": self.user,
            "working_directory": self.working_directory,
        })
    }
}

impl ApplyPatchCallSpec {
    /// The call's `operation` on the wire: the scripted fields but `caller`.
    pub fn operation(&self) -> Value {
        let mut operation = serde_json::json!({"type": self.operation, "path": self.path});
        if let Some(diff) = &self.diff {
            operation["diff"] = diff.as_str().into();
        }
        operation
    }
}

/// A scripted call to the `computer` tool (the SDK's `ResponseComputerToolCall`): one
/// `action` or a batch of `actions` (each `{type: click|double_click|drag|keypress|move|
/// screenshot|scroll|type|wait, ...}`), and the safety checks the controller must put to
/// the approver before it performs them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComputerCallSpec {
    /// One action, sent as `action`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Value>,
    /// A batch of actions, sent as `actions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<Value>>,
    /// `pending_safety_checks`: each must be acknowledged in the answer if, and only if,
    /// the approver approved the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_safety_checks: Vec<SafetyCheckSpec>,
}

impl ComputerCallSpec {
    /// What the call asks to perform, as the backend's `/call/computer` body and the
    /// oracle name it: `{"action": ...}` or `{"actions": [...]}`.
    pub fn input(&self) -> Value {
        let mut input = serde_json::Map::new();
        if let Some(action) = &self.action {
            input.insert("action".to_owned(), action.clone());
        }
        if let Some(actions) = &self.actions {
            input.insert("actions".to_owned(), Value::Array(actions.clone()));
        }
        Value::Object(input)
    }
}

/// A scripted `tool_search_call` (the SDK's `ResponseToolSearchCall`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchCallSpec {
    /// The search's `arguments`, an object (e.g. `{query: ...}`).
    pub arguments: Value,
    /// `client` (the default): the controller runs the search and answers it with a
    /// `tool_search_output`; `server`: a hosted search, with no `call_id`, which a
    /// `tool_search_output` item after it answers and the controller only replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<String>,
}

impl ToolSearchCallSpec {
    /// `client` or `server`.
    pub fn execution(&self) -> &str {
        self.execution.as_deref().unwrap_or("client")
    }
}

/// A scripted server-made `tool_search_output`: the tools the hosted search loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchOutputSpec {
    /// The loaded tool definitions, as the task's deferred tools define them.
    pub tools: Vec<Value>,
}

/// A pending safety check on a computer call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SafetyCheckSpec {
    /// The check's `id`.
    pub id: String,
    /// Its `code` (e.g. `malicious_instructions`, `irrelevant_domain`, `sensitive_domain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Its `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A scripted program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    /// The name child calls and the program output refer to it by.
    pub label: String,
    /// The JavaScript source.
    pub code: String,
}

/// A scripted program output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramOutputSpec {
    /// The program's label.
    pub program: String,
    /// The result text.
    pub result: String,
    /// `completed` (default) or `incomplete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A scripted reasoning item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasoningSpec {
    /// Summary text (empty summary when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The reasoning itself, as one `reasoning_text` content part (no `content` when
    /// absent), as the API sends it for models that expose their raw reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A scripted message: just the text, or text plus status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageSpec {
    /// `message: "text"`.
    Text(String),
    /// `message: {text: ..., status: incomplete}`.
    Full(MessageFull),
}

impl MessageSpec {
    /// The text.
    pub fn text(&self) -> &str {
        match self {
            Self::Text(text) => text,
            Self::Full(full) => &full.text,
        }
    }

    /// The item status (`completed` unless set).
    pub fn status(&self) -> &str {
        match self {
            Self::Text(_) => "completed",
            Self::Full(full) => full.status.as_deref().unwrap_or("completed"),
        }
    }

    /// The annotations of the text part.
    pub fn annotations(&self) -> &[Annotation] {
        match self {
            Self::Text(_) => &[],
            Self::Full(full) => &full.annotations,
        }
    }

    /// The refusal part beside the text, if any.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Text(_) => None,
            Self::Full(full) => full.refusal.as_deref(),
        }
    }
}

/// The long form of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageFull {
    /// The text.
    pub text: String,
    /// Item status (`completed`, `incomplete`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A `refusal` content part after the `output_text` part, in the same message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The `output_text` part's annotations (citations), in order, as the API sends them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<Annotation>,
}

/// An annotation of an `output_text` part, written as the API writes it (`type` names
/// the kind; SDK `response_output_text.py`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Annotation {
    /// A web source the text cites: `start_index..end_index` of the text cites `url`.
    UrlCitation {
        /// The first character of the cited span.
        start_index: u32,
        /// The character after the cited span.
        end_index: u32,
        /// The source's title.
        title: String,
        /// The source's address.
        url: String,
    },
    /// A file the text cites, at character `index` of the text.
    FileCitation {
        /// The file's id (`file-...`).
        file_id: String,
        /// The file's name.
        filename: String,
        /// Where in the text the citation stands.
        index: u32,
    },
}

impl Annotation {
    /// The annotation as the wire writes it.
    pub fn to_wire(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// A scripted function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// Tool name as the model emits it (may be unknown or a near miss on purpose).
    pub name: String,
    /// Arguments: an object (serialized to a JSON string), or a string sent verbatim
    /// (for malformed JSON).
    pub arguments: Value,
    /// Item status (`completed` unless set; `incomplete` for a truncated call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The label of the program that made this call (programmatic tool calling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The `namespace` tool the called function belongs to, as the call names it (may
    /// be wrong on purpose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl CallSpec {
    /// The `arguments` string as sent on the wire.
    pub fn arguments_string(&self) -> std::borrow::Cow<'_, str> {
        match &self.arguments {
            Value::String(raw) => raw.into(),
            other => serde_json::to_string(other)
                .expect("a JSON value serializes")
                .into(),
        }
    }
}

/// The outcome a correct controller reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A final answer.
    Completed,
    /// Stopped without one.
    Failed,
}

/// What the controller must report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// `completed` or `failed`.
    pub outcome: Outcome,
    /// The exact final answer (default: the text of the script's last message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_text: Option<String>,
    /// The recognised reason word for a failure (`max_rounds`, `incomplete`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The fewest model requests (retries folded in) that must reach the fake before the
    /// outcome counts (default: one per scripted turn, bounded by `max_rounds`; for
    /// `max_rounds`, `max_rounds`; for `max_tool_calls`, the request that brings the call
    /// beyond the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::StateMode::{Conversation, PreviousResponseId, Replay, Stateless};
    use crate::scenario::catalogue_scenario as case;

    #[test]
    fn replay_runs_right_after_stateless_and_only_where_stateless_runs() {
        let both = case("state/01-instructions-every-request");
        assert_eq!(both.states, [PreviousResponseId, Stateless]);
        assert_eq!(both.run_states(), [PreviousResponseId, Stateless, Replay]);
        let conversation = case("state/02-conversation-mode");
        assert_eq!(conversation.run_states(), conversation.states);
        assert!(!conversation.run_states().contains(&Replay));

        let mut named = both.clone();
        named.states = vec![Replay, Stateless, Conversation];
        assert_eq!(named.run_states(), [Replay, Stateless, Conversation]);
    }

    #[test]
    fn replay_is_a_contract_word() {
        assert_eq!(Replay.as_str(), "replay");
        assert_eq!(super::StateMode::parse("replay"), Some(Replay));
        assert_eq!(serde_json::to_value(Replay).ok(), Some("replay".into()));
    }
}
