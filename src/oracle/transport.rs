//! `transport`: transient errors retried, boundedly, after the delay the server asked
//! for; client errors not retried. (Re-executing tools on a retry is `effects`.)

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::transcript::ModelExchange;

/// Most attempts at one request before a retry policy counts as unbounded (the SDKs
/// make 3).
pub const MAX_ATTEMPTS: usize = 5;

/// Slack for timer and scheduling granularity when measuring a retry delay.
const DELAY_SLACK_MS: u64 = 5;

/// Whether an SDK retries this answer (WIRE.md section 6).
fn transient(exchange: &ModelExchange) -> bool {
    let Some(fault) = &exchange.fault else {
        return false;
    };
    if let Some(retry) = fault.should_retry {
        return retry;
    }
    fault.dropped
        || fault
            .status
            .is_some_and(|s| matches!(s, 408 | 409 | 429) || s >= 500)
}

fn describe(exchange: &ModelExchange) -> String {
    match &exchange.fault {
        Some(fault) if fault.dropped => "a dropped connection".to_owned(),
        Some(fault) => format!("HTTP {}", fault.status.unwrap_or_default()),
        None => format!("HTTP {}", exchange.status),
    }
}

/// The `transport` checks (only where the run met a fault).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !f.rounds.iter().flatten().any(|a| a.fault.is_some()) {
        return Vec::new();
    }
    let mut retried = Vec::new();
    let mut not_retried = Vec::new();
    let mut bounded = Vec::new();
    let mut waited = Vec::new();
    let mut waits = 0;
    for (position, round) in f.rounds.iter().enumerate() {
        let label = Facts::request_label(position);
        if round.len() > MAX_ATTEMPTS {
            bounded.push(format!(
                "{label} was attempted {} times: retries must be bounded (at most {MAX_ATTEMPTS} attempts)",
                round.len()
            ));
        }
        for (k, attempt) in round.iter().enumerate() {
            let Some(fault) = &attempt.fault else {
                continue;
            };
            let next = round.get(k + 1);
            let is_last_attempt = next.is_none();
            if transient(attempt) {
                if is_last_attempt && round.len() == 1 && f.result.is_some() {
                    retried.push(format!(
                        "{label} met {} (transient) and the controller gave up after 1 attempt: expected it retried, as the SDKs do (up to 2 retries)",
                        describe(attempt)
                    ));
                }
            } else if next.is_some() {
                not_retried.push(format!(
                    "{label} met {}{}, which is not transient, and the controller sent the same request again",
                    describe(attempt),
                    if fault.should_retry == Some(false) { " with x-should-retry: false" } else { "" }
                ));
            }
            if let (Some(delay), Some(next)) = (fault.retry_after_ms, next) {
                waits += 1;
                let answered = attempt.at_ms + fault.delay_ms;
                let gap = next.at_ms.saturating_sub(answered);
                if gap + DELAY_SLACK_MS < delay {
                    waited.push(format!(
                        "{label}: the answer asked to retry after {delay} ms and the retry came {gap} ms later"
                    ));
                }
            }
        }
    }
    let mut out = vec![
        checks::TRANSPORT_RETRIED.judge(retried, "transient errors were retried"),
        checks::TRANSPORT_NO_RETRY_4XX.judge(
            not_retried,
            "errors that are not transient were not retried",
        ),
        checks::TRANSPORT_RETRY_BOUNDED.judge(
            bounded,
            format!("no request was attempted more than {MAX_ATTEMPTS} times"),
        ),
    ];
    if waits > 0 || !waited.is_empty() {
        out.push(
            checks::TRANSPORT_RETRY_AFTER_HONOURED
                .judge(waited, "every retry waited as long as retry-after asked"),
        );
    }
    out
}
