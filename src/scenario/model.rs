//! The scenario file model: one conformance case.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The scenario format version this build reads.
///
/// Changelog:
/// - 1: first version (task, fixture tool behaviour, script of turns, expected outcome).
pub const FORMAT_VERSION: u32 = 1;

/// RFC 2119 level of a case or a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

/// How a controller carries state between requests (CONTRACT.md section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum StateMode {
    /// Stored responses chained with `previous_response_id`.
    #[serde(rename = "previous_response_id")]
    PreviousResponseId,
    /// `store: false`, every output item replayed.
    #[serde(rename = "stateless")]
    Stateless,
    /// A `conversation` object carries the items.
    #[serde(rename = "conversation")]
    Conversation,
}

impl StateMode {
    /// The contract word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreviousResponseId => "previous_response_id",
            Self::Stateless => "stateless",
            Self::Conversation => "conversation",
        }
    }

    /// Parses a contract word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "previous_response_id" => Some(Self::PreviousResponseId),
            "stateless" => Some(Self::Stateless),
            "conversation" => Some(Self::Conversation),
            _ => None,
        }
    }
}

impl fmt::Display for StateMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn default_states() -> Vec<StateMode> {
    vec![StateMode::PreviousResponseId, StateMode::Stateless]
}

/// One conformance case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Must equal [`FORMAT_VERSION`].
    pub format: u32,
    /// Stable id, `area/name` (e.g. `correlation/parallel-same-tool`).
    pub id: String,
    /// What the case probes and why it matters.
    pub summary: String,
    /// How much a failure of this case weighs.
    pub level: Level,
    /// Free tags for filtering.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The task handed to the controller.
    pub task: TaskSpec,
    /// The state modes the case runs in.
    #[serde(default = "default_states")]
    pub states: Vec<StateMode>,
    /// Scripted behaviour of the fixture tools, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolBehaviour>,
    /// The model's turns, one per accepted request.
    pub script: Vec<Turn>,
    /// What a correct controller reports.
    pub expect: Expectation,
}

impl Scenario {
    /// The area: the part of the id before the first `/`.
    pub fn area(&self) -> &str {
        self.id.split('/').next().unwrap_or(&self.id)
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Model name to send.
    #[serde(default = "default_model")]
    pub model: String,
    /// The first request's `input`: a string or an array of input items.
    pub input: Value,
    /// Instructions to send with every request.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Tools: the name of a built-in fixture tool, or an inline function definition.
    pub tools: Vec<ToolRef>,
    /// Tools whose every call needs an approval first.
    #[serde(default)]
    pub approval_required: Vec<String>,
    /// The most model requests the controller may make.
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
    /// The identity tools run for.
    #[serde(default = "default_principal")]
    pub principal: String,
}

/// A tool in the task: a built-in fixture name or an inline definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolRef {
    /// A tool of the built-in fixture toolset (see `loopcheck::tools::fixtures`).
    Fixture(String),
    /// A full `{"type": "function", ...}` definition.
    Inline(Value),
}

/// How one fixture tool answers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolBehaviour {
    /// Results by arguments: the first rule whose `when` matches gives the result.
    #[serde(default)]
    pub results: Vec<ResultRule>,
    /// The result when no rule matches (default: an echo of the tool and arguments).
    #[serde(default)]
    pub default: Option<Value>,
    /// Authorization denials (HTTP 403 from the backend).
    #[serde(default)]
    pub deny: Vec<DenyRule>,
    /// Approval decisions for calls to this tool.
    #[serde(default)]
    pub approvals: Vec<ApprovalRule>,
    /// Transient failures (HTTP 503) before a call succeeds.
    #[serde(default)]
    pub unavailable: Vec<UnavailableRule>,
}

/// A transient backend failure: the first `attempts` requests for a matching call get
/// HTTP 503, later ones are served normally.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnavailableRule {
    /// Only for arguments matching this subset (any when absent).
    #[serde(default)]
    pub when: Option<Value>,
    /// How many attempts fail (per call_id).
    pub attempts: u32,
}

/// A result for matching arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultRule {
    /// Argument subset to match (every key given must be equal).
    #[serde(default)]
    pub when: Option<Value>,
    /// The result returned.
    pub result: Value,
}

/// A denial for a principal and/or resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyRule {
    /// Only for this principal (any when absent).
    #[serde(default)]
    pub principal: Option<String>,
    /// Only for arguments matching this subset (any when absent).
    #[serde(default)]
    pub when: Option<Value>,
    /// The backend's message.
    pub message: String,
}

/// An approval decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Only for arguments matching this subset (any when absent).
    #[serde(default)]
    pub when: Option<Value>,
    /// Whether the call is approved.
    pub approved: bool,
    /// Why (sent back when denied).
    #[serde(default)]
    pub reason: Option<String>,
}

/// `Response.status` of a scripted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Output items in order.
    #[serde(default)]
    pub output: Vec<OutputSpec>,
    /// The response status.
    #[serde(default)]
    pub status: TurnStatus,
    /// `incomplete_details.reason` (default `max_output_tokens`).
    #[serde(default)]
    pub incomplete_reason: Option<String>,
    /// `error` of a failed response (default: a `server_error`).
    #[serde(default)]
    pub error: Option<TurnError>,
    /// When true, this (last) turn repeats for every later request with fresh ids: a
    /// model that never stops calling tools.
    #[serde(default)]
    pub endless: bool,
}

/// `Response.error` of a failed turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnError {
    /// Error code (e.g. `server_error`).
    pub code: String,
    /// Message.
    pub message: String,
}

/// One compact output item, expanded into a full wire item when served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// A scripted reasoning item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningSpec {
    /// Summary text (empty summary when absent).
    #[serde(default)]
    pub summary: Option<String>,
}

/// A scripted message: just the text, or text plus status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// The long form of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageFull {
    /// The text.
    pub text: String,
    /// Item status (`completed`, `incomplete`).
    #[serde(default)]
    pub status: Option<String>,
}

/// A scripted function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// Tool name as the model emits it (may be unknown or a near miss on purpose).
    pub name: String,
    /// Arguments: an object (serialized to a JSON string), or a string sent verbatim
    /// (for malformed JSON).
    pub arguments: Value,
    /// Item status (`completed` unless set; `incomplete` for a truncated call).
    #[serde(default)]
    pub status: Option<String>,
}

impl CallSpec {
    /// The `arguments` string as sent on the wire.
    pub fn arguments_string(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

/// The outcome a correct controller reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A final answer.
    Completed,
    /// Stopped without one.
    Failed,
}

/// What the controller must report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// `completed` or `failed`.
    pub outcome: Outcome,
    /// The exact final answer (default: the text of the script's last message).
    #[serde(default)]
    pub output_text: Option<String>,
    /// The recognised reason word for a failure (`max_rounds`, `incomplete`, ...).
    #[serde(default)]
    pub reason: Option<String>,
}
