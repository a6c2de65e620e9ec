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
    /// The API refused it (an `error` event, or a refused upgrade) with this status,
    /// and the headers its answer had (an error event carries them in `error.headers`).
    Api {
        status: u16,
        message: String,
        headers: HeaderMap,
    },
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
            let (detail, retryable, headers) = match self.attempt(&event).await {
                Ok(response) => return Ok(response),
                Err(Failure::Fatal(outcome)) => return Err(outcome),
                Err(Failure::Api {
                    status,
                    message,
                    headers,
                }) => {
                    let retryable = StatusCode::from_u16(status)
                        .is_ok_and(|status| retry::should_retry(status, &headers));
                    (format!("HTTP {status}: {message}"), retryable, headers)
                }
                Err(Failure::Unanswered(detail)) => (detail, true, HeaderMap::new()),
            };
            if !retryable || retries >= retry::MAX_RETRIES {
                return Err(Outcome::failed("api_error", detail));
            }
            // `retry-after` from the answer's headers, else the backoff, as over HTTP.
            let delay = retry::delay(&headers, retries);
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
        match tokio::time::timeout_at(deadline, connection.send(Message::text(event))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Failure::Unanswered(format!("sending the create: {e}"))),
            Err(_) => return Err(Failure::Unanswered("sending the create timed out".into())),
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
            Ok((connection, _)) => {
                eprintln!("connected to {}", self.url);
                Ok(connection)
            }
            Err(tokio_tungstenite::tungstenite::Error::Http(refused)) => {
                let body = refused.body().as_deref().unwrap_or_default();
                Err(Failure::Api {
                    status: refused.status().as_u16(),
                    message: error_message(&String::from_utf8_lossy(body)),
                    headers: refused.headers().clone(),
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
    let refusal = (!started)
        .then(|| serde_json::from_str::<Value>(text).ok())
        .flatten()
        .filter(|event| event["type"] == "error");
    if let Some(event) = refusal
        && let Some(status) = event["status"].as_u64()
    {
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
            headers: headers_of(&error["headers"]),
        });
    }
    sse::terminal_response(text).map_err(Failure::Fatal)
}

/// An error event's `error.headers` (name to text), as the HTTP answer's headers.
fn headers_of(headers: &Value) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers.as_object().into_iter().flatten() {
        if let (Ok(name), Some(Ok(value))) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            value.as_str().map(reqwest::header::HeaderValue::from_str),
        ) {
            map.insert(name, value);
        }
    }
    map
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

    use super::*;

    #[test]
    fn the_url_is_the_base_url_as_a_socket_plus_responses() {
        assert_eq!(
            socket_url("http://127.0.0.1:8080/v1").unwrap(),
            "ws://127.0.0.1:8080/v1/responses"
        );
        assert_eq!(
            socket_url("https://api.openai.com/v1/").unwrap(),
            "wss://api.openai.com/v1/responses"
        );
        assert!(socket_url("ftp://example.com/v1").is_err());
        assert!(socket_url("127.0.0.1:8080/v1").is_err());
    }

    #[test]
    fn the_create_event_is_the_body_without_stream_and_background() {
        let body = json!({"model": "gpt-5", "input": "hi", "store": false, "stream": true,
                          "background": true, "previous_response_id": "resp_1"});
        let event: Value = serde_json::from_str(&create_event(&body)).unwrap();
        assert_eq!(
            event,
            json!({"type": "response.create", "model": "gpt-5", "input": "hi", "store": false,
                   "previous_response_id": "resp_1"})
        );
    }

    #[test]
    fn an_error_event_before_the_answer_is_the_apis_refusal() {
        let event = json!({"type": "error", "status": 429, "error": {"type": "rate_limit_error",
                           "code": "rate_limit_exceeded", "message": "Slow down.", "param": null,
                           "headers": {"retry-after": "2", "x-should-retry": "true"}}});
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        headers.insert("x-should-retry", "true".parse().unwrap());
        assert_eq!(
            read_event(&event.to_string(), false),
            Err(Failure::Api {
                status: 429,
                message: "Slow down.".into(),
                headers,
            })
        );
        // Once the answer started, an error event breaks the stream, as over HTTP.
        assert_eq!(
            read_event(&event.to_string(), true),
            Err(Failure::Fatal(Outcome::failed(
                "api_error",
                "stream error rate_limit_exceeded: Slow down."
            )))
        );
        // An error event without a status is a stream's.
        let flat = json!({"type": "error", "code": "server_error", "message": "Boom"});
        assert_eq!(
            read_event(&flat.to_string(), false),
            Err(Failure::Fatal(Outcome::failed(
                "api_error",
                "stream error server_error: Boom"
            )))
        );
    }

    #[test]
    fn events_are_read_to_the_terminal_one() {
        let created = json!({"type": "response.created", "response": {"id": "resp_1"}});
        assert_eq!(read_event(&created.to_string(), false), Ok(None));
        let completed = json!({"type": "response.completed", "response": {"id": "resp_1"}});
        assert_eq!(
            read_event(&completed.to_string(), true),
            Ok(Some(json!({"id": "resp_1"})))
        );
        assert!(matches!(
            read_event("{not json", true),
            Err(Failure::Fatal(Outcome::Failed { reason, .. })) if reason == "api_error"
        ));
    }

    #[test]
    fn a_connection_lost_is_retried_before_the_answer_and_fails_the_case_after() {
        assert!(matches!(lost(false, "reset"), Failure::Unanswered(_)));
        assert_eq!(
            lost(true, "reset"),
            Failure::Fatal(Outcome::failed(
                "api_error",
                "stream ended before a terminal event"
            ))
        );
    }

    type ServerSide = WebSocketStream<TcpStream>;

    async fn server() -> (TcpListener, ResponsesSocket) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let socket = ResponsesSocket::new(&base, "sk-test", Duration::from_secs(5)).unwrap();
        (listener, socket)
    }

    /// Accepts the next connection, checking its path and key.
    async fn accept(listener: &TcpListener) -> ServerSide {
        let (tcp, _) = listener.accept().await.unwrap();
        // The handshake callback's signature is tungstenite's.
        #[allow(clippy::result_large_err)]
        let check = |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
            assert_eq!(request.uri().path(), "/v1/responses");
            assert_eq!(request.headers()["authorization"], "Bearer sk-test");
            Ok(response)
        };
        tokio_tungstenite::accept_hdr_async(tcp, check)
            .await
            .unwrap()
    }

    async fn next_create(server: &mut ServerSide) -> Value {
        loop {
            match server.next().await.unwrap().unwrap() {
                Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
                Message::Ping(_) | Message::Pong(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    async fn send(server: &mut ServerSide, event: Value) {
        server.send(Message::text(event.to_string())).await.unwrap();
    }

    async fn answer(server: &mut ServerSide, id: &str) {
        let response = json!({"id": id, "status": "completed", "output": []});
        send(
            server,
            json!({"type": "response.created", "response": {"id": id, "status": "in_progress"}}),
        )
        .await;
        send(
            server,
            json!({"type": "response.completed", "response": response}),
        )
        .await;
    }

    #[tokio::test]
    async fn a_retryable_error_event_is_retried_on_the_same_connection() {
        let (listener, mut socket) = server().await;
        let fake = tokio::spawn(async move {
            let mut server = accept(&listener).await;
            let first = next_create(&mut server).await;
            let error = json!({"type": "error", "status": 503, "error": {"type": "server_error",
                               "code": null, "message": "Overloaded.", "param": null}});
            send(&mut server, error).await;
            let second = next_create(&mut server).await;
            answer(&mut server, "resp_1").await;
            // No other connection is opened.
            let other = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
            (first, second, other.is_err())
        });
        let body = json!({"model": "gpt-5", "input": "hi", "stream": true});
        let response = socket.create(&body).await.unwrap();
        assert_eq!(response["id"], "resp_1");
        socket.close().await;
        let (first, second, one_connection) = fake.await.unwrap();
        assert_eq!(
            first,
            json!({"type": "response.create", "model": "gpt-5", "input": "hi"})
        );
        assert_eq!(second, first, "the identical create is resent");
        assert!(one_connection);
    }

    #[tokio::test]
    async fn a_refusal_that_is_not_retryable_fails_with_the_apis_message() {
        let (listener, mut socket) = server().await;
        let fake = tokio::spawn(async move {
            let mut server = accept(&listener).await;
            next_create(&mut server).await;
            let error = json!({"type": "error", "status": 400, "error": {"type": "invalid_request_error",
                               "code": "previous_response_not_found",
                               "message": "Previous response with id 'resp_x' not found.",
                               "param": "previous_response_id"}});
            send(&mut server, error).await;
            // The connection stays open and nothing is resent.
            tokio::time::timeout(Duration::from_secs(2), server.next())
                .await
                .is_err()
        });
        assert_eq!(
            socket.create(&json!({"input": "hi"})).await,
            Err(Outcome::failed(
                "api_error",
                "HTTP 400: Previous response with id 'resp_x' not found."
            ))
        );
        assert!(fake.await.unwrap());
    }

    #[tokio::test]
    async fn a_refused_upgrade_fails_as_its_http_answer() {
        let (listener, mut socket) = server().await;
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            #[allow(clippy::result_large_err)]
            let refuse = |_: &Request, _: Response| -> Result<Response, ErrorResponse> {
                let body = r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key","param":null}}"#;
                Err(tokio_tungstenite::tungstenite::http::Response::builder()
                    .status(401)
                    .body(Some(body.to_string()))
                    .unwrap())
            };
            let _ = tokio_tungstenite::accept_hdr_async(tcp, refuse).await;
        });
        assert_eq!(
            socket.create(&json!({"input": "hi"})).await,
            Err(Outcome::failed(
                "api_error",
                "HTTP 401: Incorrect API key provided."
            ))
        );
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_reopened() {
        let (listener, mut socket) = server().await;
        let fake = tokio::spawn(async move {
            let mut server = accept(&listener).await;
            next_create(&mut server).await;
            answer(&mut server, "resp_1").await;
            let away = CloseFrame {
                code: CloseCode::Away,
                reason: "connection time limit reached".into(),
            };
            server.close(Some(away)).await.unwrap();
            let mut server = accept(&listener).await;
            let create = next_create(&mut server).await;
            answer(&mut server, "resp_2").await;
            create
        });
        assert_eq!(
            socket.create(&json!({"input": "hi"})).await.unwrap()["id"],
            "resp_1"
        );
        // The tools run meanwhile; the close arrives.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let chained = json!({"input": [], "previous_response_id": "resp_1"});
        assert_eq!(socket.create(&chained).await.unwrap()["id"], "resp_2");
        assert_eq!(fake.await.unwrap()["previous_response_id"], "resp_1");
    }

    #[tokio::test]
    async fn a_connection_dropped_mid_answer_fails_without_a_retry() {
        let (listener, mut socket) = server().await;
        let fake = tokio::spawn(async move {
            let mut server = accept(&listener).await;
            next_create(&mut server).await;
            send(
                &mut server,
                json!({"type": "response.created", "response": {"id": "resp_1"}}),
            )
            .await;
            drop(server);
            // Nothing is resent, on this connection or another.
            tokio::time::timeout(Duration::from_secs(2), listener.accept())
                .await
                .is_err()
        });
        assert_eq!(
            socket.create(&json!({"input": "hi"})).await,
            Err(Outcome::failed(
                "api_error",
                "stream ended before a terminal event"
            ))
        );
        assert!(fake.await.unwrap());
    }

    #[tokio::test]
    async fn a_connection_dropped_before_the_answer_is_retried_on_a_new_one() {
        let (listener, mut socket) = server().await;
        tokio::spawn(async move {
            let mut server = accept(&listener).await;
            next_create(&mut server).await;
            drop(server);
            let mut server = accept(&listener).await;
            next_create(&mut server).await;
            answer(&mut server, "resp_1").await;
            // Held open until the client is done.
            let _ = server.next().await;
        });
        assert_eq!(
            socket.create(&json!({"input": "hi"})).await.unwrap()["id"],
            "resp_1"
        );
    }
}
