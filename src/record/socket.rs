//! The recording proxy's WebSocket mode. An upgrade of `/v1/responses` opens the
//! upstream's socket (`ws` for `http`, `wss` for `https`, trusting what HTTP trusts, the
//! caller's headers passed on), and the two connections are relayed message by message,
//! unchanged, in order, as they arrive.
//!
//! What is recorded, as the fake's socket records it, so a replay compares equal:
//!
//! - each `response.create` as a streamed create on its connection: the event without
//!   `type`, `stream_id`, `generate` and `background`, with `stream: true`, answered by
//!   the events that follow it (on its lane, when it named one) up to a terminal one,
//!   with the waits between them; a `generate: false` warm-up serves no script turn;
//! - an `error` event that refuses a create before any of its events as the HTTP answer
//!   of that status (its `error.headers` as the answer's headers), which a cassette
//!   makes the same fault;
//! - a create left without its terminal event when either side goes: a cut stream, or
//!   a dropped answer when nothing came;
//! - the connection's opening, an `error` event for a message that was no create, and
//!   the close, with its code and who closed, in the transcript's `sockets`.
//!
//! An upstream that refuses the upgrade gives the client its very answer (status,
//! headers, body), recorded as an HTTP exchange. The handshake's headers are recorded as
//! HTTP headers are (the secret ones redacted); the key goes to the upstream alone.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderName, HeaderValue, UPGRADE};
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use super::proxy::{Extra, HOP_HEADERS, Proxy, Reading, chain, final_response, stream_record};
use crate::scenario::RecordedEvent;
use crate::server::EngineRequest;
use crate::server::http::{
    DropConnection, ReplyStream, RunningServer, UpgradeSlot, Upgrader, front_refusal, send,
    upgrade_head,
};
use crate::server::websocket::{HANDSHAKE_HEADERS, accept_key};
use crate::transcript::{ModelExchange, SocketEventKind};

type ClientSocket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;
type UpstreamSocket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Headers of one side's handshake alone: each side makes its own. The subprotocol is
/// the client's to ask and the upstream's to choose, so it passes.
fn own_handshake_header(name: &str) -> bool {
    HOP_HEADERS.contains(&name)
        || (name.starts_with("sec-websocket-") && name != "sec-websocket-protocol")
}

/// Messages and frames as large as the fake takes (its body cap); neither side
/// compresses.
fn config() -> WebSocketConfig {
    let max = crate::server::HttpLimits::default().max_body;
    WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
}

impl Proxy {
    /// Serves the proxy on 127.0.0.1: each request to `Proxy::answer`, each upgrade of
    /// `/v1/responses` to the relay.
    pub async fn start(self: &Arc<Self>) -> std::io::Result<RunningServer> {
        let proxy = self.clone();
        RunningServer::serve_with_upgrades(
            Arc::new(move |request| {
                let proxy = proxy.clone();
                Box::pin(async move { proxy.answer(request).await })
            }),
            self.upgrader(),
        )
        .await
    }

    /// What takes a WebSocket upgrade: the relay to the upstream's socket.
    pub(crate) fn upgrader(self: &Arc<Self>) -> Upgrader {
        let proxy = self.clone();
        Arc::new(move |request, slot| Box::pin(upgrade(proxy.clone(), request, slot)))
    }
}

/// Takes an upgrade of `/v1/responses`: opens the upstream's socket and answers `101`
/// with the relay left in `slot`, or gives the client the upstream's refusal.
async fn upgrade(
    proxy: Arc<Proxy>,
    mut request: Request<Incoming>,
    slot: UpgradeSlot,
) -> Result<Response<ReplyStream>, DropConnection> {
    let head = upgrade_head(&request);
    let accept = match accept_key(&head.headers) {
        Ok(accept) => accept,
        Err(error) => return send(front_refusal(&error)).await,
    };
    let url = proxy
        .upstream()
        .socket_url(&head.path, head.query.as_deref());
    // Counted from now: the command may exit before its connection's relay starts.
    let reading = proxy.reading();
    let (upstream, answer) = match connect(&proxy, &url, &head.headers).await {
        Ok(connected) => connected,
        Err(WsError::Http(answer)) => return refused(&proxy, &head, *answer),
        Err(err) => {
            // Unreachable: the client sees a dropped connection, as over HTTP.
            proxy.record(&head, 0, Value::Null, None, Extra::default());
            proxy.unreached(&url, chain(&err));
            return Err(DropConnection);
        }
    };
    let number = proxy.session().open_socket();
    let on_upgrade = hyper::upgrade::on(&mut request);
    let relay = Relay {
        proxy: proxy.clone(),
        number,
        headers: create_headers(head.headers),
        pending: VecDeque::new(),
        _reading: reading,
    };
    if let Ok(mut slot) = slot.lock() {
        *slot = Some(Box::pin(async move {
            match on_upgrade.await {
                Ok(upgraded) => {
                    let io = TokioIo::new(upgraded);
                    let client =
                        WebSocketStream::from_raw_socket(io, Role::Server, Some(config())).await;
                    relay.run(client, upstream).await;
                }
                Err(err) => {
                    let detail = format!("the client's upgrade failed: {err}");
                    relay.finish(None, detail);
                }
            }
        }));
    }
    let mut response = Response::new(ReplyStream::full(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    // The upstream's own headers (`x-request-id`, the subprotocol chosen), then ours.
    for (name, value) in answer.headers() {
        if !own_handshake_header(name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    if let Ok(accept) = HeaderValue::try_from(accept) {
        headers.insert("sec-websocket-accept", accept);
    }
    Ok(response)
}

/// Opens the upstream's socket with the client's headers but its handshake's own.
async fn connect(
    proxy: &Proxy,
    url: &str,
    headers: &HeaderMap,
) -> Result<
    (
        UpstreamSocket,
        tokio_tungstenite::tungstenite::http::Response<Option<Vec<u8>>>,
    ),
    WsError,
> {
    let mut request = url.into_client_request()?;
    for (name, value) in headers {
        if !own_handshake_header(name.as_str()) {
            request.headers_mut().append(name.clone(), value.clone());
        }
    }
    let tls = Connector::Rustls(proxy.upstream().tls());
    tokio_tungstenite::connect_async_tls_with_config(request, Some(config()), true, Some(tls)).await
}

/// The upstream refused the upgrade: the client gets the same answer, recorded as the
/// HTTP exchange it is.
fn refused(
    proxy: &Proxy,
    head: &EngineRequest,
    answer: tokio_tungstenite::tungstenite::http::Response<Option<Vec<u8>>>,
) -> Result<Response<ReplyStream>, DropConnection> {
    let status = answer.status().as_u16();
    let headers: Vec<(String, String)> = answer
        .headers()
        .iter()
        .filter(|(name, _)| !HOP_HEADERS.contains(&name.as_str()))
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let bytes = Bytes::from(answer.into_body().unwrap_or_default());
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let mut response = Response::new(ReplyStream::full(bytes));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, value) in &headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    let extra = Extra {
        headers,
        ..Extra::default()
    };
    proxy.record(head, status, body, None, extra);
    Ok(response)
}

/// The headers each create is recorded with: the upgrade's, less the handshake's own,
/// as the fake records them.
fn create_headers(mut headers: HeaderMap) -> HeaderMap {
    for name in HANDSHAKE_HEADERS {
        headers.remove(name);
    }
    headers
}

/// A `response.create` sent upstream and not yet answered to its end.
struct Pending {
    /// The create as the fake's socket makes it into an HTTP create's body.
    body: Value,
    /// Its `stream_id`, which the events answering it echo.
    lane: Option<String>,
    /// `generate: false`: a warm-up.
    warm_up: bool,
    /// When it was sent, then when its last event came.
    last: Instant,
    events: Vec<RecordedEvent>,
}

/// How a connection ended: the close code, if a close frame was sent or received, and
/// why.
type Ended = (Option<u16>, String);

/// One relayed connection and the creates on it still being answered.
struct Relay {
    proxy: Arc<Proxy>,
    number: u32,
    headers: HeaderMap,
    pending: VecDeque<Pending>,
    _reading: Reading,
}

impl Relay {
    /// Relays until either side closes or goes, then records what is left.
    async fn run(mut self, mut client: ClientSocket, mut upstream: UpstreamSocket) {
        // Once the client is gone, the answers under way are still read to their end
        // and recorded, as an HTTP stream is; then the upstream is closed.
        let mut gone: Option<String> = None;
        let (code, detail): Ended = loop {
            if let Some(why) = &gone
                && self.pending.is_empty()
            {
                let _ = upstream.close(None).await;
                break (None, why.clone());
            }
            tokio::select! {
                incoming = client.next(), if gone.is_none() => match incoming {
                    Some(Ok(Message::Close(frame))) => {
                        // tungstenite has queued the answering close frame.
                        let _ = client.flush().await;
                        let code = frame.as_ref().map(|frame| u16::from(frame.code));
                        let _ = upstream.close(frame).await;
                        break (code, "closed by the client".to_owned());
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {
                        // Each side answers its own pings: tungstenite has queued the pong.
                        let _ = client.flush().await;
                    }
                    Some(Ok(message)) => {
                        if let Message::Text(text) = &message {
                            self.client_text(text.as_str());
                        }
                        if let Err(err) = upstream.send(message).await {
                            let _ = client.close(None).await;
                            break (None, format!("sending to the upstream failed: {err}"));
                        }
                    }
                    None => gone = Some("closed by the client without a close frame".to_owned()),
                    Some(Err(err)) => {
                        let _ = client.close(None).await;
                        gone = Some(format!("the client's connection failed: {err}"));
                    }
                },
                incoming = upstream.next() => match incoming {
                    Some(Ok(Message::Close(frame))) => {
                        // tungstenite has queued the answering close frame.
                        let _ = upstream.flush().await;
                        let code = frame.as_ref().map(|frame| u16::from(frame.code));
                        if gone.is_none() {
                            let _ = client.close(frame).await;
                        }
                        break (code, "closed by the upstream".to_owned());
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {
                        let _ = upstream.flush().await;
                    }
                    Some(Ok(message)) => {
                        if let Message::Text(text) = &message {
                            self.server_text(text.as_str());
                        }
                        if gone.is_none() && client.send(message).await.is_err() {
                            gone = Some("the client went away mid-answer".to_owned());
                        }
                    }
                    // Without a close frame, as the fake drops a cut stream's connection:
                    // the client's goes the same way.
                    None => break (None, "the upstream's connection ended without a close frame".to_owned()),
                    Some(Err(err)) => break (None, format!("the upstream's connection failed: {err}")),
                },
            }
        };
        self.finish(code, detail);
    }

    /// Records the creates left unanswered (cut, or dropped when nothing came) and the
    /// connection's close.
    fn finish(mut self, code: Option<u16>, detail: String) {
        while let Some(pending) = self.pending.pop_front() {
            if pending.events.is_empty() {
                self.record(pending.body, 0, Value::Null, None, Extra::default());
            } else {
                self.record_stream(pending, true);
            }
        }
        self.proxy.session().close_socket(self.number, code, detail);
    }

    /// A client message: a `response.create` starts a pending answer; anything else is
    /// the upstream's to judge.
    fn client_text(&mut self, text: &str) {
        let Ok(Value::Object(mut event)) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if event.get("type").and_then(Value::as_str) != Some("response.create") {
            return;
        }
        let lane = match event.remove("stream_id") {
            Some(Value::String(lane)) => Some(lane),
            _ => None,
        };
        let warm_up = event.get("generate") == Some(&Value::Bool(false));
        for socket_only in ["type", "generate", "background"] {
            event.remove(socket_only);
        }
        event.insert("stream".to_owned(), Value::Bool(true));
        self.pending.push_back(Pending {
            body: Value::Object(event),
            lane,
            warm_up,
            last: Instant::now(),
            events: Vec::new(),
        });
    }

    /// A server message: an event of the create it answers (by lane, else the oldest),
    /// recorded when terminal; an `error` that refuses a create before its first event;
    /// or an `error` for a message that was no create.
    fn server_text(&mut self, text: &str) {
        let Ok(Value::Object(mut event)) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let lane = match event.remove("stream_id") {
            Some(Value::String(lane)) => Some(lane),
            _ => None,
        };
        // A socket's refusal carries the HTTP status; a stream's own `error` event a
        // sequence number.
        let refusal = event.get("type").and_then(Value::as_str) == Some("error")
            && event.contains_key("status")
            && !event.contains_key("sequence_number");
        if refusal {
            let waiting = self
                .pending
                .iter()
                .rposition(|p| p.lane == lane && p.events.is_empty());
            if let Some(pending) = waiting.and_then(|index| self.pending.remove(index)) {
                self.record_refusal(pending, event);
                return;
            }
            if !self.pending.iter().any(|p| p.lane == lane) {
                let detail = event
                    .get("error")
                    .and_then(|error| error.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.proxy.session().record_socket(
                    self.number,
                    SocketEventKind::Refused,
                    None,
                    detail,
                );
                return;
            }
        }
        let answered = self
            .pending
            .iter()
            .position(|p| p.lane == lane)
            .or_else(|| (!self.pending.is_empty() && lane.is_none()).then_some(0));
        let Some(index) = answered else {
            return;
        };
        let terminal = event
            .get("type")
            .and_then(Value::as_str)
            .and_then(crate::server::stream::terminal_type)
            .is_some();
        let pending = &mut self.pending[index];
        let now = Instant::now();
        pending.events.push(RecordedEvent {
            after_ms: now.duration_since(pending.last).as_millis() as u64,
            event: Value::Object(event),
        });
        pending.last = now;
        if terminal && let Some(pending) = self.pending.remove(index) {
            self.record_stream(pending, false);
        }
    }

    /// A create answered by events: a stream, as HTTP records one.
    fn record_stream(&self, pending: Pending, broken: bool) {
        let record = stream_record(&pending.events, broken);
        let waits = pending.events.iter().map(|e| e.after_ms).collect();
        let events = Value::Array(pending.events.into_iter().map(|e| e.event).collect());
        let extra = Extra {
            event_waits: waits,
            warm_up: pending.warm_up,
            ..Extra::default()
        };
        self.record(pending.body, 200, events, Some(record), extra);
    }

    /// A create refused by an `error` event: the HTTP answer of its status, with the
    /// headers the event carries (`retry-after`, `x-should-retry`, ...).
    fn record_refusal(&self, pending: Pending, mut event: Map<String, Value>) {
        let status = event
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|status| u16::try_from(status).ok())
            .unwrap_or(400);
        let mut error = event.remove("error").unwrap_or(Value::Null);
        let headers = error
            .as_object_mut()
            .and_then(|error| error.remove("headers"))
            .and_then(|headers| match headers {
                Value::Object(headers) => Some(headers),
                _ => None,
            })
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| {
                let value = match value {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                (name.to_ascii_lowercase(), value)
            })
            .collect();
        let extra = Extra {
            headers,
            ..Extra::default()
        };
        self.record(pending.body, status, json!({ "error": error }), None, extra);
    }

    /// Records a create of this connection.
    fn record(
        &self,
        body: Value,
        status: u16,
        response: Value,
        stream: Option<crate::transcript::StreamRecord>,
        extra: Extra,
    ) {
        let request = EngineRequest {
            method: "POST".to_owned(),
            path: "/v1/responses".to_owned(),
            query: None,
            headers: self.headers.clone(),
            body: Bytes::new(),
        };
        let final_response = stream.as_ref().and_then(|_| final_response(&response));
        let exchange = ModelExchange {
            status,
            response: response.into(),
            stream,
            final_response: final_response.map(Into::into),
            connection: Some(self.number),
            warm_up: extra.warm_up,
            ..request.exchange(body, false)
        };
        self.proxy.record_exchange(exchange, extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_makes_its_own_handshake_but_the_subprotocol_passes() {
        assert!(own_handshake_header("sec-websocket-key"));
        assert!(own_handshake_header("sec-websocket-extensions"));
        assert!(own_handshake_header("upgrade"));
        assert!(own_handshake_header("host"));
        assert!(!own_handshake_header("sec-websocket-protocol"));
        assert!(!own_handshake_header("authorization"));
        assert!(!own_handshake_header("openai-beta"));
    }
}
