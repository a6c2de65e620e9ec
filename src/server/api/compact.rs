//! `POST /v1/responses/compact`: the context a request names (its `input`, after the
//! chain of `previous_response_id` if it has one) compacted into its user messages and
//! one `compaction` item, as the SDK's `CompactedResponse` shows it. The compaction item
//! is remembered, so a later request must send it back unchanged.
//! Compacting serves no script turn: it is not a model request.

use bytes::Bytes;
use serde_json::{Value, json};

use super::Handled;
use crate::scenario::Scenario;
use crate::server::store::Store;
use crate::server::validate;
use crate::wire::request::item_type;
use crate::wire::{ApiError, CreateRequest};

/// Answers a compaction request.
pub(super) fn compact(
    scenario: &Scenario,
    store: &mut Store,
    raw: &Bytes,
) -> Result<Handled, ApiError> {
    let request = CreateRequest::from_json(raw)?;
    validate::check_model(request.model.as_deref(), &scenario.task.model)?;
    let chain = match &request.previous_response_id {
        Some(id) => {
            validate::check_id_chars("previous_response_id", id)?;
            store.chain(id, None)?
        }
        None => Vec::new(),
    };
    let input = validate::resolve_input(&request.input, store.stored_items(), &store.issued)?;
    let context = validate::Context::new(&chain, input.iter().map(|item| &**item));
    validate::check_context(&context, &store.issued)?;

    let items: Vec<&Value> = chain
        .iter()
        .chain(input.iter().map(|item| &**item))
        .collect();
    let kept = items.iter().filter(|item| is_user_message(item));
    let created_at = store.clock.now();
    let tail = store.ids.tail();
    let id = store.ids.item_id("resp", created_at, &tail);
    let compaction_id = store.ids.item_id("cmp", created_at, &tail);
    let encrypted_content = store.ids.encrypted_content();
    store
        .issued
        .issue_compaction(&compaction_id, &encrypted_content);
    let mut output: Vec<Value> = kept
        .map(|item| user_message(item, store.ids.item_id("msg", created_at, &tail)))
        .collect();
    output.push(json!({
        "type": "compaction",
        "id": compaction_id,
        "encrypted_content": encrypted_content,
    }));
    // A token count of the fake's own: the items' JSON length, a tenth of it.
    let tokens = |items: &[Value]| {
        items
            .iter()
            .map(|item| item.to_string().len() / 10 + 1)
            .sum::<usize>()
    };
    let items_in: Vec<Value> = items.iter().map(|item| (*item).clone()).collect();
    let (input_tokens, output_tokens) = (tokens(&items_in), tokens(&output));
    Ok(Handled::json(
        200,
        json!({
            "id": id,
            "object": "response.compaction",
            "created_at": created_at,
            "output": output,
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
        }),
    ))
}

/// A message from the user (an input message whose `type` may be left out).
fn is_user_message(item: &Value) -> bool {
    item_type(item) == "message" && item["role"] == "user"
}

/// A user message as the compacted output holds it (the API reference's example): a
/// `completed` `message` item with an id of its own, its text in `input_text` parts.
fn user_message(item: &Value, id: String) -> Value {
    let content = match &item["content"] {
        Value::String(text) => json!([{"type": "input_text", "text": text}]),
        other => other.clone(),
    };
    json!({"id": id, "type": "message", "status": "completed", "role": "user", "content": content})
}
