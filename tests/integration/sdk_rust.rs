//! The Rust `async-openai` crate's types against the fake server: every case of the
//! embedded catalogue, in every state mode it lists, is run in process with the Rust
//! reference controller, and then every answer the fake server gave is deserialized with
//! the crate's own types (strict serde, integer `created_at`, `status`,
//! `usage` details, `sequence_number` on every event, no catch-all event variant):
//!
//! - every 200 JSON body of `POST /v1/responses`, `GET /v1/responses/{id}` and
//!   `POST /v1/responses/{id}/cancel` into `async_openai::types::responses::Response`;
//! - the `final_response` a streamed or background create became, the same way;
//! - every event of every stream (create with `stream:true`, and `GET ...?stream=true`)
//!   into `async_openai::types::responses::ResponseStreamEvent`, all events the stream
//!   planned, including those after a scripted cut, so nothing the server could send
//!   goes unchecked.
//!
//! The one exception is the in-stream `error` event in its nested shape
//! (`{"type":"error","error":{"code","message",..},"sequence_number"}`), which the real API
//! sends but the crate cannot represent: its `ResponseErrorEvent` is the
//! documented flat shape, `{sequence_number: u64, code: Option<String>, message: String,
//! param: Option<String>}`, so the nested form fails with ``missing field `message` ``.
//! That is a limitation of async-openai 0.43, not a server bug; such events are listed as
//! known-unsupported and do not fail the test. Flat `error` events must parse, and into
//! the `ResponseError` variant.

use std::sync::Arc;
use std::time::Duration;

use async_openai::types::responses::{OutputItem, Response, ResponseStreamEvent, ResponseUsage};
use loopcheck::report::CaseReport;
use loopcheck::runner;
use loopcheck::scenario::{Case, StateMode};
use loopcheck::transcript::ModelExchange;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::support::catalogue;
use crate::support::controllers::run_reference_in_process;

/// Cases run at once (the CI machine has two cores; most of a case is waiting).
const JOBS: usize = 3;
const CASE_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a failing body a failure shows.
const CLIP: usize = 600;

/// A body the crate could not parse.
struct Failure {
    case: String,
    state: StateMode,
    exchange: usize,
    what: String,
    error: String,
    body: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} [{}] exchange #{} {}: {}\n      body: {}",
            self.case, self.state, self.exchange, self.what, self.error, self.body
        )
    }
}

/// What one case run showed.
#[derive(Default)]
struct Findings {
    /// Response bodies checked: answers to create, to GET polls, and terminal responses.
    responses: usize,
    polls: usize,
    finals: usize,
    streams: usize,
    events: usize,
    flat_errors: usize,
    /// One body and one event that parsed, to show the check is not vacuous.
    sample_response: Option<Value>,
    sample_event: Option<Value>,
    failures: Vec<Failure>,
    /// Nested `error` events: the crate's limitation, documented above.
    unsupported: Vec<Failure>,
}

fn clip(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= CLIP {
        text
    } else {
        format!("{}…", text.chars().take(CLIP).collect::<String>())
    }
}

/// Parses the text the server wrote, as the crate does (`serde_json::from_str` on each SSE
/// `data:` line and on JSON bodies); the recorded value is the one the server serialized.
fn parse<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_json::from_str(&value.to_string()).map_err(|err| err.to_string())
}

/// A serde error on a whole Response (or an event holding one) names no path; this
/// re-parses its parts to say which one the crate rejects.
fn locate(response: &Value) -> Option<String> {
    let mut found = Vec::new();
    for (i, item) in response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Err(err) = parse::<OutputItem>(item) {
            found.push(format!("output[{i}] ({}): {err}", item["type"]));
        }
    }
    if !response["usage"].is_null()
        && let Err(err) = parse::<ResponseUsage>(&response["usage"])
    {
        found.push(format!("usage: {err}"));
    }
    (!found.is_empty()).then(|| found.join("; "))
}

fn response_error(body: &Value) -> Option<String> {
    parse::<Response>(body).err().map(|err| match locate(body) {
        Some(at) => format!("{err} (at {at})"),
        None => err,
    })
}

fn event_error(event: &Value) -> Option<String> {
    match parse::<ResponseStreamEvent>(event) {
        Ok(ResponseStreamEvent::ResponseError(_)) if event["type"] != "error" => Some(format!(
            "a {} event parsed as the `error` variant",
            event["type"]
        )),
        Ok(_) => None,
        Err(err) => {
            let at = if event["response"].is_object() {
                response_error(&event["response"]).map(|e| format!("response: {e}"))
            } else if event["item"].is_object() {
                parse::<OutputItem>(&event["item"])
                    .err()
                    .map(|e| format!("item: {e}"))
            } else {
                None
            };
            Some(match at {
                Some(at) => format!("{err} (at {at})"),
                None => err,
            })
        }
    }
}

/// `/v1/responses`, `/v1/responses/{id}` and `/v1/responses/{id}/cancel`: the paths whose
/// 200 answer is a Response (or its stream).
fn answers_with_a_response(exchange: &ModelExchange) -> bool {
    let path = exchange.path.split('?').next().unwrap_or_default();
    let Some(rest) = path.split("/responses").nth(1) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    matches!(
        (exchange.method.as_str(), parts.as_slice()),
        ("POST", []) | ("GET", [_]) | ("POST", [_, "cancel"])
    )
}

fn check(report: &CaseReport) -> Findings {
    let mut findings = Findings::default();
    let fail = |list: &mut Vec<Failure>, exchange: usize, what: String, error, body| {
        list.push(Failure {
            case: report.id.clone(),
            state: report.state,
            exchange,
            what,
            error,
            body,
        });
    };
    for (index, exchange) in report.transcript.model.iter().enumerate() {
        if exchange.status != 200 || !answers_with_a_response(exchange) {
            continue;
        }
        let what = format!("{} {}", exchange.method, exchange.path);
        match &*exchange.response {
            Value::Object(_) => {
                findings.responses += 1;
                findings.polls += usize::from(exchange.method == "GET");
                match response_error(&exchange.response) {
                    Some(err) => {
                        let body = clip(&exchange.response);
                        fail(&mut findings.failures, index, what.clone(), err, body);
                    }
                    None => {
                        findings
                            .sample_response
                            .get_or_insert(exchange.response.value().clone());
                    }
                }
            }
            Value::Array(events) => {
                findings.streams += 1;
                for (n, event) in events.iter().enumerate() {
                    let what = format!("{what} event {n} ({})", event["type"]);
                    let nested = event["type"] == "error" && event["error"].is_object();
                    findings.events += 1;
                    match event_error(event) {
                        None if event["type"] == "error" && !nested => findings.flat_errors += 1,
                        None => {
                            findings.sample_event.get_or_insert(event.clone());
                        }
                        Some(err) if nested => {
                            fail(&mut findings.unsupported, index, what, err, clip(event));
                        }
                        Some(err) => fail(&mut findings.failures, index, what, err, clip(event)),
                    }
                }
            }
            Value::Null if exchange.fault.as_ref().is_some_and(|f| f.dropped) => {}
            other => fail(
                &mut findings.failures,
                index,
                what.clone(),
                "a 200 answer that is neither a JSON object nor a stream".to_owned(),
                clip(other),
            ),
        }
        if let Some(terminal) = &exchange.final_response {
            findings.responses += 1;
            findings.finals += 1;
            if let Some(err) = response_error(terminal) {
                let what = format!("{what} final_response");
                fail(&mut findings.failures, index, what, err, clip(terminal));
            }
        }
    }
    findings
}

async fn run(case: &Case, state: StateMode) -> CaseReport {
    run_reference_in_process(case, state, CASE_TIMEOUT).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_openai_parses_every_response_and_stream_event_of_the_catalogue() {
    // Every case in every delivery, so every stream event the catalogue can send is read.
    let supports = [
        "previous_response_id",
        "stateless",
        "conversation",
        "stream",
        "mcp",
    ]
    .map(str::to_owned)
    .into();
    let cases = Arc::new(runner::delivered(&catalogue(), &supports));
    let plan = runner::plan(&cases, &supports);
    let permits = Arc::new(Semaphore::new(JOBS));
    let mut set = JoinSet::new();
    for (slot, (index, state)) in plan.iter().copied().enumerate() {
        let (cases, permits) = (cases.clone(), permits.clone());
        set.spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .expect("the semaphore is open");
            (slot, check(&run(&cases[index], state).await))
        });
    }
    let mut by_slot: Vec<Option<Findings>> = (0..plan.len()).map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        let (slot, findings) = joined.expect("a case task panicked");
        by_slot[slot] = Some(findings);
    }

    // Case runs without a 200 (e.g. transport/02-400-not-retried, transport/06-persistent-500)
    // have nothing to check; coverage is asserted over the whole catalogue instead.
    let mut total = Findings::default();
    for findings in by_slot {
        let findings = findings.expect("every case reported");
        total.responses += findings.responses;
        total.polls += findings.polls;
        total.finals += findings.finals;
        total.streams += findings.streams;
        total.events += findings.events;
        total.flat_errors += findings.flat_errors;
        total.sample_response = total.sample_response.or(findings.sample_response);
        total.sample_event = total.sample_event.or(findings.sample_event);
        total.failures.extend(findings.failures);
        total.unsupported.extend(findings.unsupported);
    }
    eprintln!(
        "async-openai parsed {} Response bodies ({} GET polls, {} terminal responses of \
         streamed/background creates) and {} events of {} streams ({} flat `error` events) \
         over {} case runs; {} nested `error` event(s) are known-unsupported by the crate",
        total.responses,
        total.polls,
        total.finals,
        total.events,
        total.streams,
        total.flat_errors,
        plan.len(),
        total.unsupported.len()
    );
    for known in &total.unsupported {
        eprintln!("  known-unsupported: {known}");
    }
    let list = |failures: &[Failure]| {
        failures
            .iter()
            .map(|f| format!("  {f}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        total.failures.is_empty(),
        "{} body/event(s) the async-openai types reject:\n{}",
        total.failures.len(),
        list(&total.failures)
    );
    // Coverage: JSON answers, polls, streams and a flat `error` event were all exercised.
    assert!(
        total.polls > 0 && total.finals > 0 && total.streams > 0 && total.flat_errors > 0,
        "the catalogue no longer exercises every kind of answer: {} GET polls, {} terminal \
         responses, {} streams, {} flat `error` events",
        total.polls,
        total.finals,
        total.streams,
        total.flat_errors
    );
    // Not vacuous: the crate's types do reject what the API reference says they need.
    let mut response = total.sample_response.expect("a Response body parsed");
    response["created_at"] = serde_json::json!(1_759_064_126.0);
    assert!(
        response_error(&response).is_some(),
        "a float created_at was accepted"
    );
    let mut event = total.sample_event.expect("a stream event parsed");
    event.as_object_mut().unwrap().remove("sequence_number");
    assert!(
        event_error(&event).is_some(),
        "an event without sequence_number was accepted"
    );
}
