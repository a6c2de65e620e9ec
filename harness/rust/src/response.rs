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
            "computer_call" => Some(CallKind::Computer),
            "tool_search_call" => Some(CallKind::ToolSearch),
            _ => None,
        }
    }

    /// The call item's field holding what the model wrote.
    fn input_field(self) -> &'static str {
        match self {
            CallKind::Function => "arguments",
            CallKind::Custom => "input",
            CallKind::Computer => "action",
            CallKind::ToolSearch => "arguments",
        }
    }

    /// The `type` of the item that answers a call of this kind.
    pub(crate) fn answer_type(self) -> &'static str {
        match self {
            CallKind::Function => "function_call_output",
            CallKind::Custom => "custom_tool_call_output",
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
    /// The raw JSON text the model produced (validated before use), or a custom tool
    /// call's input text.
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
            // A computer call has no name: the backend knows its tool as `computer`, and
            // what it performs is its `action` or `actions`, as one JSON object.
            let (name, arguments) = match kind {
                CallKind::Computer => {
                    let actions: serde_json::Map<String, Value> = ["action", "actions"]
                        .into_iter()
                        .filter_map(|key| {
                            Some((
                                key.to_string(),
                                item.get(key).filter(|v| !v.is_null())?.clone(),
                            ))
                        })
                        .collect();
                    ("computer".to_string(), Value::Object(actions).to_string())
                }
                CallKind::ToolSearch => ("tool_search".to_string(), item["arguments"].to_string()),
                _ => (
                    item["name"].as_str().unwrap_or_default().to_string(),
                    item[kind.input_field()]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
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

/// Whether a response without function calls still awaits the model: a program finished
/// (`program_output`) and the model has not answered yet (no message), so the model goes
/// on after the program's result in another request.
pub(crate) fn continues_after_program(output: &[Value]) -> bool {
    let has = |kind: &str| output.iter().any(|item| item["type"] == kind);
    has("program_output")
        && !has("message")
        && !has("function_call")
        && !has("custom_tool_call")
        && !has("computer_call")
        && !output
            .iter()
            .any(|item| item["type"] == "tool_search_call" && item["execution"] == "client")
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
}
