//! The conversation endpoints a `conversation`-mode controller needs:
//! create, retrieve, update, delete, and the items below a conversation.

use serde_json::{Value, json};

use super::{Handled, list_page};
use crate::server::exchange::EngineRequest;
use crate::server::store::Store;
use crate::wire::ApiError;

fn items_of(body: Option<&Value>) -> Result<Vec<Value>, ApiError> {
    match body.and_then(|b| b.get("items")) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(ApiError::invalid_type("items", "an array")),
    }
}

/// `POST /v1/conversations`.
pub(super) fn create(store: &mut Store, body: Option<&Value>) -> Result<Handled, ApiError> {
    let items = items_of(body)?;
    let metadata = body
        .and_then(|b| b.get("metadata"))
        .cloned()
        .filter(|m| !m.is_null())
        .unwrap_or_else(|| json!({}));
    let conversation = store.create_conversation(&items, metadata);
    Ok(Handled::json(200, conversation.object()))
}

/// `/v1/conversations/{id}` and the items below it.
pub(super) fn route(
    store: &mut Store,
    method: &str,
    id: &str,
    rest: &[&str],
    body: Option<&Value>,
    request: &EngineRequest,
) -> Result<Handled, ApiError> {
    store.conversation(id)?;
    match (method, rest) {
        ("GET", []) => Ok(Handled::json(200, store.conversation(id)?.object())),
        ("POST", []) => {
            let conversation = store.conversation_mut(id)?;
            if let Some(metadata) = body.and_then(|b| b.get("metadata")) {
                conversation.metadata = metadata.clone();
            }
            Ok(Handled::json(200, conversation.object()))
        }
        ("DELETE", []) => {
            store.delete_conversation(id)?;
            Ok(Handled::json(
                200,
                json!({"id": id, "object": "conversation.deleted", "deleted": true}),
            ))
        }
        ("POST", ["items"]) => {
            let added = store.add_to_conversation(id, &items_of(body)?)?;
            let asc = EngineRequest {
                query: Some("order=asc&limit=100".to_owned()),
                ..request.clone()
            };
            Ok(Handled::json(200, list_page(&added, &asc)))
        }
        ("GET", ["items"]) => Ok(Handled::json(
            200,
            list_page(&store.conversation(id)?.items, request),
        )),
        ("GET", ["items", item]) => store
            .conversation(id)?
            .items
            .iter()
            .find(|i| i["id"] == *item)
            .map(|i| Handled::json(200, i.clone()))
            .ok_or_else(|| ApiError::item_not_found(item)),
        ("DELETE", ["items", item]) => {
            let conversation = store.conversation_mut(id)?;
            let before = conversation.items.len();
            conversation.items.retain(|i| i["id"] != *item);
            if conversation.items.len() == before {
                return Err(ApiError::item_not_found(item));
            }
            Ok(Handled::json(200, conversation.object()))
        }
        _ => Err(ApiError::invalid_url(method, &request.path)),
    }
}
