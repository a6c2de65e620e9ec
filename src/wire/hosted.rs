//! The items of hosted tools: the server runs the tool and returns an item saying what it
//! did (`web_search_call`, `mcp_call`, ...). A controller replays them as given and never
//! runs them. Each kind is a row here: its id prefix, the tool type that produces it, and
//! the progress events a stream carries between its `output_item.added` and `.done`
//! (SDK `types/responses/response_*_event.py`).

/// One kind of hosted tool item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostedKind {
    /// The item's `type`.
    pub item: &'static str,
    /// The prefix of the item's id.
    pub id_prefix: &'static str,
    /// The tool `type` a request declares to get it.
    pub tool_type: &'static str,
    /// Whether the item carries a `status` (`mcp_list_tools` has none).
    pub has_status: bool,
    /// The events a stream sends between the item's `added` and `done`, in order, each
    /// with the item's `item_id` and `output_index`; the last is replaced by `failed`
    /// where the item failed and the kind has a failed event.
    pub progress: &'static [&'static str],
    /// The event for a failed item, if the kind has one.
    pub failed: Option<&'static str>,
    /// A text field a stream sends in deltas after the first progress event (the item
    /// is announced with it empty).
    pub streamed_text: Option<StreamedText>,
}

/// A hosted item's text field as a stream sends it: empty in `output_item.added`, then in
/// `delta` events and whole in a `done` event naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamedText {
    /// The field (`arguments`, `code`).
    pub field: &'static str,
    /// Its delta event.
    pub delta: &'static str,
    /// Its done event, which carries the whole text under `field`.
    pub done: &'static str,
}

/// Every hosted item kind.
pub const HOSTED_KINDS: [HostedKind; 6] = [
    HostedKind {
        item: "web_search_call",
        id_prefix: "ws",
        tool_type: "web_search",
        has_status: true,
        progress: &[
            "response.web_search_call.in_progress",
            "response.web_search_call.searching",
            "response.web_search_call.completed",
        ],
        failed: None,
        streamed_text: None,
    },
    HostedKind {
        item: "file_search_call",
        id_prefix: "fs",
        tool_type: "file_search",
        has_status: true,
        progress: &[
            "response.file_search_call.in_progress",
            "response.file_search_call.searching",
            "response.file_search_call.completed",
        ],
        failed: None,
        streamed_text: None,
    },
    HostedKind {
        item: "code_interpreter_call",
        id_prefix: "ci",
        tool_type: "code_interpreter",
        has_status: true,
        progress: &[
            "response.code_interpreter_call.in_progress",
            "response.code_interpreter_call.interpreting",
            "response.code_interpreter_call.completed",
        ],
        failed: None,
        // SDK `response_code_interpreter_call_code_delta_event.py`, `..._done_event.py`.
        streamed_text: Some(StreamedText {
            field: "code",
            delta: "response.code_interpreter_call_code.delta",
            done: "response.code_interpreter_call_code.done",
        }),
    },
    HostedKind {
        item: "image_generation_call",
        id_prefix: "ig",
        tool_type: "image_generation",
        has_status: true,
        progress: &[
            "response.image_generation_call.in_progress",
            "response.image_generation_call.generating",
            "response.image_generation_call.completed",
        ],
        failed: None,
        streamed_text: None,
    },
    HostedKind {
        item: "mcp_call",
        id_prefix: "mcp",
        tool_type: "mcp",
        has_status: true,
        progress: &[
            "response.mcp_call.in_progress",
            "response.mcp_call.completed",
        ],
        failed: Some("response.mcp_call.failed"),
        // SDK `response_mcp_call_arguments_delta_event.py`, `..._done_event.py`.
        streamed_text: Some(StreamedText {
            field: "arguments",
            delta: "response.mcp_call_arguments.delta",
            done: "response.mcp_call_arguments.done",
        }),
    },
    HostedKind {
        item: "mcp_list_tools",
        id_prefix: "mcpl",
        tool_type: "mcp",
        has_status: false,
        progress: &[
            "response.mcp_list_tools.in_progress",
            "response.mcp_list_tools.completed",
        ],
        failed: Some("response.mcp_list_tools.failed"),
        streamed_text: None,
    },
];

/// The hosted kind of an item of this `type`.
pub fn of_item(item_type: &str) -> Option<HostedKind> {
    HOSTED_KINDS.into_iter().find(|kind| kind.item == item_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_found_by_its_item_type_and_its_prefix_is_its_own() {
        for kind in HOSTED_KINDS {
            assert_eq!(of_item(kind.item), Some(kind));
            let others = HOSTED_KINDS
                .iter()
                .filter(|k| k.id_prefix == kind.id_prefix);
            assert_eq!(others.count(), 1, "{}", kind.item);
        }
        assert_eq!(of_item("function_call"), None);
    }
}
