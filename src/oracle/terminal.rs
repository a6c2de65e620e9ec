//! `terminal`: the final answer reported as such; incomplete and failed responses,
//! refusals and exhausted budgets reported as failures; calls beside a message handled.

use super::checks;
use super::facts::Facts;
use super::verdict::{CheckResult, CheckVerdict, Diff};
use crate::scenario::{Outcome, OutputSpec, final_message_text};
use crate::transcript::Unfinished;

/// The `terminal` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = Vec::new();
    // A loop that never asked for the stream never met the stream's ending: one finding,
    // at its cause (`stream/requested`), not a second one for how the loop then ended.
    if f.stream_ending_missed().is_some() {
        return out;
    }
    let stopped = stopped(f);
    // The expected result assumes the loop ended at the turn that ends it; a controller
    // that went on (whose reason then answers an error past the script) is judged once,
    // for going on.
    let went_on = stopped
        .as_ref()
        .is_some_and(|c| c.verdict != CheckVerdict::Pass);
    if let Some(result) = f.result.filter(|_| !went_on) {
        out.push(outcome(f, result));
        if let (Outcome::Failed, Some(reason), "failed") = (
            f.scenario.expect.outcome,
            &f.scenario.expect.reason,
            result.status.as_str(),
        ) {
            let given = result.reason.as_deref().unwrap_or_default();
            let problems = if given
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .any(|w| w == reason)
            {
                Vec::new()
            } else {
                vec![format!(
                    "the controller failed with reason '{given}': expected the recognised word '{reason}' (the words: {})",
                    crate::contract::REASON_WORDS.join(", ")
                )]
            };
            out.push(
                checks::TERMINAL_REASON.judge(problems, format!("failed with reason '{reason}'")),
            );
        }
        out.extend(refusal_text(f, result));
    }
    out.extend(structured_output(f));
    let beside: Vec<usize> = (0..f.served.len())
        .filter(|&i| {
            let s = &f.served[i];
            s.status == "completed" && s.has_message && !s.calls.is_empty() && !f.may_stop_after(i)
        })
        .collect();
    if !beside.is_empty() {
        let problems = beside
            .iter()
            .filter(|&&i| f.request_after(i).is_none())
            .map(|&i| {
                let taken = match f.result {
                    Some(r) if r.status == "completed" => ", taking the message as the answer",
                    _ => "",
                };
                format!(
                    "{} carries a message and {} call(s); the controller stopped there{taken}: expected it to answer the calls and continue",
                    f.response_label(i),
                    f.served[i].calls.len()
                )
            })
            .collect();
        out.push(checks::TERMINAL_CALLS_BESIDE_MESSAGE.judge(
            problems,
            "a message that arrived beside calls was not taken as the answer",
        ));
    }
    let unfinished: Vec<usize> = f
        .calls
        .iter()
        .enumerate()
        .filter(|(_, c)| f.served[c.response].status != "completed")
        .map(|(i, _)| i)
        .collect();
    if !unfinished.is_empty() {
        let problems = unfinished
            .iter()
            .map(|&i| &f.calls[i])
            .filter(|c| {
                f.executions_of(&c.call_id)
                    .iter()
                    .any(|execution| !ran_whole_before_the_ending(f, c, execution.seq))
            })
            .map(|c| {
                format!(
                    "{} came in a response with status '{}' and was executed anyway: a call from an unfinished response may be truncated",
                    c.describe(),
                    f.served[c.response].status
                )
            })
            .collect();
        out.push(checks::TERMINAL_UNFINISHED_NOT_EXECUTED.judge(
            problems,
            "no call from an incomplete or failed response was executed",
        ));
    }
    out.extend(stopped);
    out.extend(finished(f));
    out
}

/// Whether an execution (at order number `seq`) of a call from an unfinished response
/// is one a streaming controller could not have known to withhold: the call's
/// `response.output_item.done` had been sent with the item whole (status `completed`)
/// and the execution came after it. The stream's ending arrives only later, so a loop
/// that runs a call at its `output_item.done` (as streamed calls may be run) cannot
/// foresee it; what it must still do, stop and report the failure without sending the
/// call's output, the other `terminal` checks judge. A response served as JSON shows its
/// status with its calls, and a call cut off (its item `incomplete`) or run before its
/// `output_item.done` was never whole: none of those may run. (When the events are
/// written together, the order numbers cannot tell a run at `output_item.done` from one
/// after the ending was read, so both are allowed.)
fn ran_whole_before_the_ending(f: &Facts, call: &super::facts::IssuedCall, seq: u64) -> bool {
    let served = &f.served[call.response];
    let Some(record) = &served.exchange.stream else {
        return false;
    };
    let whole = served
        .output
        .iter()
        .any(|item| item["call_id"] == call.call_id.as_str() && item["status"] == "completed");
    whole
        && record
            .call_done_seq
            .get(&call.call_id)
            .is_some_and(|done| seq > *done)
}

/// `terminal/finished` and `terminal/result-line`: how a controller that gave no valid
/// result ended.
fn finished(f: &Facts) -> Option<CheckResult> {
    Some(match f.unfinished? {
        Unfinished::TimedOut { after_ms } => checks::TERMINAL_FINISHED.judge(
            vec![format!(
                "the controller was still running after {after_ms} ms and was killed"
            )],
            "",
        ),
        Unfinished::StartupTimedOut { after_ms } => checks::TERMINAL_FINISHED.judge(
            vec![format!(
                "the persistent controller was still starting (it had not read its case line) after {after_ms} ms and was killed"
            )],
            "",
        ),
        Unfinished::NoResult { why } => checks::TERMINAL_RESULT_LINE.judge(vec![why.clone()], ""),
        // Stopped by loopcheck, not ended by itself: `budget/max-rounds` is the finding.
        Unfinished::StoppedOverLimit { .. } => return None,
    })
}

/// Why a served incomplete response was cut short, as its scripted turn says
/// (`max_output_tokens` unless set), so a message names `content_filter` apart from a
/// token limit.
fn incomplete_reason<'s>(f: &'s Facts, served: &super::facts::Served) -> Option<&'s str> {
    if served.status != "incomplete" {
        return None;
    }
    let turn = f.scenario.script.get(served.exchange.turn?)?;
    Some(
        turn.incomplete_reason
            .as_deref()
            .unwrap_or("max_output_tokens"),
    )
}

/// What served response `index` was, and how the loop ends on it, for messages.
fn ending(f: &Facts, index: usize) -> (String, &'static str) {
    let served = &f.served[index];
    let refusal = served.output.iter().any(|item| {
        item["content"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == "refusal"))
    });
    match served.status.as_str() {
        "incomplete" => (
            format!(
                "which was incomplete ({})",
                incomplete_reason(f, served).unwrap_or("max_output_tokens")
            ),
            "an incomplete response ends the loop, reported as failed with reason 'incomplete'",
        ),
        "failed" => (
            "which failed".to_owned(),
            "a failed response ends the loop, reported as failed with reason 'response_failed'",
        ),
        "broken" => (
            "whose stream broke off".to_owned(),
            "a broken stream ends the loop, reported as failed with reason 'api_error'",
        ),
        // A refusal part refuses, whatever text sits beside it: that text is no answer.
        _ if refusal => (
            "which was a refusal".to_owned(),
            "a refusal ends the loop, reported as failed with reason 'refusal'",
        ),
        _ if served.has_message && served.calls.is_empty() => (
            "whose message was the final answer".to_owned(),
            "the loop ends there",
        ),
        _ if !served.calls.is_empty() => (
            "whose calls the round budget left no request to answer".to_owned(),
            "the loop ends there",
        ),
        _ => (
            "which had no message and no calls".to_owned(),
            "the loop ends there",
        ),
    }
}

/// `terminal/stopped-at-answer`: no request after the turn that ends the loop. A last
/// turn that repeats (`endless`) without calls or a message is an empty answer; one
/// nudge ("answer or call a tool") is defensible, as is the programmatic guide's "no
/// call and no message: continue"; asking again and again is not.
fn stopped(f: &Facts) -> Option<CheckResult> {
    let script = &f.scenario.script;
    let last_turn = script.len().checked_sub(1)?;
    let endless = script[last_turn].endless;
    // The fake answers a request past the script with an error (rule "script"); a
    // request after the last turn that its emulation rejected for another reason (one
    // chained to a broken stream's response, say) went past the end all the same.
    let overrun = f
        .requests
        .iter()
        .position(|r| r.rejected_by.as_deref() == Some("script"))
        .or_else(|| {
            let last = f
                .served
                .iter()
                .find(|s| s.exchange.turn == Some(last_turn))?;
            let next = last.request + 1;
            (!endless && next < f.requests.len()).then_some(next)
        });
    if let Some(position) = overrun {
        let problem = match f.served.iter().rposition(|s| s.request < position) {
            Some(index) => {
                let (what, rule) = ending(f, index);
                format!(
                    "{} came after {}, the last scripted turn, {what}: {rule}",
                    f.request_label(position),
                    f.response_label(index),
                )
            }
            None => format!(
                "{} came after the last scripted turn",
                f.request_label(position)
            ),
        };
        return Some(checks::TERMINAL_STOPPED_AT_ANSWER.judge(vec![problem], ""));
    }
    let repeats_empty = endless
        && !script[last_turn]
            .output
            .iter()
            .any(|item| matches!(item, OutputSpec::Call(_)));
    if repeats_empty {
        let first = f
            .served
            .iter()
            .position(|s| s.exchange.turn == Some(last_turn))?;
        let again = f.requests.len() - (f.served[first].request + 1);
        let problems = if again > 1 {
            vec![format!(
                "after {}, {}, the controller asked again {again} times: one nudge is defensible, asking again and again is not",
                f.response_label(first),
                ending(f, first).0
            )]
        } else {
            Vec::new()
        };
        return Some(
            checks::TERMINAL_STOPPED_AT_ANSWER
                .judge(problems, "stopped at the empty answer, or after one nudge"),
        );
    }
    (f.served.len() == script.len() && !endless).then(|| {
        checks::TERMINAL_STOPPED_AT_ANSWER
            .judge(Vec::new(), "no request after the last scripted turn")
    })
}

/// The refusal parts' texts of a served response: a response with a refusal part is a
/// refusal, even with text beside it; empty when it is not one.
fn refusals(served: &super::facts::Served) -> Vec<String> {
    served
        .output
        .iter()
        .filter_map(|item| item["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "refusal")
        .filter_map(|part| part["refusal"].as_str())
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// `terminal/refusal-text`: when the loop ends on a refusal, the model's refusal text
/// reaches the user through the result line (in `detail` by the contract's guidance, but
/// any text field will do): "refusal" alone leaves them guessing why.
fn refusal_text(f: &Facts, result: &crate::transcript::ControllerResult) -> Option<CheckResult> {
    if result.status != "failed" {
        return None; // an answer reported instead is `terminal/outcome`'s to judge
    }
    let last = f.served.last()?;
    let texts = refusals(last);
    if texts.is_empty() {
        return None;
    }
    // Whitespace is the controller's to reflow.
    let flat = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let reported: Vec<String> = [&result.detail, &result.output_text, &result.reason]
        .into_iter()
        .flatten()
        .map(|text| flat(text))
        .collect();
    let problems = texts
        .iter()
        .filter(|text| !reported.iter().any(|r| r.contains(&flat(text))))
        .map(|text| {
            let detail = result.detail.as_deref().map_or("no detail".to_owned(), |d| {
                format!("detail {:?}", crate::text::clip(d, 80))
            });
            format!(
                "{} was a refusal, \"{}\", but the result line ({detail}) does not carry its text: report it in `detail` so the user learns why there is no answer",
                f.response_label(f.served.len() - 1),
                crate::text::clip(text, 80)
            )
        })
        .collect();
    Some(
        checks::TERMINAL_REFUSAL_TEXT
            .judge(problems, "the result line carries the model's refusal text"),
    )
}

fn outcome(f: &Facts, result: &crate::transcript::ControllerResult) -> CheckResult {
    let expect = &f.scenario.expect;
    let last_status =
        f.served
            .last()
            .map_or("none".to_owned(), |s| match incomplete_reason(f, s) {
                Some(reason) => format!("{}', incomplete_details.reason '{reason}", s.status),
                None => s.status.clone(),
            });
    let mut problems = Vec::new();
    let mut diff = None;
    let scripted = f.scenario.script.len();
    let reached = f
        .served
        .iter()
        .any(|s| s.exchange.turn == Some(scripted - 1));
    match (expect.outcome, result.status.as_str()) {
        (Outcome::Completed, "completed") => {
            let expected = expect
                .output_text
                .clone()
                .or_else(|| final_message_text(f.scenario))
                .unwrap_or_default();
            let actual = result.output_text.clone().unwrap_or_default();
            if actual.trim() != expected.trim() {
                let never = if reached {
                    String::new()
                } else {
                    format!(
                        ", an answer the model never gave ({} of {scripted} scripted turns were served)",
                        f.served.len()
                    )
                };
                problems.push(format!(
                    "the controller reported '{}'{never}: expected the final message's text '{}'",
                    crate::text::clip(&actual, 200),
                    crate::text::clip(&expected, 200)
                ));
                diff = Some(Diff { expected, actual });
            }
        }
        (Outcome::Completed, _) => problems.push(format!(
            "the controller reported failed ({}): expected completed with the final message's text",
            result.reason.as_deref().unwrap_or("no reason")
        )),
        (Outcome::Failed, "failed") => {}
        (Outcome::Failed, _) => {
            // Say what the result line should have been: a newcomer can act on that.
            let refusal = f.served.last().map(refusals).unwrap_or_default();
            let instead = match (expect.reason.as_deref(), refusal.first()) {
                (Some("refusal"), Some(text)) => format!(
                    "; the last response is a refusal, \"{}\", not an answer: print {{\"status\": \"failed\", \"reason\": \"refusal\", \"detail\": <its text>}}",
                    crate::text::clip(text, 80)
                ),
                (Some("invalid_output"), _) => "; the last message breaks the task's text_format, so it is no answer: print {\"status\": \"failed\", \"reason\": \"invalid_output\", \"detail\": <the violation>}".to_owned(),
                (Some(reason), _) => format!(
                    ": print {{\"status\": \"failed\", \"reason\": \"{reason}\", \"detail\": \"...\"}}"
                ),
                (None, _) => String::new(),
            };
            problems.push(format!(
                "the controller reported completed with '{}', but there was no answer to report (last response status '{last_status}'{}): expected failed{}{instead}",
                crate::text::clip(result.output_text.as_deref().unwrap_or_default(), 120),
                if f.budget_reached() { ", round budget exhausted" } else { "" },
                expect.reason.as_deref().map(|r| format!(" with reason '{r}'")).unwrap_or_default()
            ));
        }
    }
    checks::TERMINAL_OUTCOME
        .judge(
            problems,
            match expect.outcome {
                Outcome::Completed => "reported the final answer".to_owned(),
                Outcome::Failed => "reported a failure".to_owned(),
            },
        )
        .with_diff(diff)
}

/// `terminal/structured-output`: with a `text_format` task, every request sends it as
/// `text.format`, and a final message that is not JSON or breaks the schema is reported
/// `failed` with a detail naming the violation, never as the answer.
fn structured_output(f: &Facts) -> Option<CheckResult> {
    let format = f.scenario.task.text_format.as_ref()?;
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        let sent = request.body.get("text").and_then(|text| text.get("format"));
        if !sent.is_some_and(|sent| crate::json_compare::json_equal(sent, format)) {
            problems.push(format!(
                "{} sends text.format {}: expected the task's text_format as it is",
                f.request_label(position),
                sent.map_or("(none)".to_owned(), |sent| crate::text::clip(
                    &sent.to_string(),
                    80
                )
                .to_string()),
            ));
        }
    }
    let name = format["name"].as_str().unwrap_or("(unnamed)");
    let violation = |text: &str| structured_violation(text, &format["schema"]);
    if let Some(result) = f.result {
        match result.status.as_str() {
            "completed" => {
                let answer = result.output_text.as_deref().unwrap_or_default();
                if let Some(violation) = violation(answer) {
                    problems.push(format!(
                        "the controller reported an answer that breaks the text_format {name}: {}; expected failed (reason invalid_output)",
                        violation.message
                    ));
                }
            }
            _ => {
                // A final message that breaks the format must be named in the detail.
                let last = f
                    .served
                    .last()
                    .filter(|s| s.status == "completed" && s.calls.is_empty());
                let text = last.map(|s| {
                    s.output
                        .iter()
                        .filter(|item| item["type"] == "message")
                        .filter_map(crate::wire::replay::message_text)
                        .collect::<String>()
                });
                if let Some(violation) = text.as_deref().and_then(violation) {
                    let detail = result.detail.as_deref().unwrap_or_default();
                    if !detail
                        .to_lowercase()
                        .contains(&violation.names.to_lowercase())
                    {
                        problems.push(format!(
                            "the controller failed without naming the violation in its detail ({:?}): expected it to name {} ({})",
                            crate::text::clip(detail, 80),
                            violation.names,
                            violation.message
                        ));
                    }
                }
            }
        }
    }
    Some(checks::TERMINAL_STRUCTURED_OUTPUT.judge(
        problems,
        format!("text_format {name} sent with every request, and no answer breaking it reported"),
    ))
}

/// How a final message breaks a text format: a message, and the word a detail must name.
struct Violation {
    message: String,
    names: String,
}

/// Why `text` is not a JSON value of `schema`, if it is not.
fn structured_violation(text: &str, schema: &serde_json::Value) -> Option<Violation> {
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            return Some(Violation {
                message: format!("the text is not JSON ({err})"),
                names: "JSON".to_owned(),
            });
        }
    };
    let validator = jsonschema::validator_for(schema).ok()?;
    let error = validator.iter_errors(&value).next()?;
    let path = error.instance_path().to_string();
    let names = match error.kind() {
        jsonschema::error::ValidationErrorKind::Required { property } => {
            property.as_str().unwrap_or_default().to_owned()
        }
        _ => path.rsplit('/').next().unwrap_or_default().to_owned(),
    };
    Some(Violation {
        message: format!("at {} {error}", if path.is_empty() { "/" } else { &path }),
        names,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::oracle::{CaseVerdict, Judgement};
    use crate::scenario::StateMode::{self, Conversation, PreviousResponseId, Stateless};

    /// A case whose answer follows a reasoning summary.
    const FINAL: &str = "terminal/04-final-answer-after-reasoning";

    /// A structured-output case played correctly, every request carrying the task's
    /// `text_format` unless `send_format` is false, judged with `result`.
    fn structured(case: &str, send_format: bool, result: Value) -> Judgement {
        let run = Run::case(case, PreviousResponseId);
        let format = crate::scenario::catalogue_scenario(case).task.text_format;
        let mut body = run.first_body();
        if send_format {
            body["text"] = json!({"format": format});
        }
        loop {
            let response = run.create(&body);
            if calls(&response).is_empty() {
                return run.judge(result);
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
    }

    #[test]
    fn structured_output_passes_a_valid_answer_and_a_named_violation() {
        let valid = structured(
            "output/04-structured-valid",
            true,
            json!({"status": "completed", "output_text": "{\"sku\":\"A7\",\"available_units\":8,\"in_stock\":true}"}),
        );
        assert_passes(&valid, "terminal/structured-output");
        let named = structured(
            "output/05-structured-missing-field",
            true,
            json!({"status": "failed", "reason": "invalid_output", "detail": "\"in_stock\" is a required property"}),
        );
        assert_passes(&named, "terminal/structured-output");
        assert_eq!(named.verdict, CaseVerdict::Pass, "{named:?}");
    }

    #[test]
    fn structured_output_fails_a_broken_answer_reported_and_a_violation_left_unnamed() {
        let reported = structured(
            "output/05-structured-missing-field",
            true,
            json!({"status": "completed", "output_text": "{\"sku\":\"A7\",\"available_units\":8}"}),
        );
        assert_fails(
            &reported,
            "terminal/structured-output",
            "reported an answer that breaks the text_format stock_report: at / \"in_stock\" is a required property",
        );
        let unnamed = structured(
            "output/06-structured-not-json",
            true,
            json!({"status": "failed", "reason": "invalid_output", "detail": "bad answer"}),
        );
        assert_fails(
            &unnamed,
            "terminal/structured-output",
            "failed without naming the violation in its detail",
        );
    }

    #[test]
    fn structured_output_fails_requests_without_the_format() {
        let judgement = structured(
            "output/04-structured-valid",
            false,
            json!({"status": "completed", "output_text": "{\"sku\":\"A7\",\"available_units\":8,\"in_stock\":true}"}),
        );
        assert_fails(
            &judgement,
            "terminal/structured-output",
            "request 1 sends text.format (none): expected the task's text_format as it is",
        );
    }

    /// [`FINAL`] played correctly and judged with the controller's `result` line.
    fn final_reported_as(result: Value) -> Judgement {
        Run::played(FINAL, PreviousResponseId).judge(result)
    }

    /// Plays the script as a correct controller does; the last request and its response.
    fn play(run: &Run) -> (Value, Value) {
        run.play_from(run.first_body())
    }

    /// Asks the model again after `response` (which answered `sent`) with a user nudge;
    /// the new request and its response.
    fn ask_again(run: &Run, sent: &Value, response: &Value) -> (Value, Value) {
        let nudge = json!({"role": "user", "content": "Please answer, or call a tool."});
        let body = run.next_body(sent, response, &[nudge]);
        let answer = run.create(&body);
        (body, answer)
    }

    /// The text of the first content part of `response`'s first output item.
    fn first_text(response: &Value) -> Value {
        response["output"][0]["content"][0]["text"].clone()
    }

    #[test]
    fn a_correct_run_passes_every_terminal_check_it_gives_something_to_judge() {
        for state in [PreviousResponseId, Stateless, Conversation] {
            let run = Run::played("terminal/01-message-beside-calls", state);
            let judgement = run.judge_completed();
            assert_all_pass(
                &judgement,
                &[
                    "terminal/outcome",
                    "terminal/calls-beside-message",
                    "terminal/stopped-at-answer",
                ],
            );
            assert_none_judged(
                &judgement,
                &[
                    "terminal/reason",
                    "terminal/unfinished-not-executed",
                    "terminal/result-line",
                    "terminal/finished",
                ],
            );
            assert_eq!(
                judgement.verdict,
                CaseVerdict::Pass,
                "{}",
                describe(&judgement)
            );
        }
    }

    #[test]
    fn outcome_fails_the_partial_text_of_an_incomplete_response_reported_as_the_answer() {
        let run = Run::case("terminal/05-incomplete-partial-text", PreviousResponseId);
        let (_, last) = play(&run);
        let judgement = run.judge(json!({"status": "completed", "output_text": first_text(&last)}));
        assert_fails(
            &judgement,
            "terminal/outcome",
            "but there was no answer to report (last response status 'incomplete', incomplete_details.reason 'max_output_tokens'): expected failed with reason 'incomplete'",
        );
        assert_not_judged(&judgement, "terminal/reason");
    }

    #[test]
    fn outcome_fails_a_failed_response_reported_as_an_empty_answer() {
        let run = Run::played("terminal/03-failed-status", PreviousResponseId);
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_fails(
            &judgement,
            "terminal/outcome",
            "the controller reported completed with '', but there was no answer to report (last response status 'failed'): expected failed with reason 'response_failed'",
        );
    }

    #[test]
    fn outcome_fails_a_streamed_refusal_reported_as_an_empty_answer() {
        let run = Run::played("terminal/08-refusal-streamed", Stateless);
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_fails(
            &judgement,
            "terminal/outcome",
            "(last response status 'completed'): expected failed with reason 'refusal'",
        );
    }

    const REFUSAL: &str = "I can't share full payment card numbers.";

    #[test]
    fn refusal_text_passes_the_refusal_in_detail_or_any_text_field() {
        for case in ["terminal/09-refusal", "terminal/08-refusal-streamed"] {
            let run = Run::played(case, Stateless);
            let judgement =
                run.judge(json!({"status": "failed", "reason": "refusal", "detail": REFUSAL}));
            assert_passes(&judgement, "terminal/refusal-text");
        }
        let run = Run::played("terminal/09-refusal", PreviousResponseId);
        let judgement = run.judge(json!({
            "status": "failed",
            "reason": "refusal",
            "output_text": "The model refused:\n  I can't share full\npayment card numbers.",
        }));
        assert_passes(&judgement, "terminal/refusal-text");
    }

    #[test]
    fn outcome_fails_the_text_beside_a_refusal_reported_as_the_answer() {
        let run = Run::played("terminal/12-refusal-beside-text", PreviousResponseId);
        assert_fails(
            &run.judge(json!({"status": "completed", "output_text": "Order O-3391 was delivered and paid by card."})),
            "terminal/outcome",
            "the last response is a refusal, \"I can't share full payment card numbers.\", not an answer",
        );
        let run = Run::played("terminal/12-refusal-beside-text", Stateless);
        let judgement = run.judge(json!({"status": "failed", "reason": "refusal", "detail": "I can't share full payment card numbers."}));
        assert_all_pass(&judgement, &["terminal/outcome", "terminal/refusal-text"]);
    }

    #[test]
    fn refusal_text_fails_a_refusal_reported_without_its_text() {
        let run = Run::played("terminal/09-refusal", PreviousResponseId);
        let judgement = run
            .judge(json!({"status": "failed", "reason": "refusal", "detail": "the model refused"}));
        assert_fails(
            &judgement,
            "terminal/refusal-text",
            "was a refusal, \"I can't share full payment card numbers.\", but the result line (detail \"the model refused\") does not carry its text",
        );
        assert_passes(&judgement, "terminal/reason");

        let run = Run::played("terminal/08-refusal-streamed", Stateless);
        assert_fails(
            &run.judge_failed("refusal"),
            "terminal/refusal-text",
            "(no detail) does not carry its text",
        );
    }

    #[test]
    fn refusal_text_is_not_judged_without_a_refusal_or_with_an_answer_reported() {
        let run = Run::played("terminal/03-failed-status", PreviousResponseId);
        assert_not_judged(
            &run.judge_failed("response_failed"),
            "terminal/refusal-text",
        );
        let run = Run::played("terminal/09-refusal", PreviousResponseId);
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_not_judged(&judgement, "terminal/refusal-text");
    }

    #[test]
    fn outcome_fails_the_budget_exhausted_reported_as_an_answer() {
        let run = Run::case("budget/01-endless-tool-calls", PreviousResponseId);
        let mut body = run.first_body();
        for _ in 1..4 {
            let response = run.create(&body);
            body = run.next_body(&body, &response, &run.execute(&response));
        }
        run.create(&body);
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_fails(
            &judgement,
            "terminal/outcome",
            "(last response status 'completed', round budget exhausted): expected failed with reason 'max_rounds'",
        );
    }

    #[test]
    fn outcome_fails_a_reasoning_summary_leaked_into_the_answer() {
        let run = Run::played(FINAL, Stateless);
        let judgement = run.judge(json!({
            "status": "completed",
            "output_text": "Stock is zero; give the restock date.\nNot yet. B2 is expected back on 14 July.",
        }));
        assert_fails(
            &judgement,
            "terminal/outcome",
            "expected the final message's text 'Not yet. B2 is expected back on 14 July.'",
        );
        assert!(check(&judgement, "terminal/outcome").diff.is_some());
    }

    #[test]
    fn outcome_ignores_whitespace_around_the_answer() {
        let run = Run::played(FINAL, Stateless);
        let judgement = run.judge(json!({
            "status": "completed",
            "output_text": "\n Not yet. B2 is expected back on 14 July.\n",
        }));
        assert_passes(&judgement, "terminal/outcome");
    }

    #[test]
    fn outcome_fails_a_failure_reported_when_there_was_an_answer() {
        let run = Run::played(FINAL, PreviousResponseId);
        assert_fails(
            &run.judge_failed("api_error"),
            "terminal/outcome",
            "the controller reported failed (api_error): expected completed with the final message's text",
        );
    }

    #[test]
    fn reason_passes_the_recognised_word_alone_or_within_a_longer_reason() {
        for reason in ["incomplete", "incomplete: max_output_tokens"] {
            let run = Run::case("terminal/05-incomplete-partial-text", PreviousResponseId);
            play(&run);
            let judgement = run.judge_failed(reason);
            assert_all_pass(
                &judgement,
                &[
                    "terminal/outcome",
                    "terminal/reason",
                    "terminal/stopped-at-answer",
                ],
            );
        }
    }

    #[test]
    fn reason_fails_another_word_and_lists_the_recognised_ones() {
        let run = Run::case("terminal/05-incomplete-partial-text", PreviousResponseId);
        play(&run);
        let judgement = run.judge_failed("truncated");
        assert_passes(&judgement, "terminal/outcome");
        assert_fails_with(
            &judgement,
            "terminal/reason",
            &[
                "the controller failed with reason 'truncated': expected the recognised word 'incomplete'",
                "(the words: max_rounds, incomplete, refusal, api_error, response_failed, timeout, cancelled, max_tool_calls, invalid_output)",
            ],
        );
        assert_eq!(judgement.verdict, CaseVerdict::NonStrict);
    }

    #[test]
    fn reason_fails_a_word_that_only_contains_the_recognised_one() {
        let run = Run::case("terminal/05-incomplete-partial-text", PreviousResponseId);
        play(&run);
        assert_fails(
            &run.judge_failed("response_incomplete"),
            "terminal/reason",
            "reason 'response_incomplete'",
        );
    }

    #[test]
    fn calls_beside_message_fails_the_early_message_taken_as_the_answer() {
        let run = Run::case("terminal/01-message-beside-calls", PreviousResponseId);
        let first = run.create(&run.first_body());
        let judgement =
            run.judge(json!({"status": "completed", "output_text": first_text(&first)}));
        assert_fails(
            &judgement,
            "terminal/calls-beside-message",
            "carries a message and 1 call(s); the controller stopped there, taking the message as the answer",
        );
        assert_not_judged(&judgement, "terminal/stopped-at-answer");
    }

    #[test]
    fn calls_beside_message_is_not_judged_without_a_message_beside_calls() {
        let run = Run::played(FINAL, PreviousResponseId);
        assert_not_judged(&run.judge_completed(), "terminal/calls-beside-message");
    }

    #[test]
    fn calls_beside_message_is_not_judged_on_the_last_round_the_budget_allows() {
        let run = Run::yaml(
            r#"
format: 1
id: demo/01-last-round
summary: A message beside a call on the only round the budget allows.
level: must
task: {input: "Has order O-1 shipped?", tools: [get_order], max_rounds: 1}
script:
  - output:
      - message: "Let me check."
      - call: {name: get_order, arguments: {order_id: O-1}}
expect: {outcome: failed, reason: max_rounds}
"#,
            PreviousResponseId,
        );
        run.create(&run.first_body());
        let judgement = run.judge_failed("max_rounds");
        assert_not_judged(&judgement, "terminal/calls-beside-message");
        assert_all_pass(&judgement, &["terminal/outcome", "terminal/reason"]);
    }

    #[test]
    fn unfinished_not_executed_passes_a_controller_that_stops_at_the_incomplete_response() {
        let run = Run::case("terminal/07-incomplete-with-whole-call", PreviousResponseId);
        play(&run);
        let judgement = run.judge_failed("incomplete");
        assert_all_pass(
            &judgement,
            &[
                "terminal/unfinished-not-executed",
                "terminal/stopped-at-answer",
            ],
        );
    }

    #[test]
    fn unfinished_not_executed_fails_a_whole_looking_call_of_an_incomplete_response_executed() {
        let run = Run::case("terminal/07-incomplete-with-whole-call", PreviousResponseId);
        let (_, last) = play(&run);
        run.execute(&last);
        let judgement = run.judge_failed("incomplete");
        assert_fails_with(
            &judgement,
            "terminal/unfinished-not-executed",
            &[
                "(send_email {\"to\":\"team@example.com\"",
                "came in a response with status 'incomplete' and was executed anyway",
            ],
        );
        assert_passes(&judgement, "terminal/outcome");
    }

    /// Plays stream/10 (a whole call, then a cut-off one, then `response.incomplete`),
    /// running each call whose `output_item.done` satisfies `run_at_done` as that event
    /// arrives, with its arguments repaired if they do not parse; the terminal response.
    fn stream_running_calls_at_done(run: &Run, run_at_done: fn(&Value) -> bool) -> Value {
        let events = run.stream_with(&run.first_body(), &mut |run, _, event| {
            let item = &event["item"];
            if event["type"] == "response.output_item.done"
                && item["type"] == "function_call"
                && run_at_done(item)
            {
                let raw = item["arguments"].as_str().unwrap_or_default();
                let arguments: Value = serde_json::from_str(raw)
                    .unwrap_or_else(|_| serde_json::from_str(&format!("{raw}\"}}")).unwrap());
                run.send(
                    "POST",
                    "/tools/call/search_docs",
                    Some(&json!({"call_id": item["call_id"], "arguments": arguments, "principal": "user-1"})),
                );
            }
        });
        let last = events.last().unwrap();
        assert_eq!(last["type"], "response.incomplete");
        last["response"].clone()
    }

    /// Plays terminal/03 to its failed response, then sends that last request `again`
    /// more times, unchanged.
    fn failed_then_resent(state: StateMode, again: usize) -> Judgement {
        let run = Run::case("terminal/03-failed-status", state);
        let first = run.first_body();
        let one = run.create(&first);
        let second = run.next_body(&first, &one, &run.execute(&one));
        assert_eq!(run.create(&second)["status"], "failed");
        for _ in 0..again {
            let resent = run.create(&second);
            assert_eq!(
                resent["status"], "failed",
                "a resend is served the failed turn again"
            );
        }
        run.judge_failed("response_failed")
    }

    #[test]
    fn a_failed_request_resent_unchanged_a_few_times_is_a_retry_not_a_new_round() {
        for state in [PreviousResponseId, Stateless] {
            let judgement = failed_then_resent(state, 2);
            assert_all_pass(
                &judgement,
                &["terminal/stopped-at-answer", "transport/retry-bounded"],
            );
            assert_eq!(
                judgement.verdict,
                CaseVerdict::Pass,
                "{}",
                describe(&judgement)
            );
        }
    }

    #[test]
    fn a_failed_request_resent_without_end_fails_retry_bounded() {
        assert_fails(
            &failed_then_resent(PreviousResponseId, 6),
            "transport/retry-bounded",
            "request 2 was attempted 7 times: retries must be bounded",
        );
    }

    const WHOLE_THEN_CUT: &str = "stream/10-incomplete-after-whole-call";

    #[test]
    fn unfinished_not_executed_passes_a_whole_streamed_call_run_at_its_output_item_done() {
        for state in [PreviousResponseId, Stateless] {
            let run = Run::case(WHOLE_THEN_CUT, state);
            stream_running_calls_at_done(&run, |item| item["status"] == "completed");
            let judgement = run.judge_failed("incomplete");
            assert_all_pass(
                &judgement,
                &[
                    "terminal/unfinished-not-executed",
                    "terminal/outcome",
                    "terminal/stopped-at-answer",
                ],
            );
            assert_eq!(judgement.verdict, CaseVerdict::Pass);
        }
    }

    #[test]
    fn unfinished_not_executed_fails_the_cut_off_call_of_an_incomplete_stream_run() {
        let run = Run::case(WHOLE_THEN_CUT, PreviousResponseId);
        stream_running_calls_at_done(&run, |_| true);
        let judgement = run.judge_failed("incomplete");
        assert_fails(
            &judgement,
            "terminal/unfinished-not-executed",
            "(search_docs {\"query\": \"import invoices from CS) came in a response with status 'incomplete' and was executed anyway",
        );
        // The whole call is not named: it was run when it was done, before the ending.
        assert!(
            !check(&judgement, "terminal/unfinished-not-executed")
                .message
                .contains("export invoices")
        );
    }

    #[test]
    fn a_whole_streamed_call_run_at_done_does_not_excuse_going_on_after_the_ending() {
        let run = Run::case(WHOLE_THEN_CUT, PreviousResponseId);
        let first = run.first_body();
        let response = stream_running_calls_at_done(&run, |item| item["status"] == "completed");
        let whole = &calls(&response)[0];
        let output = output(whole, r#"{"hits": []}"#);
        run.create(&run.next_body(&first, &response, &[output]));
        let judgement = run.judge_completed();
        assert_passes(&judgement, "terminal/unfinished-not-executed");
        assert_fails(
            &judgement,
            "terminal/stopped-at-answer",
            "the last scripted turn, which was incomplete (max_output_tokens): an incomplete response ends the loop",
        );
    }

    #[test]
    fn unfinished_not_executed_fails_a_whole_call_run_before_its_output_item_done() {
        // Run on `function_call_arguments.done`, one event early: never a whole call yet.
        let run = Run::case(WHOLE_THEN_CUT, PreviousResponseId);
        let mut call_ids = std::collections::HashMap::new();
        run.stream_with(&run.first_body(), &mut |run, _, event| {
            let item = &event["item"];
            match event["type"].as_str() {
                Some("response.output_item.added") => {
                    call_ids.insert(item["id"].clone().to_string(), item["call_id"].clone());
                }
                Some("response.function_call_arguments.done") => {
                    let raw = event["arguments"].as_str().unwrap_or_default();
                    let Ok(arguments) = serde_json::from_str::<Value>(raw) else {
                        return;
                    };
                    run.send(
                        "POST",
                        "/tools/call/search_docs",
                        Some(&json!({"call_id": call_ids[&event["item_id"].to_string()], "arguments": arguments, "principal": "user-1"})),
                    );
                }
                _ => {}
            }
        });
        assert_fails(
            &run.judge_failed("incomplete"),
            "terminal/unfinished-not-executed",
            "(search_docs {\"query\":\"export invoices to CSV\"}) came in a response with status 'incomplete' and was executed anyway",
        );
    }

    #[test]
    fn stopped_at_answer_fails_a_request_after_the_final_answer() {
        let run = Run::case(FINAL, PreviousResponseId);
        let (sent, last) = play(&run);
        ask_again(&run, &sent, &last);
        let judgement = run.judge_completed();
        assert_fails_with(
            &judgement,
            "terminal/stopped-at-answer",
            &[
                "request 3 came after response 2 (resp_",
                "the last scripted turn, whose message was the final answer: the loop ends there",
            ],
        );
        assert_not_judged(&judgement, "terminal/outcome");
    }

    #[test]
    fn asking_again_after_an_incomplete_response_is_one_finding() {
        let run = Run::case("terminal/05-incomplete-partial-text", PreviousResponseId);
        let (sent, last) = play(&run);
        ask_again(&run, &sent, &last);
        // The loop's own failure is now the error past the script.
        let judgement = run.judge_failed("api_error");
        assert_fails(
            &judgement,
            "terminal/stopped-at-answer",
            "which was incomplete (max_output_tokens): an incomplete response ends the loop, reported as failed with reason 'incomplete'",
        );
        assert_none_judged(&judgement, &["terminal/outcome", "terminal/reason"]);
    }

    #[test]
    fn stopped_at_answer_names_why_the_turn_ended_the_loop() {
        for (case, needle) in [
            (
                "terminal/03-failed-status",
                "which failed: a failed response ends the loop, reported as failed with reason 'response_failed'",
            ),
            (
                "terminal/09-refusal",
                "which was a refusal: a refusal ends the loop, reported as failed with reason 'refusal'",
            ),
        ] {
            let run = Run::case(case, Stateless);
            let (sent, last) = play(&run);
            ask_again(&run, &sent, &last);
            assert_fails(
                &run.judge_failed("api_error"),
                "terminal/stopped-at-answer",
                needle,
            );
        }
    }

    #[test]
    fn stopped_at_answer_passes_stopping_at_an_empty_answer_or_after_one_nudge() {
        let run = Run::case("terminal/02-empty-output", PreviousResponseId);
        play(&run);
        let judgement = run.judge_completed();
        assert_all_pass(
            &judgement,
            &["terminal/stopped-at-answer", "terminal/outcome"],
        );

        let run = Run::case("terminal/02-empty-output", PreviousResponseId);
        let (sent, last) = play(&run);
        ask_again(&run, &sent, &last);
        let judgement = run.judge_completed();
        assert_all_pass(
            &judgement,
            &["terminal/stopped-at-answer", "terminal/outcome"],
        );
    }

    #[test]
    fn stopped_at_answer_fails_asking_again_and_again_after_an_empty_answer() {
        let run = Run::case("terminal/02-empty-output", PreviousResponseId);
        let (mut sent, mut last) = play(&run);
        for _ in 0..2 {
            (sent, last) = ask_again(&run, &sent, &last);
        }
        assert_fails(
            &run.judge_completed(),
            "terminal/stopped-at-answer",
            "which had no message and no calls, the controller asked again 2 times: one nudge is defensible",
        );
    }

    #[test]
    fn result_line_fails_a_result_that_is_not_a_result_and_the_case_crashes() {
        let judgement = final_reported_as(json!({"status": "done", "output_text": "Not yet."}));
        assert_fails(
            &judgement,
            "terminal/result-line",
            "the result's `status` is 'done': expected 'completed' or 'failed'",
        );
        assert_eq!(judgement.verdict, CaseVerdict::Crashed);
        assert_not_judged(&judgement, "terminal/outcome");
    }

    #[test]
    fn result_line_fails_completed_without_output_text() {
        let judgement = final_reported_as(json!({"status": "completed", "text": "Not yet."}));
        assert_fails(
            &judgement,
            "terminal/result-line",
            "the result says `completed` but has no `output_text` string",
        );
        assert_eq!(judgement.verdict, CaseVerdict::Crashed);
    }

    #[test]
    fn finished_fails_a_controller_killed_at_the_timeout() {
        // A controller that hangs after its first request.
        let run = Run::case(FINAL, PreviousResponseId);
        run.create(&run.first_body());
        let judgement = run.judge_timed_out(30_000);
        assert_fails(
            &judgement,
            "terminal/finished",
            "the controller was still running after 30000 ms and was killed",
        );
        assert_eq!(judgement.verdict, CaseVerdict::Timeout);
        assert_none_judged(&judgement, &["terminal/result-line", "terminal/outcome"]);
    }
}
