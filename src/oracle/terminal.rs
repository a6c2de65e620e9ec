//! `terminal`: the final answer reported as such; incomplete and failed responses,
//! refusals and exhausted budgets reported as failures; calls beside a message handled.

use super::checks;
use super::facts::Facts;
use super::verdict::{CheckResult, CheckVerdict};
use crate::scenario::{Outcome, OutputSpec, final_message_text};
use crate::transcript::Unfinished;

/// The `terminal` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = Vec::new();
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
                    crate::runner::task::REASON_WORDS.join(", ")
                )]
            };
            out.push(
                checks::TERMINAL_REASON.judge(problems, format!("failed with reason '{reason}'")),
            );
        }
    }
    let beside: Vec<usize> = (0..f.served.len())
        .filter(|&i| {
            let s = &f.served[i];
            s.status == "completed" && s.has_message && !s.calls.is_empty() && !f.is_last_round(i)
        })
        .collect();
    if !beside.is_empty() {
        let problems = beside
            .iter()
            .filter(|&&i| f.request_after(i).is_none())
            .map(|&i| {
                format!(
                    "{} carries a message and {} call(s); the controller stopped there, taking the message as the answer: expected it to answer the calls and continue",
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
            .filter(|c| !f.executions_of(&c.call_id).is_empty())
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
        Unfinished::NoResult { why } => checks::TERMINAL_RESULT_LINE.judge(vec![why.clone()], ""),
    })
}

/// What served response `index` was, and how the loop ends on it, for messages.
fn ending(f: &Facts, index: usize) -> (&'static str, &'static str) {
    let served = &f.served[index];
    let refusal = served.output.iter().any(|item| {
        item["content"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == "refusal"))
    });
    match served.status.as_str() {
        "incomplete" => (
            "which was incomplete",
            "an incomplete response ends the loop, reported as failed with reason 'incomplete'",
        ),
        "failed" => (
            "which failed",
            "a failed response ends the loop, reported as failed with reason 'response_failed'",
        ),
        "broken" => (
            "whose stream broke off",
            "a broken stream ends the loop, reported as failed with reason 'api_error'",
        ),
        _ if refusal && !served.has_message => (
            "which was a refusal",
            "a refusal ends the loop, reported as failed with reason 'refusal'",
        ),
        _ if served.has_message && served.calls.is_empty() => {
            ("whose message was the final answer", "the loop ends there")
        }
        _ if !served.calls.is_empty() => (
            "whose calls the round budget left no request to answer",
            "the loop ends there",
        ),
        _ => ("which had no message and no calls", "the loop ends there"),
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
    // The fake answers a request past the script with an error (rule "script").
    let overrun = f
        .requests
        .iter()
        .position(|r| r.rejected_by.as_deref() == Some("script"));
    if let Some(position) = overrun {
        let problem = match f.served.iter().rposition(|s| s.request < position) {
            Some(index) => {
                let (what, rule) = ending(f, index);
                format!(
                    "{} came after {}, the last scripted turn, {what}: {rule}",
                    Facts::request_label(position),
                    f.response_label(index),
                )
            }
            None => format!(
                "{} came after the last scripted turn",
                Facts::request_label(position)
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

fn outcome(f: &Facts, result: &crate::transcript::ControllerResult) -> CheckResult {
    let expect = &f.scenario.expect;
    let last_status = f.served.last().map(|s| s.status.as_str()).unwrap_or("none");
    let mut problems = Vec::new();
    let mut diff = None;
    match (expect.outcome, result.status.as_str()) {
        (Outcome::Completed, "completed") => {
            let expected = expect.output_text.clone().or_else(|| final_message_text(f.scenario)).unwrap_or_default();
            let actual = result.output_text.clone().unwrap_or_default();
            if actual.trim() != expected.trim() {
                problems.push(format!(
                    "the controller reported '{}': expected the final message's text '{}'",
                    crate::transcript::clip(&actual, 200),
                    crate::transcript::clip(&expected, 200)
                ));
                diff = Some((expected, actual));
            }
        }
        (Outcome::Completed, _) => problems.push(format!(
            "the controller reported failed ({}): expected completed with the final message's text",
            result.reason.as_deref().unwrap_or("no reason")
        )),
        (Outcome::Failed, "failed") => {}
        (Outcome::Failed, _) => problems.push(format!(
            "the controller reported completed with '{}', but there was no answer to report (last response status '{last_status}'{}): expected failed{}",
            crate::transcript::clip(result.output_text.as_deref().unwrap_or_default(), 120),
            if f.budget_reached() { ", round budget exhausted" } else { "" },
            expect.reason.as_deref().map(|r| format!(" with reason '{r}'")).unwrap_or_default()
        )),
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
