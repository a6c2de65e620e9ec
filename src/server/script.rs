//! Script playback: expanding a scenario's compact turn into full wire output items with
//! fresh ids, and remembering which items belong together (reasoning and follower).

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::scenario::{OutputSpec, Turn, TurnStatus};
use crate::wire::IdGen;
use crate::wire::response::ResponseStatus;

/// What the server generated, stored or not: needed to validate replays.
#[derive(Debug, Default)]
pub struct Issued {
    /// `encrypted_content` by reasoning id.
    pub encrypted: HashMap<String, String>,
    /// The reasoning item an output item was generated with, by item id.
    pub reasoning_of: HashMap<String, String>,
    /// The item a reasoning item produced (the one right after it), by reasoning id.
    pub follower: HashMap<String, Value>,
    /// Program items by program label (scripted programs only).
    pub programs: HashMap<String, Value>,
    /// Program items by their call_id.
    pub programs_by_call: HashMap<String, Value>,
    /// The `caller` of each program-owned function call, by call_id.
    pub callers: HashMap<String, Value>,
}

/// A turn expanded for one response.
pub struct ExpandedTurn {
    /// Full output items.
    pub output: Vec<Value>,
    /// Response status.
    pub status: ResponseStatus,
    /// Incomplete reason.
    pub incomplete_reason: Option<String>,
    /// Response error.
    pub error: Option<Value>,
}

/// The text of the real API's 500 message (E16), used as a failed turn's default error.
pub const SERVER_ERROR_MESSAGE: &str = "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.";

/// Remembers what a response's output items bind a replay to: each reasoning item's
/// encrypted content and the item it produced, the reasoning each later item was
/// generated with, each program and each program-owned call's `caller`. Scripted and
/// recorded output go through here alike.
pub fn register(output: &[Value], issued: &mut Issued) {
    let mut reasoning: Option<String> = None;
    let mut awaiting_follower: Option<String> = None;
    for item in output {
        let id = item["id"].as_str().unwrap_or_default().to_owned();
        let kind = item["type"].as_str().unwrap_or_default();
        if let Some(rs) = awaiting_follower.take() {
            issued.follower.insert(rs, item.clone());
        }
        match kind {
            "reasoning" => {
                if let Some(content) = item["encrypted_content"].as_str() {
                    issued.encrypted.insert(id.clone(), content.to_owned());
                }
                reasoning = Some(id.clone());
                awaiting_follower = Some(id);
                continue;
            }
            "program" => {
                if let Some(call_id) = item["call_id"].as_str() {
                    issued
                        .programs_by_call
                        .insert(call_id.to_owned(), item.clone());
                }
            }
            "function_call" => {
                if let (Some(call_id), Some(caller)) = (
                    item["call_id"].as_str(),
                    item.get("caller").filter(|c| c["type"] == "program"),
                ) {
                    issued.callers.insert(call_id.to_owned(), caller.clone());
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
pub fn expand(
    turn: &Turn,
    ids: &mut IdGen,
    created_at: u64,
    tail: &str,
    issued: &mut Issued,
) -> ExpandedTurn {
    let mut output = Vec::with_capacity(turn.output.len());
    for spec in &turn.output {
        let item = match spec {
            OutputSpec::Reasoning(r) => {
                let id = ids.item_id("rs", created_at, tail);
                let encrypted = ids.encrypted_content();
                let summary: Vec<Value> = r
                    .summary
                    .iter()
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect();
                json!({"id": id, "type": "reasoning", "encrypted_content": encrypted, "summary": summary})
            }
            OutputSpec::Message(m) => {
                let id = ids.item_id("msg", created_at, tail);
                json!({
                    "id": id, "type": "message", "status": m.status(), "role": "assistant",
                    "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": m.text()}],
                })
            }
            OutputSpec::Refusal(text) => {
                let id = ids.item_id("msg", created_at, tail);
                json!({
                    "id": id, "type": "message", "status": "completed", "role": "assistant",
                    "content": [{"type": "refusal", "refusal": text}],
                })
            }
            OutputSpec::Call(call) => {
                let id = ids.item_id("fc", created_at, tail);
                let call_id = ids.call_id();
                let mut item = json!({
                    "id": id, "type": "function_call",
                    "status": call.status.as_deref().unwrap_or("completed"),
                    "arguments": call.arguments_string(),
                    "call_id": call_id, "name": call.name,
                });
                if let Some(label) = &call.caller {
                    let program_call = issued
                        .programs
                        .get(label)
                        .map(|p| p["call_id"].clone())
                        .unwrap_or(Value::Null);
                    item["caller"] = json!({"type": "program", "caller_id": program_call});
                }
                item
            }
            OutputSpec::Program(program) => {
                let item = json!({
                    "type": "program", "id": ids.item_id("cm", created_at, tail),
                    "call_id": ids.call_id(), "code": program.code,
                    "fingerprint": format!("fp_{}", ids.base62(43)),
                });
                issued.programs.insert(program.label.clone(), item.clone());
                item
            }
            OutputSpec::ProgramOutput(output) => {
                let program_call = issued
                    .programs
                    .get(&output.program)
                    .map(|p| p["call_id"].clone())
                    .unwrap_or(Value::Null);
                json!({
                    "type": "program_output", "id": ids.item_id("cmo", created_at, tail),
                    "call_id": program_call, "result": output.result,
                    "status": output.status.as_deref().unwrap_or("completed"),
                })
            }
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
