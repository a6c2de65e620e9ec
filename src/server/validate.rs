//! Strict emulation: what the real API rejects, with its exact errors.

use std::borrow::Cow;

use foldhash::{HashMap, HashSet, HashSetExt};

use serde_json::Value;

use super::script::Issued;
use crate::wire::ApiError;
use crate::wire::call_kind::{self, CALL_KINDS, COMPUTER, FUNCTION, MCP_APPROVAL, TOOL_SEARCH};
use crate::wire::ids::has_prefix;
use crate::wire::request::ItemKeys;

/// Model names the fake accepts besides the task's own.
const KNOWN_MODELS: &[&str] = &[
    "gpt-5",
    "gpt-5-2025-08-07",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-5.1",
    "gpt-5.2",
    "gpt-5-codex",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-4o",
    "gpt-4o-mini",
    "o3",
    "o3-mini",
    "o4-mini",
];

/// Checks `model` (E10, E9).
pub fn check_model(model: Option<&str>, task_model: &str) -> Result<(), ApiError> {
    match model {
        None => Err(ApiError::missing_model()),
        Some(m) if m == task_model || KNOWN_MODELS.contains(&m) => Ok(()),
        Some(m) => Err(ApiError::model_not_found(m)),
    }
}

/// Checks a `previous_response_id`'s characters, as the real API does before lookup.
pub fn check_id_chars(param: &str, id: &str) -> Result<(), ApiError> {
    if !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(())
    } else {
        Err(ApiError {
            status: 400,
            rule: "id-chars",
            message: format!(
                "Invalid '{param}': '{id}'. Expected an ID that contains letters, numbers, underscores, or dashes, but this value contained additional characters."
            ),
            kind: "invalid_request_error",
            param: Some(param.to_owned()),
            code: Some("invalid_value"),
        })
    }
}

/// The keys an input item of this type may carry (the SDK's input param types); a
/// client that replays an output item with extra keys of its own (e.g. a parsed copy of
/// the arguments) gets E13, as the real API answers unknown parameters.
fn input_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "message" => &["type", "id", "role", "content", "status", "phase"],
        "function_call" => &[
            "type",
            "id",
            "call_id",
            "name",
            "arguments",
            "status",
            "namespace",
            "caller",
            "async",
        ],
        "function_call_output" => &[
            "type",
            "id",
            "call_id",
            "output",
            "status",
            "caller",
            "name",
            "namespace",
        ],
        "reasoning" => &[
            "type",
            "id",
            "summary",
            "encrypted_content",
            "content",
            "status",
        ],
        // `status` is in no SDK type of these two; accepted, as the evidence is mixed.
        "custom_tool_call" => &[
            "type",
            "id",
            "call_id",
            "input",
            "name",
            "namespace",
            "caller",
            "status",
        ],
        "custom_tool_call_output" => &["type", "id", "call_id", "output", "caller", "status"],
        // SDK `response_input_item_param.py` `McpApprovalRequest`, `McpApprovalResponse`.
        "mcp_approval_request" => &["type", "id", "arguments", "name", "server_label"],
        "mcp_approval_response" => &["type", "id", "approval_request_id", "approve", "reason"],
        // The SDK's input params `ShellCall`, `ShellCallOutput`, `LocalShellCall`,
        // `LocalShellCallOutput`, `ApplyPatchCall`, `ApplyPatchCallOutput`.
        "shell_call" => &[
            "type",
            "id",
            "call_id",
            "action",
            "status",
            "caller",
            "environment",
            "created_by",
        ],
        "shell_call_output" => &[
            "type",
            "id",
            "call_id",
            "output",
            "max_output_length",
            "status",
            "caller",
            "created_by",
        ],
        "local_shell_call" => &["type", "id", "call_id", "action", "status"],
        "local_shell_call_output" => &["type", "id", "output", "status"],
        "apply_patch_call" => &[
            "type",
            "id",
            "call_id",
            "operation",
            "status",
            "caller",
            "created_by",
        ],
        "apply_patch_call_output" => &[
            "type",
            "id",
            "call_id",
            "status",
            "output",
            "caller",
            "created_by",
        ],
        "computer_call" => &[
            "type",
            "id",
            "call_id",
            "action",
            "actions",
            "pending_safety_checks",
            "status",
        ],
        "computer_call_output" => &[
            "type",
            "id",
            "call_id",
            "output",
            "acknowledged_safety_checks",
            "status",
        ],
        "tool_search_call" => &["type", "id", "call_id", "arguments", "execution", "status"],
        "tool_search_output" => &["type", "id", "call_id", "execution", "status", "tools"],
        "item_reference" => &["type", "id"],
        "program" => &["type", "id", "call_id", "code", "fingerprint"],
        "program_output" => &["type", "id", "call_id", "result", "status"],
        "compaction" => &["type", "id", "encrypted_content", "created_by"],
        _ => return None,
    })
}

/// The id prefix an input item of this type must carry.
fn expected_prefix(kind: &str) -> Option<&'static str> {
    match kind {
        "reasoning" => Some("rs"),
        "compaction" => Some("cmp"),
        kind => call_kind::of_call(kind).map(|kind| kind.id_prefix),
    }
}

/// Per-item checks on `input` and resolution of `item_reference`s: E13, id prefixes, E6,
/// E7, E8. Returns the input with references replaced by the stored items (the other
/// items borrowed as they came).
pub fn resolve_input<'a>(
    input: &'a [Value],
    stored_items: &HashMap<String, Value>,
    issued: &Issued,
) -> Result<Vec<Cow<'a, Value>>, ApiError> {
    let mut seen = HashSet::new();
    let mut resolved = Vec::with_capacity(input.len());
    for (index, item) in input.iter().enumerate() {
        let ItemKeys { kind, id, .. } = ItemKeys::of(item);
        let parts_field = parts_field(kind);
        let parts = parts_field.and_then(|field| item.get(field));
        // Output-only, and rejected even as `null` (a model dump of an output item).
        if kind == "reasoning" && item.get("status").is_some() {
            return Err(ApiError::unknown_parameter(&format!(
                "input[{index}].status"
            )));
        }
        if kind == COMPUTER.answer {
            let output = item.get("output");
            if output.and_then(|o| o.get("type")) != Some(&Value::from("computer_screenshot")) {
                return Err(ApiError::screenshot_type(index, output));
            }
        } else if kind == TOOL_SEARCH.answer {
            let tools = item.get("tools");
            if !matches!(tools, Some(Value::Array(_))) {
                return Err(ApiError::tools_type(index, tools));
            }
        } else if parts_field == Some("output")
            && !matches!(parts, Some(Value::String(_) | Value::Array(_)))
        {
            return Err(ApiError::output_type(index, parts));
        }
        if let (Some(allowed), Some(object)) = (input_keys(kind), item.as_object())
            && let Some(unknown) = object.keys().find(|key| !allowed.contains(&key.as_str()))
        {
            return Err(ApiError::unknown_parameter(&format!(
                "input[{index}].{unknown}"
            )));
        }
        if let Some(id) = id {
            if let Some(prefix) = expected_prefix(kind)
                && !has_prefix(id, prefix)
            {
                return Err(ApiError::invalid_item_id(index, id, prefix));
            }
            if !seen.insert(id) {
                return Err(ApiError::duplicate_item(id));
            }
        }
        if let (Some(field), Some(Value::Array(parts))) = (parts_field, parts) {
            check_part_types(parts, index, field)?;
        }
        match kind {
            "item_reference" => {
                let id = id.unwrap_or_default();
                let Some(stored) = stored_items.get(id) else {
                    return Err(ApiError::item_not_found(id));
                };
                resolved.push(Cow::Owned(stored.clone()));
                continue;
            }
            "reasoning" => {
                let id = id.unwrap_or_default();
                match item.get("encrypted_content").and_then(Value::as_str) {
                    Some(content) => {
                        if !issued.issued_encrypted(id, content) {
                            return Err(ApiError::invalid_encrypted_content(content));
                        }
                    }
                    None => {
                        if !stored_items.contains_key(id) {
                            return Err(ApiError::item_not_found(id));
                        }
                    }
                }
            }
            // A compaction item goes back exactly as it was issued: its content altered,
            // its id changed, or an item the server never issued is refused.
            "compaction" => {
                let content = item
                    .get("encrypted_content")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !issued.issued_compaction(id, content) {
                    return Err(ApiError::invalid_encrypted_content(content));
                }
            }
            _ => {}
        }
        resolved.push(Cow::Borrowed(item));
    }
    Ok(resolved)
}

/// The field of an input item of this type that may hold content parts.
fn parts_field(kind: &str) -> Option<&'static str> {
    match kind {
        "message" => Some("content"),
        "function_call_output" | "custom_tool_call_output" => Some("output"),
        _ => None,
    }
}

/// Each of input item `index`'s content `parts` (in its `field`) names its `type`: the
/// API cannot read a part without one. A part that is not an object, or of a type the API
/// may not take, is let through: what the API answers to those has not been seen.
fn check_part_types(parts: &[Value], index: usize, field: &str) -> Result<(), ApiError> {
    let untyped = parts
        .iter()
        .position(|part| part.is_object() && part.get("type").is_none_or(Value::is_null));
    match untyped {
        Some(part) => Err(ApiError::missing_part_type(&format!(
            "input[{index}].{field}[{part}].type"
        ))),
        None => Ok(()),
    }
}

/// The context a create is checked in: the stored context it continues (empty without
/// `previous_response_id` or a conversation) and its resolved input, each item's keys
/// read once.
pub struct Context<'a> {
    chain: Vec<ItemKeys<'a>>,
    input: Vec<ItemKeys<'a>>,
}

impl<'a> Context<'a> {
    /// `chain` then `input`.
    pub fn new(chain: &'a [Value], input: impl IntoIterator<Item = &'a Value>) -> Self {
        Self {
            chain: chain.iter().map(ItemKeys::of).collect(),
            input: input.into_iter().map(ItemKeys::of).collect(),
        }
    }

    /// Every item, the chain's first.
    fn all(&self) -> impl Iterator<Item = &ItemKeys<'a>> {
        self.chain.iter().chain(&self.input)
    }

    /// The `call_id`s of the items of one type, over the whole context.
    fn call_ids(&self, kind: &str) -> HashSet<&'a str> {
        self.all()
            .filter(|item| item.kind == kind)
            .filter_map(|item| item.call_id)
            .collect()
    }
}

/// Context-wide checks: E4, E5, E3, duplicate outputs, E2.
pub fn check_context(context: &Context, issued: &Issued) -> Result<(), ApiError> {
    let (chain, input) = (&context.chain, &context.input);
    let chain_ids: HashSet<&str> = chain.iter().filter_map(|item| item.id).collect();
    if let Some(id) = input
        .iter()
        .filter_map(|item| item.id)
        .find(|id| chain_ids.contains(id))
    {
        return Err(ApiError::duplicate_item(id));
    }
    let context_ids: HashSet<&str> = context.all().filter_map(|item| item.id).collect();
    for item in input {
        if item.kind == "function_call"
            && let Some(id) = item.id
            && let Some(reasoning) = issued.reasoning_of(id)
            && !context_ids.contains(reasoning)
        {
            return Err(ApiError::call_without_reasoning(id, reasoning));
        }
    }
    for (index, item) in input.iter().enumerate() {
        if item.kind != "reasoning" {
            continue;
        }
        let id = item.id.unwrap_or_default();
        if let Some(follower) = issued.follower(id) {
            let next = input.get(index + 1);
            if !next.is_some_and(|next| follower.admits(next)) {
                return Err(ApiError::reasoning_without_follower(id));
            }
        }
    }
    // Each kind pairs its calls with answers of its own kind only: an answer of the
    // wrong kind is an answer to no call (E3), every answer checked before any call.
    for kind in CALL_KINDS {
        check_answers(context, kind)?;
    }
    // An MCP approval request left unanswered is no error: the API takes a request
    // that goes on without deciding it (the tool is then not run).
    for kind in CALL_KINDS.into_iter().filter(|kind| *kind != MCP_APPROVAL) {
        check_answered(context, kind)?;
    }
    Ok(())
}

/// E3 and duplicate outputs for the answers of one kind.
fn check_answers(context: &Context, kind: call_kind::CallKind) -> Result<(), ApiError> {
    let calls = context.call_ids(kind.call);
    let mut answered: HashSet<&str> = context
        .chain
        .iter()
        .filter(|item| item.kind == kind.answer)
        .map(|item| item.call_id.unwrap_or_default())
        .collect();
    let function = kind == FUNCTION;
    for item in &context.input {
        // A server-executed search's output has no call_id: it answers no call of the
        // controller's.
        if item.kind == kind.answer && !(kind == TOOL_SEARCH && item.call_id.is_none()) {
            let id = item.call_id.unwrap_or_default();
            if !calls.contains(id) {
                return Err(if function {
                    ApiError::no_tool_call(id)
                } else if kind == MCP_APPROVAL {
                    ApiError::no_approval_request(id)
                } else {
                    ApiError::no_tool_call_of(kind.words, id)
                });
            }
            // Two decisions on one approval request: what the API answers is not known,
            // so the fake takes them and the oracle judges (`mcp/approval-answered`).
            if !answered.insert(id) && kind != MCP_APPROVAL {
                return Err(ApiError::duplicate_output(id));
            }
        }
    }
    Ok(())
}

/// E2 for the calls of one kind.
fn check_answered(context: &Context, kind: call_kind::CallKind) -> Result<(), ApiError> {
    let function = kind == FUNCTION;
    let outputs = context.call_ids(kind.answer);
    for item in context.all() {
        if item.kind == kind.call
            && let Some(id) = item.call_id
            && !outputs.contains(id)
        {
            return Err(if function {
                ApiError::no_tool_output(id)
            } else {
                ApiError::no_tool_output_of(kind.words, id)
            });
        }
    }
    Ok(())
}

/// Programmatic tool calling: a program-owned call's output carries the call's `caller`,
/// and calls or outputs of a program travel with the program item, unaltered.
pub fn check_programs(context: &Context, issued: &Issued) -> Result<(), ApiError> {
    let input = &context.input;
    for (index, item) in input.iter().enumerate() {
        if call_kind::of_answer(item.kind).is_none() {
            continue;
        }
        let id = item.call_id.unwrap_or_default();
        if let Some(caller) = issued.callers.get(id)
            && item.item.get("caller") != Some(caller)
        {
            return Err(ApiError::caller_mismatch(index, id));
        }
    }
    for item in input.iter().filter(|item| item.kind == "program") {
        let program_call = item.call_id.unwrap_or_default();
        let issued_item = issued.programs_by_call.get(program_call);
        if issued_item.is_none_or(|original| {
            original.get("fingerprint") != item.item.get("fingerprint")
                || original.get("code") != item.item.get("code")
        }) {
            return Err(ApiError::program_altered(item.id.unwrap_or(program_call)));
        }
    }
    let programs = context.call_ids("program");
    for item in input {
        let caller = match item.kind {
            kind if call_kind::of_call(kind).is_some() => item.item.get("caller"),
            kind if call_kind::of_answer(kind).is_some() => {
                item.call_id.and_then(|id| issued.callers.get(id))
            }
            _ => None,
        };
        if let Some(caller_id) = caller
            .filter(|c| c["type"] == "program")
            .and_then(|c| c["caller_id"].as_str())
            && !programs.contains(caller_id)
        {
            return Err(ApiError::program_missing(caller_id));
        }
    }
    Ok(())
}
