//! Routing a request to its handler, and the answer a handler gives.

use std::borrow::Cow;
use std::time::Duration;

use hyper::header::HeaderName;
use serde_json::{Value, json};

use super::{compact, conversations, responses};
use crate::scenario::Scenario;
use crate::server::exchange::{EngineRequest, SocketCreate};
use crate::server::store::Store;
use crate::server::stream::StreamFrames;
use crate::transcript::{FaultRecord, LazyJson};
use crate::wire::ApiError;

/// The body a handler answers with.
#[derive(Debug, Clone)]
pub(in crate::server) enum Answer {
    /// A JSON body: rendered already, or a value to render.
    Json(LazyJson),
    /// A raw body (e.g. an edge proxy's HTML page).
    Raw {
        content_type: &'static str,
        text: String,
    },
    /// Server-sent events, sent one by one.
    Stream(StreamFrames),
    /// No answer: close the connection.
    Drop,
}

/// What a handler answers, before the engine records it.
pub(in crate::server) struct Handled {
    pub status: u16,
    pub body: Answer,
    pub headers: Vec<(&'static str, Cow<'static, str>)>,
    pub delay: Duration,
    /// The script turn served, for an accepted create.
    pub turn: Option<usize>,
    pub fault: Option<FaultRecord>,
    /// For a streamed or background create: the terminal response it becomes.
    pub final_response: Option<LazyJson>,
    /// The `x-request-id` to answer with, when the body already names it (E16).
    pub request_id: Option<String>,
}

impl Handled {
    pub fn json(status: u16, body: impl Into<LazyJson>) -> Self {
        Self {
            status,
            body: Answer::Json(body.into()),
            headers: Vec::new(),
            delay: Duration::ZERO,
            turn: None,
            fault: None,
            final_response: None,
            request_id: None,
        }
    }
}

/// The OpenAI SDKs' count of the retries before this attempt.
static RETRY_COUNT: HeaderName = HeaderName::from_static("x-stainless-retry-count");

/// Routes an authenticated API request (`route` is its path below `/v1`); `socket`
/// when it is a `response.create` from a WebSocket connection.
pub(in crate::server) fn route(
    scenario: &Scenario,
    store: &mut Store,
    request: &EngineRequest,
    route: &[&str],
    socket: Option<SocketCreate>,
) -> Result<Handled, ApiError> {
    let method = request.method.as_str();
    let body = || serde_json::from_slice::<Value>(&request.body).ok();
    match (method, route) {
        ("POST", ["responses"]) => {
            let retry = request
                .header(&RETRY_COUNT)
                .and_then(|n| n.trim().parse::<u32>().ok())
                .is_some_and(|n| n > 0);
            responses::create(scenario, store, &request.path, &request.body, retry, socket)
        }
        ("POST", ["responses", "compact"]) => compact::compact(scenario, store, &request.body),
        ("GET", ["responses", id]) => responses::retrieve(store, id, request),
        ("DELETE", ["responses", id]) => responses::delete(store, id),
        ("POST", ["responses", id, "cancel"]) => responses::cancel(store, id),
        ("GET", ["responses", id, "input_items"]) => responses::input_items(store, id, request),
        ("POST", ["conversations"]) => conversations::create(store, body().as_ref()),
        (_, ["conversations", id, rest @ ..]) => {
            conversations::route(store, method, id, rest, body().as_ref(), request)
        }
        _ => Err(ApiError::invalid_url(method, &request.path)),
    }
}

/// A page of a list endpoint (`after`, `limit` 1..100 default 20, `order` default desc).
pub(super) fn list_page(items: &[Value], request: &EngineRequest) -> Value {
    let limit = request
        .query_param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let mut ordered: Vec<&Value> = items.iter().collect();
    if request.query_param("order") != Some("asc") {
        ordered.reverse();
    }
    let start = request
        .query_param("after")
        .and_then(|after| ordered.iter().position(|item| item["id"] == after))
        .map_or(0, |pos| pos + 1);
    let page: Vec<Value> = ordered
        .iter()
        .skip(start)
        .take(limit)
        .map(|v| (*v).clone())
        .collect();
    let has_more = start + page.len() < ordered.len();
    json!({
        "object": "list",
        "data": page,
        "first_id": page.first().map(|v| v["id"].clone()),
        "last_id": page.last().map(|v| v["id"].clone()),
        "has_more": has_more,
    })
}
