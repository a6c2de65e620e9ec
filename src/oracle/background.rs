//! `background`: background runs requested when the task says so, and polled until a
//! terminal status before being used; a queued response is never an answer.

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;

const TERMINAL: &[&str] = &["completed", "failed", "incomplete", "cancelled"];

/// The `background` checks (background tasks only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !f.scenario.task.background || f.requests.is_empty() {
        return Vec::new();
    }
    let problems = f.requests_lacking(
        |body| body.get("background") == Some(&Value::Bool(true)),
        "does not send `background: true`: the task asks for background mode",
    );
    let mut out =
        vec![checks::BACKGROUND_REQUESTED.judge(problems, "every request runs in the background")];

    let mut problems = Vec::new();
    for (index, served) in f.served.iter().enumerate() {
        if served.exchange.response["status"] != "queued" {
            continue;
        }
        let polls: Vec<_> = f
            .exchanges
            .iter()
            .filter(|m| m.method == "GET" && m.seq > served.exchange.seq)
            .filter(|m| {
                m.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with(&format!("/responses/{}", served.id)))
            })
            .collect();
        let saw_terminal = polls.iter().any(|m| {
            m.response["status"]
                .as_str()
                .is_some_and(|s| TERMINAL.contains(&s))
                || m.stream.is_some()
        });
        if !saw_terminal {
            problems.push(format!(
                "{} was queued; the controller polled it {} time(s) and never saw a terminal status: a queued or in-progress response is not an answer",
                f.response_label(index),
                polls.len()
            ));
        }
    }
    out.push(checks::BACKGROUND_POLLED_TO_TERMINAL.judge(
        problems,
        "every background response was polled until it ended",
    ));
    out
}
