//! `stream`: streams requested when the task says so, calls executed only once their
//! arguments are done, and a broken stream never taken as an answer.

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;

/// The `stream` checks (streamed tasks only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !f.scenario.task.stream || f.requests.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut problems = f.requests_lacking(
        |body| body.get("stream") == Some(&Value::Bool(true)),
        "does not send `stream: true`: the task asks for streaming",
    );
    if let Some(served) = f.stream_ending_missed() {
        problems.push(format!(
            "so {} came whole, as JSON, and the stream's scripted ending (a cut connection or an error event) never reached the controller: how the loop ended is judged once it streams",
            f.response_label(served)
        ));
    }
    out.push(checks::STREAM_REQUESTED.judge(problems, "every request asks for a stream"));

    // Calls of a broken or incomplete stream are judged by
    // `terminal/unfinished-not-executed` alone.
    let mut early = Vec::new();
    let mut judged = 0;
    for call in f.actionable_calls() {
        let served = &f.served[call.response];
        let Some(record) = &served.exchange.stream else {
            continue;
        };
        for execution in f.executions_of(&call.call_id) {
            judged += 1;
            match record.call_done_seq.get(&call.call_id) {
                Some(done) if execution.seq > *done => {}
                Some(_) => early.push(format!(
                    "{} was executed before its `response.output_item.done` was sent: a call may only run once its arguments are complete",
                    call.describe()
                )),
                None => early.push(format!(
                    "{} was executed, but its `response.output_item.done` was never sent: the controller ran it on partial arguments",
                    call.describe()
                )),
            }
        }
    }
    if judged > 0 {
        out.push(checks::STREAM_EXECUTED_AFTER_DONE.judge(
            early,
            format!("{judged} execution(s), each after its call's arguments were done"),
        ));
    }

    let broken: Vec<usize> = (0..f.served.len())
        .filter(|&i| f.served[i].status == "broken")
        .collect();
    if let Some(&last) = broken.last() {
        let answered_later = f.served.len() > last + 1;
        let problems = match f.result {
            Some(result) if result.status == "completed" && !answered_later => {
                let record = f.served[last].exchange.stream.as_ref();
                let how = match record.and_then(|r| r.last_type.as_deref()) {
                    Some("error") => "ended in an `error` event".to_owned(),
                    _ => format!(
                        "was cut after {} of its events",
                        record.map_or(0, |r| r.sent)
                    ),
                };
                vec![format!(
                    "the stream of {} {how}, and the controller reported completed: a broken stream is never an answer",
                    f.response_label(last)
                )]
            }
            _ => Vec::new(),
        };
        out.push(
            checks::STREAM_BROKEN_NOT_ANSWER
                .judge(problems, "a broken stream was not taken as an answer"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{PreviousResponseId, Stateless};

    const SINGLE: &str = "stream/01-single-call";
    const CUT: &str = "stream/02-cut-before-terminal";
    const DELAYED: &str = "stream/03-delayed-call-executed-after-done";
    const ERROR_FLAT: &str = "stream/04-error-event-flat";
    const ERROR_NESTED: &str = "stream/05-error-event-nested";

    const ALL: [&str; 3] = [
        "stream/requested",
        "stream/executed-after-done",
        "stream/broken-not-answer",
    ];

    /// A streamed get_order call whose stream ends in an `error` event right after the
    /// last argument delta (events: created, in_progress, output_item.added, six deltas):
    /// the deltas parse as JSON, but the call's `output_item.done` is never sent.
    const ERROR_MID_CALL: &str = r#"
format: 1
id: demo/01-error-mid-call
summary: A streamed call broken off by an error event before its output_item.done.
level: must
task: {input: "Where is my order O-4417?", tools: [get_order], stream: true}
tools:
  get_order:
    default: {order_id: O-4417, status: shipped}
script:
  - output: [{call: {name: get_order, arguments: {order_id: O-4417}}}]
    stream: {delta_size: 4, error: {after: 9, shape: nested}}
expect: {outcome: failed, reason: api_error}
"#;

    /// The events of the streamed answer to `body`.
    fn events(run: &Run, body: &Value) -> Vec<Value> {
        let (status, answer) = run.send("POST", "/v1/responses", Some(body));
        assert_eq!(status, 200, "{answer}");
        answer.as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn a_correct_streamed_run_passes_every_stream_check() {
        for case in [SINGLE, DELAYED] {
            for state in [PreviousResponseId, Stateless] {
                let run = Run::played(case, state);
                let judgement = run.judge_completed();
                assert_all_pass(
                    &judgement,
                    &["stream/requested", "stream/executed-after-done"],
                );
                assert_not_judged(&judgement, "stream/broken-not-answer");
            }
        }
    }

    #[test]
    fn stream_checks_are_not_judged_for_a_task_that_does_not_stream() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        let judgement = run.judge_completed();
        for id in ALL {
            assert_not_judged(&judgement, id);
        }
    }

    #[test]
    fn requested_fails_a_controller_that_never_streams() {
        let run = Run::case(SINGLE, PreviousResponseId);
        let mut first = run.first_body();
        first.as_object_mut().unwrap().remove("stream");
        let response = run.create(&first);
        run.create(&run.next_body(&first, &response, &run.execute(&response)));
        let judgement = run.judge_completed();
        assert_fails_with(
            &judgement,
            "stream/requested",
            &[
                "request 1 does not send `stream: true`: the task asks for streaming",
                "request 2 does not send `stream: true`",
            ],
        );
        // Nothing was streamed, so no execution can have come too early.
        assert_not_judged(&judgement, "stream/executed-after-done");
    }

    #[test]
    fn executed_after_done_fails_a_call_run_before_its_output_item_done() {
        let run = Run::case(SINGLE, PreviousResponseId);
        let first = run.first_body();
        // The defect: the call runs on `function_call_arguments.done`, one event before
        // its `output_item.done`.
        let mut call = Value::Null;
        let events = run.stream_with(&first, &mut |run, _, event| match event["type"].as_str() {
            Some("response.output_item.added") => call = event["item"].clone(),
            Some("response.function_call_arguments.done") => {
                let arguments: Value =
                    serde_json::from_str(event["arguments"].as_str().unwrap()).unwrap();
                let name = call["name"].as_str().unwrap();
                run.send(
                    "POST",
                    &format!("/tools/call/{name}"),
                    Some(&json!({"call_id": call["call_id"], "arguments": arguments, "principal": "user-1"})),
                );
            }
            _ => {}
        });
        let response = &events.last().unwrap()["response"];
        let outputs: Vec<Value> = calls(response).iter().map(|c| output(c, "{}")).collect();
        run.create(&run.next_body(&first, response, &outputs));
        assert_fails(
            &run.judge_completed(),
            "stream/executed-after-done",
            "was executed before its `response.output_item.done` was sent",
        );
    }

    #[test]
    fn executed_after_done_leaves_a_call_of_a_broken_stream_to_unfinished_not_executed() {
        let run = Run::yaml(ERROR_MID_CALL, PreviousResponseId);
        let events = events(&run, &run.first_body());
        assert_eq!(events.last().unwrap()["type"], "error");
        // The defect: the call runs as soon as its argument deltas parse as JSON.
        let added = events
            .iter()
            .find(|e| e["type"] == "response.output_item.added")
            .unwrap();
        let deltas: String = events
            .iter()
            .filter(|e| e["type"] == "response.function_call_arguments.delta")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        let arguments: Value = serde_json::from_str(&deltas).unwrap();
        run.send(
            "POST",
            "/tools/call/get_order",
            Some(&json!({"call_id": added["item"]["call_id"], "arguments": arguments, "principal": "user-1"})),
        );
        let judgement = run.judge_failed("api_error");
        assert_fails(
            &judgement,
            "terminal/unfinished-not-executed",
            "came in a response with status 'broken' and was executed anyway",
        );
        assert_not_judged(&judgement, "stream/executed-after-done");
        assert_passes(&judgement, "stream/broken-not-answer");
    }

    #[test]
    fn broken_not_answer_passes_an_error_event_reported_as_failed() {
        for case in [ERROR_FLAT, ERROR_NESTED] {
            let run = Run::case(case, PreviousResponseId);
            let first = run.first_body();
            let response = run.create(&first);
            let second = run.next_body(&first, &response, &run.execute(&response));
            assert_eq!(events(&run, &second).last().unwrap()["type"], "error");
            assert_passes(&run.judge_failed("api_error"), "stream/broken-not-answer");
        }
    }

    #[test]
    fn broken_not_answer_fails_the_text_before_an_error_event_reported_as_the_answer() {
        let run = Run::case(ERROR_FLAT, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let second = run.next_body(&first, &response, &run.execute(&response));
        let partial: String = events(&run, &second)
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        let judgement = run.judge(json!({"status": "completed", "output_text": partial}));
        assert_fails_with(
            &judgement,
            "stream/broken-not-answer",
            &[
                "the stream of response 2 (resp_",
                "ended in an `error` event, and the controller reported completed: a broken stream is never an answer",
            ],
        );
    }

    #[test]
    fn broken_not_answer_fails_a_cut_stream_reported_as_an_empty_answer() {
        let run = Run::case(CUT, PreviousResponseId);
        events(&run, &run.first_body());
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_fails_with(
            &judgement,
            "stream/broken-not-answer",
            &["the stream of response 1 (resp_", "was cut after "],
        );
    }

    #[test]
    fn broken_not_answer_passes_a_cut_stream_reported_as_failed() {
        let run = Run::case(CUT, PreviousResponseId);
        events(&run, &run.first_body());
        assert_passes(&run.judge_failed("api_error"), "stream/broken-not-answer");
    }
}
