//! The fake's WebSocket mode, over a real socket: a loop on one connection, the error
//! event, the one response in flight, lanes, the `generate: false` warm-up, the
//! `store: false` cache of one connection, the time limit's close and bad frames.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use loopcheck::scenario::StateMode;
use loopcheck::server::{RunningServer, Session};
use loopcheck::transcript::SocketEventKind;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

use crate::support::http::Api;
use crate::support::{
    case, case_from_yaml, install_node_packages, missing_sdk, python, root, serve,
};

/// Turn 1 calls get_weather slowly (a pause before each event), turn 2 answers.
const SLOW: &str = r#"
format: 1
id: websocket/slow
summary: One slowly streamed call, then the answer.
level: must
task:
  input:
    - role: user
      content: Do I need an umbrella in Lisbon this afternoon?
  tools: [get_weather]
tools:
  get_weather:
    default: {city: Lisbon, condition: light rain}
script:
  - output:
      - call: {name: get_weather, arguments: {city: Lisbon}}
    stream:
      delay_ms: 40
  - output:
      - message: Yes, take an umbrella.
expect:
  outcome: completed
"#;

/// The first turn's stream breaks off after three events.
const CUT: &str = r#"
format: 1
id: websocket/cut
summary: A stream cut before its terminal event.
level: must
task:
  input:
    - role: user
      content: Where is my order O-4417?
  tools: [get_order]
tools:
  get_order:
    default: {order_id: O-4417, status: shipped}
script:
  - output:
      - call: {name: get_order, arguments: {order_id: O-4417}}
    stream:
      cut_after: 3
expect:
  outcome: failed
  reason: api_error
"#;

const QUESTION: &str = "Do I need an umbrella in Lisbon this afternoon?";

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A WebSocket connection to `server`'s `/v1/responses` with `key` as its bearer key.
async fn connect(server: &RunningServer, key: Option<&str>) -> Result<Client, WsError> {
    let url = format!(
        "{}/v1/responses",
        server.base_url().replacen("http", "ws", 1)
    );
    let mut request = url.into_client_request().expect("a request");
    if let Some(key) = key {
        let bearer = format!("Bearer {key}").parse().expect("a header");
        request.headers_mut().insert("authorization", bearer);
    }
    connect_async(request).await.map(|(socket, _)| socket)
}

async fn open(server: &RunningServer, session: &Session) -> Client {
    connect(server, Some(session.api_key()))
        .await
        .expect("the upgrade is accepted")
}

async fn send(socket: &mut Client, event: Value) {
    socket
        .send(Message::text(event.to_string()))
        .await
        .expect("sent");
}

/// The next message, as JSON.
async fn next(socket: &mut Client) -> Value {
    let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("a message within 10 s")
        .expect("the connection is open")
        .expect("a message");
    match message {
        Message::Text(text) => serde_json::from_str(text.as_str()).expect("JSON"),
        other => panic!("not a text message: {other:?}"),
    }
}

/// Every event up to a terminal one (or an error event), in order.
async fn until_terminal(socket: &mut Client) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = next(socket).await;
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        events.push(event);
        if matches!(
            kind.as_str(),
            "response.completed" | "response.incomplete" | "response.failed" | "error"
        ) {
            return events;
        }
    }
}

/// The terminal event's response.
async fn response(socket: &mut Client) -> Value {
    let events = until_terminal(socket).await;
    let last = events.last().expect("an event");
    assert_eq!(last["type"], "response.completed", "{last}");
    last["response"].clone()
}

fn create(body: Value) -> Value {
    let mut event = json!({"type": "response.create", "model": "gpt-5"});
    if let (Some(event), Value::Object(body)) = (event.as_object_mut(), body) {
        event.extend(body);
    }
    event
}

fn question() -> Value {
    create(json!({"input": [{"role": "user", "content": QUESTION}], "tools": weather_tool()}))
}

fn weather_tool() -> Value {
    json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}])
}

/// The `function_call_output` answering the first call of `response`.
fn answer(response: &Value) -> Value {
    let call = response["output"]
        .as_array()
        .and_then(|output| output.iter().find(|item| item["type"] == "function_call"))
        .expect("a call");
    json!({"type": "function_call_output", "call_id": call["call_id"], "output": "{\"condition\":\"light rain\"}"})
}

/// The next create continuing `previous` with the call's output.
fn follow_up(previous: &Value, extra: Value) -> Value {
    let mut body = json!({"previous_response_id": previous["id"], "input": [answer(previous)]});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    create(body)
}

async fn start(yaml: Option<&str>) -> (Arc<Session>, RunningServer) {
    let case = match yaml {
        Some(yaml) => case_from_yaml(yaml),
        None => case("correlation/01-single-call"),
    };
    serve(&case, StateMode::PreviousResponseId).await
}

#[tokio::test]
async fn a_loop_runs_over_one_connection_as_over_http() {
    let (session, server) = start(None).await;
    let mut socket = open(&server, &session).await;
    send(&mut socket, question()).await;
    let events = until_terminal(&mut socket).await;
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"response.created"));
    assert_eq!(types.last(), Some(&"response.completed"));
    assert!(types.contains(&"response.function_call_arguments.delta"));
    assert!(events.iter().all(|e| e.get("stream_id").is_none()));
    let first = events.last().expect("terminal")["response"].clone();
    assert_eq!(first["output"][0]["name"], "get_weather");

    // The next turn sends only the new item, chained by id.
    send(&mut socket, follow_up(&first, json!({}))).await;
    let second = response(&mut socket).await;
    assert_eq!(second["output"][0]["type"], "message");
    assert_eq!(second["previous_response_id"], first["id"]);

    let transcript = session.transcript();
    assert_eq!(transcript.model.len(), 2);
    for (turn, exchange) in transcript.model.iter().enumerate() {
        assert!(exchange.is_create());
        assert_eq!(exchange.turn, Some(turn));
        assert_eq!(exchange.connection, Some(1));
        assert_eq!(exchange.status, 200);
        // The engine saw a streamed create, without the socket's own fields.
        assert_eq!(exchange.body["stream"], true);
        assert!(exchange.body.get("type").is_none());
        // The stream was written whole.
        let stream = exchange.stream.as_ref().expect("a stream record");
        assert_eq!(stream.sent, stream.planned);
        assert!(stream.ended_seq.is_some());
    }
    assert!(transcript.model[0].headers.contains_key("authorization"));
    assert!(
        !transcript.model[0]
            .headers
            .contains_key("sec-websocket-key")
    );
    drop(socket);
}

#[tokio::test]
async fn the_upgrade_is_refused_without_the_sessions_key_as_http_refuses() {
    let (session, server) = start(None).await;
    for key in [None, Some("sk-wrong")] {
        let Err(WsError::Http(response)) = connect(&server, key).await else {
            panic!("the upgrade must be refused");
        };
        assert_eq!(response.status(), 401);
        let body: Value =
            serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
        let http = Api::new(&server.base_url(), key)
            .post("/v1/responses", &json!({"model": "gpt-5", "input": "hi"}))
            .await;
        assert_eq!(http.status, 401);
        assert_eq!(body, http.json(), "the same error as over HTTP");
    }
    let transcript = session.transcript();
    assert_eq!(transcript.model[0].method, "GET");
    assert_eq!(transcript.model[0].status, 401);
    assert!(transcript.model[0].rejected_by.is_some());
    assert!(transcript.sockets.is_empty(), "no connection opened");
}

#[tokio::test]
async fn a_rejected_create_is_an_error_event_and_the_connection_stays_open() {
    let (session, server) = start(None).await;
    let mut socket = open(&server, &session).await;
    let unknown = create(
        json!({"previous_response_id": "resp_unknown", "input": "hi", "stream_id": "lane-a"}),
    );
    send(&mut socket, unknown).await;
    let mut error = next(&mut socket).await;
    // The headers the HTTP answer would have had ride in `error.headers`, as the SDK
    // types give them; the request id and timing differ from run to run.
    let headers = error["error"]
        .as_object_mut()
        .and_then(|e| e.remove("headers"))
        .expect("error.headers");
    assert!(
        headers["x-request-id"]
            .as_str()
            .unwrap()
            .starts_with("req_"),
        "{headers}"
    );
    assert!(headers.get("content-type").is_none(), "{headers}");
    assert_eq!(
        error,
        json!({
            "type": "error",
            "status": 400,
            "error": {
                "message": "Previous response with id 'resp_unknown' not found.",
                "type": "invalid_request_error",
                "param": "previous_response_id",
                "code": "previous_response_not_found",
            },
            "stream_id": "lane-a",
        })
    );
    // Still open: the same connection serves the loop, and the script did not move.
    send(&mut socket, question()).await;
    let first = response(&mut socket).await;
    assert_eq!(first["output"][0]["type"], "function_call");
    let transcript = session.transcript();
    assert_eq!(transcript.model[0].rejected_by.as_deref(), Some("E1"));
    assert_eq!(transcript.model[1].turn, Some(0));
}

#[tokio::test]
async fn a_second_create_while_one_streams_is_refused_but_lanes_queue() {
    let (session, server) = start(Some(SLOW)).await;
    let mut socket = open(&server, &session).await;
    send(&mut socket, question()).await;
    send(&mut socket, question()).await;
    let mut refused = None;
    let mut events = Vec::new();
    while events
        .last()
        .is_none_or(|e: &Value| e["type"] != "response.completed")
    {
        let event = next(&mut socket).await;
        if event["type"] == "error" {
            refused = Some(event);
        } else {
            events.push(event);
        }
    }
    let refused = refused.expect("the second create is refused");
    assert_eq!(refused["status"], 400);
    assert_eq!(refused["error"]["type"], "invalid_request_error");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in progress"),
        "{refused}"
    );
    // The refused create is recorded as rejected, and served no turn.
    let transcript = session.transcript();
    let rejected: Vec<_> = transcript
        .model
        .iter()
        .filter(|m| m.rejected_by.as_deref() == Some("socket"))
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].connection, Some(1));
    assert_eq!(rejected[0].turn, None);

    // On a named lane two creates queue: both answered, in order, each event echoing
    // the lane (the second a warm-up, so the script has a turn for each).
    let first = events.last().unwrap()["response"].clone();
    let mut answered = follow_up(&first, json!({"stream_id": "lane-b"}));
    send(&mut socket, answered.clone()).await;
    answered["generate"] = json!(false);
    answered["input"] = json!([]);
    answered["previous_response_id"] = json!(null);
    send(&mut socket, answered).await;
    let one = until_terminal(&mut socket).await;
    let two = until_terminal(&mut socket).await;
    assert!(one.iter().chain(&two).all(|e| e["stream_id"] == "lane-b"));
    let terminal = |events: &[Value]| events.last().unwrap()["response"].clone();
    assert_eq!(terminal(&one)["output"][0]["type"], "message");
    assert_eq!(terminal(&two)["output"], json!([]));
}

#[tokio::test]
async fn a_client_gone_mid_stream_ends_its_record_and_the_server_goes_on() {
    let (session, server) = start(Some(SLOW)).await;
    let mut socket = open(&server, &session).await;
    send(&mut socket, question()).await;
    next(&mut socket).await;
    drop(socket);
    // The server notices the client is gone, within a few seconds on a loaded machine.
    for _ in 0..100 {
        if session
            .transcript()
            .sockets
            .iter()
            .any(|s| s.kind == SocketEventKind::Closed)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let transcript = session.transcript();
    let stream = transcript.model[0]
        .stream
        .as_ref()
        .expect("a stream record");
    assert!(stream.sent < stream.planned, "{stream:?}");
    assert!(stream.ended_seq.is_some());
    let closed = transcript
        .sockets
        .iter()
        .find(|s| s.kind == SocketEventKind::Closed);
    assert_eq!(closed.map(|s| s.connection), Some(1));
    let mut again = open(&server, &session).await;
    send(&mut again, question()).await;
    until_terminal(&mut again).await;
}

#[tokio::test]
async fn a_warm_up_serves_no_turn_and_can_be_chained_to() {
    let (session, server) = start(None).await;
    let mut socket = open(&server, &session).await;
    let mut warm = question();
    warm["generate"] = json!(false);
    send(&mut socket, warm).await;
    let warmed = response(&mut socket).await;
    assert_eq!(warmed["status"], "completed");
    assert_eq!(warmed["output"], json!([]));
    let id = warmed["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("resp_"));

    // The first scripted turn is still to come, chained to the warm-up.
    let chained = create(json!({"previous_response_id": id, "input": [], "tools": weather_tool()}));
    send(&mut socket, chained).await;
    let first = response(&mut socket).await;
    assert_eq!(first["output"][0]["type"], "function_call");

    let transcript = session.transcript();
    assert_eq!(transcript.model[0].turn, None);
    assert_eq!(transcript.model[0].status, 200);
    assert!(transcript.model[0].body.get("generate").is_none());
    assert_eq!(transcript.model[1].turn, Some(0));
}

#[tokio::test]
async fn a_store_false_response_chains_only_on_its_own_connection() {
    let (session, server) = start(None).await;
    let mut first_socket = open(&server, &session).await;
    let mut unstored = question();
    unstored["store"] = json!(false);
    send(&mut first_socket, unstored).await;
    let first = response(&mut first_socket).await;
    let id = first["id"].as_str().unwrap().to_owned();
    let not_found = json!("previous_response_not_found");

    // Another connection does not know it.
    let mut other = open(&server, &session).await;
    send(&mut other, follow_up(&first, json!({"store": false}))).await;
    let error = next(&mut other).await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["code"], not_found);
    // Nor does HTTP.
    let http = Api::new(&server.base_url(), Some(session.api_key()))
        .post(
            "/v1/responses",
            &json!({"model": "gpt-5", "previous_response_id": id, "input": [answer(&first)]}),
        )
        .await;
    assert_eq!(http.status, 400);
    assert_eq!(http.json()["error"]["code"], not_found);

    // Its own connection continues it.
    send(
        &mut first_socket,
        follow_up(&first, json!({"store": false})),
    )
    .await;
    let second = response(&mut first_socket).await;
    assert_eq!(second["output"][0]["type"], "message");

    let transcript = session.transcript();
    let connections: Vec<Option<u32>> = transcript.model.iter().map(|m| m.connection).collect();
    assert_eq!(connections, [Some(1), Some(2), None, Some(1)]);

    // Closed, the connection's cache is gone.
    let normal = CloseFrame {
        code: CloseCode::Normal,
        reason: "done".into(),
    };
    first_socket.close(Some(normal)).await.expect("closed");
    while first_socket.next().await.is_some() {}
    for _ in 0..100 {
        let sockets = session.transcript().sockets;
        if sockets.iter().any(|s| s.kind == SocketEventKind::Closed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after =
        create(json!({"previous_response_id": second["id"], "input": "Thanks!", "store": false}));
    send(&mut other, after).await;
    assert_eq!(next(&mut other).await["error"]["code"], not_found);
    let sockets = session.transcript().sockets;
    let closed = sockets
        .iter()
        .find(|s| s.kind == SocketEventKind::Closed && s.connection == 1)
        .expect("the close is recorded");
    assert_eq!(closed.code, Some(1000));
}

#[tokio::test]
async fn a_stored_response_chains_from_any_connection() {
    let (session, server) = start(None).await;
    let mut one = open(&server, &session).await;
    send(&mut one, question()).await;
    let first = response(&mut one).await;
    let mut two = open(&server, &session).await;
    send(&mut two, follow_up(&first, json!({}))).await;
    assert_eq!(response(&mut two).await["output"][0]["type"], "message");
}

#[tokio::test]
async fn the_server_closes_a_connection_at_its_time_limit_with_1001() {
    let case = case("correlation/01-single-call");
    let session = Arc::new(
        Session::new(Arc::new(case.scenario), StateMode::PreviousResponseId)
            .with_socket_time_limit(Duration::from_millis(1500)),
    );
    let server = RunningServer::start(session.clone()).await.expect("starts");
    let mut socket = open(&server, &session).await;
    send(&mut socket, question()).await;
    response(&mut socket).await;
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame,
                Some(Ok(_)) => continue,
                other => panic!("a close frame, not {other:?}"),
            }
        }
    })
    .await
    .expect("closed within 5 s")
    .expect("a close frame with a code");
    assert_eq!(closed.code, CloseCode::Away);
    assert_eq!(u16::from(closed.code), 1001);
    let sockets = session.transcript().sockets;
    let kinds: Vec<SocketEventKind> = sockets.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [SocketEventKind::Opened, SocketEventKind::Closed]);
    // As the transcript's JSON writes it.
    let written = serde_json::to_value(&sockets[1]).expect("serializes");
    assert_eq!(written["kind"], "closed");
    assert_eq!(written["code"], 1001);
    assert_eq!(sockets[1].code, Some(1001));
}

#[tokio::test]
async fn bad_frames_get_error_events_and_never_end_the_server() {
    let (session, server) = start(None).await;
    let mut socket = open(&server, &session).await;
    let bad = [
        Message::binary(vec![0u8, 159, 146, 150]),
        Message::text("not json"),
        Message::text("[1, 2]"),
        Message::text(r#"{"model": "gpt-5"}"#),
        Message::text(r#"{"type": "response.steer", "input": "go on"}"#),
        Message::text(r#"{"type": "response.create", "stream_id": 7}"#),
    ];
    let count = bad.len();
    for message in bad {
        socket.send(message).await.expect("sent");
        let error = next(&mut socket).await;
        assert_eq!(error["type"], "error", "{error}");
        assert_eq!(error["status"], 400);
        assert!(error["error"]["message"].is_string());
    }
    // Still serving.
    send(&mut socket, question()).await;
    assert_eq!(
        response(&mut socket).await["output"][0]["type"],
        "function_call"
    );
    let refused = session
        .transcript()
        .sockets
        .iter()
        .filter(|s| s.kind == SocketEventKind::Refused)
        .count();
    assert_eq!(refused, count);

    // A message over the body cap closes with 1009.
    let limits = loopcheck::server::HttpLimits::default();
    let huge = format!(
        r#"{{"type":"response.create","input":"{}"}}"#,
        "x".repeat(limits.max_body)
    );
    let _ = socket.send(Message::text(huge)).await;
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(20), socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("a close frame, not {other:?}"),
        }
    };
    assert_eq!(closed.map(|f| u16::from(f.code)), Some(1009));
    let mut again = open(&server, &session).await;
    send(&mut again, question()).await;
    until_terminal(&mut again).await;
}

#[tokio::test]
async fn a_cut_stream_drops_the_connection_without_a_close_frame() {
    let (session, server) = start(Some(CUT)).await;
    let mut socket = open(&server, &session).await;
    send(
        &mut socket,
        create(json!({"input": "Where is my order O-4417?", "tools": [{"type": "function", "name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]})),
    )
    .await;
    let mut events = 0;
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .expect("within 5 s")
        {
            Some(Ok(Message::Text(_))) => events += 1,
            other => break other,
        }
    };
    assert_eq!(events, 3);
    assert!(
        !matches!(end, Some(Ok(Message::Close(_)))),
        "no close frame: {end:?}"
    );
    let transcript = session.transcript();
    let stream = transcript.model[0]
        .stream
        .as_ref()
        .expect("a stream record");
    assert!(stream.cut);
    assert_eq!(stream.sent, 3);
    assert!(stream.ended_seq.is_some());
}

/// Whether `program args` runs in `dir` (the SDK and its WebSocket package import);
/// why not.
async fn importable(
    program: &std::path::Path,
    args: &[&str],
    dir: &std::path::Path,
) -> Result<(), String> {
    let output = tokio::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .await;
    match output {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// Runs an official SDK's probe (`program probe`) against a fresh session and checks
/// the loop it ran: two turns over one connection, each from `response.created` to
/// `response.completed`, the second chained with only its new item.
async fn assert_the_probe_runs_the_loop(program: &std::path::Path, probe: &str) {
    let (session, server) = start(None).await;
    let output = tokio::process::Command::new(program)
        .arg(root().join(probe))
        .env("LOOPCHECK_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", session.api_key())
        .output()
        .await
        .expect("the probe runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the probe {probe} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(result["status"], "completed");
    assert!(
        result["text"].as_str().unwrap().contains("umbrella"),
        "{result}"
    );
    let turns = result["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 2);
    for types in turns {
        assert_eq!(types[0], "response.created");
        assert_eq!(
            types.as_array().unwrap().last().unwrap(),
            "response.completed"
        );
    }
    let transcript = session.transcript();
    let served: Vec<(Option<usize>, Option<u32>)> = transcript
        .model
        .iter()
        .map(|m| (m.turn, m.connection))
        .collect();
    assert_eq!(served, [(Some(0), Some(1)), (Some(1), Some(1))]);
    assert_eq!(
        transcript.model[1].body["input"].as_array().unwrap().len(),
        1
    );
}

/// The official Python SDK's `client.responses.connect()` runs the loop over one
/// connection (`websocket_probe.py`): it needs `openai` and `websockets`
/// (`harness/python/requirements.txt`); skipped with a note without them, except under CI.
#[tokio::test]
async fn the_official_python_sdk_runs_a_loop_over_one_connection() {
    let python = python();
    if let Err(why) = importable(&python, &["-c", "import openai, websockets"], &root()).await {
        let message = format!(
            "{} cannot import openai and websockets ({why}); install harness/python/requirements.txt",
            python.display()
        );
        missing_sdk("Python SDK's WebSocket client", &message);
        return;
    }
    assert_the_probe_runs_the_loop(&python, "tests/integration/websocket_probe.py").await;
}

/// The official Node SDK's `ResponsesWS` (on the `ws` package) runs the same loop
/// (`harness/node/probes/websocket.mjs`): it needs `harness/node`'s packages; skipped
/// with a note without them, except under CI.
#[tokio::test]
async fn the_official_node_sdk_runs_a_loop_over_one_connection() {
    install_node_packages();
    let node = std::path::PathBuf::from("node");
    // Bare imports resolve from the folder `-e` runs in: the package's own.
    let check = "import('openai/resources/responses/ws').then(() => import('ws')).catch((e) => { console.error(e.message); process.exit(1) })";
    let dir = root().join("harness/node");
    if let Err(why) = importable(&node, &["--input-type=module", "-e", check], &dir).await {
        let message = format!(
            "node cannot load openai's ResponsesWS and ws from {} ({why}); install them with `npm ci --prefix harness/node`",
            dir.join("node_modules").display()
        );
        missing_sdk("Node SDK's WebSocket client", &message);
        return;
    }
    assert_the_probe_runs_the_loop(&node, "harness/node/probes/websocket.mjs").await;
}

#[tokio::test]
async fn scripted_faults_are_error_events_or_a_dropped_connection() {
    let ask = || create(json!({"input": "How many D9 are in stock?"}));
    // A 503 edge page (not JSON over HTTP) is the API's 503 error event; the retry on
    // the same connection gets the turn.
    let (session, server) = serve(
        &case("transport/04-503-non-json"),
        StateMode::PreviousResponseId,
    )
    .await;
    let mut socket = open(&server, &session).await;
    send(&mut socket, ask()).await;
    let error = next(&mut socket).await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["status"], 503);
    assert_eq!(error["error"]["type"], "server_error");
    send(&mut socket, ask()).await;
    assert_eq!(
        response(&mut socket).await["output"][0]["type"],
        "function_call"
    );
    let faulted = &session.transcript().model[0];
    assert_eq!(faulted.fault.as_ref().and_then(|f| f.status), Some(503));
    assert_eq!(faulted.connection, Some(1));

    // A dropped answer drops the connection, without a close frame.
    let (session, server) = serve(
        &case("transport/05-connection-dropped"),
        StateMode::PreviousResponseId,
    )
    .await;
    let mut socket = open(&server, &session).await;
    send(&mut socket, ask()).await;
    let end = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("within 5 s");
    assert!(
        !matches!(end, Some(Ok(Message::Close(_)) | Ok(Message::Text(_)))),
        "dropped without an answer or a close frame: {end:?}"
    );
    let mut again = open(&server, &session).await;
    send(&mut again, ask()).await;
    assert_eq!(
        response(&mut again).await["output"][0]["type"],
        "function_call"
    );
}
