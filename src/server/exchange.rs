//! The engine's exchange types: a request as any front end (hyper, the wiremock
//! plug-in, the record proxy, a bench) hands it in, and the reply it gets back. They
//! know nothing of routing, so the engine and the API handlers both build on them.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
pub use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, AsHeaderName};
use serde_json::Value;

use super::recorder::StreamProgress;
use super::stream::StreamFrames;
use crate::redact;
use crate::transcript::{LazyJson, ModelExchange, RecordedHeaders};

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
            connection: None,
            warm_up: false,
        }
    }

    /// The exchange that records this request, its body kept as the bytes that came (and
    /// parsed when read), or as text when they are not JSON.
    pub(super) fn into_recorded_exchange(mut self, body_unparsed: bool) -> ModelExchange {
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

/// A `response.create` that came over a WebSocket connection rather than HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SocketCreate {
    /// The connection's number in its session (from 1).
    pub connection: u32,
    /// `generate: false` asks for a warm-up: a response without output or a turn.
    pub generate: bool,
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
        /// Over a WebSocket: close the connection once the events are written whole
        /// (the turn's `close_connection`).
        close_connection: bool,
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
