//! The conversation endpoints a `conversation`-mode controller needs (WIRE.md section 4):
//! create, retrieve, update, delete, and the items below a conversation.

use serde_json::{Value, json};

use super::engine::{EngineRequest, Handled, Inner, Session, list_page};
use super::responses::with_id;
use crate::wire::ApiError;

/// A stored conversation.
pub(super) struct Conversation {
    pub id: String,
    pub created_at: u64,
    pub metadata: Value,
    /// Items in order; responses append their input and output.
    pub items: Vec<Value>,
}

impl Conversation {
    fn object(&self) -> Value {
        json!({"id": self.id, "object": "conversation", "created_at": self.created_at, "metadata": self.metadata})
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn items_of(body: Option<&Value>) -> Result<Vec<Value>, ApiError> {
    match body.and_then(|b| b.get("items")) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(ApiError::invalid_type("items", "an array")),
    }
}

impl Session {
    pub(super) fn create_conversation(
        &self,
        inner: &mut Inner,
        body: Option<&Value>,
    ) -> Result<Handled, ApiError> {
        let created_at = now();
        let tail = inner.ids.tail();
        let id = inner.ids.item_id("conv", created_at, &tail);
        let items = items_of(body)?
            .iter()
            .map(|item| with_id(item, &mut inner.ids, created_at, &tail))
            .collect();
        let metadata = body
            .and_then(|b| b.get("metadata"))
            .cloned()
            .filter(|m| !m.is_null())
            .unwrap_or_else(|| json!({}));
        let conversation = Conversation {
            id: id.clone(),
            created_at,
            metadata,
            items,
        };
        let object = conversation.object();
        inner.conversations.insert(id, conversation);
        Ok(Handled::json(200, object))
    }

    pub(super) fn conversation_route(
        &self,
        inner: &mut Inner,
        method: &str,
        id: &str,
        rest: &[&str],
        body: Option<&Value>,
        request: &EngineRequest,
    ) -> Result<Handled, ApiError> {
        if !inner.conversations.contains_key(id) {
            return Err(ApiError::conversation_not_found(id));
        }
        let created_at = now();
        let tail = inner.ids.tail();
        let Inner {
            conversations, ids, ..
        } = inner;
        let conversation = conversations.get_mut(id).expect("checked above");
        match (method, rest) {
            ("GET", []) => Ok(Handled::json(200, conversation.object())),
            ("POST", []) => {
                if let Some(metadata) = body.and_then(|b| b.get("metadata")) {
                    conversation.metadata = metadata.clone();
                }
                Ok(Handled::json(200, conversation.object()))
            }
            ("DELETE", []) => {
                conversations.remove(id);
                Ok(Handled::json(
                    200,
                    json!({"id": id, "object": "conversation.deleted", "deleted": true}),
                ))
            }
            ("POST", ["items"]) => {
                let added: Vec<Value> = items_of(body)?
                    .iter()
                    .map(|item| with_id(item, ids, created_at, &tail))
                    .collect();
                conversation.items.extend(added.iter().cloned());
                let asc = EngineRequest {
                    query: Some("order=asc&limit=100".to_owned()),
                    ..request.clone()
                };
                Ok(Handled::json(200, list_page(&added, &asc)))
            }
            ("GET", ["items"]) => Ok(Handled::json(200, list_page(&conversation.items, request))),
            ("GET", ["items", item]) => conversation
                .items
                .iter()
                .find(|i| i["id"] == *item)
                .map(|i| Handled::json(200, i.clone()))
                .ok_or_else(|| ApiError::item_not_found(item)),
            ("DELETE", ["items", item]) => {
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
}
