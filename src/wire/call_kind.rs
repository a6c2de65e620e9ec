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

/// Every kind, functions first.
pub const CALL_KINDS: [CallKind; 6] = [
    FUNCTION,
    CUSTOM,
    SHELL,
    LOCAL_SHELL,
    APPLY_PATCH,
    MCP_APPROVAL,
];

impl CallKind {
    /// Whether the controller runs the call itself (an MCP approval request is decided,
    /// not run: the server runs the tool once approved).
    pub fn runs_on_client(self) -> bool {
        self != MCP_APPROVAL
    }

    /// The call item's input as it came: a JSON text for a function call's `arguments`
    /// and a custom tool call's `input`, a JSON object for the kinds whose input is
    /// structured (a shell call's `action`, a patch's `operation`); `Null` when absent.
    pub fn input(self, item: &serde_json::Value) -> serde_json::Value {
        item.get(self.input_field)
            .cloned()
            .unwrap_or(serde_json::Value::Null)
    }

    /// The tool a call item of this kind calls: its `name`, or for the kinds whose tool
    /// has no name (`shell`, `local_shell`, `apply_patch`), the tool's type.
    pub fn tool_name(self, item: &serde_json::Value) -> &str {
        item.get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(self.tool_type)
    }
}

/// The name a tool definition is known by: its `name`, or, for a tool of a call kind
/// declared without one (`{"type": "shell"}`), its type.
pub fn tool_name(definition: &serde_json::Value) -> Option<&str> {
    if let Some(name) = definition.get("name").and_then(serde_json::Value::as_str) {
        return Some(name);
    }
    let tool_type = definition.get("type").and_then(serde_json::Value::as_str)?;
    // An `mcp` tool's approvals are decided, not run: it names no tool of the registry.
    CALL_KINDS
        .into_iter()
        .find(|kind| kind.tool_type == tool_type && kind.runs_on_client())
        .map(|kind| kind.tool_type)
}

/// The kind whose tool has this `type`.
pub fn of_tool(tool_type: &str) -> Option<CallKind> {
    CALL_KINDS
        .into_iter()
        .find(|kind| kind.tool_type == tool_type)
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
}
