//! What the fake server sends, held to Open Responses, a public specification of the
//! Responses API: its Pydantic models come from the `openresponses-types` package
//! (pinned in tests/requirements.txt, installed by `.ci/run`), never from a copy here.
//!
//! The whole catalogue runs once in process with the Rust reference controller, in
//! every state mode and delivery (JSON, SSE and the WebSocket) and with every capability
//! the reference has, so the fake sends all it can: background runs and their polls,
//! conversations, scripted errors. Then every document it sent goes, in one batch, to
//! tests/integration/open_responses.py:
//!
//! - every 200 answer of `POST /v1/responses`, `GET /v1/responses/{id}` and
//!   `POST /v1/responses/{id}/cancel` (a Response, or the events of its stream) and of
//!   `POST /v1/responses/compact` (a compacted response);
//! - the terminal response a streamed or background create became;
//! - every event a stream planned (those after a scripted cut too) and every event sent
//!   over the socket, including the socket's `error` events.
//!
//! HTTP error bodies are not checked: the spec's package has no model for them.
//! Where OpenAI's SDK types differ from the spec the fake follows OpenAI; those
//! differences are the validator's `DIFFERENCES` table, and any other complaint fails,
//! naming the case run, the document, the JSON path and what the spec says.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use loopcheck::report::CaseReport;
use loopcheck::runner::{self, CAPABILITIES};
use loopcheck::scenario::{Case, StateMode};
use loopcheck::transcript::ModelExchange;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::support::controllers::run_reference_in_process;
use crate::support::{catalogue, clip, missing_sdk, python, root};

/// Cases run at once (the CI machine has two cores; most of a case is waiting).
const JOBS: usize = 3;
const CASE_TIMEOUT: Duration = Duration::from_secs(30);

/// One thing the fake sent, and the spec's model it must fit (the validator's names).
#[derive(Debug, Clone)]
struct Document {
    label: String,
    model: &'static str,
    value: Value,
}

/// What the validator said of a batch.
#[derive(Debug, serde::Deserialize)]
struct Verdict {
    spec_version: String,
    checked: std::collections::BTreeMap<String, usize>,
    failures: Vec<Failure>,
    excused: std::collections::BTreeMap<String, usize>,
}

#[derive(Debug, serde::Deserialize)]
struct Failure {
    label: String,
    path: String,
    complaint: String,
}

fn validator() -> PathBuf {
    root().join("tests/integration/open_responses.py")
}

/// The Python to validate with, or None (after a note, or a panic under `CI`) when it
/// cannot import the spec's models.
fn spec_python() -> Option<PathBuf> {
    let python = python();
    let probe = Command::new(&python)
        .args(["-c", "import openresponses_types, pydantic"])
        .stdin(Stdio::null())
        .output();
    let message = match probe {
        Ok(output) if output.status.success() => return Some(python),
        Ok(output) => String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        Err(err) => format!("{}: {err}", python.display()),
    };
    missing_sdk(
        "Open Responses models (pip install -r tests/requirements.txt)",
        &message,
    );
    None
}

/// Validates `documents` in one Python process.
fn validate(python: &PathBuf, documents: &[Document]) -> Verdict {
    let mut batch = Vec::new();
    for document in documents {
        let line =
            json!({"label": document.label, "model": document.model, "value": document.value});
        serde_json::to_writer(&mut batch, &line).expect("a document serializes");
        batch.push(b'\n');
    }
    let mut child = Command::new(python)
        .arg(validator())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the validator starts");
    let mut stdin = child.stdin.take().expect("the validator's stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&batch));
    let output = child.wait_with_output().expect("the validator runs");
    writer
        .join()
        .expect("the batch writer")
        .expect("the batch is written");
    assert!(
        output.status.success(),
        "the validator failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "the validator's answer does not parse ({err}):\n{}",
            clip(&String::from_utf8_lossy(&output.stdout), 2000)
        )
    })
}

/// The path without its query, and what follows `/responses` in it.
fn route(exchange: &ModelExchange) -> Option<Vec<&str>> {
    let path = exchange.path.split('?').next().unwrap_or_default();
    let rest = path.split("/responses").nth(1)?;
    Some(rest.split('/').filter(|p| !p.is_empty()).collect())
}

/// The model of a 200 answer's body, for the exchanges answered with a Response (or its
/// stream) or a compacted response.
fn answer_model(exchange: &ModelExchange) -> Option<&'static str> {
    let parts = route(exchange)?;
    match (exchange.method.as_str(), parts.as_slice()) {
        ("POST", ["compact"]) => Some("compaction"),
        ("POST", []) | ("GET", [_]) | ("POST", [_, "cancel"]) => Some("response"),
        _ => None,
    }
}

/// Everything the fake sent in one case run that the spec has a model for.
fn documents(report: &CaseReport) -> Vec<Document> {
    let run = format!("{} [{}, {}]", report.id, report.state, report.delivery);
    let mut found = Vec::new();
    for (index, exchange) in report.transcript.model.iter().enumerate() {
        let Some(model) = answer_model(exchange) else {
            continue;
        };
        let what = format!(
            "{run} exchange #{index} {} {}",
            exchange.method, exchange.path
        );
        let socket = exchange.connection.is_some();
        match &*exchange.response {
            Value::Array(events) => {
                for (n, event) in events.iter().enumerate() {
                    // The socket's own error event has an HTTP status beside its error.
                    let model =
                        if socket && event["type"] == "error" && event.get("status").is_some() {
                            "socket_error"
                        } else {
                            "event"
                        };
                    found.push(Document {
                        label: format!(
                            "{what} event {n} ({})",
                            event["type"].as_str().unwrap_or("?")
                        ),
                        model,
                        value: event.clone(),
                    });
                }
            }
            // A refused create over the socket is recorded as the API error body it
            // carries; the event sent is that `error` with the status beside it.
            Value::Object(body) if socket && exchange.status != 200 => {
                if let Some(error) = body.get("error") {
                    found.push(Document {
                        label: format!("{what} socket error event"),
                        model: "socket_error",
                        value: json!({"type": "error", "status": exchange.status, "error": error}),
                    });
                }
            }
            Value::Object(_) if exchange.status == 200 => found.push(Document {
                label: format!("{what} body"),
                model,
                value: exchange.response.value().clone(),
            }),
            _ => {}
        }
        if let Some(terminal) = &exchange.final_response {
            found.push(Document {
                label: format!("{what} final_response"),
                model: "response",
                value: terminal.value().clone(),
            });
        }
    }
    found
}

async fn run(case: &Case, state: StateMode) -> CaseReport {
    run_reference_in_process(case, state, CASE_TIMEOUT).await
}

/// Every case run the reference can take: each case in every state mode and delivery,
/// with every capability but those it lacks (it polls instead of taking webhooks, and
/// does not replay).
async fn catalogue_documents() -> (usize, Vec<Document>) {
    let supports: BTreeSet<String> = CAPABILITIES
        .iter()
        .filter(|c| !matches!(**c, "replay" | "webhook"))
        .map(|c| c.to_string())
        .collect();
    let cases = Arc::new(runner::delivered(&catalogue(), &supports));
    let plan: Vec<(usize, StateMode)> = runner::plan(&cases, &supports)
        .into_iter()
        .filter(|(index, state)| {
            runner::required_capabilities(&cases[*index].scenario, *state)
                .iter()
                .all(|c| supports.contains(*c))
        })
        .collect();
    let permits = Arc::new(Semaphore::new(JOBS));
    let mut set = JoinSet::new();
    for (slot, (index, state)) in plan.iter().copied().enumerate() {
        let (cases, permits) = (cases.clone(), permits.clone());
        set.spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .expect("the semaphore is open");
            (slot, documents(&run(&cases[index], state).await))
        });
    }
    let mut by_slot: Vec<Vec<Document>> = vec![Vec::new(); plan.len()];
    while let Some(joined) = set.join_next().await {
        let (slot, found) = joined.expect("a case task panicked");
        by_slot[slot] = found;
    }
    (plan.len(), by_slot.into_iter().flatten().collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_and_event_the_fake_sends_fits_open_responses() {
    let Some(python) = spec_python() else {
        return;
    };
    let (runs, documents) = catalogue_documents().await;
    let verdict = validate(&python, &documents);
    assert_eq!(verdict.spec_version, "2026-04-24");
    eprintln!(
        "Open Responses {} checked {:?} over {runs} case runs; differences excused:",
        verdict.spec_version, verdict.checked
    );
    for (difference, count) in &verdict.excused {
        eprintln!("  {count:>5} × {difference}");
    }
    let failures: Vec<String> = verdict
        .failures
        .iter()
        .map(|f| format!("  {}\n      at {}: {}", f.label, f.path, f.complaint))
        .collect();
    assert!(
        failures.is_empty(),
        "{} complaint(s) of the Open Responses models that no listed difference excuses \
         (fix the fake, or add the difference to DIFFERENCES in tests/integration/open_responses.py \
         with the SDK file showing OpenAI's shape):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Coverage: each kind of document was seen.
    let count = |model: &str| verdict.checked.get(model).copied().unwrap_or(0);
    let polls = documents
        .iter()
        .filter(|d| d.label.contains(" GET "))
        .count();
    let socket = documents
        .iter()
        .filter(|d| d.label.contains(", websocket]"))
        .count();
    assert!(
        count("response") > 0 && count("event") > 0 && polls > 0 && socket > 0,
        "the catalogue no longer sends every kind of document: {:?}, {polls} from GET polls, \
         {socket} over the socket",
        verdict.checked
    );
}

/// A Response the fake would send, and one event, as the spec takes them.
fn sample_response() -> Value {
    json!({
        "id": "resp_1", "object": "response", "created_at": 1_759_064_126,
        "completed_at": 1_759_064_127, "status": "completed", "incomplete_details": null,
        "model": "gpt-test", "previous_response_id": null, "instructions": null,
        "output": [
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Done.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_order",
             "arguments": "{}", "status": "completed"}
        ],
        "error": null, "tools": [], "tool_choice": "auto", "truncation": "disabled",
        "parallel_tool_calls": true, "text": {"format": {"type": "text"}}, "top_p": 1.0,
        "presence_penalty": 0.0, "frequency_penalty": 0.0, "top_logprobs": 0,
        "temperature": 1.0, "reasoning": null, "usage": null, "max_output_tokens": null,
        "max_tool_calls": null, "store": true, "background": false,
        "service_tier": "default", "metadata": {}, "safety_identifier": null,
        "prompt_cache_key": null
    })
}

/// The validator is no rubber stamp: a correct Response and event pass, and each
/// broken one fails with its path; a listed difference is excused and nothing else.
#[test]
fn the_validator_rejects_what_the_spec_rejects() {
    let Some(python) = spec_python() else {
        return;
    };
    let good = sample_response();
    let mut float_time = good.clone();
    float_time["created_at"] = json!("yesterday");
    let mut bad_item = good.clone();
    bad_item["output"][1]["arguments"] = json!({"order_id": 1});
    let mut unknown_item = good.clone();
    unknown_item["output"][0]["type"] = json!("hologram");
    let mut bad_part = good.clone();
    bad_part["output"][0]["content"][0]["annotations"] = json!([{"type": "url_citation"}]);
    let mut openai_only = good.clone();
    openai_only["output"][1] = json!({"type": "custom_tool_call", "id": "ctc_1",
        "call_id": "call_2", "name": "stock_of", "input": "A7"});
    openai_only
        .as_object_mut()
        .expect("an object")
        .remove("presence_penalty");
    let event = json!({"type": "response.output_text.delta", "sequence_number": 3,
        "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Do"});
    let mut wrong_object = good.clone();
    wrong_object["object"] = json!("chat.completion");
    let mut no_sequence = event.clone();
    no_sequence
        .as_object_mut()
        .expect("an object")
        .remove("sequence_number");
    let documents = [
        ("good", "response", good.clone()),
        ("good event", "event", event),
        ("created_at", "response", float_time),
        ("arguments", "response", bad_item),
        ("kind", "response", unknown_item),
        ("annotation", "response", bad_part),
        ("openai-only", "response", openai_only),
        ("sequence_number", "event", no_sequence),
        (
            "no such event",
            "event",
            json!({"type": "response.hologram.delta", "sequence_number": 1}),
        ),
        (
            "created",
            "event",
            json!({"type": "response.created", "sequence_number": 0, "response": wrong_object}),
        ),
    ]
    .map(|(label, model, value)| Document {
        label: label.to_owned(),
        model,
        value,
    });
    let verdict = validate(&python, &documents);
    let at = |label: &str| -> Vec<String> {
        verdict
            .failures
            .iter()
            .filter(|f| f.label == label)
            .map(|f| format!("{}: {}", f.path, f.complaint))
            .collect()
    };
    assert_eq!(at("good"), Vec::<String>::new());
    assert_eq!(at("good event"), Vec::<String>::new());
    assert_eq!(
        at("openai-only"),
        Vec::<String>::new(),
        "a listed difference"
    );
    assert_eq!(
        verdict.excused.values().sum::<usize>(),
        2,
        "{:?}",
        verdict.excused
    );
    let expect = |label: &str, path: &str| {
        let found = at(label);
        assert!(
            found.iter().any(|f| f.starts_with(&format!("{path}: "))),
            "{label}: no complaint at {path}: {found:?}"
        );
    };
    expect("created_at", "created_at");
    expect("arguments", "output[1].arguments");
    expect("kind", "output[0]");
    expect("annotation", "output[0].content[0].annotations[0].url");
    expect("sequence_number", "sequence_number");
    expect("no such event", "(the whole document)");
    expect("created", "response.object");
    // A union member the node is not stays quiet: the broken function call is not also
    // told it lacks a message's `role`.
    assert_eq!(at("arguments").len(), 1, "{:?}", at("arguments"));
    assert_eq!(at("kind").len(), 1, "{:?}", at("kind"));
}
