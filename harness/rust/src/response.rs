//! Reading a Response object and turning it into the next request's items.

use serde_json::{Value, json};

use crate::Outcome;

/// The kind of a call: which item it came as, and which item answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// A `function_call`, with JSON `arguments`.
    Function,
    /// A `custom_tool_call`, with free-form text `input`.
    Custom,
    /// A `shell_call`, with an `action` of commands, for the `shell` tool.
    Shell,
    /// A `local_shell_call`, with an `exec` action, for the `local_shell` tool.
    LocalShell,
    /// An `apply_patch_call`, with one file `operation`, for the `apply_patch` tool.
    ApplyPatch,
    /// A `computer_call`, with an `action` or a batch of `actions`.
    Computer,
    /// A client-executed `tool_search_call`, with JSON `arguments` (an object).
    ToolSearch,
}

impl CallKind {
    /// The kind of an output item of this `type`, if it is a call this loop runs.
    fn of(item_type: &str) -> Option<CallKind> {
        match item_type {
            "function_call" => Some(CallKind::Function),
            "custom_tool_call" => Some(CallKind::Custom),
            "shell_call" => Some(CallKind::Shell),
            "local_shell_call" => Some(CallKind::LocalShell),
            "apply_patch_call" => Some(CallKind::ApplyPatch),
            "computer_call" => Some(CallKind::Computer),
            "tool_search_call" => Some(CallKind::ToolSearch),
            _ => None,
        }
    }

    /// The call item's field holding what the model wrote.
    pub(crate) fn input_field(self) -> &'static str {
        match self {
            CallKind::Function => "arguments",
            CallKind::Custom => "input",
            CallKind::Shell | CallKind::LocalShell => "action",
            CallKind::ApplyPatch => "operation",
            CallKind::Computer => "action",
            CallKind::ToolSearch => "arguments",
        }
    }

    /// The tool type of the kinds whose tool has no name and is known by its type.
    pub(crate) fn typed_tool(self) -> Option<&'static str> {
        match self {
            CallKind::Function | CallKind::Custom => None,
            CallKind::Shell => Some("shell"),
            CallKind::LocalShell => Some("local_shell"),
            CallKind::ApplyPatch => Some("apply_patch"),
            CallKind::Computer => Some("computer"),
            CallKind::ToolSearch => Some("tool_search"),
        }
    }

    /// The kind whose tool is known by this type (`shell`, `local_shell`, `apply_patch`,
    /// `computer` or `computer_use_preview`, `tool_search`).
    pub(crate) fn of_tool(tool_type: &str) -> Option<CallKind> {
        if tool_type == "computer_use_preview" {
            return Some(CallKind::Computer);
        }
        [
            CallKind::Shell,
            CallKind::LocalShell,
            CallKind::ApplyPatch,
            CallKind::Computer,
            CallKind::ToolSearch,
        ]
        .into_iter()
        .find(|kind| kind.typed_tool() == Some(tool_type))
    }

    /// The `type` of the item that answers a call of this kind.
    pub(crate) fn answer_type(self) -> &'static str {
        match self {
            CallKind::Function => "function_call_output",
            CallKind::Custom => "custom_tool_call_output",
            CallKind::Shell => "shell_call_output",
            CallKind::LocalShell => "local_shell_call_output",
            CallKind::ApplyPatch => "apply_patch_call_output",
            CallKind::Computer => "computer_call_output",
            CallKind::ToolSearch => "tool_search_output",
        }
    }
}

/// A call output item: a `function_call` or a `custom_tool_call`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionCall {
    pub kind: CallKind,
    pub call_id: String,
    pub name: String,
    /// The raw JSON text the model produced (validated before use), a custom tool
    /// call's input text, or the JSON text of a shell call's action or a patch's
    /// operation.
    pub arguments: String,
    /// Set for calls made by a program; it must be echoed on the output.
    pub caller: Option<Value>,
    /// A computer call's `pending_safety_checks`: put to the approver before it runs.
    pub pending_safety_checks: Vec<Value>,
    /// The `namespace` a call names: the tool is found under it, and run with it.
    pub namespace: Option<String>,
}

impl FunctionCall {
    /// The tool's name as the registry and `approval_required` know it:
    /// `namespace.name` inside a namespace, `name` outside one.
    pub(crate) fn qualified_name(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Who made the call, in the words of `allowed_callers`: a program, or the model directly.
    pub(crate) fn caller_kind(&self) -> &'static str {
        match &self.caller {
            Some(caller) if caller["type"] == "program" => "programmatic",
            _ => "direct",
        }
    }
}

/// Only `completed` responses continue the loop; every other status ends the case.
pub(crate) fn check_status(response: &Value) -> Result<(), Outcome> {
    match response["status"].as_str() {
        Some("completed") => Ok(()),
        Some("incomplete") => Err(Outcome::failed(
            "incomplete",
            format!(
                "response incomplete: {}",
                response["incomplete_details"]["reason"]
                    .as_str()
                    .unwrap_or("no reason given")
            ),
        )),
        Some("failed") => Err(Outcome::failed(
            "response_failed",
            format!(
                "response failed: {}",
                response["error"]["message"]
                    .as_str()
                    .unwrap_or("no error message")
            ),
        )),
        Some("cancelled") => Err(Outcome::failed("cancelled", "response was cancelled")),
        Some(other) => Err(Outcome::failed(
            "api_error",
            format!("unexpected response status {other:?}"),
        )),
        None => Err(Outcome::failed("api_error", "response has no status")),
    }
}

pub(crate) fn output_items(response: &Value) -> Result<&[Value], Outcome> {
    response["output"]
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| Outcome::failed("api_error", "response has no output array"))
}

pub(crate) fn function_calls(output: &[Value]) -> Result<Vec<FunctionCall>, Outcome> {
    output
        .iter()
        .filter_map(|item| Some((item, CallKind::of(item["type"].as_str()?)?)))
        // A server-executed tool search is hosted: replayed, never answered.
        .filter(|(item, kind)| *kind != CallKind::ToolSearch || item["execution"] == "client")
        .map(|(item, kind)| {
            let call_id = item["call_id"].as_str().ok_or_else(|| {
                Outcome::failed(
                    "api_error",
                    format!(
                        "a {} item has no call_id",
                        item["type"].as_str().unwrap_or_default()
                    ),
                )
            })?;
            // A nameless tool is known by its type (`computer`, `tool_search`, ...). What
            // a computer call performs is its `action` or `actions`, as one JSON object.
            let name = item["name"]
                .as_str()
                .or(kind.typed_tool())
                .unwrap_or_default()
                .to_string();
            let arguments = match (kind, &item[kind.input_field()]) {
                (CallKind::Computer, _) => {
                    let actions: serde_json::Map<String, Value> = ["action", "actions"]
                        .into_iter()
                        .filter_map(|key| {
                            Some((
                                key.to_string(),
                                item.get(key).filter(|v| !v.is_null())?.clone(),
                            ))
                        })
                        .collect();
                    Value::Object(actions).to_string()
                }
                (_, Value::String(text)) => text.clone(),
                (_, Value::Null) => String::new(),
                (_, input) => input.to_string(),
            };
            Ok(FunctionCall {
                kind,
                call_id: call_id.to_string(),
                name,
                arguments,
                caller: item.get("caller").filter(|c| c.is_object()).cloned(),
                pending_safety_checks: item["pending_safety_checks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                namespace: item["namespace"].as_str().map(str::to_string),
            })
        })
        .collect()
}

/// The `computer_call_output` answering a computer call: the screenshot the backend
/// returned (none when the call did not run: `output` is then an error), and the pending
/// safety checks acknowledged when the approver approved them.
pub(crate) fn computer_call_output(call: &FunctionCall, output: &str, approved: bool) -> Value {
    let mut screenshot = json!({"type": "computer_screenshot"});
    if let Ok(Value::Object(result)) = serde_json::from_str::<Value>(output) {
        for key in ["image_url", "file_id"] {
            if let Some(value) = result.get(key) {
                screenshot[key] = value.clone();
            }
        }
    }
    let mut item = json!({
        "type": call.kind.answer_type(),
        "call_id": call.call_id,
        "output": screenshot,
    });
    if approved && !call.pending_safety_checks.is_empty() {
        item["acknowledged_safety_checks"] = Value::Array(call.pending_safety_checks.clone());
    }
    item
}

/// The `tool_search_output` answering a client tool search: the definitions, from the
/// task's deferred tools, of the tools the search found (`{"tools": [names]}`); none when
/// the search failed.
pub(crate) fn tool_search_output(call: &FunctionCall, output: &str, catalogue: &[Value]) -> Value {
    let found: Vec<Value> = serde_json::from_str::<Value>(output)
        .ok()
        .and_then(|result| result["tools"].as_array().cloned())
        .unwrap_or_default();
    let tools: Vec<Value> = found
        .iter()
        .filter_map(|name| catalogue.iter().find(|tool| &tool["name"] == name).cloned())
        .collect();
    json!({
        "type": call.kind.answer_type(),
        "call_id": call.call_id,
        "execution": "client",
        "tools": tools,
    })
}

/// The output item answering `call` (a `function_call_output`, or a
/// `custom_tool_call_output` for a custom tool call): keyed by `call_id` (never the item id).
pub(crate) fn function_call_output(call: &FunctionCall, output: String) -> Value {
    if call.kind.typed_tool().is_some() {
        return typed_answer(call, output);
    }
    let mut item = json!({
        "type": call.kind.answer_type(),
        "call_id": call.call_id,
        "output": output,
    });
    if let Some(caller) = &call.caller {
        item["caller"] = caller.clone();
    }
    item
}

/// The MCP approval requests of a response (`mcp_approval_request`): the model waits for
/// a decision on each. Hosted items (`web_search_call`, `mcp_call`, ...) ran on the server
/// and are only replayed.
pub(crate) fn approval_requests(output: &[Value]) -> Vec<&Value> {
    output
        .iter()
        .filter(|item| item["type"] == "mcp_approval_request")
        .collect()
}

/// The answer of a shell, local shell or patch call from its output: the backend's
/// result as JSON, or this loop's own error output (`{"error": text}` alone, which no
/// result of these tools is). A shell call's output is the backend's chunks, a failure
/// one chunk with the reason in stderr and exit code 1; a local shell call's output is
/// JSON text under the call's id; a patch says `completed` or `failed` in its status.
fn typed_answer(call: &FunctionCall, output: String) -> Value {
    let parsed: Value = serde_json::from_str(&output).unwrap_or(Value::Null);
    let failure = parsed
        .as_object()
        .filter(|fields| fields.len() == 1)
        .and_then(|fields| fields.get("error"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut item = match call.kind {
        CallKind::Shell => {
            let chunks = match &failure {
                Some(reason) => json!([{
                    "stdout": "",
                    "stderr": reason,
                    "outcome": {"type": "exit", "exit_code": 1},
                }]),
                None => parsed,
            };
            let mut item =
                json!({"type": "shell_call_output", "call_id": call.call_id, "output": chunks});
            let action: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            if let Some(limit) = action.get("max_output_length").filter(|l| l.is_number()) {
                item["max_output_length"] = limit.clone();
            }
            item
        }
        CallKind::ApplyPatch => {
            let (status, log) = match &failure {
                Some(reason) => ("failed", reason.clone()),
                None => (
                    parsed["status"].as_str().unwrap_or("completed"),
                    parsed["output"].as_str().unwrap_or_default().to_owned(),
                ),
            };
            json!({"type": "apply_patch_call_output", "call_id": call.call_id, "status": status, "output": log})
        }
        _ => json!({"type": call.kind.answer_type(), "id": call.call_id, "output": output}),
    };
    if let Some(caller) = &call.caller
        && call.kind != CallKind::LocalShell
    {
        item["caller"] = caller.clone();
    }
    item
}

/// Whether a response without function calls still awaits the model: a program finished
/// (`program_output`) and the model has not answered yet (no message), so the model goes
/// on after the program's result in another request.
pub(crate) fn continues_after_program(output: &[Value]) -> bool {
    let has = |kind: &str| output.iter().any(|item| item["type"] == kind);
    has("program_output")
        && !has("message")
        && !output.iter().any(|item| {
            // A server-executed tool search is hosted: nothing for the loop to answer.
            item["type"]
                .as_str()
                .and_then(CallKind::of)
                .is_some_and(|kind| kind != CallKind::ToolSearch || item["execution"] == "client")
        })
}

/// The SDKs' `output_text`: every `output_text` part of every message, joined with "".
pub(crate) fn output_text(output: &[Value]) -> String {
    output
        .iter()
        .filter(|item| item["type"] == "message")
        .filter_map(|item| item["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str())
        .collect()
}

/// The answer of a response without function calls: its text, or a refusal.
pub(crate) fn final_answer(output: &[Value]) -> Result<String, Outcome> {
    let last_message = output.iter().rev().find(|item| item["type"] == "message");
    let parts = last_message
        .and_then(|message| message["content"].as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    // A refusal part refuses, whatever text sits beside it: that text is no answer.
    match parts.iter().find(|part| part["type"] == "refusal") {
        Some(part) => Err(Outcome::failed(
            "refusal",
            part["refusal"].as_str().unwrap_or("the model refused"),
        )),
        _ => Ok(output_text(output)),
    }
}

/// The final message checked against the task's `text_format` (a `json_schema` config):
/// it must parse as JSON and satisfy the schema, or the case fails with reason
/// `invalid_output`. The answer is the message text as the model wrote it.
pub(crate) fn structured_answer(text: String, format: &Value) -> Result<String, Outcome> {
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        Outcome::failed(
            "invalid_output",
            format!("the final message is not JSON: {e}"),
        )
    })?;
    let name = format["name"].as_str().unwrap_or("(unnamed)");
    let validator = jsonschema::validator_for(&format["schema"]).map_err(|e| {
        Outcome::failed(
            "invalid_output",
            format!("the schema {name:?} does not compile: {e}"),
        )
    })?;
    match validator.validate(&value) {
        Ok(()) => Ok(text),
        Err(error) => {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() {
                "(the top level)".to_owned()
            } else {
                at
            };
            Err(Outcome::failed(
                "invalid_output",
                format!("the final message breaks the schema {name:?} at {at}: {error}"),
            ))
        }
    }
}

/// An item without its null-valued keys, as the API's output gives them.
pub(crate) fn without_nulls(item: &Value) -> Value {
    match item {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The output items as they must be replayed in a stateless request: verbatim and in order
/// (`program` items keep their `fingerprint`, calls their `caller`), except that `status`
/// is dropped from reasoning items (the API rejects it in input).
pub(crate) fn replay_items(output: &[Value]) -> impl Iterator<Item = Value> + '_ {
    output.iter().map(|item| {
        let mut item = item.clone();
        if item["type"] == "reasoning"
            && let Some(fields) = item.as_object_mut()
        {
            fields.remove("status");
        }
        item
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: Value) -> Value {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": parts})
    }

    #[test]
    fn replay_strips_status_from_reasoning_only_and_keeps_order() {
        let output = vec![
            json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA", "status": "completed"}),
            json!({"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "f", "arguments": "{}"}),
            json!({"id": "rs_2", "type": "reasoning", "summary": []}),
            message(json!([{"type": "output_text", "text": "x", "annotations": []}])),
        ];
        let replayed: Vec<Value> = replay_items(&output).collect();
        assert_eq!(
            replayed,
            vec![
                json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
                output[1].clone(),
                output[2].clone(),
                output[3].clone(),
            ]
        );
    }

    #[test]
    fn output_text_concatenates_every_text_part_of_every_message() {
        let output = vec![
            message(
                json!([{"type": "output_text", "text": "Hello, "}, {"type": "refusal", "refusal": "no"}]),
            ),
            json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "not this"}]}),
            message(
                json!([{"type": "output_text", "text": "world"}, {"type": "output_text", "text": "!"}]),
            ),
        ];
        assert_eq!(output_text(&output), "Hello, world!");
        assert_eq!(output_text(&[]), "");
    }

    #[test]
    fn refusal_without_text_fails() {
        let output = vec![message(
            json!([{"type": "refusal", "refusal": "I can't help with that."}]),
        )];
        assert_eq!(
            final_answer(&output),
            Err(Outcome::failed("refusal", "I can't help with that."))
        );
    }

    #[test]
    fn refusal_beside_text_is_a_refusal() {
        let output = vec![message(
            json!([{"type": "output_text", "text": "partly"}, {"type": "refusal", "refusal": "no"}]),
        )];
        assert_eq!(final_answer(&output), Err(Outcome::failed("refusal", "no")));
    }

    #[test]
    fn function_calls_keep_order_and_caller() {
        let output = vec![
            message(json!([{"type": "output_text", "text": "checking"}])),
            json!({"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "get", "arguments": "{\"a\":1}"}),
            json!({"id": "fc_2", "type": "function_call", "call_id": "call_b", "name": "get", "arguments": "{}",
                   "caller": {"type": "program", "caller_id": "call_p"}}),
        ];
        let calls = function_calls(&output).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].call_id, "call_a");
        assert_eq!(calls[0].arguments, "{\"a\":1}");
        assert_eq!(calls[0].caller, None);
        assert_eq!(
            function_call_output(&calls[1], "42".to_string()),
            json!({"type": "function_call_output", "call_id": "call_b", "output": "42",
                   "caller": {"type": "program", "caller_id": "call_p"}})
        );
    }

    #[test]
    fn a_program_output_without_an_answer_continues() {
        let program = json!({"type": "program", "id": "cm_1", "call_id": "call_p", "code": "f()",
                             "fingerprint": "fp"});
        let program_output = json!({"type": "program_output", "id": "cmo_1", "call_id": "call_p",
                                    "result": "3", "status": "completed"});
        let call = json!({"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "f",
                          "arguments": "{}", "caller": {"type": "program", "caller_id": "call_p"}});
        let answer = message(json!([{"type": "output_text", "text": "3"}]));
        let continues = |items: &[&Value]| {
            continues_after_program(&items.iter().map(|&item| item.clone()).collect::<Vec<_>>())
        };
        assert!(continues(&[&program, &program_output]));
        assert!(continues(&[&program_output]));
        // An answer, or calls to run, decide the round instead.
        assert!(!continues(&[&program_output, &answer]));
        assert!(!continues(&[&program_output, &call]));
        assert!(!continues(&[&program, &call]));
        assert!(!continues(&[&answer]));
        assert!(!continues(&[]));
        // Program items are replayed verbatim, fingerprint included.
        assert_eq!(
            replay_items(std::slice::from_ref(&program)).collect::<Vec<_>>(),
            [program]
        );
    }

    #[test]
    fn caller_kinds() {
        let with = |caller: Option<Value>| FunctionCall {
            kind: CallKind::Function,
            call_id: "call_1".into(),
            name: "f".into(),
            arguments: "{}".into(),
            caller,
            pending_safety_checks: Vec::new(),
            namespace: None,
        };
        assert_eq!(with(None).caller_kind(), "direct");
        assert_eq!(
            with(Some(json!({"type": "direct"}))).caller_kind(),
            "direct"
        );
        assert_eq!(
            with(Some(json!({"type": "program", "caller_id": "call_p"}))).caller_kind(),
            "programmatic"
        );
    }

    #[test]
    fn statuses_map_to_contract_reasons() {
        let reason = |status: &str| match check_status(&json!({"status": status})) {
            Ok(()) => "ok".to_string(),
            Err(Outcome::Failed { reason, .. }) => reason,
            Err(other) => panic!("unexpected {other:?}"),
        };
        assert_eq!(reason("completed"), "ok");
        assert_eq!(reason("incomplete"), "incomplete");
        assert_eq!(reason("failed"), "response_failed");
        assert_eq!(reason("cancelled"), "cancelled");
        assert_eq!(reason("in_progress"), "api_error");
    }

    #[test]
    fn shell_and_patch_calls_are_answered_by_their_own_kind_with_failures_in_their_fields() {
        let output = [
            json!({"type": "shell_call", "id": "sh_1", "call_id": "call_1", "status": "completed",
                   "action": {"commands": ["ls"], "max_output_length": 100}}),
            json!({"type": "local_shell_call", "id": "lsh_1", "call_id": "call_2", "status": "completed",
                   "action": {"type": "exec", "command": ["pwd"], "env": {}}}),
            json!({"type": "apply_patch_call", "id": "apc_1", "call_id": "call_3", "status": "completed",
                   "operation": {"type": "delete_file", "path": "a.md"}}),
        ];
        let calls = function_calls(&output).unwrap();
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["shell", "local_shell", "apply_patch"]);
        let chunks =
            json!([{"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]);
        assert_eq!(
            function_call_output(&calls[0], chunks.to_string()),
            json!({"type": "shell_call_output", "call_id": "call_1", "output": chunks, "max_output_length": 100})
        );
        assert_eq!(
            function_call_output(
                &calls[0],
                json!({"error": "approval denied: no"}).to_string()
            )["output"],
            json!([{"stdout": "", "stderr": "approval denied: no", "outcome": {"type": "exit", "exit_code": 1}}])
        );
        assert_eq!(
            function_call_output(&calls[1], "{\"stdout\":\"/\"}".to_owned()),
            json!({"type": "local_shell_call_output", "id": "call_2", "output": "{\"stdout\":\"/\"}"})
        );
        assert_eq!(
            function_call_output(&calls[2], json!({"error": "forbidden: no"}).to_string()),
            json!({"type": "apply_patch_call_output", "call_id": "call_3", "status": "failed", "output": "forbidden: no"})
        );
        assert_eq!(
            function_call_output(
                &calls[2],
                json!({"status": "completed", "output": "deleted a.md"}).to_string()
            )["status"],
            "completed"
        );
    }
}
