//! The output items the fake server generates, typed: written straight to JSON in the real
//! API's key order, and made into values only where something keeps them (the store, a
//! stream's planner).

use std::borrow::Cow;

use serde_json::Value;

use super::call_kind::CallKind;
use super::write::{FieldSpans, Fields, Set, WriteJson, value_to};

/// One generated output item; strings the scenario gives are borrowed from it.
#[derive(Debug, Clone)]
#[allow(missing_docs, reason = "each field is the wire field of the same name")]
pub enum OutputItem<'a> {
    /// `reasoning`, with its summary texts.
    Reasoning {
        id: String,
        encrypted_content: String,
        summary: &'a [String],
        /// The `reasoning_text` parts of `content` (no `content` when empty).
        text: &'a [String],
    },
    /// An assistant `message` with one `output_text` part, and a `refusal` part after it
    /// when `refusal` is set.
    Message {
        id: String,
        status: &'a str,
        text: &'a str,
        /// The `output_text` part's annotations, as wire values.
        annotations: Vec<Value>,
        refusal: Option<&'a str>,
        /// Whether the `output_text` part carries its tokens' `logprobs` (the request
        /// asked for them), else an empty list.
        logprobs: bool,
    },
    /// An assistant `message` with one `refusal` part.
    Refusal { id: String, text: &'a str },
    /// A `function_call`; `caller_id` is set for a call a program makes.
    Call {
        id: String,
        status: &'a str,
        arguments: Cow<'a, str>,
        call_id: String,
        name: &'a str,
        /// The `namespace` tool the function belongs to, if any.
        namespace: Option<&'a str>,
        caller_id: Option<Value>,
    },
    /// A `custom_tool_call`: a call to a `custom` tool, with free-form text `input`.
    /// It has no `status` (the SDK's `ResponseCustomToolCall` has none).
    CustomCall {
        id: String,
        call_id: String,
        input: &'a str,
        name: &'a str,
    },
    /// An `mcp_approval_request`: the model asks to call an MCP tool that needs approval.
    McpApprovalRequest {
        id: String,
        arguments: Cow<'a, str>,
        name: &'a str,
        server_label: &'a str,
    },
    /// A hosted tool's item (`web_search_call`, `mcp_call`, ...): the scenario's fields
    /// after `id` and `type`, in its order.
    Hosted {
        id: String,
        kind: &'static str,
        fields: Vec<(&'a str, Value)>,
    },
    /// A call of a kind whose input is a JSON object (`shell_call` with its `action`,
    /// `local_shell_call`, `apply_patch_call` with its `operation`): the kind says its
    /// type and input field.
    ActionCall {
        kind: CallKind,
        id: String,
        call_id: String,
        input: Value,
        /// Set for a call a program makes (`shell_call`, `apply_patch_call`).
        caller_id: Option<Value>,
    },
    /// A `computer_call`: an `action` or a batch of `actions` for the `computer` tool,
    /// with the safety checks the controller must have approved before it acts.
    ComputerCall {
        id: String,
        call_id: String,
        action: Option<&'a Value>,
        actions: Option<&'a [Value]>,
        pending_safety_checks: Value,
    },
    /// A `tool_search_call`; a server-executed one has no `call_id` (null).
    ToolSearchCall {
        id: String,
        call_id: Option<String>,
        arguments: &'a Value,
        execution: &'a str,
    },
    /// A server-made `tool_search_output`, with the tools the search loaded.
    ToolSearchOutput { id: String, tools: &'a [Value] },
    /// A `program` (programmatic tool calling).
    Program {
        id: String,
        call_id: String,
        code: &'a str,
        fingerprint: String,
    },
    /// A `program_output`.
    ProgramOutput {
        id: String,
        call_id: Value,
        result: &'a str,
        status: &'a str,
    },
    /// A `compaction` item (server-side compaction), opaque to the client.
    Compaction {
        id: String,
        encrypted_content: String,
    },
}

impl OutputItem<'_> {
    /// The item's `id`.
    pub fn id(&self) -> &str {
        match self {
            OutputItem::Reasoning { id, .. }
            | OutputItem::Message { id, .. }
            | OutputItem::Refusal { id, .. }
            | OutputItem::Call { id, .. }
            | OutputItem::CustomCall { id, .. }
            | OutputItem::McpApprovalRequest { id, .. }
            | OutputItem::Hosted { id, .. }
            | OutputItem::ActionCall { id, .. }
            | OutputItem::ComputerCall { id, .. }
            | OutputItem::ToolSearchCall { id, .. }
            | OutputItem::ToolSearchOutput { id, .. }
            | OutputItem::Program { id, .. }
            | OutputItem::ProgramOutput { id, .. }
            | OutputItem::Compaction { id, .. } => id,
        }
    }

    /// The item's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            OutputItem::Reasoning { .. } => "reasoning",
            OutputItem::Message { .. } | OutputItem::Refusal { .. } => "message",
            OutputItem::Call { .. } => "function_call",
            OutputItem::CustomCall { .. } => "custom_tool_call",
            OutputItem::McpApprovalRequest { .. } => "mcp_approval_request",
            OutputItem::Hosted { kind, .. } => kind,
            OutputItem::ActionCall { kind, .. } => kind.call,
            OutputItem::ComputerCall { .. } => "computer_call",
            OutputItem::ToolSearchCall { .. } => "tool_search_call",
            OutputItem::ToolSearchOutput { .. } => "tool_search_output",
            OutputItem::Program { .. } => "program",
            OutputItem::ProgramOutput { .. } => "program_output",
            OutputItem::Compaction { .. } => "compaction",
        }
    }

    /// A reasoning or compaction item's `encrypted_content`.
    pub fn encrypted_content(&self) -> Option<&str> {
        match self {
            OutputItem::Reasoning {
                encrypted_content, ..
            }
            | OutputItem::Compaction {
                encrypted_content, ..
            } => Some(encrypted_content),
            _ => None,
        }
    }

    /// The item's `call_id`: a call's or a program's own, the program a program output
    /// belongs to.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            OutputItem::Call { call_id, .. }
            | OutputItem::CustomCall { call_id, .. }
            | OutputItem::ActionCall { call_id, .. }
            | OutputItem::ComputerCall { call_id, .. }
            | OutputItem::Program { call_id, .. } => Some(call_id),
            OutputItem::ProgramOutput { call_id, .. } => call_id.as_str(),
            OutputItem::ToolSearchCall { call_id, .. } => call_id.as_deref(),
            _ => None,
        }
    }

    /// Writes the item as JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        self.write_with(out, &[]);
    }

    /// Writes the item with some fields set (as a stream announces it before it is done):
    /// each keeps its place, and one the item lacks comes last.
    pub fn write_with(&self, out: &mut Vec<u8>, set: &[(&str, Set<'_>)]) {
        self.write_fields(Fields::new(out, set));
    }

    /// Writes the item, noting where it and each of its fields' values went, so it can
    /// be copied with some fields set instead of written again ([`FieldSpans::write_with`]).
    pub fn write_noting(&self, out: &mut Vec<u8>, spans: &mut FieldSpans) {
        self.write_fields(Fields::noting(out, spans));
    }

    fn write_fields(&self, mut fields: Fields<'_, '_>) {
        let kind = self.kind();
        match self {
            OutputItem::Reasoning {
                id,
                encrypted_content,
                summary,
                text,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("encrypted_content", encrypted_content);
                fields.put_with("summary", |out| {
                    write_text_parts(out, br#"{"type":"summary_text","text":"#, summary);
                });
                if !text.is_empty() {
                    fields.put_with("content", |out| {
                        write_text_parts(out, br#"{"type":"reasoning_text","text":"#, text);
                    });
                }
            }
            OutputItem::Message {
                id,
                status,
                text,
                annotations,
                refusal,
                logprobs,
            } => {
                put_assistant_message(&mut fields, id, status, |out| {
                    match logprobs {
                        true => write_text_with_logprobs(out, text, annotations),
                        false => write_annotated_text(out, text, annotations),
                    }
                    if let Some(refusal) = refusal {
                        out.push(b',');
                        write_refusal(out, refusal);
                    }
                });
            }
            OutputItem::Refusal { id, text } => {
                put_assistant_message(&mut fields, id, "completed", |out| write_refusal(out, text));
            }
            OutputItem::Call {
                id,
                status,
                arguments,
                call_id,
                name,
                namespace,
                caller_id,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("status", status);
                fields.put("arguments", arguments);
                fields.put("call_id", call_id);
                fields.put("name", name);
                if let Some(namespace) = namespace {
                    fields.put("namespace", *namespace);
                }
                if let Some(caller_id) = caller_id {
                    fields.put_with("caller", |out| {
                        write_part(out, br#"{"type":"program","caller_id":"#, caller_id);
                    });
                }
            }
            OutputItem::CustomCall {
                id,
                call_id,
                input,
                name,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("call_id", call_id);
                fields.put("input", input);
                fields.put("name", name);
            }
            OutputItem::McpApprovalRequest {
                id,
                arguments,
                name,
                server_label,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("arguments", arguments);
                fields.put("name", name);
                fields.put("server_label", server_label);
            }
            OutputItem::Hosted {
                id, fields: rest, ..
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                for (key, value) in rest {
                    fields.put_any(key, value);
                }
            }
            // In the order of the function call's fields; `status` is `completed`, as
            // the response is done when the item is served.
            OutputItem::ActionCall {
                kind: call,
                id,
                call_id,
                input,
                caller_id,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("status", "completed");
                fields.put(call.input_field, input);
                fields.put("call_id", call_id);
                if let Some(caller_id) = caller_id {
                    fields.put_with("caller", |out| {
                        write_part(out, br#"{"type":"program","caller_id":"#, caller_id);
                    });
                }
            }
            OutputItem::ComputerCall {
                id,
                call_id,
                action,
                actions,
                pending_safety_checks,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("status", "completed");
                if let Some(action) = action {
                    fields.put("action", *action);
                }
                if let Some(actions) = actions {
                    fields.put("actions", *actions);
                }
                fields.put("call_id", call_id);
                fields.put("pending_safety_checks", pending_safety_checks);
            }
            OutputItem::ToolSearchCall {
                id,
                call_id,
                arguments,
                execution,
            } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("status", "completed");
                fields.put("arguments", *arguments);
                match call_id {
                    Some(call_id) => fields.put("call_id", call_id),
                    None => fields.put("call_id", &Value::Null),
                }
                fields.put("execution", *execution);
            }
            OutputItem::ToolSearchOutput { id, tools } => {
                fields.put("id", id);
                fields.put("type", kind);
                fields.put("status", "completed");
                fields.put("call_id", &Value::Null);
                fields.put("execution", "server");
                fields.put("tools", *tools);
            }
            // A program and its output put `type` first.
            OutputItem::Program {
                id,
                call_id,
                code,
                fingerprint,
            } => {
                put_program_head(&mut fields, kind, id, call_id);
                fields.put("code", code);
                fields.put("fingerprint", fingerprint);
            }
            OutputItem::ProgramOutput {
                id,
                call_id,
                result,
                status,
            } => {
                put_program_head(&mut fields, kind, id, call_id);
                fields.put("result", result);
                fields.put("status", status);
            }
            // As the SDK's ResponseCompactionItem lists its fields.
            OutputItem::Compaction {
                id,
                encrypted_content,
            } => {
                fields.put("id", id);
                fields.put("encrypted_content", encrypted_content);
                fields.put("type", kind);
            }
        }
        fields.finish();
    }

    /// The item as a value, exactly as written.
    pub fn to_value(&self) -> Value {
        let mut out = Vec::with_capacity(256);
        self.write(&mut out);
        serde_json::from_slice(&out).expect("written as JSON")
    }
}

/// An assistant message's fields, in the API's order: its content parts are what
/// `parts` writes.
fn put_assistant_message(
    fields: &mut Fields<'_, '_>,
    id: &str,
    status: &str,
    parts: impl FnOnce(&mut Vec<u8>),
) {
    fields.put("id", id);
    fields.put("type", "message");
    fields.put("status", status);
    fields.put("role", "assistant");
    fields.put_with("content", |out| {
        out.push(b'[');
        parts(out);
        out.push(b']');
    });
}

/// The fields a program and its output put first: `type`, `id`, `call_id`.
fn put_program_head(
    fields: &mut Fields<'_, '_>,
    kind: &str,
    id: &str,
    call_id: &(impl WriteJson + ?Sized),
) {
    fields.put("type", kind);
    fields.put("id", id);
    fields.put("call_id", call_id);
}

/// An object whose last field is `value`: `head` opens it up to that value.
fn write_part(out: &mut Vec<u8>, head: &[u8], value: &(impl WriteJson + ?Sized)) {
    out.extend_from_slice(head);
    value_to(out, value);
    out.push(b'}');
}

/// A JSON array of text parts, each `head` (the part up to its text) and its text.
fn write_text_parts(out: &mut Vec<u8>, head: &[u8], texts: &[impl AsRef<str>]) {
    out.push(b'[');
    for (index, text) in texts.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_part(out, head, text.as_ref());
    }
    out.push(b']');
}

/// An `output_text` content part.
pub fn write_output_text(out: &mut Vec<u8>, text: &str) {
    write_part(
        out,
        br#"{"type":"output_text","annotations":[],"logprobs":[],"text":"#,
        text,
    );
}

/// An `output_text` content part with its annotations.
pub fn write_annotated_text(out: &mut Vec<u8>, text: &str, annotations: &[Value]) {
    if annotations.is_empty() {
        return write_output_text(out, text);
    }
    out.extend_from_slice(br#"{"type":"output_text","annotations":["#);
    for (index, annotation) in annotations.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        value_to(out, annotation);
    }
    write_part(out, br#"],"logprobs":[],"text":"#, text);
}

/// An `output_text` content part with its annotations and its tokens' log probabilities.
pub fn write_text_with_logprobs(out: &mut Vec<u8>, text: &str, annotations: &[Value]) {
    out.extend_from_slice(br#"{"type":"output_text","annotations":["#);
    for (index, annotation) in annotations.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        value_to(out, annotation);
    }
    out.extend_from_slice(br#"],"logprobs":"#);
    write_logprobs(out, text, true);
    out.extend_from_slice(br#","text":"#);
    value_to(out, text);
    out.push(b'}');
}

/// The tokens of `text` as the fake counts them: each run of whitespace with the word
/// after it.
pub fn tokens(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() && in_word {
            tokens.push(&text[start..at]);
            start = at;
            in_word = false;
        } else if !c.is_whitespace() {
            in_word = true;
        }
    }
    if start < text.len() {
        tokens.push(&text[start..]);
    }
    tokens
}

/// The `logprobs` of `text`'s tokens: fixed values (a token's logprob depends only on
/// its place), so every run sends the same. `bytes` on an `output_text` part's entries
/// (the SDK's `Logprob` there has them), not on a text event's.
pub fn write_logprobs(out: &mut Vec<u8>, text: &str, bytes: bool) {
    out.push(b'[');
    for (index, token) in tokens(text).into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"token":"#);
        value_to(out, token);
        if bytes {
            out.extend_from_slice(br#","bytes":["#);
            let numbers: Vec<String> = token.bytes().map(|b| b.to_string()).collect();
            out.extend_from_slice(numbers.join(",").as_bytes());
            out.push(b']');
        }
        let logprob = -((index % 9) as f64 + 1.0) / 64.0;
        out.extend_from_slice(format!(r#","logprob":{logprob},"top_logprobs":[]}}"#).as_bytes());
    }
    out.push(b']');
}

/// A `refusal` content part.
pub fn write_refusal(out: &mut Vec<u8>, text: &str) {
    write_part(out, br#"{"type":"refusal","refusal":"#, text);
}

/// Writes items as a JSON array; with `spans`, notes where each item and its fields'
/// values were written.
pub fn write_all(
    out: &mut Vec<u8>,
    items: &[OutputItem<'_>],
    mut spans: Option<&mut Vec<FieldSpans>>,
) {
    out.push(b'[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match spans.as_deref_mut() {
            Some(spans) => {
                let mut noted = FieldSpans::default();
                item.write_noting(out, &mut noted);
                spans.push(noted);
            }
            None => item.write(out),
        }
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::write::object_with;
    use serde_json::json;

    fn every_kind() -> Vec<OutputItem<'static>> {
        static SUMMARY: [String; 0] = [];
        static QUERY: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| json!({"query": "orders"}));
        static CLICK: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| json!({"type": "click", "button": "left", "x": 1, "y": 2}));
        vec![
            OutputItem::Reasoning {
                id: "rs_1".into(),
                encrypted_content: "gAAAA".into(),
                summary: &SUMMARY,
                text: &SUMMARY,
            },
            OutputItem::Message {
                id: "msg_1".into(),
                status: "completed",
                text: "Zürich \"quoted\"",
                annotations: vec![
                    serde_json::json!({"type": "file_citation", "file_id": "file-1", "filename": "a.md", "index": 6}),
                ],
                refusal: None,
                logprobs: false,
            },
            OutputItem::Refusal {
                id: "msg_2".into(),
                text: "no",
            },
            OutputItem::Call {
                id: "fc_1".into(),
                status: "completed",
                arguments: "{\"sku\":\"A7\"}".into(),
                call_id: "call_1".into(),
                name: "get_stock",
                namespace: Some("crm"),
                caller_id: Some(json!("call_p")),
            },
            OutputItem::CustomCall {
                id: "ctc_1".into(),
                call_id: "call_2".into(),
                input: "print(1)",
                name: "run_python",
            },
            OutputItem::ActionCall {
                kind: crate::wire::call_kind::SHELL,
                id: "sh_1".into(),
                call_id: "call_3".into(),
                input: json!({"commands": ["ls -la"], "timeout_ms": 1000}),
                caller_id: Some(json!("call_p")),
            },
            OutputItem::ComputerCall {
                id: "cu_1".into(),
                call_id: "call_3".into(),
                action: Some(&CLICK),
                actions: None,
                pending_safety_checks: json!([{"id": "cu_sc_1", "code": "sensitive_domain", "message": "m"}]),
            },
            OutputItem::ToolSearchCall {
                id: "tsc_1".into(),
                call_id: Some("call_4".into()),
                arguments: &QUERY,
                execution: "client",
            },
            OutputItem::ToolSearchOutput {
                id: "tso_1".into(),
                tools: std::slice::from_ref(&*CLICK),
            },
            OutputItem::Program {
                id: "cm_1".into(),
                call_id: "call_p".into(),
                code: "print(1)",
                fingerprint: "fp_1".into(),
            },
            OutputItem::ProgramOutput {
                id: "cmo_1".into(),
                call_id: Value::Null,
                result: "1",
                status: "completed",
            },
        ]
    }

    #[test]
    fn fields_set_on_a_generated_item_land_where_setting_them_on_its_value_would() {
        let set = [
            ("status", Set::Str("in_progress")),
            ("arguments", Set::Str("")),
            ("summary", Set::EmptyArray),
        ];
        for item in every_kind() {
            let mut typed = Vec::new();
            item.write_with(&mut typed, &set);
            let mut from_value = Vec::new();
            object_with(&mut from_value, &item.to_value(), &set);
            assert_eq!(
                String::from_utf8(typed).unwrap(),
                String::from_utf8(from_value).unwrap()
            );
        }
    }

    #[test]
    fn an_item_copied_with_fields_set_is_the_item_written_with_them() {
        let sets: [&[(&str, Set<'_>)]; 5] = [
            &[
                ("status", Set::Str("in_progress")),
                ("arguments", Set::Str("")),
            ],
            &[
                ("encrypted_content", Set::Str("gA")),
                ("summary", Set::EmptyArray),
            ],
            &[
                ("content", Set::EmptyArray),
                ("status", Set::Str("in_progress")),
            ],
            &[],
            &[("status", Set::Null), ("not_a_field", Set::Bool(true))],
        ];
        for item in every_kind() {
            let mut json = b"[".to_vec();
            let mut spans = FieldSpans::default();
            item.write_noting(&mut json, &mut spans);
            for set in sets {
                let mut copied = Vec::new();
                let whole = item.to_value();
                let has_all = set.iter().all(|(key, _)| whole.get(key).is_some());
                assert_eq!(spans.write_with(&json, set, &mut copied), has_all);
                if has_all {
                    let mut written = Vec::new();
                    item.write_with(&mut written, set);
                    assert_eq!(String::from_utf8(copied), String::from_utf8(written));
                } else {
                    assert!(copied.is_empty(), "nothing written when it cannot copy");
                }
            }
        }
    }

    #[test]
    fn the_type_of_each_item_is_its_wire_type() {
        for item in every_kind() {
            assert_eq!(item.to_value()["type"], item.kind());
            assert_eq!(
                item.to_value().get("id").and_then(Value::as_str),
                Some(item.id())
            );
        }
    }
}
