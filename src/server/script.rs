//! Script playback: expanding a scenario's compact turn into full wire output items with
//! fresh ids, and remembering which items belong together (reasoning and follower).

use std::sync::Arc;

use foldhash::HashMap;

use serde_json::{Value, json};

use crate::scenario::{OutputSpec, Turn, TurnStatus};
use crate::wire::IdGen;
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
    kind: Box<str>,
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
                kind: item.kind().into(),
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
            _ => {}
        }
        if let Some(rs) = &reasoning {
            issued.reasoning_of.insert(id, rs.clone());
        }
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
    let mut output = Vec::with_capacity(turn.output.len());
    for spec in &turn.output {
        let item = match spec {
            OutputSpec::Reasoning(r) => OutputItem::Reasoning {
                id: ids.item_id("rs", created_at, tail),
                encrypted_content: ids.encrypted_content(),
                summary: r.summary.as_slice(),
            },
            OutputSpec::Message(m) => OutputItem::Message {
                id: ids.item_id("msg", created_at, tail),
                status: m.status(),
                text: m.text(),
            },
            OutputSpec::Refusal(text) => OutputItem::Refusal {
                id: ids.item_id("msg", created_at, tail),
                text,
            },
            OutputSpec::Call(call) => OutputItem::Call {
                id: ids.item_id("fc", created_at, tail),
                status: call.status.as_deref().unwrap_or("completed"),
                arguments: call.arguments_string(),
                call_id: ids.call_id(),
                name: &call.name,
                caller_id: call.caller.as_ref().map(|label| {
                    issued
                        .programs
                        .get(label)
                        .map(|p| p["call_id"].clone())
                        .unwrap_or(Value::Null)
                }),
            },
            OutputSpec::Program(program) => {
                let item = OutputItem::Program {
                    id: ids.item_id("cm", created_at, tail),
                    call_id: ids.call_id(),
                    code: &program.code,
                    fingerprint: format!("fp_{}", ids.base62(43)),
                };
                issued
                    .programs
                    .insert(program.label.clone(), item.to_value());
                item
            }
            OutputSpec::ProgramOutput(output) => OutputItem::ProgramOutput {
                id: ids.item_id("cmo", created_at, tail),
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
    register(&output, issued);
    let (status, incomplete_reason, error) = match turn.status {
        TurnStatus::Completed => (ResponseStatus::Completed, None, None),
        TurnStatus::Incomplete => (
            ResponseStatus::Incomplete,
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
            (ResponseStatus::Failed, None, Some(error))
        }
    };
    ExpandedTurn {
        output,
        status,
        incomplete_reason,
        error,
    }
}
