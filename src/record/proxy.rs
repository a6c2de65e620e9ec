//! The recording proxy: a server on 127.0.0.1 that forwards every model request to the
//! upstream (TLS on that side only), streams every answer back unchanged, a server-sent
//! event stream chunk by chunk as it arrives, and records each exchange with the event
//! boundaries and the waits between them. Requests under `/tools/` go to the fixture
//! tool backend instead, so a contract controller's tool calls are recorded too. A
//! WebSocket upgrade of `/v1/responses` is relayed to the upstream's socket (see
//! the `socket` module, which also serves the proxy).
//!
//! The caller's key passes through to the upstream only: it is in the forwarded
//! `Authorization` header, and the recorder keeps no secret header.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt;
use hyper::{Response, StatusCode};
use serde_json::Value;

use crate::redact;
use crate::scenario::RecordedEvent;
use crate::server::http::{DropConnection, ReplyStream, send};
use crate::server::{EngineRequest, Session, stream};
use crate::transcript::{ModelExchange, StreamRecord};

/// Headers that belong to one hop (or that the proxy sets itself) and are not forwarded.
pub(super) const HOP_HEADERS: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    // Answers stay uncompressed, so the proxy can read the events it passes on.
    "accept-encoding",
    "content-encoding",
];

/// Why the upstream cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// `--upstream` is not an http(s) URL.
    #[error(
        "invalid --upstream {0:?}: expected an http:// or https:// URL such as https://api.openai.com/v1"
    )]
    Url(String),
    /// `--upstream-ca` cannot be read or is not a PEM certificate.
    #[error(
        "failed to read the certificate in {path}: {why}\n(hint: --upstream-ca takes a PEM file)"
    )]
    Certificate {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("failed to set up the upstream client: {0}")]
    Client(String),
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Full<Bytes>,
>;

/// The real API (or a stand-in) the proxy forwards to.
#[derive(Clone)]
pub struct Upstream {
    base: String,
    /// The base URL's own query (`?api-version=...`), sent with every request.
    base_query: Option<String>,
    client: Client,
    /// The TLS configuration of both clients, before the HTTP one adds its ALPN: the
    /// socket's handshake is HTTP/1.1.
    tls: Arc<rustls::ClientConfig>,
}

impl Upstream {
    /// An upstream at `base` (e.g. `https://api.openai.com/v1`), trusting the platform's
    /// roots and, when given, the certificates in `ca` (for a private endpoint).
    pub fn new(base: &str, ca: Option<&Path>) -> Result<Self, UpstreamError> {
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(UpstreamError::Url(base.to_owned()));
        }
        let mut roots = rustls::RootCertStore::empty();
        // The platform's roots; a store that cannot be read leaves only --upstream-ca.
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        if let Some(path) = ca {
            use rustls_pki_types::pem::PemObject;
            let certificate = |why: String| UpstreamError::Certificate {
                path: path.display().to_string(),
                why,
            };
            let pem = std::fs::read(path).map_err(|e| certificate(e.to_string()))?;
            let certs: Vec<_> = rustls_pki_types::CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<_, _>>()
                .map_err(|e| certificate(e.to_string()))?;
            if certs.is_empty() {
                return Err(certificate("no certificate in it".to_owned()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| certificate(e.to_string()))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| UpstreamError::Client(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_or_http()
            .enable_http1()
            .build();
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        let (base, base_query) = match base.split_once('?') {
            Some((base, query)) => (base, Some(query.to_owned())),
            None => (base, None),
        };
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            base_query,
            client,
            tls: Arc::new(tls),
        })
    }

    /// The TLS configuration for the upstream (its roots and `--upstream-ca`).
    pub(super) fn tls(&self) -> Arc<rustls::ClientConfig> {
        self.tls.clone()
    }

    /// The upstream's WebSocket URL for an upgrade the client sent to the proxy: the
    /// HTTP URL with `ws` for `http` and `wss` for `https`.
    pub(super) fn socket_url(&self, path: &str, query: Option<&str>) -> String {
        let url = self.url(path, query);
        match url.strip_prefix("https://") {
            Some(rest) => format!("wss://{rest}"),
            None => format!("ws://{}", url.strip_prefix("http://").unwrap_or(&url)),
        }
    }

    /// The upstream URL for a request the client sent to the proxy's `/v1` base: the
    /// base's query first, then the request's.
    fn url(&self, path: &str, query: Option<&str>) -> String {
        let rest = path.strip_prefix("/v1").unwrap_or(path);
        let query: Vec<&str> = [self.base_query.as_deref(), query]
            .into_iter()
            .flatten()
            .filter(|q| !q.is_empty())
            .collect();
        if query.is_empty() {
            format!("{}{rest}", self.base)
        } else {
            format!("{}{rest}?{}", self.base, query.join("&"))
        }
    }
}

/// What the recorder keeps beside each model exchange: what a cassette needs and a
/// transcript has no place for.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// The answer's headers (`retry-after`, `x-should-retry`, ...).
    pub headers: Vec<(String, String)>,
    /// For a stream: the wait before each event, in milliseconds.
    pub event_waits: Vec<u64>,
    /// A WebSocket `response.create` with `generate: false`: a warm-up, which serves no
    /// script turn.
    pub warm_up: bool,
}

/// The proxy's shared state.
pub struct Proxy {
    upstream: Upstream,
    /// Records model exchanges (with its order numbers) and serves the tool backend.
    session: Arc<Session>,
    extras: Mutex<HashMap<usize, Extra>>,
    /// Streams still being read from the upstream (and not yet recorded).
    streaming: AtomicUsize,
    /// Why requests could not reach the upstream, each reason once.
    unreachable: Mutex<Vec<String>>,
}

impl Proxy {
    /// A proxy to `upstream`, recording into `session`.
    pub fn new(upstream: Upstream, session: Arc<Session>) -> Arc<Self> {
        Arc::new(Self {
            upstream,
            session,
            extras: Mutex::new(HashMap::new()),
            streaming: AtomicUsize::new(0),
            unreachable: Mutex::new(Vec::new()),
        })
    }

    /// Why requests could not reach the upstream (each reason once), if any did not.
    pub fn unreachable(&self) -> Vec<String> {
        self.unreachable
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default()
    }

    /// Waits (at most `limit`) until every stream the upstream is still sending has been
    /// read to its end and recorded.
    pub async fn settle(&self, limit: Duration) {
        let started = Instant::now();
        while self.streaming.load(Ordering::SeqCst) > 0 && started.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The upstream the proxy forwards to.
    pub(super) fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The session the proxy records into.
    pub(super) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Counts a stream or a connection still being read from the upstream, until the
    /// guard is dropped: [`Proxy::settle`] waits for it.
    pub(super) fn reading(self: &Arc<Self>) -> Reading {
        self.streaming.fetch_add(1, Ordering::SeqCst);
        Reading(self.clone())
    }

    /// Notes (once per reason, redacted) that a request could not reach the upstream.
    pub(super) fn unreached(&self, url: &str, why: String) {
        if let Ok(mut unreachable) = self.unreachable.lock()
            && !unreachable.contains(&why)
        {
            // The URL may carry a password or a key (`?api-key=`).
            let message = format!("failed to reach the upstream at {url}: {why}");
            eprintln!("loopcheck: {}", redact::installed().text(&message));
            unreachable.push(why);
        }
    }

    /// What each recorded exchange carried beyond the transcript, by exchange index.
    pub fn extras(&self) -> HashMap<usize, Extra> {
        self.extras.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// Answers one request: the tool backend's, or the upstream's, recorded either way.
    pub(crate) async fn answer(
        self: Arc<Self>,
        request: EngineRequest,
    ) -> Result<Response<ReplyStream>, DropConnection> {
        if request.path.starts_with("/tools/") {
            return send(self.session.handle_async(request).await).await;
        }
        let started = Instant::now();
        let url = self.upstream.url(&request.path, request.query.as_deref());
        let mut forwarded = hyper::Request::builder()
            .method(request.method.as_str())
            .uri(url.as_str());
        for (name, value) in &request.headers {
            if !HOP_HEADERS.contains(&name.as_str()) {
                forwarded = forwarded.header(name, value);
            }
        }
        let sent = match forwarded.body(http_body_util::Full::new(request.body.clone())) {
            Ok(forwarded) => self
                .upstream
                .client
                .request(forwarded)
                .await
                .map_err(|err| chain(&err)),
            Err(err) => Err(err.to_string()),
        };
        let answer = match sent {
            Ok(answer) => answer,
            Err(why) => {
                // The upstream could not be reached: the client sees a dropped connection,
                // as from the real API, and the recording keeps it.
                self.record(&request, 0, Value::Null, None, Extra::default());
                self.unreached(&url, why);
                return Err(DropConnection);
            }
        };
        let status = answer.status().as_u16();
        let headers: Vec<(String, String)> = answer
            .headers()
            .iter()
            .filter(|(name, _)| !HOP_HEADERS.contains(&name.as_str()))
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let streamed = headers
            .iter()
            .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
        let mut response = Response::new(ReplyStream::full(Bytes::new()));
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        for (name, value) in &headers {
            if let (Ok(name), Ok(value)) = (
                hyper::header::HeaderName::try_from(name.as_str()),
                hyper::header::HeaderValue::try_from(value.as_str()),
            ) {
                response.headers_mut().append(name, value);
            }
        }
        let extra = Extra {
            headers,
            ..Extra::default()
        };
        let mut upstream_body = answer.into_body();
        if !streamed {
            let bytes = upstream_body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let body = serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
            self.record(&request, status, body, None, extra);
            *response.body_mut() = ReplyStream::full(bytes);
            return Ok(response);
        }
        let (sender, body) = ReplyStream::channel();
        *response.body_mut() = body;
        let reading = self.reading();
        tokio::spawn(async move {
            let mut events = EventReader::new(started);
            loop {
                match upstream_body.frame().await {
                    Some(Ok(frame)) => {
                        let Ok(chunk) = frame.into_data() else {
                            continue; // trailers
                        };
                        events.feed(&chunk);
                        // Passed on as it came; a client that went away ends nothing here:
                        // the rest is still read and recorded.
                        let _ = sender.send(Ok(Frame::data(chunk))).await;
                    }
                    None => break,
                    Some(Err(err)) => {
                        events.broken = true;
                        let _ = sender
                            .send(Err(std::io::Error::other(err.to_string())))
                            .await;
                        break;
                    }
                }
            }
            let (recorded, broken) = (events.events, events.broken);
            let waits = recorded.iter().map(|e| e.after_ms).collect();
            let record = stream_record(&recorded, broken);
            let body = Value::Array(recorded.into_iter().map(|e| e.event).collect());
            self.record(
                &request,
                status,
                body,
                Some(record),
                Extra {
                    event_waits: waits,
                    ..extra
                },
            );
            drop(reading);
        });
        Ok(response)
    }

    /// Records a model exchange of `request`.
    pub(super) fn record(
        &self,
        request: &EngineRequest,
        status: u16,
        response: Value,
        stream: Option<StreamRecord>,
        extra: Extra,
    ) {
        let parsed = serde_json::from_slice::<Value>(&request.body).ok();
        let (body, body_unparsed) = match parsed {
            Some(value) => (value, false),
            None if request.body.is_empty() => (Value::Null, false),
            None => (
                Value::String(String::from_utf8_lossy(&request.body).into_owned()),
                true,
            ),
        };
        let final_response = stream.as_ref().and_then(|_| final_response(&response));
        self.record_exchange(
            ModelExchange {
                status,
                response: response.into(),
                stream,
                final_response: final_response.map(Into::into),
                ..request.exchange(body, body_unparsed)
            },
            extra,
        );
    }

    /// Records a model exchange and what it carried beyond the transcript.
    pub(super) fn record_exchange(&self, exchange: ModelExchange, extra: Extra) {
        let index = self.session.record_model(exchange);
        if let Ok(mut extras) = self.extras.lock() {
            extras.insert(index, extra);
        }
    }
}

/// A stream or connection the upstream is still sending: counted until dropped.
pub(super) struct Reading(Arc<Proxy>);

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.streaming.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a recorded stream sent: every event that came, cut when the connection broke
/// or the last event is no terminal one.
pub(super) fn stream_record(events: &[RecordedEvent], broken: bool) -> StreamRecord {
    let last_type = events
        .last()
        .and_then(|e| e.event["type"].as_str())
        .map(stream::recorded_type);
    let terminal = last_type
        .as_deref()
        .and_then(stream::terminal_type)
        .is_some();
    StreamRecord {
        planned: events.len(),
        sent: events.len(),
        cut: broken || !terminal,
        last_type,
        ..StreamRecord::default()
    }
}

/// The response a stream's events end with (the last event that carries one).
pub(super) fn final_response(events: &Value) -> Option<Value> {
    events
        .as_array()
        .and_then(|events| events.iter().rev().find_map(|e| e.get("response")))
        .cloned()
}

/// An error with its causes: a TLS failure lies a few sources deep.
pub(super) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Splits a server-sent event stream into events as chunks arrive, timing each.
struct EventReader {
    buffer: Vec<u8>,
    last: Instant,
    events: Vec<RecordedEvent>,
    broken: bool,
}

impl EventReader {
    fn new(started: Instant) -> Self {
        Self {
            buffer: Vec::new(),
            last: started,
            events: Vec::new(),
            broken: false,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
        while let Some(end) = find_blank_line(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end).collect();
            let text = String::from_utf8_lossy(&block);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if data.is_empty() {
                continue;
            }
            let joined = data.join("\n");
            let event = serde_json::from_str(&joined).unwrap_or(Value::String(joined));
            let now = Instant::now();
            self.events.push(RecordedEvent {
                after_ms: now.duration_since(self.last).as_millis() as u64,
                event,
            });
            self.last = now;
        }
    }
}

/// The end (exclusive, past the separator) of the first event block: a blank line,
/// `\n\n` or `\r\n\r\n`.
fn find_blank_line(buffer: &[u8]) -> Option<usize> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_at_blank_lines_across_chunks() {
        let mut reader = EventReader::new(Instant::now());
        reader.feed(b"event: a\ndata: {\"type\":\"a\",");
        assert!(reader.events.is_empty());
        reader.feed(b"\"n\":1}\n\nevent: b\r\ndata: {\"type\":\"b\"}\r\n\r\n");
        let types: Vec<&str> = reader
            .events
            .iter()
            .map(|e| e.event["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["a", "b"]);
    }

    #[test]
    fn the_proxy_base_maps_onto_the_upstream_base() {
        let upstream = Upstream::new("https://api.example.com/v1/", None).unwrap();
        assert_eq!(
            upstream.url("/v1/responses", None),
            "https://api.example.com/v1/responses"
        );
        assert_eq!(
            upstream.url("/v1/responses/resp_1", Some("stream=true")),
            "https://api.example.com/v1/responses/resp_1?stream=true"
        );
        let azure = Upstream::new("https://x.example.com/openai/v1?api-version=1", None).unwrap();
        assert_eq!(
            azure.url("/v1/responses", Some("stream=true")),
            "https://x.example.com/openai/v1/responses?api-version=1&stream=true"
        );
        assert!(Upstream::new("api.example.com", None).is_err());
    }

    #[test]
    fn the_socket_goes_to_ws_for_http_and_wss_for_https() {
        let secure = Upstream::new("https://api.example.com/v1", None).unwrap();
        assert_eq!(
            secure.socket_url("/v1/responses", None),
            "wss://api.example.com/v1/responses"
        );
        let plain = Upstream::new("http://127.0.0.1:8080/v1?api-version=1", None).unwrap();
        assert_eq!(
            plain.socket_url("/responses", None),
            "ws://127.0.0.1:8080/v1/responses?api-version=1"
        );
    }
}
