//! `terminal`: the final answer reported as such; incomplete and failed responses,
//! refusals and exhausted budgets reported as failures; calls beside a message handled.

use super::facts::Facts;
use super::verdict::CheckResult;
use crate::scenario::{Level, Outcome, final_message_text};

/// The `terminal` checks.
pub fn check(f: &Facts, script_overrun: Option<usize>) -> Vec<CheckResult> {
    let mut out = Vec::new();
    if let Some(result) = f.result {
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
                    "the controller failed with reason '{given}': expected the recognised word '{reason}'"
                )]
            };
            out.push(CheckResult::judge(
                "terminal/reason",
                Level::Should,
                problems,
                format!("failed with reason '{reason}'"),
            ));
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
        out.push(CheckResult::judge(
            "terminal/calls-beside-message",
            Level::Must,
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
        out.push(CheckResult::judge(
            "terminal/unfinished-not-executed",
            Level::Must,
            problems,
            "no call from an incomplete or failed response was executed",
        ));
    }
    if let Some(position) = script_overrun {
        out.push(CheckResult::judge(
            "terminal/stopped-at-answer",
            Level::Must,
            vec![format!(
                "{} came after the model's final turn ({} scripted): the controller should have stopped at the answer",
                Facts::request_label(position),
                f.scenario.script.len()
            )],
            "",
        ));
    } else if f.served.len() == f.scenario.script.len()
        && !f.scenario.script.last().is_some_and(|t| t.endless)
    {
        out.push(CheckResult::judge(
            "terminal/stopped-at-answer",
            Level::Must,
            Vec::new(),
            "no request after the model's final turn",
        ));
    }
    out
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
    CheckResult::judge(
        "terminal/outcome",
        Level::Must,
        problems,
        match expect.outcome {
            Outcome::Completed => "reported the final answer".to_owned(),
            Outcome::Failed => "reported a failure".to_owned(),
        },
    )
    .with_diff(diff)
}
