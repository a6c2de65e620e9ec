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

/// A `shell` tool's call: an `action` of `commands` to run (the SDK's
/// `ResponseFunctionShellToolCall`). The API's ids for these start with `sh_`. The real
/// API's pairing errors for this kind and the two after it are not known word for word:
/// theirs are the function call's, with the kind's `words`.
pub const SHELL: CallKind = CallKind {
    call: "shell_call",
    answer: "shell_call_output",
    words: "shell call",
    input_field: "action",
    id_prefix: "sh",
    tool_type: "shell",
    call_ref: "call_id",
    answer_ref: "call_id",
};

/// A `local_shell` tool's call: an `exec` action of one `command` (the SDK's
/// `LocalShellCall`). Its answer names the call's `call_id` in its own `id`.
pub const LOCAL_SHELL: CallKind = CallKind {
    call: "local_shell_call",
    answer: "local_shell_call_output",
    words: "local shell call",
    input_field: "action",
    id_prefix: "lsh",
    tool_type: "local_shell",
    call_ref: "call_id",
    answer_ref: "id",
};

/// An `apply_patch` tool's call: one file `operation` (the SDK's
/// `ResponseApplyPatchToolCall`), answered with a `completed` or `failed` status.
pub const APPLY_PATCH: CallKind = CallKind {
    call: "apply_patch_call",
    answer: "apply_patch_call_output",
    words: "apply patch call",
    input_field: "operation",
    id_prefix: "apc",
    tool_type: "apply_patch",
    call_ref: "call_id",
    answer_ref: "call_id",
};

/// An `mcp` tool's approval request (`require_approval`): the controller answers it
/// with its decision in an `mcp_approval_response`, and the server, never the
/// controller, then runs the MCP tool.
pub const MCP_APPROVAL: CallKind = CallKind {
    call: "mcp_approval_request",
    answer: "mcp_approval_response",
    words: "mcp approval request",
    input_field: "arguments",
    id_prefix: "mcpr",
    tool_type: "mcp",
    call_ref: "id",
    answer_ref: "approval_request_id",
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

/// Every kind, functions first.
pub const CALL_KINDS: [CallKind; 8] = [
    FUNCTION,
    CUSTOM,
    SHELL,
    LOCAL_SHELL,
    APPLY_PATCH,
    MCP_APPROVAL,
    COMPUTER,
    TOOL_SEARCH,
];

/// The tool `type`s that offer the computer: the SDK's `ComputerTool` and
/// `ComputerUsePreviewTool`.
pub const COMPUTER_TOOL_TYPES: [&str; 2] = ["computer", "computer_use_preview"];

impl CallKind {
    /// Whether the controller runs calls of this kind itself (an MCP approval request is
    /// decided, not run: the server runs the tool once approved).
    pub fn runs_on_client(self) -> bool {
        self != MCP_APPROVAL
    }

    /// Whether the controller must answer this call item: a kind it runs, and not a
    /// server-executed tool search (hosted: replayed, never answered).
    pub fn answered_by_client(self, item: &serde_json::Value) -> bool {
        self.runs_on_client() && (self != TOOL_SEARCH || item["execution"] == "client")
    }

    /// The call item's input as it came: a JSON text for a function call's `arguments`
    /// and a custom tool call's `input`, a JSON object for the kinds whose input is
    /// structured (a shell call's `action`, a patch's `operation`, a tool search's
    /// `arguments`, a computer call's `{"action": ...}` or `{"actions": [...]}` as its
    /// backend request carries it); `Null` when absent.
    pub fn input(self, item: &serde_json::Value) -> serde_json::Value {
        if self == COMPUTER {
            let fields: serde_json::Map<String, serde_json::Value> = ["action", "actions"]
                .into_iter()
                .filter_map(|key| {
                    Some((
                        key.to_owned(),
                        item.get(key).filter(|v| !v.is_null())?.clone(),
                    ))
                })
                .collect();
            return serde_json::Value::Object(fields);
        }
        item.get(self.input_field)
            .cloned()
            .unwrap_or(serde_json::Value::Null)
    }

    /// The tool a call item of this kind calls: its `name`, or for the kinds whose tool
    /// has no name (`shell`, `local_shell`, `apply_patch`, `computer`, `tool_search`),
    /// the tool's type.
    pub fn tool_name(self, item: &serde_json::Value) -> &str {
        item.get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(self.tool_type)
    }
}

/// The name a tool definition is known by: its `name`, or, for a tool of a call kind
/// declared without one (`{"type": "shell"}`, a computer or tool search tool), its
/// kind's tool type.
pub fn tool_name(definition: &serde_json::Value) -> Option<&str> {
    let tool_type = definition.get("type").and_then(serde_json::Value::as_str);
    // A computer or tool search tool is known by its type even if it carried a name.
    if let Some(kind) = tool_type
        .and_then(of_tool)
        .filter(|kind| *kind == COMPUTER || *kind == TOOL_SEARCH)
    {
        return Some(kind.tool_type);
    }
    if let Some(name) = definition.get("name").and_then(serde_json::Value::as_str) {
        return Some(name);
    }
    // An `mcp` tool's approvals are decided, not run: it names no tool of the registry.
    of_tool(tool_type?)
        .filter(|kind| kind.runs_on_client())
        .map(|kind| kind.tool_type)
}

/// The kind whose tool has this `type` (`computer_use_preview` is the computer's).
pub fn of_tool(tool_type: &str) -> Option<CallKind> {
    if COMPUTER_TOOL_TYPES.contains(&tool_type) {
        return Some(COMPUTER);
    }
    CALL_KINDS
        .into_iter()
        .find(|kind| kind.tool_type == tool_type)
}

/// The name of a tool as the backend's ledger and the oracle's messages give it:
/// `namespace.name` inside a namespace, `name` outside one.
pub fn qualified_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}.{name}"),
        None => name.to_owned(),
    }
}

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
            assert_eq!(of_tool(kind.tool_type), Some(kind));
        }
    }

    #[test]
    fn an_mcp_approval_pairs_by_its_id_and_is_not_run_by_the_controller() {
        assert_eq!(pairing_field("mcp_approval_request"), Some("id"));
        assert_eq!(
            pairing_field("mcp_approval_response"),
            Some("approval_request_id")
        );
        assert_eq!(pairing_field("function_call"), None);
        assert!(!MCP_APPROVAL.runs_on_client());
        assert!(FUNCTION.runs_on_client() && CUSTOM.runs_on_client());
        assert_eq!(tool_name(&serde_json::json!({"type": "mcp"})), None);
    }

    #[test]
    fn a_nameless_tool_of_a_call_kind_is_known_by_its_type() {
        use serde_json::json;
        assert_eq!(tool_name(&json!({"type": "shell"})), Some("shell"));
        assert_eq!(
            tool_name(&json!({"type": "apply_patch"})),
            Some("apply_patch")
        );
        assert_eq!(
            tool_name(&json!({"type": "function", "name": "get_stock"})),
            Some("get_stock")
        );
        assert_eq!(tool_name(&json!({"type": "web_search"})), None);
        let call = json!({"type": "local_shell_call", "action": {"type": "exec"}});
        assert_eq!(LOCAL_SHELL.tool_name(&call), "local_shell");
        assert_eq!(LOCAL_SHELL.input(&call), json!({"type": "exec"}));
    }

    #[test]
    fn the_computer_and_a_tool_search_are_known_by_their_type_with_their_input_whole() {
        use serde_json::json;
        for tool_type in COMPUTER_TOOL_TYPES {
            assert_eq!(of_tool(tool_type), Some(COMPUTER));
            assert_eq!(tool_name(&json!({"type": tool_type})), Some("computer"));
        }
        assert_eq!(
            tool_name(&json!({"type": "tool_search", "execution": "client"})),
            Some("tool_search")
        );
        let batch = json!({"type": "computer_call", "action": null, "actions": [{"type": "wait"}]});
        assert_eq!(COMPUTER.tool_name(&batch), "computer");
        assert_eq!(
            COMPUTER.input(&batch),
            json!({"actions": [{"type": "wait"}]})
        );
        let search =
            json!({"type": "tool_search_call", "execution": "server", "arguments": {"query": "q"}});
        assert_eq!(TOOL_SEARCH.input(&search), json!({"query": "q"}));
        assert!(!TOOL_SEARCH.answered_by_client(&search));
        assert!(TOOL_SEARCH.answered_by_client(&json!({"execution": "client"})));
        assert_eq!(qualified_name(Some("crm"), "lookup"), "crm.lookup");
    }
}
