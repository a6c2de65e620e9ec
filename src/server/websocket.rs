//! The Responses API's WebSocket mode: one connection to `/v1/responses` (an HTTP
//! upgrade on the same port and path, authenticated by the same bearer key), over
//! which a controller sends `response.create` client events and receives each
//! response's stream events as text messages, one JSON event each.
//!
//! What the fake emulates, and where the official SDKs say so (Python `openai`):
//!
//! - The upgrade: `GET /v1/responses` with `Upgrade: websocket` and `Authorization:
//!   Bearer` (`_websocket_connection.py`, `_connect_websocket`; Node
//!   `resources/responses/ws.ts`). A missing or wrong key is refused with the HTTP
//!   401 the API gives any request, recorded as HTTP records it.
//! - `response.create` (`types/responses/responses_client_event.py`): the create
//!   body's top-level fields plus the socket-only `stream_id` and `generate`. It is
//!   handled exactly as a streamed HTTP create (`stream: true`, without `type`,
//!   `stream_id`, `generate`): same script, strict validation and transcript. `stream`
//!   and `background` are dropped: the SDK still types them but calls the first
//!   implicit and the second unsupported, and where the evidence is mixed the fake
//!   accepts.
//! - Server events (`types/responses/responses_server_event.py`): every stream event
//!   as one text message, with the create's `stream_id` echoed when it gave one. A
//!   rejected create comes back as the socket `error` event, `{"type":"error",
//!   "status":400,"error":{"type","code","message","param"}}`, and the connection
//!   stays open.
//! - Lanes (`stream_id` in `responses_client_event.py`: "Requests with the same
//!   `stream_id` are processed FIFO"): creates on one named lane queue and are served
//!   in order, lanes run side by side. Without a `stream_id` a connection holds one
//!   response in flight (the API's guide); a second create before the first's
//!   terminal event gets an error event, recorded as a rejected create.
//! - `generate: false` (`responses_client_event.py`): a warm-up, answered as a
//!   completed response without output that serves no script turn; a later create
//!   may chain to it.
//! - `store: false`: the response is kept only in a cache of the connection that made
//!   it, so `previous_response_id` to it works from that connection alone; from
//!   another connection, or HTTP, or once it closed, it is `previous_response_not_found`.
//! - A connection time limit (60 minutes, [`super::Session::with_socket_time_limit`]),
//!   after which the server closes with 1001, a code the SDK reconnects on
//!   (`types/websocket_reconnection.py`). A stream the script cuts drops the
//!   connection without a close frame (1006 for the client), as the HTTP stream breaks.
//! - Bad input never panics: a binary frame, text that is not JSON or not an event,
//!   or an unknown event `type` gets an error event; a message over the server's
//!   body cap closes with 1009. Each is recorded in the transcript's `sockets`, with
//!   the connection's opening and its close.
//!
//! Not emulated: `response.steer` and its `response.steer.*` answers (refused as an
//! unknown event type), `websocket_connection_limit_reached`, per-message compression.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::HeaderMap;
use hyper::header::{CONNECTION, UPGRADE};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::engine::Session;
use super::exchange::{EngineReply, EngineRequest, ReplyBody, SocketCreate};
use super::limits::HttpLimits;
use super::recorder::StreamProgress;
use crate::transcript::SocketEventKind;
use crate::wire::ApiError;

/// Whether a request asks to become a WebSocket: `GET` with `Upgrade: websocket`.
pub(crate) fn wants_upgrade(method: &str, headers: &HeaderMap) -> bool {
    let has = |name, word: &str| {
        headers.get_all(name).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(word))
            })
        })
    };
    method == "GET" && has(UPGRADE, "websocket") && has(CONNECTION, "upgrade")
}

/// Whether `path` is the Responses endpoint, where a socket may open.
pub(crate) fn is_socket_path(path: &str) -> bool {
    let mut segments = path.split('/').filter(|segment| !segment.is_empty());
    matches!(
        (segments.next(), segments.next(), segments.next()),
        (Some("v1"), Some("responses"), None) | (Some("responses"), None, None)
    )
}

/// The `Sec-WebSocket-Accept` value that completes a valid handshake.
pub(crate) fn accept_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let version = headers.get("sec-websocket-version").map(|v| v.as_bytes());
    match (headers.get("sec-websocket-key"), version) {
        (Some(key), Some(b"13")) if !key.is_empty() => Ok(derive_accept_key(key.as_bytes())),
        _ => Err(ApiError::bad_handshake()),
    }
}

/// Headers of the handshake alone, not recorded with each create.
pub(crate) const HANDSHAKE_HEADERS: [&str; 6] = [
    "upgrade",
    "connection",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-protocol",
];

/// Serves one upgraded connection until either side closes it or its time is up;
/// `head` is the upgrade request, whose headers every create carries.
pub(crate) async fn serve(
    session: Arc<Session>,
    upgrade: OnUpgrade,
    mut head: EngineRequest,
    limits: HttpLimits,
) {
    let Ok(upgraded) = upgrade.await else {
        return;
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(limits.max_body))
        .max_frame_size(Some(limits.max_body));
    let socket =
        WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
    for name in HANDSHAKE_HEADERS {
        head.headers.remove(name);
    }
    let number = session.open_socket();
    let (outgoing, queued) = mpsc::channel(16);
    let connection = Connection {
        session: session.clone(),
        number,
        headers: head.headers,
        in_flight: Arc::new(AtomicBool::new(false)),
        lanes: HashMap::new(),
        tasks: JoinSet::new(),
        outgoing,
    };
    let (code, detail) = connection.run(socket, queued).await;
    session.close_socket(number, code, detail);
}

/// What goes out on a connection, from the tasks that stream its responses.
enum Outgoing {
    Message(Message),
    /// Drop the connection without a close frame (a stream the script cuts, an answer
    /// it drops), as an HTTP connection breaks off.
    Break,
    /// Close the connection as its time limit does (a turn's `close_connection`).
    TimeUp,
}

/// A `response.create`, made into the engine's request.
struct Create {
    request: EngineRequest,
    socket: SocketCreate,
    stream_id: Option<String>,
}

/// One open connection: reads client events, hands creates to the tasks that answer
/// them, and writes what they send.
struct Connection {
    session: Arc<Session>,
    number: u32,
    /// The upgrade request's headers but the handshake's own.
    headers: HeaderMap,
    /// Whether a create without a `stream_id` is being answered.
    in_flight: Arc<AtomicBool>,
    /// Each named lane's queue of creates.
    lanes: HashMap<String, mpsc::UnboundedSender<Create>>,
    /// The tasks answering creates: aborted with the connection.
    tasks: JoinSet<()>,
    outgoing: mpsc::Sender<Outgoing>,
}

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// A connection's end: the close code, if one was sent or received, and why.
type Ended = (Option<u16>, String);

impl Connection {
    async fn run(mut self, mut socket: Socket, mut queued: mpsc::Receiver<Outgoing>) -> Ended {
        let deadline = tokio::time::sleep(self.session.socket_time_limit());
        tokio::pin!(deadline);
        loop {
            // What is queued goes out before the next client event is read, so a close a
            // turn asks for follows its last event at once.
            tokio::select! {
                biased;
                () = &mut deadline => return time_up(&mut socket, "").await,
                Some(out) = queued.recv() => match out {
                    Outgoing::Message(message) => {
                        if let Err(err) = socket.send(message).await {
                            return (None, format!("sending failed: {err}"));
                        }
                    }
                    Outgoing::Break => {
                        return (None, "dropped by the server (a scripted cut stream or dropped answer)".to_owned());
                    }
                    Outgoing::TimeUp => {
                        return time_up(&mut socket, " (scripted after this turn)").await;
                    }
                },
                incoming = socket.next() => {
                    let reply = match incoming {
                        None => return (None, "closed by the client without a close frame".to_owned()),
                        Some(Ok(Message::Text(text))) => self.client_event(text.as_str()),
                        Some(Ok(Message::Binary(_))) => {
                            self.refuse(ApiError::invalid_socket_message("a binary frame; client events are JSON text messages"))
                        }
                        Some(Ok(Message::Close(frame))) => {
                            // tungstenite has queued the answering close frame.
                            let _ = socket.flush().await;
                            let code = frame.as_ref().map(|frame| u16::from(frame.code));
                            return (code, "closed by the client".to_owned());
                        }
                        Some(Ok(_)) => {
                            // A ping or pong: tungstenite has queued the pong a ping asks for.
                            let _ = socket.flush().await;
                            continue;
                        }
                        Some(Err(WsError::Capacity(err))) => {
                            let reason = format!("message too big: {err}");
                            close(&mut socket, CloseCode::Size, "message too big").await;
                            return (Some(1009), reason);
                        }
                        Some(Err(err)) => {
                            close(&mut socket, CloseCode::Protocol, "protocol error").await;
                            return (Some(1002), format!("protocol error: {err}"));
                        }
                    };
                    if let Some(reply) = reply
                        && let Err(err) = socket.send(reply).await
                    {
                        return (None, format!("sending failed: {err}"));
                    }
                }
            }
        }
    }

    /// Handles a text message; returns the error event to send at once, if any.
    fn client_event(&mut self, text: &str) -> Option<Message> {
        let Ok(event) = serde_json::from_str::<Value>(text) else {
            return self.refuse(ApiError::invalid_socket_message("the message is not JSON"));
        };
        let Value::Object(mut event) = event else {
            return self.refuse(ApiError::invalid_socket_message(
                "a client event is a JSON object",
            ));
        };
        match event.remove("type") {
            Some(Value::String(kind)) if kind == "response.create" => self.create(event),
            Some(Value::String(kind)) => self.refuse(ApiError::unknown_event_type(&kind)),
            _ => self.refuse(ApiError::invalid_socket_message(
                "a client event has a string `type`",
            )),
        }
    }

    /// A message that is no client event: recorded, and answered with an error event.
    fn refuse(&self, error: ApiError) -> Option<Message> {
        let detail = Some(error.message.clone());
        self.session
            .record_socket(self.number, SocketEventKind::Refused, None, detail);
        Some(Message::text(
            error_event(error.status, error.body(), None).to_string(),
        ))
    }

    /// A `response.create`: queued on its lane, answered at once, or refused while
    /// the connection's last response is in flight.
    fn create(&mut self, mut event: Map<String, Value>) -> Option<Message> {
        let stream_id = match event.remove("stream_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => return self.refuse(ApiError::invalid_type("stream_id", "a string")),
        };
        let generate = match event.remove("generate") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(generate)) => generate,
            Some(_) => return self.refuse(ApiError::invalid_type("generate", "a boolean")),
        };
        event.remove("background");
        event.insert("stream".to_owned(), Value::Bool(true));
        let body = serde_json::to_vec(&Value::Object(event)).unwrap_or_default();
        let create = Create {
            request: EngineRequest {
                method: "POST".to_owned(),
                path: "/v1/responses".to_owned(),
                query: None,
                headers: self.headers.clone(),
                body: Bytes::from(body),
            },
            socket: SocketCreate {
                connection: self.number,
                generate,
            },
            stream_id,
        };
        while self.tasks.try_join_next().is_some() {}
        match create.stream_id.clone() {
            Some(lane) => {
                let queue = self
                    .lanes
                    .entry(lane)
                    .or_insert_with(|| spawn_lane(&mut self.tasks, &self.session, &self.outgoing));
                // The lane's task lives as long as the connection, which holds its queue.
                let _ = queue.send(create);
                None
            }
            None if self.in_flight.swap(true, Ordering::AcqRel) => {
                let reply = self.session.refuse(
                    create.request,
                    Some(create.socket),
                    ApiError::response_in_flight(),
                );
                reply_event(reply, None)
            }
            None => {
                let (session, outgoing) = (self.session.clone(), self.outgoing.clone());
                let in_flight = self.in_flight.clone();
                self.tasks.spawn(async move {
                    answer(&session, create, &outgoing, &in_flight).await;
                });
                None
            }
        }
    }
}

/// A named lane: a task answering its creates one after another.
fn spawn_lane(
    tasks: &mut JoinSet<()>,
    session: &Arc<Session>,
    outgoing: &mpsc::Sender<Outgoing>,
) -> mpsc::UnboundedSender<Create> {
    let (queue, mut creates) = mpsc::unbounded_channel::<Create>();
    let (session, outgoing) = (session.clone(), outgoing.clone());
    tasks.spawn(async move {
        // A lane queues instead of refusing, so nothing reads this flag.
        let busy = AtomicBool::new(true);
        while let Some(create) = creates.recv().await {
            answer(&session, create, &outgoing, &busy).await;
        }
    });
    queue
}

/// Answers a create through the engine and sends its reply; `in_flight` is cleared as
/// the last event goes out, so a create the client sends after it is not refused.
async fn answer(
    session: &Session,
    create: Create,
    outgoing: &mpsc::Sender<Outgoing>,
    in_flight: &AtomicBool,
) {
    let stream_id = create.stream_id.as_deref();
    let reply = session.handle_socket(create.request, create.socket).await;
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let done = || in_flight.store(false, Ordering::Release);
    match reply.body {
        ReplyBody::Stream {
            events,
            progress,
            close_connection,
        } => {
            let mut ended = EndOnDrop(Some(progress.clone()));
            let written = events.written();
            for index in 0..written {
                let pause = events.pause(index);
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                let text = event_text(&events.frame(index), stream_id);
                if index + 1 == written && events.cut_after.is_none() {
                    done();
                }
                if outgoing.send(Outgoing::Message(text.into())).await.is_err() {
                    return;
                }
                progress.events_sent(index..index + 1, &events);
            }
            ended.now();
            if events.cut_after.is_some() {
                done();
                let _ = outgoing.send(Outgoing::Break).await;
            } else if close_connection {
                let _ = outgoing.send(Outgoing::TimeUp).await;
            }
        }
        ReplyBody::Drop => {
            done();
            let _ = outgoing.send(Outgoing::Break).await;
        }
        _ => {
            done();
            if let Some(message) = reply_event(reply, stream_id) {
                let _ = outgoing.send(Outgoing::Message(message)).await;
            }
        }
    }
}

/// Reports a stream's end once: when it is written whole, or when its task stops
/// (the connection closed or timed out mid-stream).
struct EndOnDrop(Option<StreamProgress>);

impl EndOnDrop {
    fn now(&mut self) {
        if let Some(progress) = self.0.take() {
            progress.ended();
        }
    }
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.now();
    }
}

/// An engine reply that is no stream, as the message sent for it: an error event for
/// an error (a raw edge page becomes the API's error for its status), the body as it
/// is otherwise.
fn reply_event(reply: EngineReply, stream_id: Option<&str>) -> Option<Message> {
    let body = match reply.body {
        ReplyBody::Json(bytes) if reply.status < 400 => {
            return Some(Message::text(String::from_utf8_lossy(&bytes).into_owned()));
        }
        ReplyBody::Json(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ReplyBody::Raw { .. } => {
            let request_id = reply
                .headers
                .iter()
                .find(|(name, _)| *name == "x-request-id")
                .map(|(_, id)| id.as_ref())
                .unwrap_or_default();
            ApiError::for_status(reply.status, request_id).body()
        }
        ReplyBody::Stream { .. } | ReplyBody::Drop => return None,
    };
    let mut event = error_event(reply.status, body, stream_id);
    let headers: Map<String, Value> = reply
        .headers
        .iter()
        .filter(|(name, _)| !FRAMING_HEADERS.contains(name))
        .map(|(name, value)| ((*name).to_owned(), Value::String(value.to_string())))
        .collect();
    if !headers.is_empty() {
        event["error"]["headers"] = Value::Object(headers);
    }
    Some(Message::text(event.to_string()))
}

/// Headers of HTTP framing alone, which an error event does not repeat.
const FRAMING_HEADERS: [&str; 3] = ["content-type", "content-length", "transfer-encoding"];

/// The socket `error` event for an API error's body (`{"error": {...}}`). The SDK types
/// give its `error` the `headers` the HTTP answer would have had
/// (`responses_server_event.py`, `ResponseWsErrorError.headers`): [`reply_event`] adds
/// them, so `x-should-retry` and `retry-after` reach a socket client too.
fn error_event(status: u16, body: Value, stream_id: Option<&str>) -> Value {
    let error = match body {
        Value::Object(mut body) if body.contains_key("error") => {
            body.remove("error").unwrap_or_default()
        }
        other => other,
    };
    let mut event = json!({"type": "error", "status": status, "error": error});
    if let Some(id) = stream_id {
        event["stream_id"] = json!(id);
    }
    event
}

/// The JSON of a stream event from its SSE frame (`event: <type>\ndata: <json>\n\n`),
/// with `stream_id` added when the create gave one.
fn event_text(frame: &[u8], stream_id: Option<&str>) -> String {
    let text = String::from_utf8_lossy(frame);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    let data = data.join("\n");
    match stream_id {
        Some(id) if data.len() > 2 && data.ends_with('}') => {
            let id = Value::String(id.to_owned());
            format!("{},\"stream_id\":{id}}}", &data[..data.len() - 1])
        }
        _ => data,
    }
}

/// Closes the connection as its time limit does: 1001 (going away), a code the SDK
/// reconnects on; `scripted` says when a turn asked for it.
async fn time_up(socket: &mut Socket, scripted: &str) -> Ended {
    let reason = "connection time limit reached";
    close(socket, CloseCode::Away, reason).await;
    (Some(1001), format!("{reason}{scripted}"))
}

/// Sends a close frame, giving up if the client is gone.
async fn close(socket: &mut Socket, code: CloseCode, reason: &'static str) {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let _ = socket.close(Some(frame)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_its_frames_data_with_the_lane_added() {
        let frame = b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n";
        assert_eq!(
            event_text(frame, None),
            r#"{"type":"response.created","sequence_number":0}"#
        );
        let laned: Value = serde_json::from_str(&event_text(frame, Some("a\"b"))).unwrap();
        assert_eq!(laned["stream_id"], "a\"b");
        assert_eq!(laned["type"], "response.created");
    }

    #[test]
    fn the_socket_opens_on_the_responses_path_only() {
        assert!(is_socket_path("/v1/responses"));
        assert!(is_socket_path("/responses/"));
        assert!(!is_socket_path("/v1/responses/resp_1"));
        assert!(!is_socket_path("/v1/conversations"));
    }

    #[test]
    fn an_error_body_becomes_the_sdks_error_event() {
        let error = ApiError::previous_response_not_found("resp_x");
        let event = error_event(400, error.body(), Some("lane"));
        assert_eq!(event["type"], "error");
        assert_eq!(event["status"], 400);
        assert_eq!(event["stream_id"], "lane");
        assert_eq!(event["error"]["code"], "previous_response_not_found");
        assert_eq!(event["error"]["param"], "previous_response_id");
        assert_eq!(event["error"]["type"], "invalid_request_error");
    }

    #[test]
    fn an_error_reply_brings_its_headers_but_not_its_framing() {
        let reply = EngineReply {
            status: 500,
            headers: vec![
                ("content-type", "application/json".into()),
                ("x-should-retry", "false".into()),
                ("x-request-id", "req_1".into()),
            ],
            body: ReplyBody::Json(ApiError::for_status(500, "req_1").body().to_string().into()),
            delay: std::time::Duration::ZERO,
        };
        let Some(Message::Text(text)) = reply_event(reply, None) else {
            panic!("a text message");
        };
        let event: Value = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(event["status"], 500);
        assert_eq!(
            event["error"]["headers"],
            json!({"x-should-retry": "false", "x-request-id": "req_1"})
        );
    }
}
