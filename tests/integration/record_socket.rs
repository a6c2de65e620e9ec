//! Recording the WebSocket mode: the Rust reference, given a task with `websocket: true`,
//! is recorded through the proxy against a fake that serves the socket; the cassette is a
//! case of the `websocket` delivery whose requests keep their connection and hold no key;
//! it replays offline to the same controller without drift, and to one that posts over
//! HTTP or sends other instructions as drift naming the change. Over TLS the upstream's
//! certificate authority is trusted as over HTTP. A warm-up, a lane and a 429 are recorded
//! as the fake serves them. An upstream that refuses the upgrade gives the client its
//! answer, one that cannot be reached leaves no cassette; a binary frame and a client's
//! close are relayed and recorded.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use loopcheck::contract::Delivery;
use loopcheck::record::proxy::{Proxy, Upstream};
use loopcheck::scenario::StateMode;
use loopcheck::server::{RunningServer, Session};
use loopcheck::transcript::SocketEventKind;
use serde_json::{Value, json};
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::record::{bin, loopcheck, record, run_cassette, text};
use crate::support::{case, case_from_yaml, missing_sdk, python, root};
use crate::upstream::tls_front;

const CASE: &str = "websocket/01-single-call";

/// The fake of the websocket case, serving its socket: the stand-in upstream.
async fn socket_upstream() -> (Arc<Session>, RunningServer) {
    serve_socket(case(CASE)).await
}

/// A call, then a 429 for the create that sends its output.
const THROTTLED: &str = r#"
format: 1
id: websocket/throttled
summary: A call, then a 429 for the create that answers it.
level: must
task:
  input:
    - role: user
      content: Is it warm enough in Lisbon for the beach today?
  tools: [get_weather]
deliveries: [websocket]
script:
  - output:
      - call: {name: get_weather, arguments: {city: Lisbon}}
  - faults:
      - {status: 429, retry_after_ms: 20}
    output:
      - message: Sunny and warm.
expect:
  outcome: completed
"#;

/// The fake of `case` over its socket.
async fn serve_socket(case: loopcheck::scenario::Case) -> (Arc<Session>, RunningServer) {
    let scenario = case.scenario.delivered(Delivery::WebSocket);
    let session = Arc::new(Session::new(
        Arc::new(scenario),
        StateMode::PreviousResponseId,
    ));
    let server = RunningServer::start(session.clone())
        .await
        .expect("the upstream starts");
    (session, server)
}

/// The case's task and tools, with `websocket: true`, as a task file.
fn task_file(dir: &Path) -> std::path::PathBuf {
    let scenario = case(CASE).scenario;
    let mut task = serde_json::to_value(&scenario.task).unwrap();
    task["websocket"] = json!(true);
    let path = dir.join("task.json");
    let file = json!({"task": task, "tools": scenario.tools});
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

/// A controller that runs the Rust reference on a task file changed by `edit` (a
/// Python statement on the task `t`, without single quotes).
fn edited_reference(dir: &Path, name: &str, edit: &str) -> std::path::PathBuf {
    let script = dir.join(name);
    let body = format!(
        "#!/bin/sh\npython3 -c 'import json, os\np = os.environ[\"LOOPCHECK_TASK\"]\nt = json.load(open(p))\n{edit}\njson.dump(t, open(p, \"w\"))' || exit 3\nexec {} reference-controller\n",
        bin()
    );
    std::fs::write(&script, body).unwrap();
    script
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_recording_replays_over_the_socket_and_drifts_when_the_loop_changes() {
    let (upstream, server) = socket_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let task = task_file(dir.path());
    let cassette = dir.path().join("socket.yaml");
    let bin = bin();
    let output = record(
        &format!("{}/v1", server.base_url()),
        &cassette,
        &["--task", task.to_str().unwrap()],
        &[&bin, "reference-controller"],
        &[("OPENAI_API_KEY", upstream.api_key())],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));

    // The upstream saw both creates on one connection, opened and closed.
    let seen = upstream.transcript();
    assert_eq!(seen.model.len(), 2, "{:#?}", seen.model);
    assert!(seen.model.iter().all(|m| m.connection == Some(1)));
    let kinds: Vec<SocketEventKind> = seen.sockets.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [SocketEventKind::Opened, SocketEventKind::Closed]);

    // The cassette: a case of the websocket delivery, each request on connection 1.
    let raw = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        !raw.contains(upstream.api_key()),
        "the key is on disk:\n{raw}"
    );
    let scenario = loopcheck::scenario::load_file(&cassette).expect("the cassette loads");
    assert_eq!(scenario.deliveries, Some(vec![Delivery::WebSocket]));
    assert!(scenario.task.websocket && scenario.task.stream);
    assert_eq!(scenario.script.len(), 2);
    for turn in &scenario.script {
        let recorded = turn.recorded.as_ref().expect("a recorded turn");
        assert_eq!(recorded.events[0].event["type"], "response.created");
        assert!(
            recorded
                .events
                .iter()
                .all(|e| e.event.get("stream_id").is_none())
        );
        assert_eq!(recorded.response["status"], "completed");
    }
    let document = serde_json::to_value(&scenario).unwrap();
    let steps = document["recorded"]["transcript"]["steps"]
        .as_array()
        .unwrap();
    let connections: Vec<&Value> = steps
        .iter()
        .filter_map(|s| s.get("model"))
        .map(|m| &m["connection"])
        .collect();
    assert_eq!(connections, [&json!(1), &json!(1)]);
    let first = steps[0]["model"]["body"].as_object().unwrap();
    assert_eq!(first["stream"], true);
    assert!(!first.contains_key("type") && !first.contains_key("stream_id"));
    let lint = loopcheck(&["lint", cassette.to_str().unwrap()], &[]).await;
    assert!(lint.status.success(), "{}", text(&lint));
    drop(server);

    // Offline: the same controller sends what was recorded, over the fake's socket.
    let path = cassette.to_str().unwrap();
    let replay = loopcheck(&["replay", path, "--", &bin, "reference-controller"], &[]).await;
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(
        text(&replay).contains("the replay sent what"),
        "{}",
        text(&replay)
    );
    let (output, cases) = run_cassette(&cassette, &[]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0]["verdict"], "pass", "{:#}", cases[0]);
    assert_eq!(cases[0]["recording"]["status"], "matched");

    // A loop that posts over HTTP instead drifts, and says so once for all its requests.
    let over_http = edited_reference(dir.path(), "over-http.sh", r#"t.pop("websocket", None)"#);
    let script = over_http.to_str().unwrap();
    let replay = loopcheck(&["replay", path, "--", "sh", script], &[]).await;
    assert!(!replay.status.success(), "{}", text(&replay));
    assert!(
        text(&replay).contains(
            "request (POST /v1/responses): came over HTTP instead of WebSocket connection 1 (requests 1, 2)"
        ),
        "{}",
        text(&replay)
    );

    // One that sends other instructions drifts on that field.
    let other = edited_reference(
        dir.path(),
        "instructions.sh",
        r#"t["instructions"] = "Answer in French.""#,
    );
    let replay = loopcheck(&["replay", path, "--", "sh", other.to_str().unwrap()], &[]).await;
    assert!(!replay.status.success(), "{}", text(&replay));
    let report = text(&replay);
    assert!(
        report.contains("request (POST /v1/responses): `instructions` is \"Answer in French.\""),
        "{report}"
    );
    assert!(!report.contains("came over HTTP"), "{report}");
}

/// The proxy, recording into a session of the case, in front of `upstream`.
async fn proxy_to(upstream: &RunningServer) -> (Arc<Session>, RunningServer) {
    let session = Arc::new(Session::new(
        Arc::new(case(CASE).scenario),
        StateMode::PreviousResponseId,
    ));
    let base = format!("{}/v1", upstream.base_url());
    let proxy = Proxy::new(Upstream::new(&base, None).unwrap(), session.clone());
    let server = proxy.start().await.expect("the proxy starts");
    (session, server)
}

fn socket_request(
    server: &RunningServer,
    key: &str,
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let url = format!(
        "{}/v1/responses",
        server.base_url().replacen("http", "ws", 1)
    );
    let mut request = url.into_client_request().unwrap();
    let bearer = format!("Bearer {key}").parse().unwrap();
    request.headers_mut().insert("authorization", bearer);
    request
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_refuses_the_upgrade_gives_the_client_its_answer() {
    let (_upstream, server) = socket_upstream().await;
    let (recorded, proxy) = proxy_to(&server).await;
    let wrong = "sk-wrong-0123456789abcdef0123";
    let refused = connect_async(socket_request(&proxy, wrong)).await;
    let Err(WsError::Http(answer)) = refused else {
        panic!("the upgrade is refused: {refused:?}");
    };
    assert_eq!(answer.status(), 401);
    let body: Value = serde_json::from_slice(answer.body().as_deref().unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key", "{body:#}");

    let transcript = recorded.transcript();
    assert_eq!(transcript.model.len(), 1);
    let exchange = &transcript.model[0];
    assert_eq!((exchange.method.as_str(), exchange.status), ("GET", 401));
    assert!(transcript.sockets.is_empty(), "no connection was opened");
    let headers = serde_json::to_string(&exchange.headers).unwrap();
    assert!(!headers.contains("0123456789abcdef"), "{headers}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_binary_frame_and_the_clients_close_are_relayed_and_recorded() {
    let (upstream, server) = socket_upstream().await;
    let (recorded, proxy) = proxy_to(&server).await;
    let (mut socket, _) = connect_async(socket_request(&proxy, upstream.api_key()))
        .await
        .expect("the upgrade goes through");
    socket
        .send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("an answer")
        .expect("a message")
        .expect("no error");
    let event: Value = serde_json::from_str(answer.to_text().unwrap()).unwrap();
    assert_eq!(event["type"], "error", "{event:#}");
    socket.close(None).await.unwrap();
    // The close comes back, then the connection ends.
    while let Ok(Some(Ok(_))) = tokio::time::timeout(Duration::from_secs(5), socket.next()).await {}
    let mut sockets = Vec::new();
    for _ in 0..100 {
        sockets = recorded.transcript().sockets;
        if sockets.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let kinds: Vec<SocketEventKind> = sockets.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SocketEventKind::Opened,
            SocketEventKind::Refused,
            SocketEventKind::Closed
        ],
        "{sockets:#?}"
    );
    assert!(sockets.iter().all(|s| s.connection == 1));
    assert_eq!(sockets[2].detail.as_deref(), Some("closed by the client"));
    assert!(recorded.transcript().model.is_empty());
    // The upstream saw the same: the frame refused, the close from the client.
    let theirs: Vec<SocketEventKind> = upstream
        .transcript()
        .sockets
        .iter()
        .map(|s| s.kind)
        .collect();
    assert_eq!(
        theirs[..2],
        [SocketEventKind::Opened, SocketEventKind::Refused]
    );
}

/// Whether `python` has the `websockets` package (the official SDK's socket client).
fn websockets_importable(python: &Path) -> Result<(), String> {
    let output = std::process::Command::new(python)
        .args(["-c", "import websockets.sync.client"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| err.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_warm_up_a_lane_and_a_throttled_create_are_recorded_as_the_fake_serves_them() {
    let python = python();
    if let Err(err) = websockets_importable(&python) {
        return missing_sdk("websockets package", &err);
    }
    let (upstream, server) = serve_socket(case_from_yaml(THROTTLED)).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("client.yaml");
    let py = python.to_string_lossy().into_owned();
    let client = root().join("tests/integration/socket_client.py");
    let command = [py.as_str(), client.to_str().unwrap()];
    let output = record(
        &format!("{}/v1", server.base_url()),
        &cassette,
        &[],
        &command,
        &[("OPENAI_API_KEY", upstream.api_key())],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    let ends = r#"["response.completed", "response.completed", "lane-a", 429]"#;
    assert!(text(&output).contains(ends), "{}", text(&output));

    // The warm-up serves no turn; the refusal is a fault with its headers.
    let scenario = loopcheck::scenario::load_file(&cassette).expect("the cassette loads");
    assert!(scenario.task.websocket, "inferred from the requests");
    assert_eq!(scenario.script.len(), 2, "{:#?}", scenario.script);
    let first = scenario.script[0].recorded.as_ref().unwrap();
    assert_eq!(first.response["output"][0]["type"], "function_call");
    assert!(
        first
            .events
            .iter()
            .all(|e| e.event.get("stream_id").is_none())
    );
    let fault = &scenario.script[1].faults[0];
    assert_eq!((fault.status, fault.retry_after_ms), (Some(429), Some(20)));
    assert!(
        fault
            .body
            .as_deref()
            .is_some_and(|body| body.contains("rate_limit_exceeded")),
        "{fault:?}"
    );
    drop(server);

    let path = cassette.to_str().unwrap();
    let replay = loopcheck(&[&["replay", path, "--"][..], &command].concat(), &[]).await;
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(text(&replay).contains(ends), "{}", text(&replay));
    assert!(
        text(&replay).contains("the replay sent what"),
        "{}",
        text(&replay)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_that_cannot_reach_the_upstream_leaves_no_cassette() {
    let python = python();
    if let Err(err) = websockets_importable(&python) {
        return missing_sdk("websockets package", &err);
    }
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("unreached.yaml");
    let py = python.to_string_lossy().into_owned();
    let client = root().join("tests/integration/socket_client.py");
    let output = record(
        &format!("http://127.0.0.1:{port}/v1"),
        &cassette,
        &[],
        &[&py, client.to_str().unwrap()],
        &[("OPENAI_API_KEY", "sk-unused-0123456789abcdef0123")],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("no request reached the upstream"),
        "{}",
        text(&output)
    );
    assert!(!cassette.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_is_recorded_over_tls_with_the_upstreams_certificate_authority() {
    let (upstream, server) = socket_upstream().await;
    let front = tls_front(server.addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &front.ca_pem).unwrap();
    let task = task_file(dir.path());
    let cassette = dir.path().join("tls.yaml");
    let bin = bin();
    let output = record(
        &format!("{}/v1", front.url),
        &cassette,
        &[
            "--task",
            task.to_str().unwrap(),
            "--upstream-ca",
            ca.to_str().unwrap(),
        ],
        &[&bin, "reference-controller"],
        &[("OPENAI_API_KEY", upstream.api_key())],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        upstream
            .transcript()
            .model
            .iter()
            .all(|m| m.connection == Some(1))
    );
    let scenario = loopcheck::scenario::load_file(&cassette).expect("the cassette loads");
    assert_eq!(scenario.deliveries, Some(vec![Delivery::WebSocket]));
    assert_eq!(scenario.script.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_gone_mid_answer_leaves_the_answer_read_to_its_end_and_recorded() {
    // Each event 40 ms after the last: the client goes long before the terminal one.
    let slow = THROTTLED.replace(
        "      - call: {name: get_weather, arguments: {city: Lisbon}}\n",
        "      - call: {name: get_weather, arguments: {city: Lisbon}}\n    stream: {delay_ms: 40}\n",
    );
    assert_ne!(slow, THROTTLED);
    let (upstream, server) = serve_socket(case_from_yaml(&slow)).await;
    let (recorded, proxy) = proxy_to(&server).await;
    let (mut socket, _) = connect_async(socket_request(&proxy, upstream.api_key()))
        .await
        .expect("the upgrade goes through");
    let create = json!({"type": "response.create", "model": "gpt-5",
        "input": [{"role": "user", "content": "Is it warm enough in Lisbon for the beach today?"}]});
    socket
        .send(Message::text(create.to_string()))
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("an event")
        .expect("a message")
        .expect("no error");
    assert!(first.to_text().unwrap().contains("response.created"));
    // Gone without a close frame, mid-answer.
    drop(socket);
    let mut transcript = recorded.transcript();
    for _ in 0..100 {
        if transcript.sockets.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        transcript = recorded.transcript();
    }
    assert_eq!(transcript.model.len(), 1, "{:#?}", transcript.model);
    let exchange = &transcript.model[0];
    assert_eq!((exchange.status, exchange.connection), (200, Some(1)));
    let stream = exchange.stream.as_ref().expect("a stream");
    assert!(!stream.cut, "read to its terminal event: {stream:?}");
    assert_eq!(stream.last_type.as_deref(), Some("response.completed"));
    assert_eq!(exchange.body["stream"], true);
    assert!(stream.sent > 3, "{stream:?}");
    let closed = &transcript.sockets[1];
    assert_eq!(closed.kind, SocketEventKind::Closed);
    assert!(closed.detail.is_some(), "{closed:?}");
}
