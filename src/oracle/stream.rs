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
    let problems = f.requests_lacking(
        |body| body.get("stream") == Some(&Value::Bool(true)),
        "does not send `stream: true`: the task asks for streaming",
    );
    out.push(checks::STREAM_REQUESTED.judge(problems, "every request asks for a stream"));

    let mut early = Vec::new();
    let mut judged = 0;
    for call in &f.calls {
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
