//! The Responses API's WebSocket mode: one connection per case run to `/responses`, over
//! which each create goes as a `response.create` event and its answer comes back as the
//! stream events a streamed HTTP create gives, one JSON text message each.
//!
//! The connection opens at the first create. Answers are read and failures retried as
//! over HTTP: an `error` event carries the status the HTTP answer would have had and is
//! retried (on the same connection) when that status would be; a connection that cannot
//! be made, or is lost before the first event of an answer, is retried like an HTTP
//! connection error; a connection lost once an answer has started is a broken stream,
//! which is not retried. A connection the server closed while the controller was busy
//! elsewhere (its time limit, 1001) is replaced before the next create.

use std::time::Duration;

use futures_util::{FutureExt, SinkExt, StreamExt};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::client::error_message;
use crate::{Outcome, retry, sse};

/// How long a graceful close may take at the end of a case before the connection is
/// simply dropped.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

type Connection = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub(crate) struct ResponsesSocket {
    /// `ws://` or `wss://` `.../responses`.
    url: String,
    api_key: String,
    /// How long one attempt (connecting, sending, reading the whole answer) may take, as
    /// an HTTP request may.
    timeout: Duration,
    connection: Option<Connection>,
}

/// Why one attempt at a create gave no response.
#[derive(Debug, PartialEq)]
enum Failure {
    /// The API refused it (an `error` event, or a refused upgrade) with this status.
    Api { status: u16, message: String },
    /// No connection, or the connection was lost before the answer's first event.
    Unanswered(String),
    /// The case fails: the answer broke off after it started, or made no sense.
    Fatal(Outcome),
}

impl ResponsesSocket {
    pub(crate) fn new(base_url: &str, api_key: &str, timeout: Duration) -> Result<Self, Outcome> {
        Ok(ResponsesSocket {
            url: socket_url(base_url).map_err(|detail| Outcome::failed("api_error", detail))?,
            api_key: api_key.to_string(),
            timeout,
            connection: None,
        })
    }

    /// One model request: `body` (a create's body) goes as a `response.create` event and
    /// the terminal event's response is returned, as a streamed HTTP create returns it.
    pub(crate) async fn create(&mut self, body: &Value) -> Result<Value, Outcome> {
        let event = create_event(body);
        let mut retries = 0;
        loop {
            let (detail, retryable) = match self.attempt(&event).await {
                Ok(response) => return Ok(response),
                Err(Failure::Fatal(outcome)) => return Err(outcome),
                Err(Failure::Api { status, message }) => {
                    let retryable = StatusCode::from_u16(status)
                        .is_ok_and(|status| retry::should_retry(status, &HeaderMap::new()));
                    (format!("HTTP {status}: {message}"), retryable)
                }
                Err(Failure::Unanswered(detail)) => (detail, true),
            };
            if !retryable || retries >= retry::MAX_RETRIES {
                return Err(Outcome::failed("api_error", detail));
            }
            // An error event has no headers to ask for a delay: the backoff applies.
            let delay = retry::backoff(retries);
            eprintln!("{detail}; retrying in {delay:?}");
            tokio::time::sleep(delay).await;
            retries += 1;
        }
    }

    /// Closes the connection, if one is open, as a client that is done closes it.
    pub(crate) async fn close(mut self) {
        if let Some(connection) = self.connection.as_mut() {
            // The case's outcome is settled: a close that fails or hangs changes nothing.
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, connection.close(None)).await;
        }
    }

    /// Sends one create and reads its answer, on the open connection or a new one.
    async fn attempt(&mut self, event: &str) -> Result<Value, Failure> {
        let deadline = Instant::now() + self.timeout;
        self.discard_if_closed();
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => tokio::time::timeout_at(deadline, self.connect())
                .await
                .unwrap_or_else(|_| Err(Failure::Unanswered("connecting timed out".into())))?,
        };
        if let Err(e) = connection.send(Message::text(event)).await {
            return Err(Failure::Unanswered(format!("sending the create: {e}")));
        }
        let answer = read_answer(&mut connection, deadline).await;
        // An API error leaves the connection as it was; any other failure lost it.
        if matches!(answer, Ok(_) | Err(Failure::Api { .. })) {
            self.connection = Some(connection);
        }
        answer
    }

    /// Opens the connection with the API key, as the upgrade of an HTTP request.
    async fn connect(&self) -> Result<Connection, Failure> {
        let mut request = self.url.as_str().into_client_request().map_err(|e| {
            Failure::Fatal(Outcome::failed("api_error", format!("{}: {e}", self.url)))
        })?;
        let bearer = HeaderValue::from_str(&format!("Bearer {}", self.api_key)).map_err(|_| {
            Failure::Fatal(Outcome::failed(
                "api_error",
                "the API key is not a valid header value",
            ))
        })?;
        request.headers_mut().insert("authorization", bearer);
        match tokio_tungstenite::connect_async(request).await {
            Ok((connection, _)) => Ok(connection),
            Err(tokio_tungstenite::tungstenite::Error::Http(refused)) => {
                let body = refused.body().as_deref().unwrap_or_default();
                Err(Failure::Api {
                    status: refused.status().as_u16(),
                    message: error_message(&String::from_utf8_lossy(body)),
                })
            }
            Err(e) => Err(Failure::Unanswered(format!(
                "connecting to {}: {e}",
                self.url
            ))),
        }
    }

    /// Drops the connection if the server closed it, or it broke, while it was idle; a
    /// ping that arrived meanwhile is answered by this read.
    fn discard_if_closed(&mut self) {
        let Some(connection) = self.connection.as_mut() else {
            return;
        };
        while let Some(next) = connection.next().now_or_never() {
            match next {
                Some(Ok(Message::Close(frame))) => {
                    eprintln!("{}; reconnecting", closed(frame.as_ref()));
                    self.connection = None;
                    return;
                }
                Some(Err(e)) => {
                    eprintln!("the connection broke while idle: {e}; reconnecting");
                    self.connection = None;
                    return;
                }
                None => {
                    eprintln!("the connection ended while idle; reconnecting");
                    self.connection = None;
                    return;
                }
                // Pings and pongs; no answer is pending, so no event is either.
                Some(Ok(_)) => {}
            }
        }
    }
}

/// The socket URL for `OPENAI_BASE_URL`: `http` becomes `ws`, `https` `wss`, and the
/// path gets `/responses`.
fn socket_url(base_url: &str) -> Result<String, String> {
    let base = base_url.trim_end_matches('/');
    let (scheme, rest) = if let Some(rest) = base.strip_prefix("https://") {
        ("wss", rest)
    } else if let Some(rest) = base.strip_prefix("http://") {
        ("ws", rest)
    } else {
        return Err(format!(
            "OPENAI_BASE_URL {base_url:?} is neither http:// nor https://"
        ));
    };
    Ok(format!("{scheme}://{rest}/responses"))
}

/// The `response.create` event for a create's body: its fields, without `stream`
/// (implicit on a socket) and `background` (not served on one).
fn create_event(body: &Value) -> String {
    let mut event = serde_json::Map::new();
    event.insert("type".into(), Value::from("response.create"));
    if let Value::Object(fields) = body {
        for (name, value) in fields {
            if name != "stream" && name != "background" {
                event.insert(name.clone(), value.clone());
            }
        }
    }
    Value::Object(event).to_string()
}

/// Reads one answer's events up to its terminal one, by `deadline`.
async fn read_answer(connection: &mut Connection, deadline: Instant) -> Result<Value, Failure> {
    let mut started = false;
    loop {
        let message = match tokio::time::timeout_at(deadline, connection.next()).await {
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(e))) => return Err(lost(started, &e.to_string())),
            Ok(None) => return Err(lost(started, "the connection ended")),
            Err(_) => return Err(lost(started, "the answer timed out")),
        };
        let text = match message {
            Message::Text(text) => text,
            Message::Close(frame) => return Err(lost(started, &closed(frame.as_ref()))),
            Message::Binary(_) => {
                return Err(Failure::Fatal(Outcome::failed(
                    "api_error",
                    "a binary message where an event was expected",
                )));
            }
            // Pings (answered by the read itself), pongs.
            _ => continue,
        };
        if let Some(response) = read_event(text.as_str(), started)? {
            return Ok(response);
        }
        started = true;
    }
}

/// What one event means: `Some` terminal response, `None` to read on, or a failure. An
/// `error` event with a status, before the answer started, is the API refusing the
/// create as HTTP would; every other event is read as a streamed HTTP answer's.
fn read_event(text: &str, started: bool) -> Result<Option<Value>, Failure> {
    if !started && let Ok(event) = serde_json::from_str::<Value>(text) {
        if let ("error", Some(status)) = (
            event["type"].as_str().unwrap_or_default(),
            event["status"].as_u64(),
        ) {
            let error = event
                .get("error")
                .filter(|e| e.is_object())
                .unwrap_or(&event);
            return Err(Failure::Api {
                status: u16::try_from(status).unwrap_or(u16::MAX),
                message: error["message"]
                    .as_str()
                    .unwrap_or("no message")
                    .to_string(),
            });
        }
    }
    sse::terminal_response(text).map_err(Failure::Fatal)
}

/// The failure of a connection lost during a create: retried before the answer's first
/// event, a broken stream after it (as `sse::read_response` fails one).
fn lost(started: bool, detail: &str) -> Failure {
    if started {
        eprintln!("the event stream broke: {detail}");
        Failure::Fatal(Outcome::failed(
            "api_error",
            "stream ended before a terminal event",
        ))
    } else {
        Failure::Unanswered(format!(
            "the connection was lost before an answer: {detail}"
        ))
    }
}

fn closed(frame: Option<&CloseFrame>) -> String {
    match frame {
        Some(frame) => format!(
            "the server closed the connection ({}: {})",
            u16::from(frame.code),
            frame.reason
        ),
        None => "the server closed the connection".to_string(),
    }
}
