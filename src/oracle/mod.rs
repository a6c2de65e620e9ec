//! The oracle: checks over a transcript, by family. Each family judges what the
//! controller sent and executed, not only what the fake server rejected.

mod authz;
mod background;
mod budget;
pub mod checks;
mod correlation;
mod dispatch;
mod effects;
pub mod facts;
mod program;
mod reasoning;
mod state;
mod stream;
mod terminal;
#[cfg(test)]
mod test_support;
mod transport;
mod verdict;

pub use verdict::{CaseVerdict, CheckResult, CheckVerdict};

use crate::scenario::{Scenario, StateMode};
use crate::transcript::{Transcript, Unfinished};
use facts::Facts;

/// The oracle's judgement of one case run.
#[derive(Debug, Clone)]
pub struct Judgement {
    /// Every check the run gave something to judge, in family order.
    pub checks: Vec<CheckResult>,
    /// The case's verdict.
    pub verdict: CaseVerdict,
    /// Why the case is `timeout` or `crashed`.
    pub detail: Option<String>,
}

/// Judges one case run: every check, then the case's verdict. The case's own level caps
/// each check's weight: a MUST check in a SHOULD case fails as `non-strict`.
pub fn judge(scenario: &Scenario, state: StateMode, transcript: &Transcript) -> Judgement {
    let checks = judge_checks(scenario, state, transcript);
    let (verdict, detail) = match &transcript.unfinished {
        Some(Unfinished::TimedOut { .. }) => (
            CaseVerdict::Timeout,
            Some("the controller did not finish within the case timeout; it was killed".to_owned()),
        ),
        Some(Unfinished::NoResult { why }) => (CaseVerdict::Crashed, Some(why.clone())),
        None => (CaseVerdict::from_checks(&checks), None),
    };
    Judgement {
        checks,
        verdict,
        detail,
    }
}

fn judge_checks(
    scenario: &Scenario,
    state: StateMode,
    transcript: &Transcript,
) -> Vec<CheckResult> {
    let facts = Facts::new(scenario, state, transcript);
    let mut checks = vec![accepted(&facts, transcript)];
    checks.extend(correlation::check(&facts));
    checks.extend(reasoning::check(&facts));
    checks.extend(state::check(&facts));
    checks.extend(dispatch::check(&facts));
    checks.extend(authz::check(&facts));
    checks.extend(effects::check(&facts));
    checks.extend(budget::check(&facts));
    checks.extend(transport::check(&facts));
    checks.extend(stream::check(&facts));
    checks.extend(background::check(&facts));
    checks.extend(program::check(&facts));
    checks.extend(terminal::check(&facts));
    for check in &mut checks {
        let level = check.level.weakest(scenario.level);
        if level != check.level {
            *check = CheckResult::judge(
                &check.id,
                level,
                if check.verdict == CheckVerdict::Pass {
                    Vec::new()
                } else {
                    vec![check.message.clone()]
                },
                check.message.clone(),
            )
            .with_diff(check.diff.clone());
        }
    }
    checks
}

/// `wire/accepted`: every request passed the strict emulation of the real API (script
/// exhaustion is judged by `terminal/stopped-at-answer`).
fn accepted(f: &Facts, transcript: &Transcript) -> CheckResult {
    let problems = transcript
        .model
        .iter()
        .filter(|m| {
            m.rejected_by
                .as_deref()
                .is_some_and(|rule| rule != "script")
        })
        .map(|m| {
            let position = f.requests.iter().position(|r| r.seq == m.seq);
            let label =
                position.map_or_else(|| format!("{} {}", m.method, m.path), Facts::request_label);
            format!(
                "{label} was rejected by the API ({}, HTTP {}): {}",
                m.rejected_by.as_deref().unwrap_or_default(),
                m.status,
                m.response["error"]["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    checks::WIRE_ACCEPTED.judge(
        problems,
        format!(
            "all {} API request(s) were accepted",
            transcript.model.len()
        ),
    )
}
