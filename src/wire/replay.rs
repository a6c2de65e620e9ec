//! How a replayed input item is matched to the output item it replays. The fake server's
//! pairing rule (E5: a reasoning item must be followed by the item it produced) and the
//! oracle's replay checks both read these functions, so what the fake accepts as a
//! reasoning item's follower is exactly what the oracle accepts.

use serde_json::Value;

use super::request::{ItemKeys, call_id, item_id, item_type};

/// Whether `next` may stand right after a reasoning item whose follower in the model's
/// output was `follower`: the follower itself (the same id) or, replayed without its id,
/// an item of the follower's type (with the same `call_id`, for a call). Public reports
/// disagree on whether the real API rejects an id-less follower, so it is accepted.
pub fn may_follow(next: &Value, follower: &Value) -> bool {
    follows(&ItemKeys::of(next), &ItemKeys::of(follower))
}

/// [`may_follow`], on the items' keys: all it reads of the follower is its id, type and
/// `call_id`.
pub fn follows(next: &ItemKeys, follower: &ItemKeys) -> bool {
    match next.id {
        Some(id) => Some(id) == follower.id,
        None => {
            next.kind == follower.kind
                && (follower.call_id.is_none() || next.call_id == follower.call_id)
        }
    }
}

/// Whether input item `input` replays output item `output`: the same id; or, replayed
/// without its id, a call with the same `call_id`, or an assistant message with the same
/// text (whatever its form: `content` as a string, or parts with or without
/// `annotations` and `logprobs`).
pub fn is_replay_of(input: &Value, output: &Value) -> bool {
    if let Some(id) = item_id(input) {
        return Some(id) == item_id(output) && item_type(input) == item_type(output);
    }
    same_content(input, output)
}

/// Whether two items are the same call or message by what they carry, ids aside: the same
/// type and `call_id` (a call or program), or the same role and message text.
pub fn same_content(input: &Value, output: &Value) -> bool {
    if item_type(input) != item_type(output) {
        return false;
    }
    match item_type(output) {
        "function_call" | "program" => {
            call_id(input).is_some() && call_id(input) == call_id(output)
        }
        "message" => {
            input.get("role") == output.get("role")
                && message_text(input).is_some()
                && message_text(input) == message_text(output)
        }
        _ => false,
    }
}

/// The text of a message item: its `content` string, or the texts (and refusals) of its
/// content parts, concatenated.
pub fn message_text(item: &Value) -> Option<String> {
    match item.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|part| {
                    part.get("text")
                        .or_else(|| part.get("refusal"))
                        .and_then(Value::as_str)
                })
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn served_message() -> Value {
        json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "Checking."}]})
    }

    #[test]
    fn a_message_replayed_without_id_matches_by_role_and_text_in_any_form() {
        let served = served_message();
        let langchain = json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]});
        let ai_sdk = json!({"role": "assistant", "content": "Checking."});
        assert!(is_replay_of(&langchain, &served));
        assert!(is_replay_of(&ai_sdk, &served));
        assert!(is_replay_of(&served, &served));
        let rewritten = json!({"role": "assistant", "content": "Checked."});
        let as_user = json!({"role": "user", "content": "Checking."});
        let other_id =
            json!({"id": "msg_2", "type": "message", "role": "assistant", "content": "Checking."});
        assert!(!is_replay_of(&rewritten, &served));
        assert!(!is_replay_of(&as_user, &served));
        assert!(!is_replay_of(&other_id, &served));
    }

    #[test]
    fn a_call_replayed_without_id_matches_by_call_id() {
        let served = json!({"id": "fc_1", "type": "function_call", "call_id": "call_a",
                            "name": "get_stock", "arguments": "{}"});
        let bare =
            json!({"type": "function_call", "call_id": "call_a", "name": "x", "arguments": "{}"});
        let other = json!({"type": "function_call", "call_id": "call_b", "name": "get_stock", "arguments": "{}"});
        assert!(is_replay_of(&bare, &served));
        assert!(!is_replay_of(&other, &served));
        assert!(may_follow(&bare, &served));
        assert!(!may_follow(&other, &served));
    }

    #[test]
    fn an_id_less_follower_of_the_right_type_is_accepted_whatever_its_text() {
        let served = served_message();
        assert!(may_follow(
            &json!({"role": "assistant", "content": "Checked."}),
            &served
        ));
        assert!(!may_follow(
            &json!({"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}),
            &served
        ));
        assert!(!may_follow(
            &json!({"id": "msg_9", "type": "message", "role": "assistant", "content": "Checking."}),
            &served
        ));
    }
}
