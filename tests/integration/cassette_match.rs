//! Cassettes matched by key: a request is served the first unused recorded turn whose
//! request has its key, whatever the order; a changed request falls back to the next
//! unused turn and drifts; `--mode new` keeps every recorded interaction and adds the
//! new ones; `record --listen` serves a test framework until its stdin closes, and
//! refuses to record under CI; the pytest plugin gives each test its own cassette, under
//! pytest-xdist, and replays them in another order. The stand-in upstream answers by
//! what each request says, so parallel loops get their own answers.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{loopcheck_bin, missing_sdk, python, root};

/// A stand-in for the API: a first request (`Research <topic>.`) is answered with a call
/// of `lookup` step 1, the output `result 1` with a call of step 2, and `result 2` with
/// the text `done: <topic>`; a response's topic is found again by its id. Ids are
/// numbered across every stand-in of the tests, as a real API never gives one twice.
#[derive(Default)]
struct TopicUpstream {
    topics: Mutex<HashMap<String, String>>,
}

static ISSUED: AtomicU64 = AtomicU64::new(0);

impl Respond for TopicUpstream {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let n = ISSUED.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("resp_{n:048x}");
        let mut topics = self.topics.lock().unwrap();
        let topic = match &body["input"] {
            Value::String(text) => text
                .trim_start_matches("Research ")
                .trim_end_matches('.')
                .to_owned(),
            _ => body["previous_response_id"]
                .as_str()
                .and_then(|id| topics.get(id).cloned())
                .unwrap_or_default(),
        };
        topics.insert(id.clone(), topic.clone());
        let last_output = body["input"]
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .rev()
                    .find(|i| i["type"] == "function_call_output")
            })
            .and_then(|item| item["output"].as_str().map(str::to_owned));
        let item = match last_output.as_deref() {
            None => call(n, 1),
            Some("result 1") => call(n, 2),
            Some(_) => json!({"type": "message", "id": format!("msg_{n:048x}"),
                "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": format!("done: {topic}"),
                    "annotations": []}]}),
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": id, "object": "response", "created_at": 1_700_000_000 + n,
            "status": "completed", "model": body["model"], "output": [item],
            "tools": body["tools"], "parallel_tool_calls": true, "tool_choice": "auto",
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        }))
    }
}

fn call(n: u64, step: u32) -> Value {
    json!({"type": "function_call", "id": format!("fc_{n:048x}"),
        "call_id": format!("call_{n:024}"), "name": "lookup",
        "arguments": json!({"step": step}).to_string(), "status": "completed"})
}

async fn topic_upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(TopicUpstream::default())
        .mount(&server)
        .await;
    server
}

/// A `loopcheck record --listen` under way.
struct Listening {
    child: Child,
    base_url: String,
}

/// What a listening recorder printed last, its stderr and exit code.
#[derive(Debug)]
struct Ended {
    outcome: Value,
    stderr: String,
    code: Option<i32>,
}

/// Starts `loopcheck record --listen --out OUT ARGS` with `env`; None when it exited
/// before printing its URL (with what it said).
async fn listen(out: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Listening, Ended> {
    let mut command = Command::new(loopcheck_bin());
    command
        .args(["record", "--listen", "--out"])
        .arg(out)
        .args(args)
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("loopcheck starts");
    let stdout = child.stdout.as_mut().expect("piped stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .await
        .expect("stdout reads");
    match serde_json::from_str::<Value>(&first) {
        Ok(line) => Ok(Listening {
            base_url: line["base_url"].as_str().expect("a base_url").to_owned(),
            child,
        }),
        Err(_) => Err(ended(child).await),
    }
}

async fn ended(mut child: Child) -> Ended {
    drop(child.stdin.take());
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(out) = child.stdout.as_mut() {
        out.read_to_string(&mut stdout).await.expect("stdout reads");
    }
    if let Some(err) = child.stderr.as_mut() {
        err.read_to_string(&mut stderr).await.expect("stderr reads");
    }
    let status = child.wait().await.expect("loopcheck ends");
    let outcome = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .unwrap_or(Value::Null);
    Ended {
        outcome,
        stderr,
        code: status.code(),
    }
}

impl Listening {
    /// Closes its stdin and reads the outcome.
    async fn stop(self) -> Ended {
        ended(self.child).await
    }
}

fn http() -> reqwest::Client {
    crate::support::http::client()
}

/// One request of a loop: the answer's id and its call's step, or its text.
async fn create(base_url: &str, body: Value) -> Value {
    let reply = http()
        .post(format!("{base_url}/responses"))
        .bearer_auth("sk-test-cassettekey00000000000000")
        .json(&body)
        .send()
        .await
        .expect("the request is answered");
    let status = reply.status();
    let text = reply.text().await.expect("a body");
    assert!(status.is_success(), "{status}: {text}");
    serde_json::from_str(&text).expect("JSON")
}

fn tools() -> Value {
    json!([{"type": "function", "name": "lookup", "parameters": {"type": "object",
        "properties": {"step": {"type": "integer"}}, "required": ["step"]}}])
}

/// The first request of the loop on `topic` (`prompt` is its input).
fn first(prompt: &str) -> Value {
    json!({"model": "gpt-5", "input": prompt, "tools": tools()})
}

/// The request answering `response`'s call.
fn next(response: &Value) -> Value {
    let call = &response["output"][0];
    let args: Value = serde_json::from_str(call["arguments"].as_str().expect("arguments"))
        .expect("JSON arguments");
    json!({"model": "gpt-5", "previous_response_id": response["id"], "tools": tools(),
        "input": [{"type": "function_call_output", "call_id": call["call_id"],
            "output": format!("result {}", args["step"])}]})
}

fn text_of(response: &Value) -> String {
    response["output"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The three requests of the loop on `topic` against `base_url`; its final text.
async fn research(base_url: &str, topic: &str) -> String {
    let one = create(base_url, first(&format!("Research {topic}."))).await;
    let two = create(base_url, next(&one)).await;
    let three = create(base_url, next(&two)).await;
    text_of(&three)
}

/// Two loops, their requests interleaved: a's first, b's first, a's second...
async fn interleaved(base_url: &str, a: &str, b: &str) -> (String, String) {
    let a1 = create(base_url, first(&format!("Research {a}."))).await;
    let b1 = create(base_url, first(&format!("Research {b}."))).await;
    let a2 = create(base_url, next(&a1)).await;
    let b2 = create(base_url, next(&b1)).await;
    let a3 = create(base_url, next(&a2)).await;
    let b3 = create(base_url, next(&b2)).await;
    (text_of(&a3), text_of(&b3))
}

/// Records loops on `tides` and `comets`, interleaved, into `out`.
async fn record_two(out: &Path) {
    let upstream = topic_upstream().await;
    let url = format!("{}/v1", upstream.uri());
    let listening = listen(out, &["--upstream", &url], &[])
        .await
        .unwrap_or_else(|e| panic!("{}", e.stderr));
    let texts = interleaved(&listening.base_url, "tides", "comets").await;
    assert_eq!(texts, ("done: tides".into(), "done: comets".into()));
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.outcome["recorded"], 6, "{}", ended.outcome);
    assert_eq!(ended.outcome["written"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_are_served_by_key_in_any_order_without_drift() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("two.yaml");
    record_two(&cassette).await;
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("match_on:"), "{text}");
    assert!(!text.contains("cassettekey"), "a key reached the cassette");

    // The upstream is gone; `once` replays the cassette that exists, in another order.
    let listening = listen(&cassette, &["--upstream", "http://127.0.0.1:9/v1"], &[])
        .await
        .unwrap_or_else(|e| panic!("{}", e.stderr));
    assert_eq!(
        research(&listening.base_url, "comets").await,
        "done: comets"
    );
    assert_eq!(research(&listening.base_url, "tides").await, "done: tides");
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(0), "{}\n{}", ended.outcome, ended.stderr);
    assert_eq!(ended.outcome["replayed"], 6);
    assert_eq!(ended.outcome["drift"], json!([]));
    assert_eq!(ended.outcome["missing"], json!([]));

    // `loopcheck replay` with a command pairs by turn too.
    let mut replay = tokio::process::Command::new(loopcheck_bin());
    let script = "import json,os,urllib.request as u\n\
        b=os.environ['OPENAI_BASE_URL']; k=os.environ['OPENAI_API_KEY']\n\
        def c(body):\n\
        \x20r=u.Request(b+'/responses',json.dumps(body).encode(),{'Authorization':'Bearer '+k,'Content-Type':'application/json','Accept':'*/*'})\n\
        \x20return json.load(u.urlopen(r))\n\
        t=[{'type':'function','name':'lookup','parameters':{'type':'object','properties':{'step':{'type':'integer'}},'required':['step']}}]\n\
        for topic in ['comets','tides']:\n\
        \x20r=c({'model':'gpt-5','input':'Research '+topic+'.','tools':t})\n\
        \x20while r['output'][0]['type']=='function_call':\n\
        \x20\x20o=r['output'][0]; s=json.loads(o['arguments'])['step']\n\
        \x20\x20r=c({'model':'gpt-5','previous_response_id':r['id'],'tools':t,'input':[{'type':'function_call_output','call_id':o['call_id'],'output':'result %d'%s}]})\n";
    let output = replay
        .args(["replay"])
        .arg(&cassette)
        .args(["--", "python3", "-c", script])
        .env_remove("CI")
        .output()
        .await
        .expect("loopcheck runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_request_falls_back_to_the_next_turn_and_drifts() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("two.yaml");
    record_two(&cassette).await;
    let listening = listen(&cassette, &["--mode", "none"], &[])
        .await
        .unwrap_or_else(|e| panic!("{}", e.stderr));
    // Served anyway: the first unused turn, tides' first answer.
    let one = create(&listening.base_url, first("Research tides, briefly.")).await;
    assert_eq!(one["output"][0]["name"], "lookup");
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(1), "{}", ended.stderr);
    let drift: Vec<String> = serde_json::from_value(ended.outcome["drift"].clone()).unwrap();
    assert!(
        drift.iter().any(
            |d| d.starts_with("request 1 (POST /v1/responses): `input` is")
                && d.contains("Research tides, briefly.")
        ),
        "{drift:#?}"
    );
    assert!(
        drift.iter().any(|d| d.starts_with("recorded request 2")),
        "the turns no request was served are named: {drift:#?}"
    );

    // Both loops continue comets' first answer: the second is served the turn that
    // continued tides', and that is drift, though the bodies agree ids aside.
    let listening = listen(&cassette, &["--mode", "none"], &[]).await.unwrap();
    let tides = create(&listening.base_url, first("Research tides.")).await;
    let comets = create(&listening.base_url, first("Research comets.")).await;
    assert_ne!(tides["id"], comets["id"]);
    create(&listening.base_url, next(&comets)).await;
    create(&listening.base_url, next(&comets)).await;
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(1), "{}", ended.stderr);
    let drift = ended.outcome["drift"].to_string();
    assert!(
        drift.contains(
            "continues the response of recorded turn 2 instead of the response of recorded turn 1"
        ),
        "{drift}"
    );

    // Past the cassette's end: the request is missing, and named.
    let listening = listen(&cassette, &["--mode", "none"], &[]).await.unwrap();
    for _ in 0..6 {
        create(&listening.base_url, first("Research tides.")).await;
    }
    let reply = http()
        .post(format!("{}/responses", listening.base_url))
        .json(&first("Research sand."))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 400);
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(1));
    let missing = ended.outcome["missing"].to_string();
    assert!(missing.contains("Research sand."), "{}", ended.outcome);
}

#[tokio::test(flavor = "multi_thread")]
async fn mode_new_serves_what_matches_records_the_rest_and_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("two.yaml");
    record_two(&cassette).await;

    let upstream = topic_upstream().await;
    let url = format!("{}/v1", upstream.uri());
    let listening = listen(&cassette, &["--mode", "new", "--upstream", &url], &[])
        .await
        .unwrap_or_else(|e| panic!("{}", e.stderr));
    // A new loop between the halves of a recorded one; comets is not run at all.
    let (tides, dunes) = interleaved(&listening.base_url, "tides", "dunes").await;
    assert_eq!(
        (tides.as_str(), dunes.as_str()),
        ("done: tides", "done: dunes")
    );
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.outcome["replayed"], 3, "{}", ended.outcome);
    assert_eq!(ended.outcome["recorded"], 3, "{}", ended.outcome);
    let scenario = loopcheck::scenario::load_file(&cassette).expect("the cassette loads");
    assert_eq!(scenario.script.len(), 9, "every interaction is kept");
    drop(upstream);

    let listening = listen(&cassette, &["--mode", "none"], &[]).await.unwrap();
    assert_eq!(research(&listening.base_url, "dunes").await, "done: dunes");
    assert_eq!(
        research(&listening.base_url, "comets").await,
        "done: comets"
    );
    assert_eq!(research(&listening.base_url, "tides").await, "done: tides");
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(0), "{}\n{}", ended.outcome, ended.stderr);
    assert_eq!(ended.outcome["replayed"], 9);
}

#[tokio::test(flavor = "multi_thread")]
async fn ci_refuses_to_record_a_missing_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("absent.yaml");
    let refused = listen(
        &cassette,
        &["--upstream", "http://127.0.0.1:9/v1"],
        &[("CI", "true")],
    )
    .await;
    let Err(ended) = refused else {
        panic!("a listening recorder started under CI without its cassette");
    };
    assert_eq!(ended.code, Some(2), "{}", ended.stderr);
    assert!(
        ended
            .stderr
            .contains("absent.yaml does not exist and CI is set"),
        "{}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains("loopcheck record --listen --out"),
        "{}",
        ended.stderr
    );
    assert!(!cassette.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listening_recorder_with_no_request_writes_nothing_and_ends_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("quiet.yaml");
    let upstream = topic_upstream().await;
    let url = format!("{}/v1", upstream.uri());
    let listening = listen(&cassette, &["--upstream", &url], &[]).await.unwrap();
    let ended = listening.stop().await;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.outcome["written"], false);
    assert!(!cassette.exists());
}

/// Runs pytest on the cassette suite copied into `dir`, with `args` and `env`; None
/// when pytest, the SDK or pytest-xdist is not installed here.
fn pytest(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<std::process::Output> {
    let python = python();
    let probe = std::process::Command::new(&python)
        .args(["-c", "import openai, pytest, xdist"])
        .env("PYTHONPATH", python_path())
        .output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            missing_sdk(
                "pytest-xdist (pip install -r tests/requirements.txt)",
                String::from_utf8_lossy(&output.stderr).trim(),
            );
            return None;
        }
        Err(err) => {
            missing_sdk("pytest-xdist", &err.to_string());
            return None;
        }
    }
    let mut command = std::process::Command::new(&python);
    command
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir"])
        .arg(dir)
        .args(["-p", "loopcheck_pytest.plugin", "-p", "xdist.plugin"])
        .args(args)
        .current_dir(dir)
        .env("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        .env("PYTHONPATH", python_path())
        .env("LOOPCHECK_BIN", loopcheck_bin())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("CI")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY");
    for (name, value) in env {
        command.env(name, value);
    }
    Some(command.output().expect("pytest starts"))
}

/// The plugin from the source tree first, then whatever the environment adds.
fn python_path() -> std::ffi::OsString {
    let mut paths = vec![root().join("harness/python")];
    if let Some(more) = std::env::var_os("PYTHONPATH") {
        paths.extend(std::env::split_paths(&more));
    }
    std::env::join_paths(paths).expect("paths without a separator")
}

fn said(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A temporary project holding these files of `cassette_suite/`.
fn suite(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        std::fs::copy(
            root().join("tests/integration/cassette_suite").join(file),
            dir.path().join(file),
        )
        .unwrap();
    }
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pytest_suite_records_a_cassette_per_test_under_xdist_and_replays_them_in_any_order() {
    let dir = suite(&["test_loops.py", "conftest.py"]);
    let upstream = topic_upstream().await;
    let url = format!("{}/v1", upstream.uri());
    let recorded = pytest(
        dir.path(),
        &["-n", "4"],
        &[
            ("OPENAI_BASE_URL", &url),
            ("OPENAI_API_KEY", "sk-test-cassettekey00000000000000"),
        ],
    );
    let Some(recorded) = recorded else {
        return;
    };
    assert!(recorded.status.success(), "{}", said(&recorded));
    assert!(said(&recorded).contains("4 passed"), "{}", said(&recorded));
    let folder = dir.path().join("cassettes/test_loops");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "TestNamed.test_dunes.yaml",
            "test_comets.yaml",
            "test_tides.yaml",
            "test_topic-glaciers.yaml"
        ]
    );
    for name in &names {
        let text = std::fs::read_to_string(folder.join(name)).unwrap();
        assert!(!text.contains("cassettekey"), "a key reached {name}");
    }
    drop(upstream);

    // The upstream is gone and no key is set: reversed, four at once.
    let reversed = pytest(dir.path(), &["-n", "4"], &[("LOOPCHECK_REVERSE", "1")]).unwrap();
    assert!(reversed.status.success(), "{}", said(&reversed));
    assert!(said(&reversed).contains("4 passed"), "{}", said(&reversed));
    // One at a time, under CI (replay only).
    for selection in ["dunes", "glaciers or comets"] {
        let one = pytest(dir.path(), &["-k", selection], &[("CI", "true")]).unwrap();
        assert!(one.status.success(), "{selection}: {}", said(&one));
    }

    // A test whose requests changed fails, naming the drift.
    let test = dir.path().join("test_loops.py");
    let text = std::fs::read_to_string(&test).unwrap();
    std::fs::write(
        &test,
        text.replace("f\"Research {topic}.\"", "f\"Study {topic}.\""),
    )
    .unwrap();
    let drifted = pytest(dir.path(), &["-k", "tides"], &[("CI", "true")]).unwrap();
    assert!(!drifted.status.success(), "{}", said(&drifted));
    assert!(
        said(&drifted).contains("the requests drifted from"),
        "{}",
        said(&drifted)
    );
}

/// Runs vitest on the cassette suite copied into `dir` (its `node_modules` linked to
/// `harness/node`'s), with `env`; None when node or vitest is not installed here.
fn vitest(dir: &Path, env: &[(&str, &str)]) -> Option<std::process::Output> {
    crate::support::install_node_packages();
    let modules = root().join("harness/node/node_modules");
    let bin = modules.join(".bin/vitest");
    if !bin.exists() {
        missing_sdk(
            "vitest (npm ci --prefix harness/node)",
            "no node_modules/.bin/vitest",
        );
        return None;
    }
    let link = dir.join("node_modules");
    if !link.exists() {
        std::os::unix::fs::symlink(&modules, &link).unwrap();
    }
    let mut command = std::process::Command::new(bin);
    command
        .args(["run", "--config", "vitest.config.mjs"])
        .current_dir(dir)
        .env("LOOPCHECK_BIN", loopcheck_bin())
        .env(
            "LOOPCHECK_VITEST_HELPER",
            root().join("harness/node/loopcheck-vitest.mjs"),
        )
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .env_remove("LOOPCHECK_RECORD_MODE")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    Some(command.output().expect("vitest starts"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vitest_suite_records_a_cassette_per_test_and_replays_them_in_another_order() {
    let dir = suite(&["loops.test.mjs", "vitest.config.mjs"]);
    let upstream = topic_upstream().await;
    let url = format!("{}/v1", upstream.uri());
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-test-cassettekey00000000000000"),
    ];
    let Some(recorded) = vitest(dir.path(), &env) else {
        return;
    };
    assert!(recorded.status.success(), "{}", said(&recorded));
    let folder = dir.path().join("cassettes/loops.test");
    for name in ["tides.yaml", "hooks.comets.yaml"] {
        let text = std::fs::read_to_string(folder.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", said(&recorded)));
        assert!(!text.contains("cassettekey"), "a key reached {name}");
    }
    drop(upstream);

    // The upstream is gone, no key is set, the tests come in reverse, under CI.
    let replayed = vitest(dir.path(), &[("LOOPCHECK_REVERSE", "1"), ("CI", "true")]).unwrap();
    assert!(replayed.status.success(), "{}", said(&replayed));
    assert!(said(&replayed).contains("2 passed"), "{}", said(&replayed));

    // A changed request fails its test, naming the drift.
    let test = dir.path().join("loops.test.mjs");
    let text = std::fs::read_to_string(&test).unwrap();
    std::fs::write(
        &test,
        text.replace("input: `Research ${topic}.`", "input: `Study ${topic}.`"),
    )
    .unwrap();
    let drifted = vitest(dir.path(), &[("CI", "true")]).unwrap();
    assert!(!drifted.status.success(), "{}", said(&drifted));
    assert!(
        said(&drifted).contains("the requests drifted from"),
        "{}",
        said(&drifted)
    );
}
