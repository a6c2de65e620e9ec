//! The oracle: checks over a transcript, by family. Each family judges what the
//! controller sent and executed, not only what the fake server rejected.

mod authz;
mod background;
mod budget;
mod correlation;
mod dispatch;
mod effects;
pub mod facts;
mod program;
mod reasoning;
mod state;
mod stream;
mod terminal;
mod transport;
mod verdict;

pub use verdict::{CaseVerdict, CheckResult, CheckVerdict};

use crate::scenario::{Level, Scenario, StateMode};
use crate::transcript::Transcript;
use facts::Facts;

/// Every check id with its level, for documentation and `loopcheck list --checks`.
pub const CHECKS: &[(&str, Level)] = &[
    ("wire/accepted", Level::Must),
    ("call-id/answered", Level::Must),
    ("call-id/own-id", Level::Must),
    ("call-id/executed-as-issued", Level::Must),
    ("call-id/result-matches", Level::Must),
    ("reasoning/replayed", Level::Must),
    ("reasoning/items-in-order", Level::Must),
    ("reasoning/input-shape", Level::Must),
    ("reasoning/items-unaltered", Level::Must),
    ("state/config-resent", Level::Must),
    ("state/chained", Level::Must),
    ("state/no-resend", Level::Should),
    ("state/store-false", Level::Must),
    ("state/include-encrypted", Level::Should),
    ("state/input-replayed", Level::Must),
    ("dispatch/registered-only", Level::Must),
    ("dispatch/arguments-parsed", Level::Must),
    ("dispatch/schema-valid", Level::Must),
    ("dispatch/caller-allowed", Level::Must),
    ("dispatch/rejection-answered", Level::Must),
    ("dispatch/valid-executed", Level::Must),
    ("authz/denial-relayed", Level::Must),
    ("authz/approval-asked", Level::Must),
    ("authz/approval-before-execution", Level::Must),
    ("authz/approval-denied", Level::Must),
    ("authz/principal-forwarded", Level::Must),
    ("authz/approval-request-matches", Level::Must),
    ("effects/at-most-once", Level::Must),
    ("budget/max-rounds", Level::Must),
    ("budget/last-round-idle", Level::Must),
    ("terminal/outcome", Level::Must),
    ("terminal/reason", Level::Should),
    ("terminal/calls-beside-message", Level::Must),
    ("terminal/unfinished-not-executed", Level::Must),
    ("terminal/stopped-at-answer", Level::Must),
    ("transport/retried", Level::Must),
    ("transport/no-retry-4xx", Level::Must),
    ("transport/retry-bounded", Level::Must),
    ("transport/retry-after-honoured", Level::Must),
    ("stream/requested", Level::Must),
    ("stream/executed-after-done", Level::Must),
    ("stream/broken-not-answer", Level::Must),
    ("background/requested", Level::Must),
    ("background/polled-to-terminal", Level::Must),
    ("program/caller-echoed", Level::Must),
    ("program/replayed", Level::Must),
    ("program/continued", Level::Must),
    ("state/conversation", Level::Must),
    ("terminal/result-line", Level::Must),
    ("terminal/finished", Level::Must),
];

/// Judges one case run. The case's own level caps each check's weight: a MUST check in
/// a SHOULD case fails as `non-strict`.
pub fn judge(scenario: &Scenario, state: StateMode, transcript: &Transcript) -> Vec<CheckResult> {
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
    CheckResult::judge(
        "wire/accepted",
        Level::Must,
        problems,
        format!(
            "all {} API request(s) were accepted",
            transcript.model.len()
        ),
    )
}
