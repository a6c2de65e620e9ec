//! The loopcheck reference controller: a correct contract-v1 tool loop over the OpenAI
//! Responses API (docs/contract.md).
//!
//! One round is one model request, `POST /responses`. A completed response with
//! `function_call` items gets exactly one `function_call_output` per call (keyed by
//! `call_id`, echoing the call's `caller`) in the next request; a response without calls
//! is the final answer, unless it ends with a program's `program_output` and no message,
//! after which the model continues in another request.
//!
//! - State: `previous_response_id` chains stored responses and sends only the new items;
//!   `stateless` sends `store: false` and replays every item so far, output items verbatim;
//!   `conversation` creates a conversation first and sends only the new items to it.
//! - `stream`: the answer is read as server-sent events; the terminal event's response is
//!   the round's response, and calls run only after it.
//! - `background`: the created response is polled until it leaves `queued`/`in_progress`.
//! - `websocket`: every create goes as a `response.create` event over one WebSocket
//!   connection, opened at the first create and reopened when the server closed it
//!   meanwhile; the answer is read as a stream's events (see `socket`).
//! - Every request is retried like the official SDKs: connection errors, 408, 409, 429
//!   and 5xx (or as `x-should-retry` says), twice at most, with the identical body.
//!   A stream that broke after it started is not retried.
//! - Programmatic tool calling: tools go out as given; a call whose caller the tool's
//!   `allowed_callers` excludes gets an error output instead of running.
//! - Optional budgets: past `deadline_ms` (from the start of `run`) nothing new starts and
//!   a request in flight is cancelled (reason `timeout`); a call beyond `max_tool_calls`
//!   is not executed (reason `max_tool_calls`); a tool request that takes longer than
//!   `tool_timeout_ms` is retried under the same call_id, then answered with an error.

mod client;
mod response;
mod retry;
mod socket;
mod sse;
mod task;
mod tools;

use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

pub use task::Task;

use client::ResponsesClient;
use socket::ResponsesSocket;
use tools::Tools;

const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the controller sends its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerEnv {
    /// `OPENAI_BASE_URL`, e.g. `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    pub api_key: String,
    /// `LOOPCHECK_TOOLS_URL`, the fixture tool backend.
    pub tools_url: String,
}

impl ControllerEnv {
    /// From the contract's variables, as `var` reads them (the process's environment, or
    /// a persistent-mode line's `env`).
    fn from_vars(var: impl Fn(&str) -> Result<String, String>) -> Result<Self, String> {
        Ok(Self {
            base_url: var("OPENAI_BASE_URL")?,
            api_key: var("OPENAI_API_KEY")?,
            tools_url: var("LOOPCHECK_TOOLS_URL")?,
        })
    }
}

/// The result of a case (docs/contract.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    Completed { output_text: String },
    Failed { reason: String, detail: String },
}

impl Outcome {
    pub fn failed(reason: &str, detail: impl Into<String>) -> Outcome {
        Outcome::Failed {
            reason: reason.to_string(),
            detail: detail.into(),
        }
    }
}

/// The JSON line to print last on standard output.
pub fn result_line(outcome: &Outcome) -> String {
    // Serializing plain strings cannot fail; the fallback only keeps this total.
    serde_json::to_string(outcome).unwrap_or_else(|_| {
        r#"{"status":"failed","reason":"api_error","detail":"unprintable outcome"}"#.to_string()
    })
}

/// Runs the case described by the environment loopcheck sets (docs/contract.md).
pub async fn run_from_env() -> Outcome {
    match load_env() {
        Ok((env, task)) => run(&env, &task).await,
        Err(detail) => Outcome::failed("api_error", detail),
    }
}

/// Persistent mode (docs/contract.md, section 9): a case per non-empty line of standard
/// input, `{"case", "env", "task"}`, each answered with its result line on standard
/// output, until the input ends. Every case gets its own HTTP clients, as a process of
/// its own would.
pub async fn run_persistent() {
    use std::io::{BufRead, Write};
    // Read between cases only, when nothing else runs: a blocking read holds up nothing.
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let outcome = match case_of_line(&line) {
            Ok((env, task)) => run(&env, &task).await,
            Err(detail) => Outcome::failed("api_error", detail),
        };
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{}", result_line(&outcome))
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}

/// A persistent-mode line's environment and task.
fn case_of_line(line: &str) -> Result<(ControllerEnv, Task), String> {
    let request: Value =
        serde_json::from_str(line).map_err(|e| format!("parsing the case line: {e}"))?;
    let var = |name: &str| {
        request["env"][name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("the case line's env has no {name}"))
    };
    let env = ControllerEnv::from_vars(var)?;
    let task = Task::deserialize(&request["task"])
        .map_err(|e| format!("parsing the case line's task: {e}"))?;
    Ok((env, task))
}

fn load_env() -> Result<(ControllerEnv, Task), String> {
    let var = |name: &str| {
        std::env::var(name).map_err(|_| format!("environment variable {name} is not set"))
    };
    let env = ControllerEnv::from_vars(var)?;
    let task = Task::load(&var("LOOPCHECK_TASK")?)?;
    Ok((env, task))
}

/// Runs one case to its outcome.
pub async fn run(env: &ControllerEnv, task: &Task) -> Outcome {
    // The deadline counts from here, the controller's start on this case.
    let deadline = task
        .deadline_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    match tool_loop(env, task, deadline).await {
        Ok(output_text) => Outcome::Completed { output_text },
        Err(failure) => failure,
    }
}

/// Runs `step` unless the deadline has passed, and cancels it (retries and backoff
/// included) when the deadline comes while it runs.
pub(crate) async fn before_deadline<T>(
    deadline: Option<Instant>,
    step: impl Future<Output = Result<T, Outcome>>,
) -> Result<T, Outcome> {
    let Some(deadline) = deadline else {
        return step.await;
    };
    let timed_out = || Outcome::failed("timeout", "deadline_ms passed");
    if Instant::now() >= deadline {
        return Err(timed_out());
    }
    tokio::time::timeout_at(deadline, step)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

async fn tool_loop(
    env: &ControllerEnv,
    task: &Task,
    deadline: Option<Instant>,
) -> Result<String, Outcome> {
    let http = reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .build()
        .map_err(|e| Outcome::failed("api_error", format!("building the HTTP client: {e}")))?;
    let tools = Tools::new(task, http.clone(), &env.tools_url)
        .map_err(|detail| Outcome::failed("api_error", detail))?;
    let client = ResponsesClient::new(http, &env.base_url, &env.api_key);
    if !task.websocket {
        return rounds(task, &client, None, &tools, deadline).await;
    }
    if task.background {
        return Err(Outcome::failed(
            "unsupported",
            "background responses are not served over a WebSocket",
        ));
    }
    let mut socket = ResponsesSocket::new(&env.base_url, &env.api_key, HTTP_TIMEOUT)?;
    let result = rounds(task, &client, Some(&mut socket), &tools, deadline).await;
    socket.close().await;
    result
}

/// The rounds of a case: model requests over HTTP, or over `socket` when given, and the
/// tool calls between them.
async fn rounds(
    task: &Task,
    client: &ResponsesClient,
    mut socket: Option<&mut ResponsesSocket>,
    tools: &Tools,
    deadline: Option<Instant>,
) -> Result<String, Outcome> {
    let mut state = match task.state.as_str() {
        "previous_response_id" => State::Chained(None),
        "stateless" if task.background => {
            return Err(Outcome::failed(
                "unsupported",
                "background responses are stored, which the stateless mode rules out",
            ));
        }
        "stateless" => State::Stateless(task.input_items()),
        "conversation" => {
            State::Conversation(before_deadline(deadline, client.create_conversation()).await?)
        }
        other => {
            return Err(Outcome::failed(
                "unsupported",
                format!("state mode {other:?} is not supported"),
            ));
        }
    };
    // The next request's new items, for every mode but stateless (which sends them all).
    let mut new_items = task.input.clone();

    for round in 1..=task.max_rounds {
        let input = match &state {
            State::Stateless(context) => Value::Array(context.clone()),
            _ => std::mem::take(&mut new_items),
        };
        let body = request_body(task, &state, input);
        let mut response = match socket.as_deref_mut() {
            Some(socket) => before_deadline(deadline, socket.create(&body)).await?,
            None => before_deadline(deadline, client.create(&body)).await?,
        };
        if task.background {
            response = before_deadline(deadline, client.wait(response)).await?;
        }
        response::check_status(&response)?;
        let output = response::output_items(&response)?;
        let calls = response::function_calls(output)?;
        let approval_requests = response::approval_requests(output);
        eprintln!(
            "round {round}/{}: {} function call(s), {} approval request(s)",
            task.max_rounds,
            calls.len(),
            approval_requests.len()
        );
        if calls.is_empty()
            && approval_requests.is_empty()
            && !response::continues_after_program(output)
        {
            let text = response::final_answer(output)?;
            return match &task.text_format {
                Some(format) => response::structured_answer(text, format),
                None => Ok(text),
            };
        }
        // The outputs of these calls, or the program's continuation, could never be sent.
        if round == task.max_rounds {
            return Err(Outcome::failed("max_rounds", "model kept calling tools"));
        }

        let mut outputs = Vec::with_capacity(calls.len());
        for call in &calls {
            let output = tools.handle(call, deadline).await?;
            eprintln!("  {} {} -> {output}", call.call_id, call.name);
            outputs.push(match call.kind {
                response::CallKind::Computer => response::computer_call_output(
                    call,
                    &output,
                    tools.checks_approved(&call.call_id),
                ),
                response::CallKind::ToolSearch => {
                    response::tool_search_output(call, &output, tools.catalogue())
                }
                _ => response::function_call_output(call, output),
            });
        }
        for request in approval_requests {
            let decision =
                before_deadline(deadline, async { Ok(tools.decide(request).await) }).await?;
            eprintln!("  {} -> approve: {}", request["id"], decision["approve"]);
            outputs.push(decision);
        }
        match &mut state {
            State::Chained(previous_response_id) => {
                let id = response["id"]
                    .as_str()
                    .ok_or_else(|| Outcome::failed("api_error", "response has no id"))?;
                *previous_response_id = Some(id.to_string());
                new_items = Value::Array(outputs);
            }
            State::Stateless(context) => {
                context.extend(response::replay_items(output));
                context.extend(outputs);
                if task.compact_after_rounds == Some(round) {
                    let compacted =
                        before_deadline(deadline, compact(task, client, context)).await?;
                    *context = compacted;
                }
            }
            State::Conversation(_) => new_items = Value::Array(outputs),
        }
    }
    Err(Outcome::failed(
        "max_rounds",
        "max_rounds allows no model request",
    ))
}

/// The context compacted by `POST /responses/compact`: its output (the user messages
/// and one `compaction` item) replaces everything sent so far, verbatim.
async fn compact(
    task: &Task,
    client: &ResponsesClient,
    context: &[Value],
) -> Result<Vec<Value>, Outcome> {
    let mut body = json!({"model": task.model, "input": context});
    if let Some(instructions) = &task.instructions {
        body["instructions"] = json!(instructions);
    }
    let compacted = client.compact(&body).await?;
    let output = compacted["output"]
        .as_array()
        .ok_or_else(|| Outcome::failed("api_error", "the compacted response has no output"))?;
    eprintln!(
        "  compacted {} item(s) into {}",
        context.len(),
        output.len()
    );
    Ok(output.iter().map(response::without_nulls).collect())
}

/// How the context is carried from one request to the next (the task's `state`).
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// `previous_response_id`: stored responses, chained by the id of the last one.
    Chained(Option<String>),
    /// `stateless`: `store: false`, and every item so far is sent on each request: the
    /// input, then each round's output items and call outputs.
    Stateless(Vec<Value>),
    /// `conversation`: the id of a server-side conversation that accumulates the items.
    Conversation(String),
}

/// The body of one `POST /responses`; instructions and tools are resent every time
/// because neither `previous_response_id` nor a conversation carries them.
fn request_body(task: &Task, state: &State, input: Value) -> Value {
    let mut body = json!({
        "model": task.model,
        "input": input,
        "tools": task.tools,
        "parallel_tool_calls": true,
    });
    if let Some(instructions) = &task.instructions {
        body["instructions"] = json!(instructions);
    }
    match state {
        State::Chained(None) => {}
        State::Chained(Some(id)) => body["previous_response_id"] = json!(id),
        State::Stateless(_) => {
            body["store"] = json!(false);
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        State::Conversation(id) => body["conversation"] = json!(id),
    }
    if task.stream {
        body["stream"] = json!(true);
    }
    if task.background {
        body["background"] = json!(true);
    }
    // Structured output and server-side compaction are asked of every response.
    if let Some(format) = &task.text_format {
        body["text"] = json!({"format": format});
    }
    if let Some(management) = &task.context_management {
        body["context_management"] = management.clone();
    }
    // What the task asks to include, beside the mode's own.
    if !task.include.is_empty() {
        let mut include: Vec<Value> = body["include"].as_array().cloned().unwrap_or_default();
        for value in &task.include {
            if !include.iter().any(|v| v == value) {
                include.push(json!(value));
            }
        }
        body["include"] = Value::Array(include);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str) -> Task {
        serde_json::from_value(json!({
            "contract": 1, "case": "c", "model": "gpt-5",
            "input": [{"role": "user", "content": "hi"}],
            "instructions": "Be brief.",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            "approval_required": [], "state": state, "stream": false, "background": false,
            "max_rounds": 3, "principal": "user-1"
        }))
        .unwrap()
    }

    #[test]
    fn result_lines() {
        assert_eq!(
            result_line(&Outcome::Completed {
                output_text: "A7: 8".into()
            }),
            r#"{"status":"completed","output_text":"A7: 8"}"#
        );
        assert_eq!(
            result_line(&Outcome::failed("max_rounds", "model kept calling tools")),
            r#"{"status":"failed","reason":"max_rounds","detail":"model kept calling tools"}"#
        );
    }

    #[test]
    fn chained_follow_up_request() {
        let task = task("previous_response_id");
        let outputs = json!([{"type": "function_call_output", "call_id": "call_1", "output": "1"}]);
        let state = State::Chained(Some("resp_1".into()));
        assert_eq!(
            request_body(&task, &state, outputs.clone()),
            json!({
                "model": "gpt-5", "input": outputs, "tools": task.tools,
                "parallel_tool_calls": true, "instructions": "Be brief.",
                "previous_response_id": "resp_1"
            })
        );
        let first = request_body(&task, &State::Chained(None), task.input.clone());
        assert!(first.get("previous_response_id").is_none());
    }

    #[test]
    fn stateless_request() {
        let task = task("stateless");
        let body = request_body(&task, &State::Stateless(vec![]), json!([]));
        assert_eq!(body["store"], json!(false));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["instructions"], "Be brief.");
        assert!(body.get("previous_response_id").is_none());
    }

    #[test]
    fn conversation_request() {
        let task = task("conversation");
        let body = request_body(&task, &State::Conversation("conv_1".into()), json!([]));
        assert_eq!(body["conversation"], "conv_1");
        assert_eq!(body["input"], json!([]));
        for absent in ["previous_response_id", "store", "stream", "background"] {
            assert!(body.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn stream_and_background_flags() {
        let mut task = task("previous_response_id");
        task.stream = true;
        task.background = true;
        let body = request_body(&task, &State::Chained(None), json!("hi"));
        assert_eq!(body["stream"], true);
        assert_eq!(body["background"], true);
        assert!(body.get("store").is_none(), "store defaults to true");
    }

    fn unreachable_env() -> ControllerEnv {
        ControllerEnv {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: "sk-test".into(),
            tools_url: "http://127.0.0.1:9".into(),
        }
    }

    #[tokio::test]
    async fn a_step_past_the_deadline_is_not_started_and_one_in_flight_is_cancelled() {
        let started = std::sync::atomic::AtomicBool::new(false);
        let past = Some(Instant::now() - Duration::from_millis(1));
        let step = async {
            started.store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(1)
        };
        assert_eq!(
            before_deadline(past, step).await,
            Err(Outcome::failed("timeout", "deadline_ms passed"))
        );
        assert!(!started.load(std::sync::atomic::Ordering::Relaxed));
        let soon = Some(Instant::now() + Duration::from_millis(20));
        let slow = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(2)
        };
        assert!(matches!(
            before_deadline(soon, slow).await,
            Err(Outcome::Failed { reason, .. }) if reason == "timeout"
        ));
        assert_eq!(before_deadline(None, async { Ok(3) }).await, Ok(3));
    }

    #[tokio::test]
    async fn unsupported_state_makes_no_request() {
        assert_eq!(
            run(&unreachable_env(), &task("websocket")).await,
            Outcome::failed("unsupported", "state mode \"websocket\" is not supported")
        );
    }

    #[tokio::test]
    async fn background_over_a_websocket_is_unsupported() {
        let mut task = task("previous_response_id");
        task.websocket = true;
        task.stream = true;
        task.background = true;
        assert!(matches!(
            run(&unreachable_env(), &task).await,
            Outcome::Failed { reason, .. } if reason == "unsupported"
        ));
    }

    #[tokio::test]
    async fn a_websocket_task_connects_to_the_socket_url() {
        let mut task = task("stateless");
        task.websocket = true;
        task.stream = true;
        // Nothing listens there: the connection fails, and says where it tried.
        let Outcome::Failed { reason, detail } = run(&unreachable_env(), &task).await else {
            panic!("completed without a server");
        };
        assert_eq!(reason, "api_error");
        assert!(
            detail.starts_with("connecting to ws://127.0.0.1:9/v1/responses"),
            "{detail}"
        );
    }

    #[tokio::test]
    async fn stateless_background_is_unsupported() {
        let mut task = task("stateless");
        task.background = true;
        assert!(matches!(
            run(&unreachable_env(), &task).await,
            Outcome::Failed { reason, .. } if reason == "unsupported"
        ));
    }
}
