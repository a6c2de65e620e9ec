//! The kinds of client-executed calls: each a call item the model issues and the answer
//! item that must carry its `call_id`. A new kind (a shell call, a patch to apply, a
//! computer action) is a row here plus its input's handling where a kind's input is read.

/// One kind of client-executed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallKind {
    /// The call item's `type`.
    pub call: &'static str,
    /// The `type` of the item that answers it.
    pub answer: &'static str,
    /// How the real API's pairing errors name the call (`function call`).
    pub words: &'static str,
    /// The call item's field holding its input (`arguments`, `input`).
    pub input_field: &'static str,
    /// The prefix of the call item's id.
    pub id_prefix: &'static str,
    /// The tool `type` a request declares it with.
    pub tool_type: &'static str,
    /// The call item's field that its answer names (`call_id`).
    pub call_ref: &'static str,
    /// The answer item's field naming its call (`call_id`; some kinds name it otherwise,
    /// as a `local_shell_call_output`'s `id` or an `mcp_approval_response`'s
    /// `approval_request_id`).
    pub answer_ref: &'static str,
}

/// The field of an item of this `type` that pairs a call with its answer, where the item
/// is a call or an answer of a kind that does not use `call_id`.
pub fn pairing_field(item_type: &str) -> Option<&'static str> {
    CALL_KINDS.into_iter().find_map(|kind| {
        if kind.call == item_type && kind.call_ref != "call_id" {
            Some(kind.call_ref)
        } else if kind.answer == item_type && kind.answer_ref != "call_id" {
            Some(kind.answer_ref)
        } else {
            None
        }
    })
}

/// A `function` tool's call: JSON `arguments`.
pub const FUNCTION: CallKind = CallKind {
    call: "function_call",
    answer: "function_call_output",
    words: "function call",
    input_field: "arguments",
    id_prefix: "fc",
    tool_type: "function",
    call_ref: "call_id",
    answer_ref: "call_id",
};

/// A `custom` tool's call: free-form text `input`.
pub const CUSTOM: CallKind = CallKind {
    call: "custom_tool_call",
    answer: "custom_tool_call_output",
    words: "custom tool call",
    input_field: "input",
    id_prefix: "ctc",
    tool_type: "custom",
    call_ref: "call_id",
    answer_ref: "call_id",
};

/// A `computer` tool's call: an `action` (or a batch of `actions`) to perform, answered
/// by a `computer_call_output` carrying a `computer_screenshot`. Its tool has no name: the
/// fake's backend and the oracle call it `computer`.
pub const COMPUTER: CallKind = CallKind {
    call: "computer_call",
    answer: "computer_call_output",
    words: "computer call",
    input_field: "action",
    id_prefix: "cu",
    tool_type: "computer",
    call_ref: "call_id",
    answer_ref: "call_id",
};

/// A client-executed `tool_search` tool's call: JSON `arguments` (an object, not text),
/// answered by a `tool_search_output` carrying the tools it loaded. A server-executed
/// search (`execution: "server"`) has no `call_id`: hosted, it is never answered.
pub const TOOL_SEARCH: CallKind = CallKind {
    call: "tool_search_call",
    answer: "tool_search_output",
    words: "tool search call",
    input_field: "arguments",
    id_prefix: "tsc",
    tool_type: "tool_search",
    call_ref: "call_id",
    answer_ref: "call_id",
};

/// The tool `type`s that offer the computer: the SDK's `ComputerTool` and
/// `ComputerUsePreviewTool`.
pub const COMPUTER_TOOL_TYPES: [&str; 2] = ["computer", "computer_use_preview"];

/// The name a tool definition is known by: its `name`, or `computer` for a computer tool
/// and `tool_search` for a tool search tool, which have none.
pub fn tool_name(definition: &serde_json::Value) -> Option<&str> {
    let kind = definition.get("type").and_then(serde_json::Value::as_str);
    if kind.is_some_and(|kind| COMPUTER_TOOL_TYPES.contains(&kind)) {
        return Some(COMPUTER.tool_type);
    }
    if kind == Some(TOOL_SEARCH.tool_type) {
        return Some(TOOL_SEARCH.tool_type);
    }
    definition.get("name").and_then(serde_json::Value::as_str)
}

/// The name of a tool as the backend's ledger and the oracle's messages give it:
/// `namespace.name` inside a namespace, `name` outside one.
pub fn qualified_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}.{name}"),
        None => name.to_owned(),
    }
}

/// Every kind, functions first.
pub const CALL_KINDS: [CallKind; 4] = [FUNCTION, CUSTOM, COMPUTER, TOOL_SEARCH];

/// The kind whose call item has this `type`.
pub fn of_call(item_type: &str) -> Option<CallKind> {
    CALL_KINDS.into_iter().find(|kind| kind.call == item_type)
}

/// The kind whose answer item has this `type`.
pub fn of_answer(item_type: &str) -> Option<CallKind> {
    CALL_KINDS.into_iter().find(|kind| kind.answer == item_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_found_by_its_call_and_its_answer_and_by_nothing_else() {
        for kind in CALL_KINDS {
            assert_eq!(of_call(kind.call), Some(kind));
            assert_eq!(of_answer(kind.answer), Some(kind));
            assert_eq!(of_call(kind.answer), None);
            assert_eq!(of_answer(kind.call), None);
        }
    }
}
