//! The session engine: one case's fake API and tool backend, free of any transport.
//! It takes a request (method, path, headers, body) and returns a reply, writing every
//! exchange to the case's transcript.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::conversations::Conversation;
use super::script::Issued;
use super::stream::PlannedStream;
use crate::scenario::{Scenario, StateMode};
use crate::tools::{BackendReply, BackendState, ToolBackend};
use crate::transcript::{
    FaultRecord, ModelExchange, StreamRecord, ToolExchange, ToolRequestKind, Transcript,
};
use crate::wire::{ApiError, IdGen};

/// A transport-neutral HTTP request.
#[derive(Debug, Clone)]
pub struct EngineRequest {
    /// Method, uppercase.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Raw query string, if any.
    pub query: Option<String>,
    /// Headers (names in any case).
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl EngineRequest {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter's value.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .as_deref()?
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
    }
}

/// What a reply carries.
#[derive(Debug, Clone)]
pub enum ReplyBody {
    /// A JSON body.
    Json(Value),
    /// A raw body (e.g. an edge proxy's HTML page).
    Raw {
        /// `content-type`.
        content_type: &'static str,
        /// The text.
        text: String,
    },
    /// Server-sent events, sent one by one.
    Stream(PlannedStream),
    /// No answer: close the connection.
    Drop,
}

/// A transport-neutral reply.
#[derive(Debug, Clone)]
pub struct EngineReply {
    /// HTTP status.
    pub status: u16,
    /// Headers to send.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: ReplyBody,
    /// Wait this long before answering.
    pub delay: Duration,
    /// The transcript entry of this exchange (for stream progress).
    pub exchange: usize,
}

/// A stored response and the whole context it continues (for `previous_response_id`).
pub(super) struct StoredResponse {
    pub response: Value,
    /// Input items of this request, with ids, for `input_items`.
    pub input_items: Vec<Value>,
    /// Chain + input + output: what a request continuing it inherits.
    pub context: Vec<Value>,
}

/// A response running in the background.
pub(super) struct Background {
    /// The terminal response it becomes.
    pub terminal: Value,
    /// Polls left that still see it in progress.
    pub polls_left: u32,
    /// Its events, for `GET ...?stream=true`.
    pub stream: PlannedStream,
    /// Whether a poll or the stream has delivered the terminal state.
    pub done: bool,
}

/// What the handlers return before recording.
pub(super) struct Handled {
    pub status: u16,
    pub body: ReplyBody,
    pub headers: Vec<(String, String)>,
    pub delay: Duration,
    pub turn: Option<usize>,
    pub fault: Option<FaultRecord>,
    pub final_response: Option<Value>,
    /// The `x-request-id` to answer with, when the body already names it (E16).
    pub request_id: Option<String>,
}

impl Handled {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: ReplyBody::Json(body),
            headers: Vec::new(),
            delay: Duration::ZERO,
            turn: None,
            fault: None,
            final_response: None,
            request_id: None,
        }
    }
}

pub(super) struct Inner {
    pub ids: IdGen,
    /// Index of the next turn to serve.
    pub next_turn: usize,
    /// Attempts already made at `next_turn` (faults are answered per attempt).
    pub attempts: usize,
    /// The body and turn of the last served create, to re-serve an identical retry.
    pub last_served: Option<(Value, usize)>,
    pub seq: u64,
    pub responses: HashMap<String, StoredResponse>,
    pub stored_items: HashMap<String, Value>,
    pub background: HashMap<String, Background>,
    pub conversations: HashMap<String, Conversation>,
    pub issued: Issued,
    pub backend: BackendState,
    pub transcript: Transcript,
}

/// One case's session: fake Responses API plus fixture tool backend.
pub struct Session {
    pub(super) scenario: Arc<Scenario>,
    state: StateMode,
    api_key: String,
    backend: ToolBackend,
    started: Instant,
    inner: Mutex<Inner>,
}

/// Headers kept out of transcripts (secrets never reach disk).
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "api-key",
    "openai-api-key",
    "x-api-key",
    "cookie",
];

impl Session {
    /// A fresh session for `scenario` in `state` mode; ids are seeded from both, so a
    /// case replays with the same ids.
    pub fn new(scenario: Arc<Scenario>, state: StateMode) -> Self {
        let mut ids = IdGen::from_key(&format!("{}:{}", scenario.id, state.as_str()));
        let api_key = format!("sk-loopcheck-{}", ids.base62(32));
        Self {
            backend: ToolBackend::new(&scenario),
            scenario,
            state,
            api_key,
            started: Instant::now(),
            inner: Mutex::new(Inner {
                ids,
                next_turn: 0,
                attempts: 0,
                last_served: None,
                seq: 0,
                responses: HashMap::new(),
                stored_items: HashMap::new(),
                background: HashMap::new(),
                conversations: HashMap::new(),
                issued: Issued::default(),
                backend: BackendState::default(),
                transcript: Transcript::default(),
            }),
        }
    }

    /// The API key controllers must send.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The state mode.
    pub fn state(&self) -> StateMode {
        self.state
    }

    /// A copy of the transcript so far.
    pub fn transcript(&self) -> Transcript {
        self.lock().transcript.clone()
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the state half-written in a way
        // that matters more than losing the case; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Handles one request.
    pub fn handle(&self, request: EngineRequest) -> EngineReply {
        let path = request.path.trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            ["tools", "call", name] if request.method == "POST" => {
                self.tool_request(&request, Some(name))
            }
            ["tools", "approvals"] if request.method == "POST" => self.tool_request(&request, None),
            ["tools", ..] => self.model_exchange(&request, |_, _| {
                Err(ApiError::invalid_url(&request.method, &request.path))
            }),
            ["v1", rest @ ..] | rest @ [..] => {
                let rest = rest.to_vec();
                self.api_request(&request, &rest)
            }
        }
    }

    fn api_request(&self, request: &EngineRequest, route: &[&str]) -> EngineReply {
        let method = request.method.as_str();
        self.model_exchange(request, |inner, body| {
            self.check_auth(request)?;
            match (method, route) {
                ("POST", ["responses"]) => {
                    let retry = request
                        .header("x-stainless-retry-count")
                        .and_then(|n| n.trim().parse::<u32>().ok())
                        .is_some_and(|n| n > 0);
                    self.create(inner, &body.ok_or_else(ApiError::unparsable_body)?, retry)
                }
                ("GET", ["responses", id]) => self.retrieve(inner, id, request),
                ("DELETE", ["responses", id]) => self.delete(inner, id),
                ("POST", ["responses", id, "cancel"]) => self.cancel(inner, id),
                ("GET", ["responses", id, "input_items"]) => match inner.responses.get(*id) {
                    Some(stored) => Ok(Handled::json(200, list_page(&stored.input_items, request))),
                    None => Err(ApiError::response_not_found(id)),
                },
                ("POST", ["conversations"]) => self.create_conversation(inner, body.as_ref()),
                (_, ["conversations", id, rest @ ..]) => {
                    self.conversation_route(inner, method, id, rest, body.as_ref(), request)
                }
                _ => Err(ApiError::invalid_url(method, &request.path)),
            }
        })
    }

    fn check_auth(&self, request: &EngineRequest) -> Result<(), ApiError> {
        let header = request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(_, value)| value.trim());
        let key = header
            .and_then(|value| {
                value
                    .strip_prefix("Bearer ")
                    .or_else(|| value.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|key| !key.is_empty());
        match key {
            None => Err(ApiError::missing_api_key()),
            Some(key) if key == self.api_key => Ok(()),
            Some(key) => Err(ApiError::invalid_api_key(key)),
        }
    }

    /// Runs `handler` under the lock and records the exchange.
    fn model_exchange(
        &self,
        request: &EngineRequest,
        handler: impl FnOnce(&mut Inner, Option<Value>) -> Result<Handled, ApiError>,
    ) -> EngineReply {
        let parsed: Option<Value> = serde_json::from_slice(&request.body).ok();
        let (body, body_unparsed) = match (&parsed, request.body.is_empty()) {
            (Some(value), _) => (value.clone(), false),
            (None, true) => (Value::Null, false),
            (None, false) => (
                Value::String(String::from_utf8_lossy(&request.body).into_owned()),
                true,
            ),
        };
        let mut inner = self.lock();
        let (handled, rejected_by) = match handler(&mut inner, parsed) {
            Ok(handled) => (handled, None),
            Err(err) => (
                Handled::json(err.status, err.body()),
                Some(err.rule.to_owned()),
            ),
        };
        inner.seq += 1;
        let request_id = match &handled.request_id {
            Some(id) => id.clone(),
            None => inner.ids.request_id(),
        };
        let (recorded, stream) = match &handled.body {
            ReplyBody::Json(value) => (value.clone(), None),
            ReplyBody::Raw { text, .. } => (Value::String(text.clone()), None),
            ReplyBody::Stream(planned) => (
                Value::Array(planned.events.clone()),
                Some(StreamRecord {
                    planned: planned.events.len(),
                    cut: planned.cut_after.is_some(),
                    last_type: planned.last_type().map(str::to_owned),
                    ..StreamRecord::default()
                }),
            ),
            ReplyBody::Drop => (Value::Null, None),
        };
        let exchange = ModelExchange {
            seq: inner.seq,
            at_ms: self.elapsed_ms(),
            method: request.method.clone(),
            path: match &request.query {
                Some(q) => format!("{}?{q}", request.path),
                None => request.path.clone(),
            },
            headers: redacted_headers(&request.headers),
            body,
            body_unparsed,
            status: handled.status,
            response: recorded,
            rejected_by,
            turn: handled.turn,
            fault: handled.fault,
            stream,
            final_response: handled.final_response,
        };
        inner.transcript.model.push(exchange);
        let mut headers = vec![
            ("x-request-id".to_owned(), request_id),
            ("openai-version".to_owned(), "2020-10-01".to_owned()),
            ("openai-processing-ms".to_owned(), "12".to_owned()),
        ];
        headers.extend(handled.headers);
        EngineReply {
            status: handled.status,
            headers,
            body: handled.body,
            delay: handled.delay,
            exchange: inner.transcript.model.len() - 1,
        }
    }

    /// Records that event `index` of the stream of exchange `exchange` was written.
    pub fn stream_event_sent(&self, exchange: usize, index: usize, call_done: Option<&str>) {
        self.update_stream(exchange, |record, seq| {
            record.sent = record.sent.max(index + 1);
            if let Some(call_id) = call_done {
                record.call_done_seq.insert(call_id.to_owned(), seq);
            }
        });
    }

    /// Records that the stream of exchange `exchange` ended.
    pub fn stream_ended(&self, exchange: usize) {
        self.update_stream(exchange, |record, seq| record.ended_seq = Some(seq));
    }

    /// Takes the next order number and updates the stream record of an exchange with it.
    fn update_stream(&self, exchange: usize, update: impl FnOnce(&mut StreamRecord, u64)) {
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        if let Some(record) = inner
            .transcript
            .model
            .get_mut(exchange)
            .and_then(|m| m.stream.as_mut())
        {
            update(record, seq);
        }
    }

    fn tool_request(&self, request: &EngineRequest, name: Option<&str>) -> EngineReply {
        let parsed: Result<Value, _> = serde_json::from_slice(&request.body);
        let mut inner = self.lock();
        let inner = &mut *inner;
        let kind = if name.is_some() {
            ToolRequestKind::Call
        } else {
            ToolRequestKind::Approval
        };
        let (reply, body) = match parsed {
            Err(_) => (
                BackendReply {
                    status: 400,
                    body: json!({"error": {"code": "invalid_json", "message": "the request body is not JSON"}}),
                    effect: false,
                    kind,
                    name: name.unwrap_or_default().to_owned(),
                },
                Value::String(String::from_utf8_lossy(&request.body).into_owned()),
            ),
            Ok(body) => {
                let reply = match name {
                    Some(name) => self.backend.call(&mut inner.backend, name, &body),
                    None => self
                        .backend
                        .approval(&mut inner.backend, &mut inner.ids, &body),
                };
                (reply, body)
            }
        };
        inner.seq += 1;
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
        inner.transcript.tools.push(ToolExchange {
            seq: inner.seq,
            at_ms: self.elapsed_ms(),
            kind: reply.kind,
            name: reply.name.clone(),
            call_id: text("call_id"),
            arguments: body.get("arguments").cloned().unwrap_or(Value::Null),
            principal: text("principal"),
            approval: text("approval"),
            status: reply.status,
            response: reply.body.clone(),
            effect: reply.effect,
        });
        EngineReply {
            status: reply.status,
            headers: Vec::new(),
            body: ReplyBody::Json(reply.body),
            delay: Duration::ZERO,
            exchange: 0,
        }
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

fn redacted_headers(headers: &[(String, String)]) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = name.to_ascii_lowercase();
            let value = if SECRET_HEADERS.contains(&name.as_str()) {
                "[redacted]".to_owned()
            } else {
                value.clone()
            };
            (name, value)
        })
        .collect()
}
