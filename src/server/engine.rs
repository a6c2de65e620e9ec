//! The session engine: one case's fake API and tool backend, free of any transport. It
//! takes a request (method, path, headers, body), routes it to the API handlers or the
//! tool backend, records the exchange, and returns a reply for a front end to send.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
pub use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, AsHeaderName};
use serde_json::{Value, json};

use super::api::{self, Answer, Handled};
use super::clock::Clock;
use super::recorder::{Observer, Recorder, StreamProgress, lock};
use super::store::Store;
use super::stream::{self, StreamFrames};
use super::webhook;
use crate::redact;
use crate::scenario::{Scenario, StateMode};
use crate::tools::{BackendReply, ToolBackend};
use crate::transcript::{
    LazyJson, ModelExchange, RecordedHeaders, StreamRecord, ToolExchange, ToolRequestKind,
    Transcript,
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
    /// Headers, as HTTP front ends read them.
    pub headers: HeaderMap,
    /// Body bytes (shared, not copied, by the transcript and the retry check).
    pub body: Bytes,
}

impl EngineRequest {
    /// The exchange that records this request, before anything is known of its answer:
    /// the path with its query, headers redacted. Callers fill in the answer.
    pub(crate) fn exchange(&self, body: Value, body_unparsed: bool) -> ModelExchange {
        let head = EngineRequest {
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            headers: self.headers.clone(),
            body: Bytes::new(),
        };
        head.into_exchange(body.into(), body_unparsed)
    }

    /// [`EngineRequest::exchange`], taking the request's own strings.
    fn into_exchange(self, body: LazyJson, body_unparsed: bool) -> ModelExchange {
        ModelExchange {
            seq: 0,
            at_ms: 0,
            method: self.method,
            path: match self.query {
                // A secret query parameter (`?api-key=`) is kept as redacted.
                Some(q) => redact::installed()
                    .text(&format!("{}?{q}", self.path))
                    .into_owned(),
                None => self.path,
            },
            headers: RecordedHeaders::record(&self.headers, redact::installed()),
            body,
            body_unparsed,
            status: 0,
            response: LazyJson::default(),
            rejected_by: None,
            turn: None,
            fault: None,
            stream: None,
            final_response: None,
        }
    }

    /// The exchange that records this request, its body kept as the bytes that came (and
    /// parsed when read), or as text when they are not JSON.
    fn into_recorded_exchange(mut self, body_unparsed: bool) -> ModelExchange {
        let body = std::mem::take(&mut self.body);
        let body = match (body_unparsed, body.is_empty()) {
            (true, _) => Value::String(String::from_utf8_lossy(&body).into_owned()).into(),
            (false, true) => LazyJson::default(),
            (false, false) => LazyJson::json(body),
        };
        self.into_exchange(body, body_unparsed)
    }

    /// A header's first value as text (invalid UTF-8 replaced). The name is a
    /// `HeaderName` or text in any case; a known `HeaderName` is found fastest.
    pub fn header(&self, name: impl AsHeaderName) -> Option<Cow<'_, str>> {
        self.headers
            .get(name)
            .map(|value| match std::str::from_utf8(value.as_bytes()) {
                // Valid text is the rule, checked a word at a time; only the rest is mended.
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(value.as_bytes()),
            })
    }

    /// The credential of `Authorization: Bearer ...`, if one was sent.
    pub fn bearer(&self) -> Option<String> {
        let value = self.header(&AUTHORIZATION)?;
        let value = value.trim();
        let credential = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))?
            .trim();
        (!credential.is_empty()).then(|| credential.to_owned())
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
    /// A JSON body, rendered.
    Json(Bytes),
    /// A raw body (e.g. an edge proxy's HTML page).
    Raw {
        /// `content-type`.
        content_type: &'static str,
        /// The text.
        text: String,
    },
    /// Server-sent events, to be sent one by one; the front end reports each event it
    /// writes, and the end, to `progress`.
    Stream {
        /// The events, rendered, and how to deliver them.
        events: StreamFrames,
        /// Where to report what was written.
        progress: StreamProgress,
    },
    /// No answer: close the connection.
    Drop,
}

/// A transport-neutral reply.
#[derive(Debug, Clone)]
pub struct EngineReply {
    /// HTTP status.
    pub status: u16,
    /// Headers to send: the names are the engine's own, most values too.
    pub headers: Vec<(&'static str, Cow<'static, str>)>,
    /// The body.
    pub body: ReplyBody,
    /// Wait this long before answering.
    pub delay: Duration,
}

/// How a session is set up beyond its case and state mode.
#[derive(Clone, Default)]
pub struct SessionOptions {
    /// Ids, timestamps and every generated byte derive from (case, state mode, seed);
    /// the API key does not (it is random).
    pub seed: u64,
    /// Sees each exchange as it is recorded.
    pub observer: Option<Observer>,
}

/// One case's session: fake Responses API plus fixture tool backend.
pub struct Session {
    scenario: Arc<Scenario>,
    state: StateMode,
    /// Derives the generated values that must not depend on arrival order.
    key: String,
    api_key: String,
    backend: ToolBackend,
    store: Mutex<Store>,
    recorder: Arc<Mutex<Recorder>>,
    /// Where requests from async front ends wait their turn (see
    /// [`Session::handle_async`]).
    turns: tokio::sync::Mutex<()>,
}

impl Session {
    /// A fresh session for `scenario` in `state` mode, with seed 0.
    pub fn new(scenario: Arc<Scenario>, state: StateMode) -> Self {
        Self::with_options(scenario, state, SessionOptions::default())
    }

    /// A fresh session; everything it generates is a function of the case, the state
    /// mode and `options.seed`.
    pub fn with_options(
        scenario: Arc<Scenario>,
        state: StateMode,
        options: SessionOptions,
    ) -> Self {
        let key = format!("{}:{}:{}", scenario.id, state.as_str(), options.seed);
        let mut ids = IdGen::from_key(&key);
        // The key was once drawn from `ids`; the draw stays so every id after it is
        // what recordings and snapshots hold. The key itself is random: one derived from
        // the case would open this session's API to whoever knows the case.
        let _ = ids.base62(32);
        let api_key = format!("sk-loopcheck-{}", crate::secret::token(32));
        Self {
            backend: ToolBackend::new(&scenario),
            scenario,
            state,
            key,
            api_key,
            store: Mutex::new(Store::new(ids, Clock::seeded(options.seed))),
            recorder: Arc::new(Mutex::new(Recorder::new(options.observer))),
            turns: tokio::sync::Mutex::new(()),
        }
    }

    /// The API key controllers must send: random, this session's alone.
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
        lock(&self.recorder).transcript()
    }

    /// Records an exchange another front end answered (the record proxy forwards model
    /// requests upstream); its order number is taken now. Returns its index.
    pub(crate) fn record_model(&self, exchange: ModelExchange) -> usize {
        lock(&self.recorder).model(exchange)
    }

    /// Handles one request in an async front end. A session handles its requests one
    /// at a time (its store is behind a lock); a request that comes while another is
    /// handled waits here, as a task, where [`Session::handle`] would block its worker
    /// thread on that lock, with other connections' work waiting behind it.
    pub async fn handle_async(&self, request: EngineRequest) -> EngineReply {
        let _turn = self.turns.lock().await;
        self.handle(request)
    }

    /// Handles one request.
    pub fn handle(&self, request: EngineRequest) -> EngineReply {
        // Only a path under `/tools` is split here: an API path is split once, below.
        if Segments::first(&request.path) == Some("tools") {
            match Segments::of(&request.path).as_slice() {
                ["tools", "call", name] if request.method == "POST" => {
                    return self.tool_request(&request, Some(name));
                }
                ["tools", "approvals"] if request.method == "POST" => {
                    return self.tool_request(&request, None);
                }
                ["tools", "webhooks"] if request.method == "POST" => {
                    return self.model_exchange(request, |store, request| {
                        webhook::register(store, &request.body)
                            .map(|endpoint| Handled::json(200, endpoint))
                    });
                }
                _ => {}
            }
            return self.model_exchange(request, |_, request| {
                Err(ApiError::invalid_url(&request.method, &request.path))
            });
        }
        self.model_exchange(request, |store, request| {
            self.check_auth(request)?;
            let segments = Segments::of(&request.path);
            let route = match segments.as_slice() {
                ["v1", route @ ..] | route => route,
            };
            api::route(&self.scenario, store, request, route)
        })
    }

    fn check_auth(&self, request: &EngineRequest) -> Result<(), ApiError> {
        match request.bearer().as_deref() {
            None => Err(ApiError::missing_api_key()),
            Some(key) if crate::secret::same(key, &self.api_key) => Ok(()),
            Some(key) => Err(ApiError::invalid_api_key(key)),
        }
    }

    /// Runs `handler` under the store's lock and records the exchange.
    fn model_exchange(
        &self,
        request: EngineRequest,
        handler: impl FnOnce(&mut Store, &EngineRequest) -> Result<Handled, ApiError>,
    ) -> EngineReply {
        let mut store = lock(&self.store);
        let (handled, rejected_by) = match handler(&mut store, &request) {
            Ok(handled) => (handled, None),
            Err(err) => (
                Handled::json(err.status, err.body()),
                Some(err.rule.to_owned()),
            ),
        };
        // A create that served a turn has parsed its body as JSON already; any other
        // request's body is checked here (each route parses only what it reads).
        let body_unparsed = handled.turn.is_none()
            && !request.body.is_empty()
            && serde_json::from_slice::<serde::de::IgnoredAny>(&request.body).is_err();
        let request_id = match handled.request_id {
            Some(id) => id,
            None => store.ids.request_id(),
        };
        // The answer is rendered once: its bytes go out and into the transcript.
        let (recorded, stream, reply) = match handled.body {
            Answer::Json(json) => {
                let bytes = json.to_bytes();
                (json, None, Reply::Json(bytes))
            }
            Answer::Raw { content_type, text } => (
                Value::String(text.clone()).into(),
                None,
                Reply::Raw { content_type, text },
            ),
            Answer::Stream(planned) => {
                let record = StreamRecord {
                    planned: planned.len(),
                    cut: planned.cut_after.is_some(),
                    last_type: planned.last_type().map(stream::recorded_type),
                    ..StreamRecord::default()
                };
                let events = LazyJson::events(planned.bytes.clone());
                (events, Some(record), Reply::Stream(planned))
            }
            Answer::Drop => (LazyJson::default(), None, Reply::Drop),
        };
        // Recorded before the store's lock is released, so order numbers follow the
        // order in which requests changed the store.
        let exchange = lock(&self.recorder).model(ModelExchange {
            status: handled.status,
            response: recorded,
            rejected_by,
            turn: handled.turn,
            fault: handled.fault,
            stream,
            final_response: handled.final_response,
            ..request.into_recorded_exchange(body_unparsed)
        });
        let scheduled = std::mem::take(&mut store.outbox);
        drop(store);
        for events in scheduled {
            webhook::spawn(events, self.recorder.clone());
        }
        let mut headers = Vec::with_capacity(3 + handled.headers.len());
        headers.extend([
            ("x-request-id", Cow::Owned(request_id)),
            ("openai-version", Cow::Borrowed("2020-10-01")),
            ("openai-processing-ms", Cow::Borrowed("12")),
        ]);
        headers.extend(handled.headers);
        let body = match reply {
            Reply::Json(bytes) => ReplyBody::Json(bytes),
            Reply::Raw { content_type, text } => ReplyBody::Raw { content_type, text },
            Reply::Stream(events) => ReplyBody::Stream {
                events,
                progress: StreamProgress::new(self.recorder.clone(), exchange),
            },
            Reply::Drop => ReplyBody::Drop,
        };
        EngineReply {
            status: handled.status,
            headers,
            body,
            delay: handled.delay,
        }
    }

    fn tool_request(&self, request: &EngineRequest, name: Option<&str>) -> EngineReply {
        let parsed: Result<Value, _> = serde_json::from_slice(&request.body);
        let mut store = lock(&self.store);
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
                    delay_ms: 0,
                    headers: Vec::new(),
                },
                Value::String(String::from_utf8_lossy(&request.body).into_owned()),
            ),
            Ok(body) => {
                let reply = match name {
                    Some(name) => self.backend.call(&mut store.backend, name, &body),
                    None => self.backend.approval(&mut store.backend, &self.key, &body),
                };
                (reply, body)
            }
        };
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
        let rendered = Bytes::from(serde_json::to_vec(&reply.body).expect("a Value serializes"));
        lock(&self.recorder).tool(ToolExchange {
            seq: 0,
            at_ms: 0,
            kind: reply.kind,
            name: reply.name.clone(),
            call_id: text("call_id"),
            arguments: body.get("arguments").cloned().unwrap_or(Value::Null),
            principal: text("principal"),
            approval: text("approval"),
            status: reply.status,
            response: reply.body,
            effect: reply.effect,
            delay_ms: reply.delay_ms,
        });
        // A slow tool was decided and recorded above, under the locks; only the delivery
        // of its answer waits, in the front end, so other requests go on meanwhile.
        EngineReply {
            status: reply.status,
            headers: reply
                .headers
                .into_iter()
                .map(|(name, value)| (name, Cow::Owned(value)))
                .collect(),
            body: ReplyBody::Json(rendered),
            delay: Duration::from_millis(reply.delay_ms),
        }
    }
}

/// A path's segments, without empty ones, held without an allocation.
struct Segments<'p> {
    parts: [&'p str; MAX_SEGMENTS],
    len: usize,
}

/// More segments than any route has. A longer path keeps its first ones and an empty
/// last one (no segment is empty otherwise), which no route takes.
const MAX_SEGMENTS: usize = 8;

impl<'p> Segments<'p> {
    fn of(path: &'p str) -> Self {
        let mut segments = Self {
            parts: [""; MAX_SEGMENTS],
            len: 0,
        };
        for part in path.split('/').filter(|s| !s.is_empty()) {
            if segments.len == MAX_SEGMENTS {
                segments.parts[MAX_SEGMENTS - 1] = "";
                break;
            }
            segments.parts[segments.len] = part;
            segments.len += 1;
        }
        segments
    }

    /// The first segment alone, as [`Segments::of`] would have it.
    fn first(path: &str) -> Option<&str> {
        path.split('/').find(|s| !s.is_empty())
    }

    fn as_slice(&self) -> &[&'p str] {
        &self.parts[..self.len]
    }
}

/// A reply's body between rendering and the front end's handle on its progress.
enum Reply {
    Json(Bytes),
    Raw {
        content_type: &'static str,
        text: String,
    },
    Stream(StreamFrames),
    Drop,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_skip_empty_parts_and_a_long_path_matches_no_route() {
        assert_eq!(
            Segments::of("//v1/responses/resp_1/").as_slice(),
            ["v1", "responses", "resp_1"]
        );
        assert!(Segments::of("/").as_slice().is_empty());
        assert_eq!(Segments::first("//tools/call/f"), Some("tools"));
        assert_eq!(Segments::first("/"), None);
        let long = Segments::of("/v1/conversations/c/items/a/b/c/d/e");
        assert_eq!(long.as_slice().len(), MAX_SEGMENTS);
        assert_eq!(long.as_slice().last(), Some(&""));
    }
}
