//! Script playback: expanding a scenario's compact turn into full wire output items with
//! fresh ids, and remembering which items belong together (reasoning and follower).

use std::borrow::Cow;
use std::sync::Arc;

use foldhash::HashMap;

use serde_json::{Value, json};

use crate::scenario::{Annotation, OutputSpec, Turn, TurnStatus};
use crate::wire::IdGen;
use crate::wire::call_kind::MCP_APPROVAL;
use crate::wire::call_kind::{APPLY_PATCH, CallKind, LOCAL_SHELL, SHELL};
use crate::wire::hosted;
use crate::wire::item::OutputItem;
use crate::wire::replay::follows;
use crate::wire::request::{ItemKeys, call_id, item_id, item_type};
use crate::wire::response::ResponseStatus;

/// What the server generated, stored or not: needed to validate replays. A session keeps
/// it for its whole life, one record per generated item, so it keeps what the checks
/// compare and no more: the encrypted content as a digest, each id allocated once.
#[derive(Debug, Default)]
pub struct Issued {
    /// Each reasoning item generated, by id.
    reasoning: HashMap<Arc<str>, IssuedReasoning>,
    /// The reasoning item an output item was generated with, by item id.
    reasoning_of: HashMap<Arc<str>, Arc<str>>,
    /// Program items by program label (scripted programs only).
    pub programs: HashMap<String, Value>,
    /// Program items by their call_id.
    pub programs_by_call: HashMap<String, Value>,
    /// The `caller` of each program-owned function call, by call_id.
    pub callers: HashMap<String, Value>,
    /// The id of the latest MCP approval request, by server label and tool name: the
    /// `mcp_call` the server makes once it is approved names it.
    pub mcp_approval_requests: HashMap<(String, String), String>,
    /// A digest of each compaction item's `encrypted_content`, by id. What a compaction
    /// replaced is judged by the oracle from the compaction's exchange: the API's
    /// evidence on resending it is mixed, so the fake accepts it.
    compactions: HashMap<Arc<str>, u64>,
}

/// A generated reasoning item, as its replays are checked.
#[derive(Debug, Default)]
struct IssuedReasoning {
    /// A digest of its `encrypted_content`, if it had one: a replay must carry it unchanged.
    encrypted: Option<u64>,
    /// The item it produced (the one right after it).
    follower: Option<Follower>,
}

impl Issued {
    /// Whether reasoning item `id` was generated with `encrypted_content` `content`. A
    /// changed content matches only on a collision of 64-bit digests.
    pub fn issued_encrypted(&self, id: &str, content: &str) -> bool {
        self.reasoning
            .get(id)
            .and_then(|reasoning| reasoning.encrypted)
            .is_some_and(|digest| digest == content_digest(content))
    }

    /// The reasoning item output item `id` was generated with.
    pub fn reasoning_of(&self, id: &str) -> Option<&str> {
        self.reasoning_of.get(id).map(|id| &**id)
    }

    /// Remembers compaction item `id`, issued with `encrypted_content` `content`.
    pub fn issue_compaction(&mut self, id: &str, content: &str) {
        self.compactions
            .insert(Arc::from(id), content_digest(content));
    }

    /// Whether a compaction item with `encrypted_content` `content` (and id `id`, when
    /// it has one) was issued as it is.
    pub fn issued_compaction(&self, id: Option<&str>, content: &str) -> bool {
        let digest = content_digest(content);
        match id {
            Some(id) => self
                .compactions
                .get(id)
                .is_some_and(|issued| *issued == digest),
            None => self.compactions.values().any(|issued| *issued == digest),
        }
    }

    /// The item reasoning item `id` produced.
    pub fn follower(&self, id: &str) -> Option<&Follower> {
        self.reasoning.get(id)?.follower.as_ref()
    }
}

/// A digest of encrypted content, the same in every run (a fixed seed).
fn content_digest(content: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x6c6f_6f70_6368_6b00).hash_one(content)
}

/// A turn expanded for one response.
pub struct ExpandedTurn<'a> {
    /// Full output items.
    pub output: Vec<OutputItem<'a>>,
    /// Response status.
    pub status: ResponseStatus,
    /// Incomplete reason.
    pub incomplete_reason: Option<String>,
    /// Response error.
    pub error: Option<Value>,
}

/// The text of the real API's 500 message (E16), used as a failed turn's default error.
pub const SERVER_ERROR_MESSAGE: &str = "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.";

/// What registering an output item reads of it: generated items and recorded values alike.
pub trait Registrable {
    /// `id`.
    fn id(&self) -> Option<&str>;
    /// `type`.
    fn kind(&self) -> &str;
    /// A reasoning item's `encrypted_content`.
    fn encrypted_content(&self) -> Option<&str>;
    /// `call_id`.
    fn call_id(&self) -> Option<&str>;
    /// The `caller` of a call a program makes.
    fn program_caller(&self) -> Option<Value>;
    /// The whole item, as a value.
    fn value(&self) -> Value;
}

impl Registrable for Value {
    fn id(&self) -> Option<&str> {
        item_id(self)
    }

    fn kind(&self) -> &str {
        item_type(self)
    }

    fn encrypted_content(&self) -> Option<&str> {
        self["encrypted_content"].as_str()
    }

    fn call_id(&self) -> Option<&str> {
        call_id(self)
    }

    fn program_caller(&self) -> Option<Value> {
        self.get("caller")
            .filter(|c| c["type"] == "program")
            .cloned()
    }

    fn value(&self) -> Value {
        self.clone()
    }
}

impl Registrable for OutputItem<'_> {
    fn id(&self) -> Option<&str> {
        Some(OutputItem::id(self))
    }

    fn kind(&self) -> &str {
        OutputItem::kind(self)
    }

    fn encrypted_content(&self) -> Option<&str> {
        OutputItem::encrypted_content(self)
    }

    fn call_id(&self) -> Option<&str> {
        OutputItem::call_id(self)
    }

    fn program_caller(&self) -> Option<Value> {
        match self {
            OutputItem::Call {
                caller_id: Some(caller_id),
                ..
            }
            | OutputItem::ActionCall {
                caller_id: Some(caller_id),
                ..
            } => Some(json!({"type": "program", "caller_id": caller_id})),
            _ => None,
        }
    }

    fn value(&self) -> Value {
        self.to_value()
    }
}

/// What a reasoning item's follower must match when it is replayed (all that
/// [`follows`] reads of it): its id, type and call_id.
#[derive(Debug, Clone, PartialEq)]
pub struct Follower {
    id: Option<Arc<str>>,
    kind: Cow<'static, str>,
    call_id: Option<Box<str>>,
}

impl Follower {
    /// Whether `next` may stand right after the reasoning item this follower came with.
    pub fn admits(&self, next: &ItemKeys) -> bool {
        // `follows` reads only the keys; the item itself is gone.
        let follower = ItemKeys {
            item: &Value::Null,
            kind: &self.kind,
            id: self.id.as_deref(),
            call_id: self.call_id.as_deref(),
        };
        follows(next, &follower)
    }
}

/// The types of the items the server generates: a follower of one of these keeps its
/// type without a copy.
const GENERATED_KINDS: [&str; 12] = [
    "reasoning",
    "message",
    "function_call",
    "custom_tool_call",
    "shell_call",
    "local_shell_call",
    "apply_patch_call",
    "computer_call",
    "tool_search_call",
    "tool_search_output",
    "program",
    "program_output",
];

/// Remembers what a response's output items bind a replay to: each reasoning item's
/// encrypted content and the item it produced, the reasoning each later item was
/// generated with, each program and each program-owned call's `caller`. Scripted and
/// recorded output go through here alike.
pub fn register(output: &[impl Registrable], issued: &mut Issued) {
    let mut reasoning: Option<Arc<str>> = None;
    let mut awaiting_follower: Option<Arc<str>> = None;
    for item in output {
        let id: Arc<str> = Arc::from(item.id().unwrap_or_default());
        if let Some(rs) = awaiting_follower.take() {
            issued.reasoning.entry(rs).or_default().follower = Some(Follower {
                id: item.id().map(|_| id.clone()),
                kind: crate::text::known_or_owned(item.kind(), &GENERATED_KINDS),
                call_id: item.call_id().map(Box::from),
            });
        }
        match item.kind() {
            "reasoning" => {
                issued.reasoning.insert(
                    id.clone(),
                    IssuedReasoning {
                        encrypted: item.encrypted_content().map(content_digest),
                        follower: None,
                    },
                );
                reasoning = Some(id.clone());
                awaiting_follower = Some(id);
                continue;
            }
            "program" => {
                if let Some(call_id) = item.call_id() {
                    issued
                        .programs_by_call
                        .insert(call_id.to_owned(), item.value());
                }
            }
            "function_call" => {
                if let (Some(call_id), Some(caller)) = (item.call_id(), item.program_caller()) {
                    issued.callers.insert(call_id.to_owned(), caller);
                }
            }
            "compaction" => {
                if let Some(content) = item.encrypted_content() {
                    issued.issue_compaction(&id, content);
                }
            }
            _ => {}
        }
        if let Some(rs) = &reasoning {
            issued.reasoning_of.insert(id, rs.clone());
        }
    }
}

/// Where the values a turn's items draw on each serving come from: the session's
/// generator when the turn is served, markers when it is compiled
/// (the server's compiled turns). Items draw in output order, each its id first.
pub(crate) trait Draws {
    /// Output item `index`'s id, `prefix_...`.
    fn item_id(&mut self, prefix: &str, index: usize) -> String;
    /// Reasoning item `index`'s `encrypted_content`.
    fn encrypted_content(&mut self, index: usize) -> String;
    /// Output item `index`'s `call_id`.
    fn call_id(&mut self, index: usize) -> String;
    /// Program `index`'s fingerprint.
    fn fingerprint(&mut self, index: usize) -> String;
}

/// The values a served turn draws: from the session's generator, in a response's
/// `created_at` and id tail.
struct Drawn<'a> {
    /// The session's generator.
    ids: &'a mut IdGen,
    /// The response's `created_at`.
    created_at: u64,
    /// The response's id tail.
    tail: &'a str,
}

impl Draws for Drawn<'_> {
    fn item_id(&mut self, prefix: &str, _: usize) -> String {
        self.ids.item_id(prefix, self.created_at, self.tail)
    }

    fn encrypted_content(&mut self, _: usize) -> String {
        self.ids.encrypted_content()
    }

    fn call_id(&mut self, _: usize) -> String {
        self.ids.call_id()
    }

    fn fingerprint(&mut self, _: usize) -> String {
        format!("fp_{}", self.ids.base62(43))
    }
}

/// Expands `turn`, registering its items in `issued`.
pub fn expand<'a>(
    turn: &'a Turn,
    ids: &mut IdGen,
    created_at: u64,
    tail: &str,
    issued: &mut Issued,
) -> ExpandedTurn<'a> {
    let mut draws = Drawn {
        ids,
        created_at,
        tail,
    };
    let output = output_items(turn, &mut draws, issued);
    register(&output, issued);
    let (incomplete_reason, error) = match turn.status {
        TurnStatus::Completed => (None, None),
        TurnStatus::Incomplete => (
            Some(
                turn.incomplete_reason
                    .clone()
                    .unwrap_or_else(|| "max_output_tokens".to_owned()),
            ),
            None,
        ),
        TurnStatus::Failed => {
            let error = match &turn.error {
                Some(e) => json!({"code": e.code, "message": e.message}),
                None => json!({"code": "server_error", "message": SERVER_ERROR_MESSAGE}),
            };
            (None, Some(error))
        }
    };
    ExpandedTurn {
        output,
        status: response_status(turn),
        incomplete_reason,
        error,
    }
}

/// The status of the response `turn` is served as.
pub(crate) fn response_status(turn: &Turn) -> ResponseStatus {
    match turn.status {
        TurnStatus::Completed => ResponseStatus::Completed,
        TurnStatus::Incomplete => ResponseStatus::Incomplete,
        TurnStatus::Failed => ResponseStatus::Failed,
    }
}

/// A scripted hosted item's fields after `id` and `type`: `status` first (`completed`
/// unless given, for the kinds that have one), then the scenario's in its order, an
/// `mcp_call`'s object `arguments` as their JSON text, as the API sends them.
fn hosted_fields(
    kind: hosted::HostedKind,
    fields: &serde_json::Map<String, Value>,
) -> Vec<(&str, Value)> {
    let mut out = Vec::with_capacity(fields.len() + 1);
    if kind.has_status && !fields.contains_key("status") {
        out.push(("status", Value::from("completed")));
    }
    for (key, value) in fields {
        match key.as_str() {
            "id" | "type" => {}
            "arguments" if !value.is_string() => {
                out.push((key.as_str(), Value::from(value.to_string())));
            }
            _ => out.push((key.as_str(), value.clone())),
        }
    }
    out
}

/// For a scripted `mcp_call` without an `approval_request_id`, the id of the approval
/// request issued earlier for its server and tool, as the API's call names the request
/// it ran on.
fn approved_request(
    kind: hosted::HostedKind,
    fields: &serde_json::Map<String, Value>,
    issued: &Issued,
) -> Option<String> {
    if kind.item != "mcp_call" || fields.contains_key("approval_request_id") {
        return None;
    }
    let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
    let key = (text("server_label")?, text("name")?);
    issued.mcp_approval_requests.get(&key).cloned()
}

/// A call whose input is a JSON object, its id and call_id drawn in that order.
fn action_call<'a>(
    kind: CallKind,
    input: Value,
    caller_id: Option<Value>,
    draws: &mut impl Draws,
    index: usize,
) -> OutputItem<'a> {
    OutputItem::ActionCall {
        kind,
        id: draws.item_id(kind.id_prefix, index),
        call_id: draws.call_id(index),
        input,
        caller_id,
    }
}

/// The call_id of the program labelled `label`, for a call it makes.
fn program_call_id(issued: &Issued, label: Option<&str>) -> Option<Value> {
    label.map(|label| {
        issued
            .programs
            .get(label)
            .map(|p| p["call_id"].clone())
            .unwrap_or(Value::Null)
    })
}

/// The full output items of `turn`, their generated values drawn from `draws`; a
/// program is remembered in `issued` by its label, for the calls it owns.
pub(crate) fn output_items<'a>(
    turn: &'a Turn,
    draws: &mut impl Draws,
    issued: &mut Issued,
) -> Vec<OutputItem<'a>> {
    let mut output = Vec::with_capacity(turn.output.len());
    for (index, spec) in turn.output.iter().enumerate() {
        let item = match spec {
            OutputSpec::Reasoning(r) => OutputItem::Reasoning {
                id: draws.item_id("rs", index),
                encrypted_content: draws.encrypted_content(index),
                summary: r.summary.as_slice(),
                text: r.text.as_slice(),
            },
            OutputSpec::Message(m) => OutputItem::Message {
                id: draws.item_id("msg", index),
                status: m.status(),
                text: m.text(),
                annotations: m.annotations().iter().map(Annotation::to_wire).collect(),
                refusal: m.refusal(),
                logprobs: false,
            },
            OutputSpec::Refusal(text) => OutputItem::Refusal {
                id: draws.item_id("msg", index),
                text,
            },
            OutputSpec::Call(call) => OutputItem::Call {
                id: draws.item_id("fc", index),
                status: call.status.as_deref().unwrap_or("completed"),
                arguments: call.arguments_string(),
                call_id: draws.call_id(index),
                name: &call.name,
                namespace: call.namespace.as_deref(),
                caller_id: call.caller.as_ref().map(|label| {
                    issued
                        .programs
                        .get(label)
                        .map(|p| p["call_id"].clone())
                        .unwrap_or(Value::Null)
                }),
            },
            OutputSpec::CustomCall(call) => OutputItem::CustomCall {
                id: draws.item_id("ctc", index),
                call_id: draws.call_id(index),
                input: &call.input,
                name: &call.name,
            },
            OutputSpec::McpApproval(request) => {
                let id = draws.item_id(MCP_APPROVAL.id_prefix, index);
                issued.mcp_approval_requests.insert(
                    (request.server_label.clone(), request.name.clone()),
                    id.clone(),
                );
                OutputItem::McpApprovalRequest {
                    id,
                    arguments: request.arguments_string(),
                    name: &request.name,
                    server_label: &request.server_label,
                }
            }
            OutputSpec::Hosted(fields) => {
                // Lint refuses a hosted item of no known kind.
                let Some(kind) = fields
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(hosted::of_item)
                else {
                    continue;
                };
                let mut hosted = hosted_fields(kind, fields);
                if let Some(request) = approved_request(kind, fields, issued) {
                    hosted.push(("approval_request_id", Value::from(request)));
                }
                OutputItem::Hosted {
                    id: draws.item_id(kind.id_prefix, index),
                    kind: kind.item,
                    fields: hosted,
                }
            }
            OutputSpec::ShellCall(call) => {
                let caller_id = program_call_id(issued, call.caller.as_deref());
                action_call(SHELL, call.action(), caller_id, draws, index)
            }
            OutputSpec::LocalShellCall(call) => {
                action_call(LOCAL_SHELL, call.action(), None, draws, index)
            }
            OutputSpec::ApplyPatchCall(call) => {
                let caller_id = program_call_id(issued, call.caller.as_deref());
                action_call(APPLY_PATCH, call.operation(), caller_id, draws, index)
            }
            OutputSpec::ComputerCall(call) => OutputItem::ComputerCall {
                id: draws.item_id("cu", index),
                call_id: draws.call_id(index),
                action: call.action.as_ref(),
                actions: call.actions.as_deref(),
                pending_safety_checks: serde_json::to_value(&call.pending_safety_checks)
                    .unwrap_or_default(),
            },
            OutputSpec::ToolSearchCall(search) => OutputItem::ToolSearchCall {
                id: draws.item_id("tsc", index),
                call_id: (search.execution() == "client").then(|| draws.call_id(index)),
                arguments: &search.arguments,
                execution: search.execution(),
            },
            OutputSpec::ToolSearchOutput(output) => OutputItem::ToolSearchOutput {
                id: draws.item_id("tso", index),
                tools: &output.tools,
            },
            OutputSpec::Program(program) => {
                let item = OutputItem::Program {
                    id: draws.item_id("cm", index),
                    call_id: draws.call_id(index),
                    code: &program.code,
                    fingerprint: draws.fingerprint(index),
                };
                issued
                    .programs
                    .insert(program.label.clone(), item.to_value());
                item
            }
            OutputSpec::Compaction(_) => OutputItem::Compaction {
                id: draws.item_id("cmp", index),
                encrypted_content: draws.encrypted_content(index),
            },
            OutputSpec::ProgramOutput(output) => OutputItem::ProgramOutput {
                id: draws.item_id("cmo", index),
                call_id: issued
                    .programs
                    .get(&output.program)
                    .map(|p| p["call_id"].clone())
                    .unwrap_or(Value::Null),
                result: &output.result,
                status: output.status.as_deref().unwrap_or("completed"),
            },
        };
        output.push(item);
    }
    output
}
