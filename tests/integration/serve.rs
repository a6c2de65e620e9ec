//! `loopcheck serve`: sessions created over HTTP, driven by the Rust reference in
//! process, judged over HTTP. A hundred at once must each get exactly what the same case
//! gets alone; bad requests get clear errors; idle sessions expire.

use std::time::Duration;

use loopcheck::serve::{Limits, ServeOptions};
use serde_json::{Value, json};

use crate::support;
use crate::support::http::{self, Api};

/// Areas whose verdicts do not hang on wall-clock time, so a loaded machine cannot
/// change them.
const TIMELESS_AREAS: &[&str] = &[
    "authz",
    "call-id",
    "dispatch",
    "program",
    "reasoning",
    "state",
    "terminal",
];

#[path = "../../examples/support/serve_client.rs"]
mod serve_client;

use serve_client::get_json;

/// One session over HTTP, from creation to verdict, with the reference as the loop.
struct Run {
    case: String,
    state: String,
    verdict: Value,
    transcript: Value,
}

async fn run_session(client: &reqwest::Client, url: &str, case: &str, state: &str) -> Run {
    let finished = serve_client::run_reference(client, url, case, state).await;
    let transcript = get_json(
        client,
        &format!("{}/transcript", finished.url("url")),
        Some(finished.token()),
    )
    .await;
    serve_client::delete(client, &finished).await;
    Run {
        case: case.to_owned(),
        state: state.to_owned(),
        verdict: finished.verdict,
        transcript,
    }
}

/// What a transcript holds apart from timing: every request and answer, in order.
fn traffic(transcript: &Value) -> Value {
    let strip = |exchanges: &Value| -> Vec<Value> {
        exchanges
            .as_array()
            .into_iter()
            .flatten()
            .map(|exchange| {
                let mut exchange = exchange.clone();
                if let Some(fields) = exchange.as_object_mut() {
                    for timing in ["seq", "at_ms", "stream"] {
                        fields.remove(timing);
                    }
                }
                exchange
            })
            .collect()
    };
    json!({"model": strip(&transcript["model"]), "tools": strip(&transcript["tools"])})
}

fn timeless_runs() -> Vec<(String, String)> {
    support::catalogue()
        .into_iter()
        .filter(|case| TIMELESS_AREAS.contains(&case.scenario.area()))
        .flat_map(|case| {
            let id = case.scenario.id.clone();
            case.scenario
                .states
                .iter()
                .map(move |state| (id.clone(), state.as_str().to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_sessions_each_get_what_their_case_gets_alone() {
    let server = support::session_server(ServeOptions::default()).await;
    let url = server.url();
    let client = http::client();
    let runs = timeless_runs();
    assert!(runs.len() >= 50, "only {} timeless case runs", runs.len());

    // Each case run alone first: what every concurrent session must match.
    let mut alone = std::collections::HashMap::new();
    for (case, state) in &runs {
        let run = run_session(&client, &url, case, state).await;
        assert_eq!(
            run.verdict["verdict"], "pass",
            "{case} {state} alone: {:#}",
            run.verdict
        );
        alone.insert((case.clone(), state.clone()), traffic(&run.transcript));
    }
    assert_eq!(server.registry().live(), 0, "deleted sessions stay alive");

    let concurrent: Vec<_> = (0..100)
        .map(|n| {
            let (case, state) = runs[n % runs.len()].clone();
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { run_session(&client, &url, &case, &state).await })
        })
        .collect();
    for task in concurrent {
        let run = task.await.expect("a session task");
        assert_eq!(
            run.verdict["verdict"], "pass",
            "{} {} among 100: {:#}",
            run.case, run.state, run.verdict
        );
        assert_eq!(
            traffic(&run.transcript),
            alone[&(run.case.clone(), run.state.clone())],
            "{} {}: a concurrent session's traffic differs from the case alone",
            run.case,
            run.state
        );
    }
    assert_eq!(server.registry().live(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn bad_requests_get_clear_errors_and_a_bad_result_is_judged() {
    let server = support::session_server(ServeOptions::default()).await;
    let url = server.url();
    let client = http::client();
    // `token` "" sends none.
    let post = |path: &str, token: &str, body: Value| {
        let api = Api::new(&url, Some(token).filter(|t| !t.is_empty()));
        let path = path.to_owned();
        async move {
            let reply = api.post(&path, &body).await;
            (reply.status, reply.json())
        }
    };
    let message = |answer: &Value| answer["error"]["message"].as_str().unwrap_or("").to_owned();

    let (status, answer) = post("/loopcheck/sessions", "", json!({"case": "no/such-case"})).await;
    assert_eq!(status, 404);
    assert!(
        message(&answer).contains("no case `no/such-case`"),
        "{answer}"
    );
    let (status, answer) = post("/loopcheck/sessions", "", json!({"state": "stateless"})).await;
    assert_eq!(status, 400);
    assert!(message(&answer).contains("`case` is missing"), "{answer}");
    let (status, answer) = post(
        "/loopcheck/sessions",
        "",
        json!({"case": "dispatch/01-unknown-tool", "state": "sideways"}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(message(&answer).contains("runs in state"), "{answer}");

    let (status, created) = post(
        "/loopcheck/sessions",
        "",
        json!({"case": "dispatch/01-unknown-tool"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let result_url = created["result_url"].as_str().expect("result_url");
    let token = created["token"].as_str().expect("token");
    let (status, answer) = post(
        result_url.trim_start_matches(&url),
        token,
        json!({"status": "done"}),
    )
    .await;
    assert_eq!(status, 422);
    assert!(message(&answer).contains("done"), "{answer}");
    let verdict = get_json(
        &client,
        created["verdict_url"].as_str().expect("verdict_url"),
        Some(token),
    )
    .await;
    assert_eq!(verdict["verdict"], "crashed", "{verdict}");
    assert!(
        verdict["detail"].as_str().unwrap_or("").contains("done"),
        "{verdict}"
    );
    let (status, _) = post(
        result_url.trim_start_matches(&url),
        token,
        json!({"status": "failed"}),
    )
    .await;
    assert_eq!(status, 409, "a second result is refused");

    let gone = client
        .delete(created["url"].as_str().expect("url"))
        .bearer_auth(token)
        .send()
        .await
        .expect("delete");
    assert_eq!(gone.status(), 200);
    let after = client
        .post(format!(
            "{}/responses",
            created["base_url"].as_str().expect("base")
        ))
        .json(&json!({"model": "gpt-5", "input": "hi"}))
        .send()
        .await
        .expect("request");
    assert_eq!(after.status(), 410, "a deleted session's API is gone");
    server.shutdown().await;
}

/// A session created over HTTP: its creation answer.
async fn create(url: &str, case: &str) -> Value {
    let body = json!({"case": case, "seed": 7});
    let reply = Api::new(url, None).post("/loopcheck/sessions", &body).await;
    assert_eq!(reply.status, 201);
    reply.json()
}

fn field<'a>(created: &'a Value, key: &str) -> &'a str {
    created[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {created}"))
}

#[tokio::test]
async fn a_sessions_token_and_key_open_no_other_session_nor_server() {
    let server = support::session_server(ServeOptions::default()).await;
    let other = support::session_server(ServeOptions::default()).await;
    let client = http::client();
    let case = "dispatch/01-unknown-tool";
    let a = create(&server.url(), case).await;
    let b = create(&server.url(), case).await;
    // The same case, state and seed on another server.
    let c = create(&other.url(), case).await;

    let control = [
        (
            reqwest::Method::GET,
            format!("{}/transcript", field(&b, "url")),
        ),
        (reqwest::Method::GET, field(&b, "verdict_url").to_owned()),
        (reqwest::Method::POST, field(&b, "result_url").to_owned()),
        (reqwest::Method::DELETE, field(&b, "url").to_owned()),
    ];
    let status = |method: &reqwest::Method, route: &str, token: Option<&str>| {
        let request = client
            .request(method.clone(), route)
            .json(&json!({"status": "failed", "output": "not mine"}));
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        async move { request.send().await.expect("request").status() }
    };
    let a_token = a["token"].as_str().unwrap_or_default();
    for (method, route) in &control {
        let with_a = status(method, route, Some(a_token)).await;
        assert_eq!(with_a, 404, "{method} {route} with A's token");
        let with_none = status(method, route, None).await;
        assert_eq!(with_none, 401, "{method} {route} without a token");
    }
    assert_eq!(server.registry().live(), 2, "B was deleted by another");
    let real = client
        .post(field(&b, "result_url"))
        .bearer_auth(b["token"].as_str().unwrap_or_default())
        .json(&json!({"status": "failed", "output": "B's own"}))
        .send()
        .await
        .expect("B's result");
    assert_eq!(real.status(), 200, "B's own result was refused");

    let model = |session: &Value, key: &str| {
        client
            .post(format!("{}/responses", field(session, "base_url")))
            .bearer_auth(key.to_owned())
            .json(&json!({"model": "gpt-5", "input": "hi"}))
            .send()
    };
    let a_key = field(&a, "api_key");
    assert_ne!(model(&a, a_key).await.expect("A").status(), 401);
    assert_eq!(model(&b, a_key).await.expect("B").status(), 401);
    assert_eq!(model(&c, a_key).await.expect("C").status(), 401);
    server.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn idle_sessions_expire_and_a_runaway_session_is_capped() {
    let options = ServeOptions {
        limits: Limits {
            idle: Duration::from_millis(300),
            requests: 5,
            ..Limits::default()
        },
        ..ServeOptions::default()
    };
    let server = support::session_server(options).await;
    let url = server.url();
    let client = http::client();
    let create = || {
        client
            .post(format!("{url}/loopcheck/sessions"))
            .json(&json!({"case": "dispatch/01-unknown-tool"}))
            .send()
    };
    let runaway: Value = create().await.expect("create").json().await.expect("JSON");
    for n in 1..=6 {
        let answer = client
            .post(format!(
                "{}/call/get_order",
                runaway["tools_url"].as_str().expect("tools")
            ))
            .json(&json!({"call_id": format!("call_{n}"), "arguments": {"order_id": "A1"}}))
            .send()
            .await
            .expect("tool call");
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.expect("JSON");
        let capped = body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("more than 5 requests");
        assert_eq!(capped, n > 5, "request {n}: {status} {body}");
    }
    let verdict = get_json(
        &client,
        runaway["verdict_url"].as_str().expect("verdict_url"),
        runaway["token"].as_str(),
    )
    .await;
    assert_eq!(verdict["verdict"], "error", "{verdict}");

    let idle: Value = create().await.expect("create").json().await.expect("JSON");
    assert_eq!(server.registry().live(), 2);
    // The reaper runs every half idle period: both sessions are gone within a second.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        server.registry().live(),
        0,
        "idle sessions were not dropped"
    );
    let answer = client
        .get(idle["verdict_url"].as_str().expect("verdict_url"))
        .bearer_auth(idle["token"].as_str().expect("token"))
        .send()
        .await
        .expect("verdict");
    assert_eq!(answer.status(), 410);
    server.shutdown().await;
}

#[tokio::test]
async fn the_serve_command_prints_its_url_and_serves_filtered_cases() {
    let (mut process, url) =
        support::ServeProcess::start(&["serve", "--filter", "dispatch/*", "--stop-on-eof"], None);
    let stdin = process.stdin();
    let cases = get_json(&http::client(), &format!("{url}/loopcheck/cases"), None).await;
    let ids: Vec<&str> = cases["cases"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|case| case["id"].as_str())
        .collect();
    assert!(!ids.is_empty());
    assert!(ids.iter().all(|id| id.starts_with("dispatch/")), "{ids:?}");
    let state = cases["cases"][0]["runs"][0]["state"]
        .as_str()
        .expect("a state");
    let run = run_session(&http::client(), &url, ids[0], state).await;
    assert_eq!(run.verdict["verdict"], "pass", "{:#}", run.verdict);

    // With --stop-on-eof, the server ends once whoever started it closes its stdin.
    drop(stdin);
    let mut waited = Duration::ZERO;
    while process.child.try_wait().expect("try_wait").is_none() {
        assert!(
            waited < Duration::from_secs(10),
            "the server outlived its stdin"
        );
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    }
}

#[tokio::test]
async fn a_case_is_served_streamed_when_a_session_asks_for_its_stream_delivery() {
    let server = support::session_server(ServeOptions::default()).await;
    let api = Api::new(&server.url(), None);
    let listed = api.get("/loopcheck/cases").await.json();
    let runs = |id: &str| -> Vec<(String, String)> {
        let case = listed["cases"]
            .as_array()
            .and_then(|cases| cases.iter().find(|c| c["id"] == id))
            .unwrap_or_else(|| panic!("no {id} in {listed}"));
        case["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| {
                (
                    field(r, "state").to_owned(),
                    field(r, "delivery").to_owned(),
                )
            })
            .collect()
    };
    // Three state modes (`replay` for a loop that declares it), each in two deliveries.
    let both = runs("correlation/01-single-call");
    assert_eq!(both.len(), 6, "{both:?}");
    assert!(both.contains(&("stateless".to_owned(), "stream".to_owned())));
    assert_eq!(
        runs("stream/01-single-call").len(),
        3,
        "a streaming case runs streamed only"
    );

    let create = |body: Value| {
        let api = api.clone();
        async move {
            let reply = api.post("/loopcheck/sessions", &body).await;
            (reply.status, reply.json())
        }
    };
    let (status, streamed) =
        create(json!({"case": "correlation/01-single-call", "delivery": "stream"})).await;
    assert_eq!(status, 201, "{streamed}");
    assert_eq!(streamed["delivery"], "stream");
    assert_eq!(streamed["task"]["stream"], true);
    assert!(streamed["requires"].to_string().contains("stream"));
    let (_, plain) = create(json!({"case": "correlation/01-single-call"})).await;
    assert_eq!(
        (&plain["delivery"], &plain["task"]["stream"]),
        (&json!("json"), &json!(false))
    );
    let (status, refused) =
        create(json!({"case": "stream/01-single-call", "delivery": "json"})).await;
    assert_eq!(status, 400);
    assert!(
        refused.to_string().contains("runs in delivery stream"),
        "{refused}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_sessions_socket_opens_under_its_own_path_and_is_judged_as_a_per_case_runs() {
    let server = support::session_server(ServeOptions::default()).await;
    let api = Api::new(&server.url(), None);
    let listed = api.get("/loopcheck/cases").await.json();
    let reconnect = listed["cases"]
        .as_array()
        .and_then(|cases| {
            cases
                .iter()
                .find(|c| c["id"] == "websocket/04-reconnect-chained")
        })
        .unwrap_or_else(|| panic!("no socket case in {listed}"));
    assert_eq!(reconnect["runs"][0]["delivery"], "websocket");
    assert!(
        reconnect["runs"][0]["requires"]
            .to_string()
            .contains("websocket")
    );

    // The reference, given the session's base URL, opens ws://.../s/{id}/v1/responses,
    // is closed after the first turn, reconnects, and passes.
    let client = reqwest::Client::new();
    let run = run_session(
        &client,
        &server.url(),
        "websocket/04-reconnect-chained",
        "previous_response_id",
    )
    .await;
    assert_eq!(run.verdict["verdict"], "pass", "{}", run.verdict);
    let connections: Vec<&Value> = run.transcript["model"]
        .as_array()
        .expect("model exchanges")
        .iter()
        .map(|m| &m["connection"])
        .collect();
    assert_eq!(connections, [&json!(1), &json!(2)], "{}", run.transcript);

    // An upgrade of a session that does not exist is refused as its HTTP requests are.
    let unknown = reqwest::Client::new()
        .get(format!("{}/s/nope/v1/responses", server.url()))
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .expect("an answer");
    assert_eq!(unknown.status(), 404);
    server.shutdown().await;
}

#[tokio::test]
async fn a_session_is_held_to_its_snapshot_under_the_name_it_chose() {
    let folder = tempfile::tempdir().unwrap();
    let snapshots = loopcheck::expectations::Snapshots::open(
        folder.path(),
        false,
        loopcheck::expectations::Redactions::default(),
    )
    .expect("the snapshot folder opens");
    let server = support::session_server(ServeOptions {
        snapshots: Some(snapshots),
        ..ServeOptions::default()
    })
    .await;
    let client = reqwest::Client::new();
    let create = |body: Value| {
        let client = client.clone();
        let url = format!("{}/loopcheck/sessions", server.url());
        async move {
            let answer = client.post(url).json(&body).send().await.unwrap();
            (
                answer.status().as_u16(),
                answer.json::<Value>().await.unwrap(),
            )
        }
    };
    let case = "dispatch/01-unknown-tool";

    // A name that would leave the folder is refused.
    for bad in ["../out", "/abs", "a b"] {
        let (status, answer) = create(json!({"case": case, "snapshot": bad})).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("`snapshot` must be a relative path")),
            "{answer}"
        );
    }
    let (status, answer) = create(json!({
        "case": case,
        "state": "stateless",
        "snapshot": "tests/test_a.py-test_b"
    }))
    .await;
    assert_eq!(status, 201, "{answer}");
    let named = folder.path().join("tests/test_a.py-test_b.stateless.snap");
    assert_eq!(answer["snapshot"], json!(named.display().to_string()));

    // A session that names none is held to the case run's own snapshot: new outside CI
    // (written as `.snap.new`, the verdict unchanged), missing under CI (the run drifts).
    let finished = serve_client::run_reference(&client, &server.url(), case, "stateless").await;
    let own = folder.path().join(format!("{case}.stateless.snap"));
    let note = &finished.verdict["snapshot"];
    assert_eq!(note["path"], json!(own.display().to_string()), "{note}");
    let ci = !matches!(
        std::env::var("CI").as_deref(),
        Err(_) | Ok("" | "false" | "0")
    );
    if ci {
        assert_eq!(note["status"], "missing", "{note}");
        assert_eq!(finished.verdict["verdict"], "drift");
    } else {
        assert_eq!(note["status"], "new", "{note}");
        assert_eq!(finished.verdict["verdict"], "pass");
        assert!(own.with_extension("snap.new").is_file());
        let message = finished.verdict["snapshot_message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains("loopcheck snapshots review --snapshots"),
            "{message}"
        );
    }
    server.shutdown().await;
}
