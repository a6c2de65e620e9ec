//! `budget`: at most `max_rounds` model requests, and nothing executed whose result could
//! no longer be sent back.

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::transcript::ToolRequestKind;

/// The `budget` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if f.requests.is_empty() {
        return Vec::new();
    }
    let max = f.scenario.task.max_rounds as usize;
    let mut out = Vec::new();
    let problems = if f.requests.len() > max {
        vec![format!(
            "the controller made {} model requests: max_rounds is {max}",
            f.requests.len()
        )]
    } else {
        Vec::new()
    };
    out.push(checks::BUDGET_MAX_ROUNDS.judge(
        problems,
        format!("{} of at most {max} model request(s)", f.requests.len()),
    ));
    if f.budget_reached() {
        let last = *f.rounds[max - 1].last().expect("a round has an attempt");
        let late: Vec<String> = f
            .tools
            .iter()
            .filter(|t| t.kind == ToolRequestKind::Call && t.seq > last.seq)
            .map(|t| {
                format!(
                    "'{}' ({}) was executed after the response to request {max}, the last the budget allows: its result could never be sent back",
                    t.name,
                    t.call_id.as_deref().unwrap_or("no call_id")
                )
            })
            .collect();
        out.push(
            checks::BUDGET_LAST_ROUND_IDLE.judge(late, "nothing was executed on the last round"),
        );
    }
    out
}
