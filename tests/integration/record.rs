//! Record and replay, offline: wiremock stands in for the real API (answering with
//! loopcheck's engine, or with canned bodies), over plain HTTP and over TLS; a recording
//! replays to the same controller; a changed controller replays as drift naming the
//! request and the field; no secret reaches disk; `--mode none` fails on an unseen
//! request; an application on the official Python SDK replays; an interrupted recording
//! leaves the previous cassette as it was.

use std::path::{Path, PathBuf};
use std::process::Output;

use loopcheck::scenario::StateMode;
use serde_json::{Value, json};
use tokio::process::Command;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::controllers::interpreted;
use crate::support::{loopcheck_bin, missing_sdk, python, root, sdk_importable, shell_quote};
use crate::upstream::{engine_upstream, tls_front};

pub(crate) fn bin() -> String {
    loopcheck_bin().to_string_lossy().into_owned()
}

/// `loopcheck ARGS` with `env`, from the repository root.
pub(crate) async fn loopcheck(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(loopcheck_bin());
    command.args(args).current_dir(root()).env_remove("CI");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().await.expect("loopcheck runs")
}

/// `loopcheck record --upstream UPSTREAM --out OUT OPTIONS -- COMMAND` with `env`.
pub(crate) async fn record(
    upstream: &str,
    out: &Path,
    options: &[&str],
    command: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let out = out.to_string_lossy();
    let args = [
        &["record", "--upstream", upstream, "--out", &out][..],
        options,
        &["--"],
        command,
    ]
    .concat();
    loopcheck(&args, env).await
}

pub(crate) fn text(output: &Output) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Records the Rust reference on catalogue case `id` through `upstream` into `out`.
async fn record_reference(upstream: &str, key: &str, id: &str, out: &Path, extra: &[&str]) {
    let task = root().join(format!("scenarios/{id}.yaml"));
    let options = [&["--task", task.to_str().unwrap()][..], extra].concat();
    let bin = bin();
    let command = [bin.as_str(), "reference-controller"];
    let output = record(
        upstream,
        out,
        &options,
        &command,
        &[("OPENAI_API_KEY", key)],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
}

/// `loopcheck run CASSETTE OPTIONS` (the Rust reference unless OPTIONS name a controller)
/// and its JSON report's cases.
pub(crate) async fn run_cassette(cassette: &Path, options: &[&str]) -> (Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let cassette = cassette.to_string_lossy();
    let report_path = report.to_string_lossy();
    let args = [
        &["run", &cassette][..],
        options,
        &["--report-json", &report_path],
    ]
    .concat();
    let output = loopcheck(&args, &[]).await;
    let value = crate::support::cli::read_report(&report);
    (
        output,
        value["cases"].as_array().cloned().unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recording_of_the_reference_replays_to_it() {
    let (server, fake) = engine_upstream("correlation/03-mixed-items", StateMode::Stateless).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("mixed.yaml");
    let upstream = format!("{}/v1", server.uri());
    record_reference(
        &upstream,
        fake.api_key(),
        "correlation/03-mixed-items",
        &cassette,
        &["--state", "stateless"],
    )
    .await;

    let scenario = loopcheck::scenario::load_file(&cassette).expect("the cassette is a scenario");
    assert_eq!(scenario.format, 2);
    assert_eq!(scenario.states, [StateMode::Stateless]);
    assert!(scenario.script.iter().all(|turn| turn.recorded.is_some()));
    let lint = loopcheck(&["lint", cassette.to_str().unwrap()], &[]).await;
    assert!(lint.status.success(), "{}", text(&lint));

    let (output, cases) = run_cassette(&cassette, &[]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0]["verdict"], "pass", "{:#}", cases[0]);
    assert_eq!(cases[0]["recording"]["status"], "matched");

    let bin = bin();
    let replay = loopcheck(
        &[
            "replay",
            cassette.to_str().unwrap(),
            "--",
            &bin,
            "reference-controller",
        ],
        &[],
    )
    .await;
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(String::from_utf8_lossy(&replay.stderr).contains("the replay sent what"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_recorded_over_tls_keeps_its_events_and_replays() {
    let (server, fake) =
        engine_upstream("stream/01-single-call", StateMode::PreviousResponseId).await;
    let front = tls_front(*server.address()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &front.ca_pem).unwrap();
    let cassette = dir.path().join("stream.json");
    let upstream = format!("{}/v1", front.url);
    record_reference(
        &upstream,
        fake.api_key(),
        "stream/01-single-call",
        &cassette,
        &["--upstream-ca", ca.to_str().unwrap()],
    )
    .await;

    let document: Value = serde_json::from_slice(&std::fs::read(&cassette).unwrap()).unwrap();
    let events = document["script"][0]["recorded"]["events"]
        .as_array()
        .expect("the stream's events");
    assert!(events.len() > 5);
    assert_eq!(events[0]["event"]["type"], "response.created");
    assert!(events.iter().all(|e| e["after_ms"].is_u64()));

    let (output, cases) = run_cassette(&cassette, &[]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(cases[0]["recording"]["status"], "matched", "{:#}", cases[0]);

    // Without the certificate the upstream is not trusted: nothing is recorded.
    let refused = dir.path().join("refused.json");
    let bin = bin();
    let output = record(
        &upstream,
        &refused,
        &[],
        &[&bin, "reference-controller"],
        &[("OPENAI_API_KEY", fake.api_key())],
    )
    .await;
    assert!(!output.status.success(), "{}", text(&output));
    assert!(!refused.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_controller_that_drops_instructions_replays_as_drift_naming_the_request_and_field() {
    let python = python();
    if let Err(err) = sdk_importable(&python) {
        return missing_sdk("Python SDK", &err);
    }
    let id = "state/01-instructions-every-request";
    let (server, fake) = engine_upstream(id, StateMode::PreviousResponseId).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("instructions.yaml");
    let task = root().join(format!("scenarios/{id}.yaml"));
    let py = python.to_string_lossy().into_owned();
    let reference = root().join("harness/python/loop.py");
    let output = record(
        &format!("{}/v1", server.uri()),
        &cassette,
        &["--task", task.to_str().unwrap()],
        &[&py, reference.to_str().unwrap()],
        &[("OPENAI_API_KEY", fake.api_key())],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));

    let mutant = root().join("harness/mutants/instructions-once.py");
    let controller = interpreted(&python, &mutant);
    let (output, cases) = run_cassette(&cassette, &["--controller", &controller]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let case = &cases[0];
    let changes: Vec<&str> = case["recording"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        changes
            .iter()
            .any(|c| c.starts_with("request 2 (POST /v1/responses): `instructions` is gone")),
        "{changes:#?}"
    );
    assert!(
        text(&output).contains("differs from its recording"),
        "{}",
        text(&output)
    );
    // Recording drift is grouped as snapshot drift is: the change once, after the runs.
    assert!(
        text(&output).contains("in 1 case run (against their recordings)"),
        "{}",
        text(&output)
    );
}

/// A canned upstream that puts `secret` into every answer: body text, a call's
/// arguments, headers, and the events of a stream.
async fn leaky_upstream(secret: &str) -> MockServer {
    let server = MockServer::start().await;
    let message = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": format!("your key is {secret}"), "annotations": [], "logprobs": []}]});
    let response = json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "gpt-5", "output": [message], "error": null});
    let events = [
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_2", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 1, "delta": format!("Bearer {secret}")}),
        json!({"type": "response.completed", "sequence_number": 2, "response": response}),
    ];
    let sse: String = events
        .iter()
        .map(loopcheck::server::stream::frame)
        .collect();
    Mock::given(method("POST"))
        .and(body_string_contains("\"stream\": true"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-echo", format!("Bearer {secret}").as_str())
                .set_body_raw(sse, "text/event-stream"),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("set-cookie", format!("s={secret}").as_str())
                .set_body_raw(response.to_string(), "application/json"),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// Every file under `dir`, read whole.
fn every_byte_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(every_byte_under(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_reaches_disk_wherever_it_hides() {
    let secret = "sk-seeded-9f8e7d6c5b4a39281706";
    let server = leaky_upstream(secret).await;
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("task.yaml");
    std::fs::write(
        &task,
        "task:\n  input: hi\n  tools:\n    - {type: function, name: lookup, description: Look up., strict: true, parameters: {type: object, properties: {token: {type: string}}, required: [token], additionalProperties: false}}\ntools:\n  lookup:\n    default: {found: true}\n",
    )
    .unwrap();
    let out = dir.path().join("cassettes/leak.yaml");
    let app = root().join("tests/fixtures/stdlib_app.py");
    let output = record(
        &format!("{}/v1", server.uri()),
        &out,
        &["--task", task.to_str().unwrap()],
        &["python3", app.to_str().unwrap(), "2"],
        &[("OPENAI_API_KEY", secret), ("SECRET", secret)],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    let recorded = std::fs::read_to_string(&out).unwrap();
    assert!(
        recorded.contains("[redacted]"),
        "the cassette shows where secrets were"
    );
    assert!(recorded.contains("lookup"), "the tool exchange is recorded");
    for (path, bytes) in every_byte_under(dir.path()) {
        let content = String::from_utf8_lossy(&bytes);
        assert!(
            !content.contains("9f8e7d6c5b4a39281706"),
            "{} holds the secret:\n{content}",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_only_fails_loudly_on_a_request_the_cassette_does_not_hold() {
    let server = leaky_upstream("not-a-secret").await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("one.yaml");
    let app = root().join("tests/fixtures/stdlib_app.py");
    let upstream = format!("{}/v1", server.uri());
    let record = |n: &'static str, mode: &'static str| {
        let (cassette, app, upstream) = (cassette.clone(), app.clone(), upstream.clone());
        async move {
            record(
                &upstream,
                &cassette,
                &["--mode", mode],
                &["python3", app.to_str().unwrap(), n],
                &[("OPENAI_API_KEY", "sk-test-key-0000")],
            )
            .await
        }
    };
    let output = record("1", "once").await;
    assert!(output.status.success(), "{}", text(&output));
    let again = record("1", "once").await;
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains("refusing to overwrite"),
        "{}",
        text(&again)
    );

    server.reset().await; // replay only: the upstream must not be needed
    let output = record("2", "none").await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("request 2 (POST /v1/responses): is new"),
        "{stderr}"
    );
    assert!(stderr.contains("not in the recording"), "{stderr}");

    let output = record("1", "none").await;
    assert!(output.status.success(), "{}", text(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_application_on_the_official_python_sdk_replays_offline() {
    let python = python();
    if let Err(err) = sdk_importable(&python) {
        return missing_sdk("Python SDK", &err);
    }
    let (server, fake) =
        engine_upstream("correlation/01-single-call", StateMode::PreviousResponseId).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("app.yaml");
    let py = python.to_string_lossy().into_owned();
    let app = root().join("tests/fixtures/sdk_app.py");
    let output = record(
        &format!("{}/v1", server.uri()),
        &cassette,
        &[],
        &[&py, app.to_str().unwrap()],
        &[("OPENAI_API_KEY", fake.api_key())],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    drop(server);
    let replay = loopcheck(
        &[
            "replay",
            cassette.to_str().unwrap(),
            "--",
            &py,
            app.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(
        String::from_utf8_lossy(&replay.stdout).contains("umbrella"),
        "{}",
        text(&replay)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_recording_leaves_the_previous_cassette_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("kept.yaml");
    std::fs::write(&cassette, "the previous cassette").unwrap();
    let child = Command::new(loopcheck_bin())
        .args([
            "record",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--mode",
            "all",
            "--out",
        ])
        .arg(&cassette)
        .args(["--", "sleep", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    // SAFETY: kill only sends a signal to the child we started.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let output = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("loopcheck stops on Ctrl-C")
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("was left as it was"),
        "{}",
        text(&output)
    );
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap(),
        "the previous cassette"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mode_new_replays_what_the_cassette_holds_and_records_the_rest() {
    let server = leaky_upstream("not-a-secret").await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("growing.yaml");
    let app = root().join("tests/fixtures/stdlib_app.py");
    let upstream = format!("{}/v1", server.uri());
    let record = |n: &str, mode: &str| {
        let args: Vec<String> = [
            "record",
            "--upstream",
            &upstream,
            "--out",
            cassette.to_str().unwrap(),
            "--mode",
            mode,
            "--",
            "python3",
            app.to_str().unwrap(),
            n,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            loopcheck(&args, &[("OPENAI_API_KEY", "sk-test-key-0000")]).await
        }
    };
    let output = record("1", "new").await; // no cassette yet: records it
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    let output = record("2", "new").await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("recorded 1 model request(s) after 1 replayed from the cassette"),
        "{}",
        text(&output)
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        2,
        "the first request was served from the cassette"
    );
    let scenario = loopcheck::scenario::load_file(&cassette).unwrap();
    assert_eq!(scenario.script.len(), 2);

    server.reset().await;
    let output = record("2", "none").await;
    assert!(output.status.success(), "{}", text(&output));
}

/// A key streamed over three deltas: no delta holds a pattern's worth of it.
const DELTAS: [&str; 3] = [
    "Your key is sk-pr",
    "oj-Dq8Lm2Vx5Tn",
    "7Rb4Kc9Wz. Keep it safe.",
];
const DELTA_KEY: &str = "sk-proj-Dq8Lm2Vx5Tn7Rb4Kc9Wz";
/// Secrets no pattern finds: only where they were sent says what they are.
const QUERY_KEY: &str = "azq7Hf3kLm9Pq2Rs5Tv8Wx1Yz4";
const TENANT: &str = "tenantS3cretValue6611";
const ORG: &str = "org-Or9anizati0nIdent42";
const PROJECT: &str = "proj_Pr0jectIdentifier42";
const PASSWORD: &str = "hunter2Passw0rdXyz77";
/// What a crashing controller prints.
const CRASH_KEY: &str = "sk-crashStdout1234567890";
const CRASH_GITHUB: &str = "ghp_CrashStderrToken1234567890abcd";
const CRASH_JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjcmFzaCJ9.c2lnbmF0dXJlQ3Jhc2g";

/// An upstream that answers the first request 429, its body echoing the query's key and
/// the custom header, then streams [`DELTAS`].
async fn echoing_upstream() -> MockServer {
    let server = MockServer::start().await;
    let limited = json!({"error": {"type": "rate_limit_exceeded",
        "message": format!("Rate limit reached for key {QUERY_KEY} (tenant {TENANT})")}});
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_raw(limited.to_string(), "application/json"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    let text = DELTAS.concat();
    let message = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let response = json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "gpt-5", "output": [message], "error": null});
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    ];
    events.extend(DELTAS.iter().map(|delta| {
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
               "content_index": 0, "delta": delta})
    }));
    events.push(json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text}));
    events.push(json!({"type": "response.completed", "response": response}));
    let sse: String = events
        .iter()
        .map(loopcheck::server::stream::frame)
        .collect();
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// The environment `secret_app.py` leaks.
const LEAKED: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-test-key-0000"),
    ("QUERY_KEY", QUERY_KEY),
    ("TENANT", TENANT),
    ("ORG", ORG),
    ("PROJECT", PROJECT),
];

fn secret_app() -> String {
    format!(
        "python3 {}",
        shell_quote(
            &root()
                .join("tests/fixtures/secret_app.py")
                .to_string_lossy()
        )
    )
}

/// `loopcheck run CASSETTE` with `secret_app.py`, every report written under `out`.
async fn run_secret_app(
    cassette: &Path,
    config: &Path,
    out: &Path,
    env: &[(&str, &str)],
) -> Output {
    let path = |name: &str| out.join(name).to_string_lossy().into_owned();
    let args = [
        "run".to_owned(),
        cassette.to_string_lossy().into_owned(),
        "--config".to_owned(),
        config.to_string_lossy().into_owned(),
        "--controller".to_owned(),
        secret_app(),
        "--supports".to_owned(),
        "previous_response_id,stream".to_owned(),
        "--snapshots".to_owned(),
        path("snapshots"),
        "--report-json".to_owned(),
        path("report.json"),
        "--junit".to_owned(),
        path("junit.xml"),
        "--html".to_owned(),
        path("report.html"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env: Vec<(&str, &str)> = LEAKED.iter().chain(env).copied().collect();
    loopcheck(&args, &env).await
}

fn report_case(out: &Path) -> Value {
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    report["cases"][0].clone()
}

/// `loopcheck record` of `secret_app.py` through `upstream` into `out`, with the
/// `[redact]` rules of `config`; `extra` goes before `--`.
async fn record_secret_app(
    config: &Path,
    upstream: &str,
    out: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let app = root().join("tests/fixtures/secret_app.py");
    let mut args = vec![
        "record",
        "--config",
        config.to_str().unwrap(),
        "--upstream",
        upstream,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend(["--", "python3", app.to_str().unwrap()]);
    let env: Vec<(&str, &str)> = LEAKED.iter().chain(env).copied().collect();
    loopcheck(&args, &env).await
}

/// A folder with a `loopcheck.toml` holding `text`, and the file.
fn settings(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loopcheck.toml");
    std::fs::write(&config, text).unwrap();
    (dir, config)
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_survives_record_or_run_in_any_file_or_output() {
    let server = echoing_upstream().await;
    let (dir, config) = settings("[redact]\nheaders = [\"X-Tenant-Secret\"]\n");
    let cassette = dir.path().join("cassettes/secret.yaml");
    let record = |upstream: String, out: PathBuf| {
        let config = config.clone();
        async move { record_secret_app(&config, &upstream, &out, &[], &[]).await }
    };
    let mut outputs = vec![record(format!("{}/v1", server.uri()), cassette.clone()).await];
    assert!(outputs[0].status.success(), "{}", text(&outputs[0]));

    // The deltas are redacted together, and the stream keeps its events.
    let scenario = loopcheck::scenario::load_file(&cassette).unwrap();
    let events = &scenario.script[0].recorded.as_ref().unwrap().events;
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e.event["type"] == "response.output_text.delta")
        .filter_map(|e| e.event["delta"].as_str())
        .collect();
    assert_eq!(deltas.len(), DELTAS.len());
    assert_eq!(deltas.concat(), "Your key is [redacted]. Keep it safe.");
    assert!(!scenario.script[0].faults.is_empty(), "the 429 is kept");

    // An unreachable upstream's URL, with its password and key, is not printed.
    let unreachable = format!("http://me:{PASSWORD}@127.0.0.1:9/v1?api-key={QUERY_KEY}");
    let failed = record(unreachable, dir.path().join("cassettes/none.yaml")).await;
    assert!(!failed.status.success(), "{}", text(&failed));
    assert!(
        text(&failed).contains("failed to reach the upstream"),
        "{}",
        text(&failed)
    );
    outputs.push(failed);

    // A correct replay passes; a drifting, crashing one reports without the secrets.
    let out = dir.path().join("out-pass");
    outputs.push(run_secret_app(&cassette, &config, &out, &[("RESULT", "1")]).await);
    let case = report_case(&out);
    assert_eq!(
        case["verdict"],
        "pass",
        "{}\n{case:#}",
        text(outputs.last().unwrap())
    );
    assert_eq!(case["recording"]["status"], "matched", "{case:#}");
    let crash = [
        ("INPUT", "hello again"),
        ("CRASH", "1"),
        ("CRASH_KEY", CRASH_KEY),
        ("CRASH_GITHUB", CRASH_GITHUB),
        ("CRASH_JWT", CRASH_JWT),
    ];
    let out = dir.path().join("out-crash");
    outputs.push(run_secret_app(&cassette, &config, &out, &crash).await);
    let case = report_case(&out);
    assert_eq!(case["verdict"], "crashed", "{case:#}");
    assert_eq!(case["recording"]["status"], "drifted", "{case:#}");

    let secrets = [
        DELTA_KEY,
        QUERY_KEY,
        TENANT,
        ORG,
        PROJECT,
        PASSWORD,
        CRASH_KEY,
        CRASH_GITHUB,
        CRASH_JWT,
    ];
    let mut written: Vec<(String, String)> = every_byte_under(dir.path())
        .into_iter()
        .map(|(path, bytes)| {
            (
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            )
        })
        .collect();
    assert!(
        written
            .iter()
            .any(|(path, _)| path.ends_with(".snap.new") || path.ends_with(".snap"))
    );
    written.extend(
        outputs
            .iter()
            .map(|o| ("loopcheck's output".to_owned(), text(o))),
    );
    for (place, content) in &written {
        for secret in secrets {
            assert!(
                !content.contains(secret),
                "{place} holds {secret}:\n{content}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cassette_redacted_by_a_regex_passes_its_replay_redacted_to_redacted() {
    let server = echoing_upstream().await;
    let (dir, config) = settings("");
    let cassette = dir.path().join("account.yaml");
    let instructions = [("INSTRUCTIONS", "Serve account acct-4242 only.")];
    let upstream = format!("{}/v1", server.uri());
    let redact = ["--redact-regex", "acct-[0-9]+"];
    let output = record_secret_app(&config, &upstream, &cassette, &redact, &instructions).await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        !std::fs::read_to_string(&cassette)
            .unwrap()
            .contains("acct-4242")
    );

    let out = dir.path().join("out");
    let replay = [instructions[0], ("RESULT", "1")];
    let output = run_secret_app(&cassette, &config, &out, &replay).await;
    let case = report_case(&out);
    let resent = case["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "state/config-resent")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(resent["verdict"], "pass", "{resent:#}");
    assert_eq!(case["verdict"], "pass", "{case:#}");
    assert_eq!(case["recording"]["status"], "matched", "{case:#}");
    assert!(output.status.success(), "{}", text(&output));
    for (path, bytes) in every_byte_under(&out) {
        let content = String::from_utf8_lossy(&bytes);
        assert!(
            !content.contains("acct-4242"),
            "{} holds it:\n{content}",
            path.display()
        );
    }
    assert!(!text(&output).contains("acct-4242"), "{}", text(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn record_without_a_task_keeps_the_commands_own_task_and_tools_url() {
    let server = leaky_upstream("not-a-secret").await;
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.txt");
    let app = root().join("tests/fixtures/stdlib_app.py");
    let script = format!(
        "printf '%s\\n%s\\n' \"$LOOPCHECK_TASK\" \"$LOOPCHECK_TOOLS_URL\" > {} && python3 {} 1",
        shell_quote(&seen.to_string_lossy()),
        shell_quote(&app.to_string_lossy())
    );
    let output = record(
        &format!("{}/v1", server.uri()),
        &dir.path().join("own.yaml"),
        &[],
        &["sh", "-c", &script],
        &[
            ("OPENAI_API_KEY", "sk-test-key-0000"),
            ("LOOPCHECK_TASK", "/my/own/task.json"),
            ("LOOPCHECK_TOOLS_URL", "http://tools.example/own"),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "/my/own/task.json\nhttp://tools.example/own\n"
    );
}

/// What the upstream served in one recorded run: per accepted create, in order, the
/// Response and (for a stream) its events.
fn served_turns(fake: &loopcheck::wiremock::LoopcheckFake) -> Vec<(Value, Vec<Value>)> {
    fake.session()
        .transcript()
        .model
        .iter()
        .filter(|exchange| exchange.turn.is_some())
        .map(|exchange| match &*exchange.response {
            Value::Array(events) => {
                let terminal = events
                    .iter()
                    .rev()
                    .find(|event| event["response"].is_object())
                    .map(|event| event["response"].clone())
                    .unwrap_or_default();
                (terminal, events.clone())
            }
            body => (body.clone(), Vec::new()),
        })
        .collect()
}

/// Custom tool calls, output_text annotations and reasoning text, recorded through the
/// proxy from the fake as upstream (as JSON bodies and as streams): the cassette holds
/// every output item and every event value for value as the upstream sent them, and
/// replays to the reference without drift.
#[tokio::test(flavor = "multi_thread")]
async fn custom_calls_citations_and_reasoning_text_are_recorded_verbatim_and_replay() {
    use loopcheck::scenario::Delivery;
    use loopcheck::wiremock::LoopcheckFake;

    let dir = tempfile::tempdir().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for id in [
        "custom/01-custom-call",
        "output/01-annotations",
        "output/02-reasoning-text",
    ] {
        for delivery in [Delivery::Json, Delivery::Stream] {
            let run = format!("{id} [{delivery}]");
            let scenario = crate::support::case(id).scenario.delivered(delivery);
            let task = dir
                .path()
                .join(format!("{}-{delivery}.yaml", id.replace('/', "-")));
            std::fs::write(&task, serde_saphyr::to_string(&scenario).unwrap()).unwrap();
            let fake = LoopcheckFake::new(scenario, StateMode::Stateless)
                .unwrap_or_else(|err| panic!("{run}: the fake serves faithfully: {err}"));
            let server = MockServer::start().await;
            fake.mount(&server).await;
            let cassette = dir
                .path()
                .join(format!("{}-{delivery}.json", id.replace('/', "-")));
            let upstream = format!("{}/v1", server.uri());
            let bin = bin();
            let output = record(
                &upstream,
                &cassette,
                &["--task", task.to_str().unwrap(), "--state", "stateless"],
                &[&bin, "reference-controller"],
                &[("OPENAI_API_KEY", fake.api_key())],
            )
            .await;
            assert!(output.status.success(), "{run}: {}", text(&output));

            let served = served_turns(&fake);
            let document: Value =
                serde_json::from_slice(&std::fs::read(&cassette).unwrap()).unwrap();
            let turns = document["script"].as_array().expect("the cassette's turns");
            assert_eq!(
                turns.len(),
                served.len(),
                "{run}: one turn per served response"
            );
            for (n, (turn, (response, events))) in turns.iter().zip(&served).enumerate() {
                let recorded = &turn["recorded"];
                assert_eq!(
                    recorded["response"]["output"], response["output"],
                    "{run}: turn {n}'s output items differ from what the upstream sent"
                );
                let recorded_events: Vec<&Value> = recorded["events"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| &e["event"])
                    .collect();
                assert_eq!(
                    recorded_events,
                    events.iter().collect::<Vec<_>>(),
                    "{run}: turn {n}'s events differ from what the upstream sent"
                );
                assert_eq!(recorded_events.is_empty(), delivery == Delivery::Json);
                for item in response["output"].as_array().into_iter().flatten() {
                    if item["type"] == "custom_tool_call" {
                        seen.insert("custom_tool_call");
                    }
                    for part in item["content"].as_array().into_iter().flatten() {
                        if part["type"] == "reasoning_text" {
                            seen.insert("reasoning_text");
                        }
                        if part["annotations"]
                            .as_array()
                            .is_some_and(|a| !a.is_empty())
                        {
                            seen.insert("annotations");
                        }
                    }
                }
                for event in events {
                    let kind = event["type"].as_str().unwrap_or_default();
                    if kind.starts_with("response.custom_tool_call_input.")
                        || kind.starts_with("response.reasoning_text.")
                        || kind == "response.output_text.annotation.added"
                    {
                        seen.insert("their stream events");
                    }
                }
            }

            let (output, cases) = run_cassette(&cassette, &[]).await;
            assert!(output.status.success(), "{run}: {}", text(&output));
            assert_eq!(cases[0]["verdict"], "pass", "{run}: {:#}", cases[0]);
            assert_eq!(
                cases[0]["recording"]["status"], "matched",
                "{run}: {:#}",
                cases[0]
            );
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [
            "annotations",
            "custom_tool_call",
            "reasoning_text",
            "their stream events"
        ],
        "the recordings hold every new kind of output"
    );
}

/// A key a contract controller handles: in its task's input and in a tool's result.
const TASK_KEY: &str = "sk-taskInput0123456789abcdef";

#[tokio::test(flavor = "multi_thread")]
async fn a_key_in_the_task_and_a_tool_result_replays_without_drift_and_stays_off_disk() {
    let id = "correlation/01-single-call";
    let (server, fake) = engine_upstream(id, StateMode::Stateless).await;
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(root().join(format!("scenarios/{id}.yaml"))).unwrap();
    let task = original
        .replace(
            "Do I need an umbrella in Lisbon this afternoon?",
            &format!("My key is {TASK_KEY}. Do I need an umbrella in Lisbon?"),
        )
        .replace(
            "precipitation_mm: 2.4}",
            &format!("precipitation_mm: 2.4, token: {TASK_KEY}}}"),
        );
    assert_ne!(task, original, "the key is in the task");
    let task_file = dir.path().join("task.yaml");
    std::fs::write(&task_file, &task).unwrap();
    let cassette = dir.path().join("keyed.yaml");
    let bin = bin();
    let output = record(
        &format!("{}/v1", server.uri()),
        &cassette,
        &[
            "--task",
            task_file.to_str().unwrap(),
            "--state",
            "stateless",
        ],
        &[&bin, "reference-controller"],
        &[("OPENAI_API_KEY", fake.api_key())],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    let written = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        !written.contains(TASK_KEY),
        "the cassette holds the key:\n{written}"
    );
    assert!(written.contains("[redacted]"), "{written}");

    let (output, cases) = run_cassette(&cassette, &[]).await;
    assert_eq!(cases[0]["recording"]["status"], "matched", "{:#}", cases[0]);
    assert!(output.status.success(), "{}", text(&output));

    let replay = loopcheck(
        &[
            "replay",
            cassette.to_str().unwrap(),
            "--",
            &bin,
            "reference-controller",
        ],
        &[],
    )
    .await;
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(!text(&replay).contains(TASK_KEY), "{}", text(&replay));
}
