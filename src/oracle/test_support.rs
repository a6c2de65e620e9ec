//! Test support for the oracle's unit tests: a case run built by hand, request by
//! request, as plain data. Requests go through the fake server's engine directly (no
//! HTTP, no controller process), which records the transcript exactly as a real run
//! would; the test then judges it. A test writes a correct run, or the same run with one
//! defect, in a few lines:
//!
//! ```ignore
//! let run = Run::case("correlation/05-parallel-same-tool", StateMode::Stateless);
//! let first = run.first_body();
//! let response = run.create(&first);
//! let outputs = run.execute(&response);           // each call on the backend
//! run.create(&run.next_body(&first, &response, &outputs));
//! let judgement = run.judge_completed();           // the final message's text
//! assert_passes(&judgement, "call-id/result-matches");
//! ```

use std::sync::Arc;

use serde_json::{Value, json};

use super::{CheckResult, CheckVerdict, Judgement, judge};
use crate::scenario::task_json;
use crate::scenario::{Scenario, StateMode, final_message_text};
use crate::server::{EngineRequest, HeaderMap, ReplyBody, Session};
use crate::transcript::{ControllerResult, Transcript, Unfinished};
use hyper::header::HeaderName;

/// One case run, built request by request.
pub struct Run {
    session: Session,
    state: StateMode,
    task: Value,
}

impl Run {
    /// A run of catalogue case `id` in `state`.
    pub fn case(id: &str, state: StateMode) -> Self {
        Self::of(crate::scenario::catalogue_scenario(id), state)
    }

    /// A run of catalogue case `id` in `state`, played through as a correct controller
    /// plays it (see [`Run::correct`]).
    pub fn played(id: &str, state: StateMode) -> Self {
        let run = Self::case(id, state);
        run.correct();
        run
    }

    /// A run of a scenario given as YAML.
    pub fn yaml(yaml: &str, state: StateMode) -> Self {
        let scenario = crate::scenario::parse(std::path::Path::new("test.yaml"), yaml)
            .unwrap_or_else(|err| panic!("{err}"));
        Self::of(scenario, state)
    }

    /// A run of one request answered at once, without tools: nothing to chain or pair.
    pub fn answer_only(state: StateMode) -> Self {
        Self::yaml(
            r#"
format: 1
id: demo/01-answer
summary: One turn, no tools.
level: must
task: {input: "Hi", tools: [get_stock]}
script:
  - output: [{message: "Hello."}]
expect: {outcome: completed}
"#,
            state,
        )
    }

    /// A run of a scenario built in the test.
    pub fn of(scenario: Scenario, state: StateMode) -> Self {
        let task = task_json(&scenario, state);
        Self {
            session: Session::new(Arc::new(scenario), state),
            state,
            task,
        }
    }

    /// Sends a request to the engine; the reply's status and JSON body (the events, for
    /// a stream, after the whole stream was "written").
    pub fn send(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.send_with(method, path, body, &[])
    }

    /// [`Run::send`] with more headers (e.g. `x-stainless-retry-count` for an SDK retry)
    /// and a query in `path` (`/v1/responses/x?stream=true`).
    pub fn send_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        self.exchange(method, path, body, headers, &mut |_, _, _| {})
    }

    /// A streamed create that calls `during(run, index, event)` right after each event is
    /// written, so a test can act mid-stream (run a call before its `output_item.done`).
    /// Returns the events written.
    pub fn stream_with(
        &self,
        body: &Value,
        during: &mut dyn FnMut(&Run, usize, &Value),
    ) -> Vec<Value> {
        match self.exchange("POST", "/v1/responses", Some(body), &[], during) {
            (_, Value::Array(events)) => events,
            (status, other) => panic!("expected a stream, got {status}: {other}"),
        }
    }

    /// Sends a request as a front end would: a stream is written event by event (up to a
    /// scripted cut), each reported to the recorder, then `during` is called.
    fn exchange(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
        during: &mut dyn FnMut(&Run, usize, &Value),
    ) -> (u16, Value) {
        let mut all = HeaderMap::new();
        let key = format!("Bearer {}", self.session.api_key());
        all.insert("authorization", key.parse().expect("a header value"));
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).expect("a header name");
            all.append(name, value.parse().expect("a header value"));
        }
        let (path, query) = match path.split_once('?') {
            Some((path, query)) => (path, Some(query.to_owned())),
            None => (path, None),
        };
        let reply = self.session.handle(EngineRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            query,
            headers: all,
            body: body.map(|b| b.to_string().into()).unwrap_or_default(),
        });
        let body = match reply.body {
            ReplyBody::Json(bytes) => serde_json::from_slice(&bytes).expect("a JSON reply"),
            ReplyBody::Raw { text, .. } => Value::String(text),
            ReplyBody::Stream {
                events, progress, ..
            } => {
                let written: Vec<Value> = (0..events.written()).map(|i| events.event(i)).collect();
                for (index, event) in written.iter().enumerate() {
                    progress.events_sent(index..index + 1, &events);
                    during(self, index, event);
                }
                progress.ended();
                Value::Array(written)
            }
            ReplyBody::Drop => Value::Null,
        };
        (reply.status, body)
    }

    /// `POST /v1/responses`; the Response object (or the error body). A streamed answer
    /// gives the terminal event's response (null when the stream broke off).
    pub fn create(&self, body: &Value) -> Value {
        let (_, answer) = self.send("POST", "/v1/responses", Some(body));
        match answer {
            Value::Array(events) => events
                .last()
                .filter(|e| {
                    e["type"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("response."))
                })
                .and_then(|e| e.get("response"))
                .cloned()
                .unwrap_or(Value::Null),
            other => other,
        }
    }

    /// The first request a correct controller sends for the task in this state mode.
    pub fn first_body(&self) -> Value {
        let task = &self.task;
        let mut body =
            json!({"model": task["model"], "tools": task["tools"], "input": task["input"]});
        if let Some(instructions) = task.get("instructions") {
            body["instructions"] = instructions.clone();
        }
        if task["stream"] == true {
            body["stream"] = json!(true);
        }
        match self.state {
            StateMode::Stateless => {
                body["store"] = json!(false);
                body["include"] = json!(["reasoning.encrypted_content"]);
                if let Value::String(text) = &task["input"] {
                    body["input"] = json!([{"role": "user", "content": text}]);
                }
            }
            StateMode::Conversation => {
                let (_, conversation) = self.send("POST", "/v1/conversations", Some(&json!({})));
                body["conversation"] = conversation["id"].clone();
            }
            StateMode::Replay => {
                if let Value::String(text) = &task["input"] {
                    body["input"] = json!([{"role": "user", "content": text}]);
                }
            }
            StateMode::PreviousResponseId => {}
        }
        body
    }

    /// The request a correct controller sends after `response`, which answered `sent`,
    /// carrying `outputs`: chained with `previous_response_id`, in the same conversation,
    /// or (stateless) replaying the last input and every output item.
    pub fn next_body(&self, sent: &Value, response: &Value, outputs: &[Value]) -> Value {
        let mut body = sent.clone();
        match self.state {
            StateMode::Stateless | StateMode::Replay => {
                let mut input = sent["input"].as_array().cloned().unwrap_or_default();
                input.extend(response["output"].as_array().cloned().unwrap_or_default());
                input.extend(outputs.iter().cloned());
                body["input"] = json!(input);
            }
            StateMode::PreviousResponseId => {
                body["previous_response_id"] = response["id"].clone();
                body["input"] = json!(outputs);
            }
            StateMode::Conversation => body["input"] = json!(outputs),
        }
        body
    }

    /// Runs each call of `response` on the backend as a correct controller does (an
    /// approval first where the task requires one) and returns its outputs, each with
    /// the call's `caller` when a program made it.
    pub fn execute(&self, response: &Value) -> Vec<Value> {
        self.execute_calls(&calls(response))
    }

    /// [`Run::execute`] for the calls given.
    pub fn execute_calls(&self, calls: &[Value]) -> Vec<Value> {
        calls
            .iter()
            .map(|call| {
                let kind = crate::wire::call_kind::of_call(call["type"].as_str().unwrap_or_default())
                    .unwrap_or(crate::wire::call_kind::FUNCTION);
                let name = kind.tool_name(call);
                // A custom tool call runs with its text `input`.
                if call["type"] == "custom_tool_call" {
                    let body = json!({"call_id": call["call_id"], "input": call["input"], "principal": self.task["principal"]});
                    return self.call_tool(call, &body);
                }
                // A shell call its `action`, a patch its `operation`: objects as they came.
                let (field, arguments) = match kind.input(call) {
                    Value::String(text) => (
                        "arguments",
                        serde_json::from_str(&text).unwrap_or(Value::Null),
                    ),
                    input => (kind.input_field, input),
                };
                let mut body = json!({"call_id": call["call_id"], "principal": self.task["principal"]});
                body[field] = arguments.clone();
                let gated = self.task["approval_required"]
                    .as_array()
                    .is_some_and(|names| names.iter().any(|n| n == name));
                if gated {
                    let (_, decision) = self.send(
                        "POST",
                        "/tools/approvals",
                        Some(&json!({"call_id": call["call_id"], "name": name, field: arguments, "principal": self.task["principal"]})),
                    );
                    if decision["approved"] != true {
                        let reason = format!("approval denied: {}", decision["reason"].as_str().unwrap_or_default());
                        return output(call, &json!({"error": reason}).to_string());
                    }
                    body["approval"] = decision["approval"].clone();
                }
                self.call_tool(call, &body)
            })
            .collect()
    }

    /// Sends `call` to the tool backend with request `body` and relays the answer as
    /// the call's output: its result, or its error as an error output.
    pub fn call_tool(&self, call: &Value, body: &Value) -> Value {
        let kind = crate::wire::call_kind::of_call(call["type"].as_str().unwrap_or_default())
            .unwrap_or(crate::wire::call_kind::FUNCTION);
        let name = kind.tool_name(call);
        let (status, answer) = self.send("POST", &format!("/tools/call/{name}"), Some(body));
        let text = if status == 200 {
            answer["result"].to_string()
        } else {
            json!({"error": answer["error"]["message"]}).to_string()
        };
        output(call, &text)
    }

    /// Plays on from request `body` as a correct controller does, until a response
    /// without calls (or one not completed); the last request and its response.
    pub fn play_from(&self, mut body: Value) -> (Value, Value) {
        loop {
            let response = self.create(&body);
            if response["status"] != "completed" || calls(&response).is_empty() {
                return (body, response);
            }
            let outputs = self.execute(&response);
            body = self.next_body(&body, &response, &outputs);
        }
    }

    /// Plays the whole script as a correct controller would and returns the responses:
    /// every call answered, and on past a program's output to the model's message.
    pub fn correct(&self) -> Vec<Value> {
        let mut body = self.first_body();
        let mut responses = Vec::new();
        loop {
            let response = self.create(&body);
            responses.push(response.clone());
            let kinds: Vec<&str> = response["output"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| item["type"].as_str())
                .collect();
            let program_paused = kinds.contains(&"program_output") && !kinds.contains(&"message");
            if response["status"] != "completed" || (calls(&response).is_empty() && !program_paused)
            {
                return responses;
            }
            let outputs = self.execute(&response);
            body = self.next_body(&body, &response, &outputs);
        }
    }

    /// Judges the run with the controller's result line.
    pub fn judge(self, result: Value) -> Judgement {
        self.judge_edited(result, |_| {})
    }

    /// [`Run::judge`] after `edit` changed the transcript (e.g. moved an exchange's
    /// arrival time, which a run through the engine takes from the wall clock).
    pub fn judge_edited(self, result: Value, edit: impl FnOnce(&mut Transcript)) -> Judgement {
        let mut transcript = self.session.transcript();
        edit(&mut transcript);
        match ControllerResult::from_value(&result) {
            Ok(result) => transcript.result = Some(result),
            Err(err) => {
                transcript.unfinished = Some(Unfinished::NoResult {
                    why: err.to_string(),
                })
            }
        }
        judge(self.session.scenario(), self.state, &transcript)
    }

    /// Judges the run as killed at the case timeout after `after_ms`.
    pub fn judge_timed_out(self, after_ms: u64) -> Judgement {
        let mut transcript = self.session.transcript();
        transcript.unfinished = Some(Unfinished::TimedOut { after_ms });
        judge(self.session.scenario(), self.state, &transcript)
    }

    /// Judges the run as stopped by loopcheck past its request limit.
    pub fn judge_stopped_over_limit(self) -> Judgement {
        let mut transcript = self.session.transcript();
        let (requests, limit) = self.session.model_requests();
        transcript.unfinished = Some(Unfinished::StoppedOverLimit {
            requests,
            budget: limit.budget,
            limit: limit.limit,
        });
        judge(self.session.scenario(), self.state, &transcript)
    }

    /// Judges the run reporting the script's final message as the answer.
    pub fn judge_completed(self) -> Judgement {
        let text = final_message_text(self.session.scenario()).unwrap_or_default();
        self.judge(json!({"status": "completed", "output_text": text}))
    }

    /// Judges the run reporting a failure with `reason`.
    pub fn judge_failed(self, reason: &str) -> Judgement {
        self.judge(json!({"status": "failed", "reason": reason}))
    }
}

/// Plays the first round of catalogue case `id` in `previous_response_id` mode:
/// `answer` does what the controller does with the first response's calls (on the
/// backend too) and returns the outputs it sends, and they are sent. The run, ready to
/// be judged, and the calls.
pub fn first_round(
    id: &str,
    answer: impl FnOnce(&Run, &[Value]) -> Vec<Value>,
) -> (Run, Vec<Value>) {
    let run = Run::case(id, StateMode::PreviousResponseId);
    let first = run.first_body();
    let response = run.create(&first);
    let issued = calls(&response);
    let outputs = answer(&run, &issued);
    run.create(&run.next_body(&first, &response, &outputs));
    (run, issued)
}

/// [`first_round`] of a case whose second response is the answer, judged as reporting
/// the final message.
pub fn answer_first_round(
    id: &str,
    answer: impl FnOnce(&Run, &[Value]) -> Vec<Value>,
) -> Judgement {
    first_round(id, answer).0.judge_completed()
}

/// The call items of a response (`function_call`, `custom_tool_call`).
pub fn calls(response: &Value) -> Vec<Value> {
    response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| {
            crate::wire::call_kind::of_call(item["type"].as_str().unwrap_or_default())
                .is_some_and(|kind| kind.runs_on_client())
        })
        .cloned()
        .collect()
}

/// The answer of the call's kind (`function_call_output`, `custom_tool_call_output`) to
/// `call` with `text` (echoing its `caller`).
/// A shell or patch call's answer carries the result in its own fields, and a failure
/// (`text` an `{"error": ...}`) as a non-zero exit or a `failed` status.
pub fn output(call: &Value, text: &str) -> Value {
    use crate::wire::call_kind::{APPLY_PATCH, FUNCTION, SHELL, of_call};
    let kind = of_call(call["type"].as_str().unwrap_or_default()).unwrap_or(FUNCTION);
    let parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let failure = parsed
        .as_object()
        .filter(|fields| fields.len() == 1)
        .and_then(|fields| fields.get("error"))
        .map(|reason| reason.as_str().map_or(reason.to_string(), str::to_owned));
    let mut item = match (kind, failure) {
        (SHELL, Some(reason)) => {
            json!({"type": kind.answer, "call_id": call["call_id"], "output": [
                {"stdout": "", "stderr": reason, "outcome": {"type": "exit", "exit_code": 1}}
            ]})
        }
        (SHELL, None) => json!({"type": kind.answer, "call_id": call["call_id"], "output": parsed}),
        (APPLY_PATCH, Some(reason)) => {
            json!({"type": kind.answer, "call_id": call["call_id"], "status": "failed", "output": reason})
        }
        (APPLY_PATCH, None) => {
            json!({"type": kind.answer, "call_id": call["call_id"], "status": parsed["status"], "output": parsed["output"]})
        }
        _ => {
            let mut item = json!({"type": kind.answer, "output": text});
            item[kind.answer_ref] = call["call_id"].clone();
            item
        }
    };
    if let Some(caller) = call.get("caller").filter(|c| !c.is_null()) {
        item["caller"] = caller.clone();
    }
    item
}

/// A check's result; panics listing the checks judged when it is absent.
pub fn check<'a>(judgement: &'a Judgement, id: &str) -> &'a CheckResult {
    judgement
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id} was judged:\n{}", describe(judgement)))
}

/// Every check with its verdict and message, for assertion messages.
pub fn describe(judgement: &Judgement) -> String {
    judgement
        .checks
        .iter()
        .map(|c| format!("  {} {}: {}", c.verdict.as_str(), c.id, c.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts the check passed.
#[track_caller]
pub fn assert_passes(judgement: &Judgement, id: &str) {
    let found = check(judgement, id);
    assert_eq!(
        found.verdict,
        CheckVerdict::Pass,
        "{id} must pass:\n{}",
        describe(judgement)
    );
}

/// Asserts the check failed (`fail`, or `non-strict` for a SHOULD) with `needle` in its
/// message.
#[track_caller]
pub fn assert_fails(judgement: &Judgement, id: &str, needle: &str) {
    let found = check(judgement, id);
    assert!(
        matches!(found.verdict, CheckVerdict::Fail | CheckVerdict::NonStrict),
        "{id} must fail:\n{}",
        describe(judgement)
    );
    assert!(
        found.message.contains(needle),
        "{id}'s message lacks {needle:?}: {}",
        found.message
    );
}

/// Asserts the check was not judged at all (the run gave it nothing to judge).
#[track_caller]
pub fn assert_not_judged(judgement: &Judgement, id: &str) {
    assert!(
        judgement.checks.iter().all(|c| c.id != id),
        "{id} must not be judged here:\n{}",
        describe(judgement)
    );
}

/// Asserts each of the checks passed.
#[track_caller]
pub fn assert_all_pass(judgement: &Judgement, ids: &[&str]) {
    for id in ids {
        assert_passes(judgement, id);
    }
}

/// Asserts the check failed with each of `needles` in its message.
#[track_caller]
pub fn assert_fails_with(judgement: &Judgement, id: &str, needles: &[&str]) {
    for needle in needles {
        assert_fails(judgement, id, needle);
    }
}

/// Asserts none of the checks was judged.
#[track_caller]
pub fn assert_none_judged(judgement: &Judgement, ids: &[&str]) {
    for id in ids {
        assert_not_judged(judgement, id);
    }
}
