//! `transport`: transient errors retried, boundedly, after the delay the server asked
//! for; client errors not retried. (Re-executing tools on a retry is `effects`.)

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::transcript::ModelExchange;
use crate::wire::request::{call_id, item_id, item_type};

/// Most attempts at one request before a retry policy counts as unbounded (the SDKs
/// make 3).
pub const MAX_ATTEMPTS: usize = 5;

/// Slack for timer and scheduling granularity when measuring a retry delay.
const DELAY_SLACK_MS: u64 = 5;

/// Whether an SDK retries this answer.
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

/// An input item, briefly: its type and `call_id` or id.
fn item_label(item: &Value) -> String {
    let kind = item_type(item);
    match call_id(item).or_else(|| item_id(item)) {
        Some(id) => format!("{kind} {id}"),
        None => kind.to_owned(),
    }
}

/// What a changed retry changed, briefly: the input items added (a copy of one already
/// there said so) or dropped, and the other top-level fields that differ.
fn body_difference(first: &ModelExchange, retry: &ModelExchange) -> String {
    let (before, after) = (Facts::input_of(first), Facts::input_of(retry));
    let mut changes = Vec::new();
    let mut left = before.clone();
    for item in &after {
        match left.iter().position(|i| i == item) {
            Some(k) => {
                left.remove(k);
            }
            None if before.contains(item) => {
                changes.push(format!("{} sent twice", item_label(item)))
            }
            None => changes.push(format!("{} added", item_label(item))),
        }
    }
    changes.extend(
        left.iter()
            .map(|item| format!("{} dropped", item_label(item))),
    );
    let empty = serde_json::Map::new();
    let (a, b) = (
        first.body.as_object().unwrap_or(&empty),
        retry.body.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys.into_iter().filter(|k| *k != "input") {
        if a.get(key) != b.get(key) {
            changes.push(format!("`{key}` changed"));
        }
    }
    if changes.is_empty() {
        return "the same content".to_owned();
    }
    let count = if after.len() == before.len() {
        String::new()
    } else {
        format!("{} input items instead of {}, ", after.len(), before.len())
    };
    changes.truncate(3);
    format!("{count}{}", changes.join(", "))
}

/// A request the API rejected as invalid (4xx from strict emulation) and the controller
/// sent again unchanged: a client error retried.
fn rejected_and_resent(f: &Facts) -> Vec<String> {
    let mut problems = Vec::new();
    for (position, round) in f.rounds.iter().enumerate() {
        for pair in round.windows(2) {
            let rejected = &pair[0];
            if rejected.rejected_by_api()
                && (400..500).contains(&rejected.status)
                && !matches!(rejected.status, 408 | 409 | 429)
            {
                problems.push(format!(
                    "{} was rejected with HTTP {} ({}) and the controller sent the same request again: a client error fails again",
                    f.request_label(position),
                    rejected.status,
                    rejected.rejected_by.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    problems
}

/// Rounds attempted more than [`MAX_ATTEMPTS`] times.
fn unbounded(f: &Facts) -> Vec<String> {
    f.rounds
        .iter()
        .enumerate()
        .filter(|(_, round)| round.len() > MAX_ATTEMPTS)
        .map(|(position, round)| {
            format!(
                "{} was attempted {} times: retries must be bounded (at most {MAX_ATTEMPTS} attempts)",
                f.request_label(position),
                round.len()
            )
        })
        .collect()
}

fn bounded_check(f: &Facts) -> CheckResult {
    checks::TRANSPORT_RETRY_BOUNDED.judge(
        unbounded(f),
        format!("no request was attempted more than {MAX_ATTEMPTS} times"),
    )
}

/// The `transport` checks (only where the run met a fault, resent a rejected request,
/// or resent a request whose response failed).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let resent = rejected_and_resent(f);
    if !f.rounds.iter().flatten().any(|a| a.fault.is_some()) {
        let mut out = Vec::new();
        if !resent.is_empty() {
            out.push(checks::TRANSPORT_NO_RETRY_4XX.judge(resent, ""));
        }
        if f.rounds.iter().any(|round| round.len() > 1) {
            out.push(bounded_check(f));
        }
        return out;
    }
    let mut retried = Vec::new();
    let mut not_retried = resent;
    let mut waited = Vec::new();
    let mut waits = 0;
    for (position, round) in f.rounds.iter().enumerate() {
        let label = f.request_label(position);
        for (k, attempt) in round.iter().enumerate() {
            let Some(fault) = &attempt.fault else {
                continue;
            };
            let next = round.get(k + 1);
            let is_last_attempt = next.is_none();
            if transient(attempt) {
                // A request after an unanswered one can only be its retry, changed.
                let resent = f
                    .requests
                    .get(position + 1)
                    .filter(|_| is_last_attempt && attempt.turn.is_none());
                if let Some(changed) = resent {
                    retried.push(format!(
                        "{label} met {} (transient) and the controller retried it with a different request ({}: {}): a retry must resend the same request",
                        describe(attempt),
                        f.request_label(position + 1),
                        body_difference(attempt, changed)
                    ));
                } else if is_last_attempt && round.len() == 1 && f.result.is_some() {
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
        bounded_check(f),
    ];
    if waits > 0 || !waited.is_empty() {
        out.push(
            checks::TRANSPORT_RETRY_AFTER_HONOURED
                .judge(waited, "every retry waited as long as retry-after asked"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::Value;

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    #[test]
    fn no_retry_4xx_fails_a_request_the_api_rejected_sent_again_unchanged() {
        let run = Run::case("correlation/01-single-call", PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let mut second = run.next_body(&first, &response, &run.execute(&response));
        second["input"][0]["call_id"] = Value::from("call_made_up");
        run.create(&second);
        run.send_with(
            "POST",
            "/v1/responses",
            Some(&second),
            &[("x-stainless-retry-count", "1")],
        );
        assert_fails(
            &run.judge_failed("api_error"),
            "transport/no-retry-4xx",
            "request 2 was rejected with HTTP 400 (E3) and the controller sent the same request again",
        );
    }

    const CHECKS: [&str; 4] = [
        "transport/retried",
        "transport/no-retry-4xx",
        "transport/retry-bounded",
        "transport/retry-after-honoured",
    ];

    /// Plays `run`'s script as a correct controller does, except that each model request
    /// is attempted up to `attempts` times, `wait` apart, until it is served: the first
    /// attempt, then SDK retries carrying `x-stainless-retry-count`. True when the loop
    /// got to its end, false when a request was never served.
    fn play(run: &Run, attempts: u32, wait: Duration) -> bool {
        let mut body = run.first_body();
        loop {
            let Some(response) = attempt(run, &body, attempts, wait) else {
                return false;
            };
            if calls(&response).is_empty() {
                return true;
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
    }

    /// Sends `body` up to `attempts` times, `wait` apart; the response once served.
    fn attempt(run: &Run, body: &Value, attempts: u32, wait: Duration) -> Option<Value> {
        for k in 0..attempts {
            let count = k.to_string();
            let headers: &[(&str, &str)] = if k == 0 {
                &[]
            } else {
                std::thread::sleep(wait);
                &[("x-stainless-retry-count", &count)]
            };
            let (status, response) = run.send_with("POST", "/v1/responses", Some(body), headers);
            if status == 200 {
                return Some(response);
            }
        }
        None
    }

    /// Runs `case` with `attempts` per request, `wait` apart, and judges it: the answer
    /// when the loop got to its end, else failed with reason api_error.
    fn judged(case: &str, attempts: u32, wait: Duration) -> crate::oracle::Judgement {
        let run = Run::case(case, PreviousResponseId);
        if play(&run, attempts, wait) {
            run.judge_completed()
        } else {
            run.judge_failed("api_error")
        }
    }

    #[test]
    fn a_run_without_faults_gives_transport_nothing_to_judge() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        let judgement = run.judge_completed();
        for id in CHECKS {
            assert_not_judged(&judgement, id);
        }
    }

    #[test]
    fn retried_passes_every_transient_error_retried() {
        // The 5xx answers ask for a retry after 20 ms; a dropped connection asks nothing.
        for (case, asks) in [
            ("transport/01-500-then-success", true),
            ("transport/04-503-non-json", true),
            ("transport/05-connection-dropped", false),
            ("transport/07-retry-after-tools-ran", true),
        ] {
            let judgement = judged(case, 3, Duration::from_millis(20));
            assert_all_pass(
                &judgement,
                &[
                    "transport/retried",
                    "transport/no-retry-4xx",
                    "transport/retry-bounded",
                ],
            );
            if asks {
                assert_passes(&judgement, "transport/retry-after-honoured");
            } else {
                assert_not_judged(&judgement, "transport/retry-after-honoured");
            }
            assert_passes(&judgement, "terminal/outcome");
        }
    }

    #[test]
    fn retry_after_honoured_fails_a_5xx_retried_at_once() {
        let judgement = judged("transport/01-500-then-success", 3, Duration::ZERO);
        assert_fails(
            &judgement,
            "transport/retry-after-honoured",
            "request 1: the answer asked to retry after 20 ms and the retry came",
        );
        assert_passes(&judgement, "transport/retried");
    }

    #[test]
    fn retried_fails_a_controller_that_gives_up_on_a_transient_error() {
        for (case, needle) in [
            (
                "transport/01-500-then-success",
                "request 1 met HTTP 500 (transient) and the controller gave up after 1 attempt: expected it retried",
            ),
            (
                "transport/04-503-non-json",
                "request 1 met HTTP 503 (transient)",
            ),
            (
                "transport/05-connection-dropped",
                "request 1 met a dropped connection (transient)",
            ),
            (
                "transport/07-retry-after-tools-ran",
                "request 2 met HTTP 500 (transient)",
            ),
        ] {
            assert_fails(
                &judged(case, 1, Duration::ZERO),
                "transport/retried",
                needle,
            );
        }
    }

    #[test]
    fn retried_says_a_retry_with_a_changed_request_is_not_giving_up() {
        let run = Run::case("transport/07-retry-after-tools-ran", PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let second = run.next_body(&first, &response, &run.execute(&response));
        let (status, _) = run.send("POST", "/v1/responses", Some(&second));
        assert_eq!(status, 500);
        // The retry "makes sure" of the outputs by appending them again.
        let mut changed = second.clone();
        let outputs = second["input"].as_array().unwrap().clone();
        changed["input"] = Value::from([outputs.clone(), outputs].concat());
        run.send_with(
            "POST",
            "/v1/responses",
            Some(&changed),
            &[("x-stainless-retry-count", "1")],
        );
        let judgement = run.judge_failed("api_error");
        assert_fails(
            &judgement,
            "transport/retried",
            "request 2 met HTTP 500 (transient) and the controller retried it with a different request (request 3: 2 input items instead of 1, function_call_output call_",
        );
        let message = &check(&judgement, "transport/retried").message;
        assert!(
            message.contains(" sent twice): a retry must resend the same request"),
            "{message}"
        );
        assert!(!message.contains("gave up"), "{message}");
    }

    #[test]
    fn giving_up_on_a_rate_limit_leaves_retry_after_unjudged() {
        let judgement = judged("transport/03-429-retry-after", 1, Duration::ZERO);
        assert_fails(
            &judgement,
            "transport/retried",
            "request 1 met HTTP 429 (transient)",
        );
        assert_not_judged(&judgement, "transport/retry-after-honoured");
    }

    #[test]
    fn no_retry_4xx_passes_a_400_reported_as_a_failure() {
        let judgement = judged("transport/02-400-not-retried", 1, Duration::ZERO);
        assert_all_pass(
            &judgement,
            &[
                "transport/no-retry-4xx",
                "transport/retried",
                "terminal/outcome",
                "terminal/reason",
            ],
        );
    }

    #[test]
    fn no_retry_4xx_fails_a_400_sent_again() {
        let judgement = judged("transport/02-400-not-retried", 3, Duration::ZERO);
        assert_fails(
            &judgement,
            "transport/no-retry-4xx",
            "request 1 met HTTP 400, which is not transient, and the controller sent the same request again",
        );
    }

    #[test]
    fn no_retry_4xx_passes_and_fails_a_500_with_x_should_retry_false() {
        let judgement = judged("transport/08-should-retry-false", 1, Duration::ZERO);
        assert_all_pass(&judgement, &["transport/no-retry-4xx", "transport/retried"]);

        let judgement = judged("transport/08-should-retry-false", 3, Duration::ZERO);
        assert_fails(
            &judgement,
            "transport/no-retry-4xx",
            "request 1 met HTTP 500 with x-should-retry: false, which is not transient",
        );
    }

    #[test]
    fn retry_bounded_passes_five_attempts_and_fails_six() {
        let judgement = judged("transport/06-persistent-500", 3, Duration::ZERO);
        assert_all_pass(
            &judgement,
            &[
                "transport/retry-bounded",
                "transport/retried",
                "terminal/outcome",
            ],
        );

        let judgement = judged("transport/06-persistent-500", 5, Duration::ZERO);
        assert_passes(&judgement, "transport/retry-bounded");

        let judgement = judged("transport/06-persistent-500", 6, Duration::ZERO);
        assert_fails(
            &judgement,
            "transport/retry-bounded",
            "request 1 was attempted 6 times: retries must be bounded (at most 5 attempts)",
        );
    }

    #[test]
    fn retry_after_honoured_passes_a_retry_that_waited_as_asked() {
        let judgement = judged(
            "transport/03-429-retry-after",
            3,
            Duration::from_millis(100),
        );
        assert_all_pass(
            &judgement,
            &["transport/retry-after-honoured", "transport/retried"],
        );
    }

    #[test]
    fn retry_after_honoured_fails_a_retry_after_a_fixed_short_backoff() {
        let judgement = judged("transport/03-429-retry-after", 3, Duration::from_millis(20));
        assert_fails(
            &judgement,
            "transport/retry-after-honoured",
            "request 1: the answer asked to retry after 100 ms and the retry came",
        );
        assert_passes(&judgement, "transport/retried");
    }

    #[test]
    fn retry_after_in_seconds_is_honoured_too() {
        let yaml = r#"
format: 1
id: demo/01-retry-after-seconds
summary: A 503 asking for a retry after 0.2 s.
level: must
task: {input: "How many units of D9?", tools: [get_stock]}
script:
  - faults:
      - {status: 503, retry_after: 0.2}
    output:
      - message: "12 units."
expect: {outcome: completed}
"#;
        let run = Run::yaml(yaml, PreviousResponseId);
        assert!(play(&run, 2, Duration::from_millis(200)));
        assert_passes(&run.judge_completed(), "transport/retry-after-honoured");

        let run = Run::yaml(yaml, PreviousResponseId);
        assert!(play(&run, 2, Duration::ZERO));
        assert_fails(
            &run.judge_completed(),
            "transport/retry-after-honoured",
            "the answer asked to retry after 200 ms",
        );
    }
}
