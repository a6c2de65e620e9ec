//! `effects`: each call executed at most once, and only calls the model issued.

use std::collections::BTreeMap;

use super::checks;
use super::error_output::Said;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::tools::rate_limit_rule;
use crate::transcript::{ToolExchange, ToolRequestKind};

/// Most requests for one call to a failing tool backend before the retries count as
/// unbounded: generous, so that any sane policy (the SDKs make 3 attempts) passes.
pub const MAX_TOOL_ATTEMPTS: usize = 10;

/// Slack for timer and scheduling granularity when measuring a retry's wait.
const WAIT_SLACK_MS: u64 = 10;

/// The `effects` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let executions: Vec<_> = f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call)
        .collect();
    if executions.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let mut successes: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for execution in &executions {
        // A request the backend refused had no effect, but was still sent to run.
        let what = if execution.status == 200 {
            "executed".to_owned()
        } else {
            format!("dispatched (the backend refused it, {})", execution.status)
        };
        let Some(call_id) = execution.call_id.as_deref() else {
            problems.push(format!(
                "'{}' was {what} with no call_id at all",
                execution.name
            ));
            continue;
        };
        if f.call_by_id(call_id).is_none() {
            problems.push(format!(
                "'{}' was {what} under call_id '{call_id}', which the model never issued",
                execution.name
            ));
        }
        // An answer held past tool_timeout_ms never reached a correct controller, which
        // may retry under the same call_id (budget/tool-timeout): the backend
        // de-duplicates by call_id, so the retry is not a second effect.
        if execution.status == 200
            && !f.held_past_tool_timeout(execution)
            && !retried_after_timeout(f, execution, &executions)
        {
            successes.entry(call_id).or_insert((0, &execution.name)).0 += 1;
        }
    }
    for (call_id, (count, name)) in successes {
        if count > 1 {
            problems.push(format!(
                "{call_id} ('{name}') was executed {count} times: a call's side effect must happen at most once (the fixture backend de-duplicated it; a real tool would not)"
            ));
        }
    }
    let mut out = vec![checks::EFFECTS_AT_MOST_ONCE.judge(
        problems,
        format!(
            "{} execution request(s), no call executed twice",
            executions.len()
        ),
    )];
    out.extend(retry_checks(f, &executions));
    out
}

/// Whether the backend refused a request in a way worth retrying: rate limited (429) or
/// failing (5xx).
fn transient(execution: &ToolExchange) -> bool {
    execution.status == 429 || execution.status >= 500
}

/// `effects/tool-retry-bounded` and `effects/tool-retry-spaced`, judged where the tool
/// backend refused a call transiently (spacing only where a 429 asked for a wait).
fn retry_checks(f: &Facts, executions: &[&ToolExchange]) -> Vec<CheckResult> {
    if !executions.iter().any(|e| transient(e)) {
        return Vec::new();
    }
    let mut call_ids: Vec<&str> = Vec::new();
    for execution in executions {
        if let Some(id) = execution.call_id.as_deref()
            && !call_ids.contains(&id)
        {
            call_ids.push(id);
        }
    }
    let mut unbounded = Vec::new();
    let mut unspaced = Vec::new();
    let mut waits = 0;
    for call_id in call_ids {
        let attempts = f.executions_of(call_id);
        let name = &attempts[0].name;
        let failures = attempts.iter().filter(|a| transient(a)).count();
        if failures == 0 {
            continue;
        }
        if attempts.len() > MAX_TOOL_ATTEMPTS {
            unbounded.push(format!(
                "{call_id} ('{name}') was sent to the tool backend {} times ({failures} refused with 429 or 5xx): retries must stop after at most {MAX_TOOL_ATTEMPTS} attempts and the call be answered with an error output",
                attempts.len()
            ));
        }
        if attempts.iter().all(|a| transient(a))
            && let Some(call) = f.call_by_id(call_id)
            && let Some(problem) = f.error_answer_problem(
                call,
                "the never-served",
                attempts.last().map_or(Said::Nothing, |a| Said::backend(a)),
            )
        {
            unbounded.push(problem);
        }
        for (k, pair) in attempts.windows(2).enumerate() {
            let (refused, retry) = (pair[0], pair[1]);
            if refused.status != 429 {
                continue;
            }
            let behaviour = f.scenario.tools.get(&refused.name);
            let Some(asked) =
                rate_limit_rule(behaviour, &refused.arguments).and_then(|rule| rule.delay_ms())
            else {
                continue;
            };
            waits += 1;
            let answered = refused.at_ms + refused.delay_ms;
            let gap = retry.at_ms.saturating_sub(answered);
            if gap + WAIT_SLACK_MS < asked {
                unspaced.push(format!(
                    "{call_id} ('{name}'): attempt {} was refused with 429 asking to retry after {asked} ms, and attempt {} came {gap} ms later",
                    k + 1,
                    k + 2
                ));
            }
        }
    }
    let mut out = vec![checks::EFFECTS_TOOL_RETRY_BOUNDED.judge(
        unbounded,
        format!(
            "every call the tool backend refused was sent at most {MAX_TOOL_ATTEMPTS} times, and answered"
        ),
    )];
    if waits > 0 {
        out.push(checks::EFFECTS_TOOL_RETRY_SPACED.judge(
            unspaced,
            format!("each of {waits} retry(ies) after a 429 waited as long as it asked"),
        ));
    }
    out
}

/// Whether `execution` is a retry under `tool_timeout_ms`: the same call_id sent again
/// after the controller waited at least half its tool timeout for an earlier attempt (on
/// a loaded machine even a fast answer can miss the timeout), before the call's output
/// went to the model. A retry in a later round is a re-execution all the same.
fn retried_after_timeout(f: &Facts, execution: &ToolExchange, all: &[&ToolExchange]) -> bool {
    let (Some(limit), Some(call_id)) = (f.scenario.task.tool_timeout_ms, &execution.call_id) else {
        return false;
    };
    let Some(previous) = all
        .iter()
        .filter(|t| t.call_id.as_ref() == Some(call_id) && t.seq < execution.seq)
        .max_by_key(|t| t.seq)
    else {
        return false;
    };
    let answered_before = f
        .requests
        .iter()
        .any(|r| r.seq < execution.seq && !Facts::outputs_for(r, call_id).is_empty());
    execution.at_ms.saturating_sub(previous.at_ms) >= limit / 2 && !answered_before
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    const ID: &str = "effects/at-most-once";

    /// A response holding only `call`, to execute that one call with [`Run::execute`].
    fn only(call: &Value) -> Value {
        json!({"output": [call]})
    }

    #[test]
    fn at_most_once_passes_a_correct_run() {
        let run = Run::played("correlation/06-three-rounds", PreviousResponseId);
        assert_passes(&run.judge_completed(), ID);
    }

    #[test]
    fn at_most_once_passes_a_retry_of_a_transient_failure_under_the_same_call_id() {
        let judgement = answer_first_round("effects/01-tool-unavailable-then-ok", |run, issued| {
            let mut outputs = run.execute_calls(issued);
            assert!(outputs[1]["output"].as_str().unwrap().contains("error"));
            outputs[1] = run.execute(&only(&issued[1])).remove(0);
            outputs
        });
        assert_passes(&judgement, ID);
    }

    #[test]
    fn at_most_once_fails_a_call_executed_again_in_a_later_round() {
        // Collects the calls of every response so far, so round 2 runs round 1's again.
        let run = Run::case("correlation/06-three-rounds", PreviousResponseId);
        let first = run.first_body();
        let one = run.create(&first);
        let second = run.next_body(&first, &one, &run.execute(&one));
        let two = run.create(&second);
        run.execute(&one);
        run.create(&run.next_body(&second, &two, &run.execute(&two)));
        assert_fails(
            &run.judge_failed("api_error"),
            ID,
            "('get_order') was executed 2 times: a call's side effect must happen at most once",
        );
    }

    #[test]
    fn at_most_once_fails_an_execution_under_a_call_id_the_model_never_issued() {
        // Executes under the call's fc_ item id, then answers under its call_id.
        let (run, issued) = first_round("correlation/02-call-id-distinct", |run, issued| {
            let call = &issued[0];
            let mut under_item_id = call.clone();
            under_item_id["call_id"] = call["id"].clone();
            let mut outputs = run.execute(&only(&under_item_id));
            outputs[0]["call_id"] = call["call_id"].clone();
            outputs
        });
        assert_fails(
            &run.judge_completed(),
            ID,
            &format!(
                "'search_docs' was executed under call_id '{}', which the model never issued",
                issued[0]["id"].as_str().unwrap()
            ),
        );
    }

    #[test]
    fn at_most_once_fails_an_execution_without_a_call_id() {
        let run = Run::case("correlation/01-single-call", PreviousResponseId);
        run.create(&run.first_body());
        run.send(
            "POST",
            "/tools/call/get_weather",
            Some(&json!({"arguments": {"city": "Lisbon"}, "principal": "user-1"})),
        );
        assert_fails(
            &run.judge_failed("api_error"),
            ID,
            "'get_weather' was dispatched (the backend refused it, 422) with no call_id at all",
        );
    }

    const BOUNDED: &str = "effects/tool-retry-bounded";
    const SPACED: &str = "effects/tool-retry-spaced";

    /// Sends `call` to the backend `times` times, `wait_ms` apart; the last answer as the
    /// call's output.
    fn attempt(run: &Run, call: &Value, times: usize, wait_ms: u64) -> Value {
        let mut answer = Vec::new();
        for k in 0..times {
            if k > 0 {
                std::thread::sleep(std::time::Duration::from_millis(wait_ms));
            }
            answer = run.execute(&only(call));
        }
        answer.remove(0)
    }

    #[test]
    fn tool_retries_pass_a_bounded_spaced_policy_that_gives_up_with_an_error() {
        let judgement = answer_first_round("effects/03-tool-stays-unavailable", |run, issued| {
            let outputs = vec![
                attempt(run, &issued[0], 1, 0),
                attempt(run, &issued[1], 3, 5),
            ];
            assert!(
                outputs[1]["output"]
                    .as_str()
                    .unwrap()
                    .contains("unavailable")
            );
            outputs
        });
        assert_all_pass(&judgement, &[BOUNDED, ID]);
        assert_not_judged(&judgement, SPACED);
    }

    #[test]
    fn tool_retry_bounded_fails_a_call_sent_eleven_times() {
        let (run, issued) = first_round("effects/03-tool-stays-unavailable", |run, issued| {
            vec![
                attempt(run, &issued[0], 1, 0),
                attempt(run, &issued[1], 11, 0),
            ]
        });
        assert_fails(
            &run.judge_completed(),
            BOUNDED,
            &format!(
                "{} ('get_stock') was sent to the tool backend 11 times (11 refused with 429 or 5xx): retries must stop after at most 10 attempts",
                issued[1]["call_id"].as_str().unwrap()
            ),
        );
    }

    #[test]
    fn tool_retry_bounded_fails_a_never_served_call_answered_as_a_success() {
        let judgement = answer_first_round("effects/03-tool-stays-unavailable", |run, issued| {
            attempt(run, &issued[1], 2, 0);
            vec![attempt(run, &issued[0], 1, 0), output(&issued[1], "null")]
        });
        assert_fails(
            &judgement,
            BOUNDED,
            "request 2: the output for the never-served call",
        );
    }

    #[test]
    fn tool_retry_bounded_fails_a_never_served_call_answered_with_a_generic_error() {
        let judgement = answer_first_round("effects/03-tool-stays-unavailable", |run, issued| {
            attempt(run, &issued[1], 2, 0);
            vec![
                attempt(run, &issued[0], 1, 0),
                output(&issued[1], "Error: Function failed."),
            ]
        });
        assert_fails_with(
            &judgement,
            BOUNDED,
            &[
                "request 2: the output for the never-served call",
                "is Error: Function failed., which does not carry the backend's error (its message \"'get_stock' is temporarily unavailable; retry with the same call_id\", or its code \"unavailable\", or its status 503)",
            ],
        );
    }

    #[test]
    fn tool_retry_spaced_passes_retries_that_waited_and_fails_one_that_did_not() {
        let (run, issued) = first_round("effects/02-tool-rate-limited", |run, issued| {
            // B2 asks for 200 ms twice: the first retry waits, the second comes at once.
            let b2 = {
                let refused = run.execute(&only(&issued[1]));
                assert!(refused[0]["output"].as_str().unwrap().contains("200 ms"));
                std::thread::sleep(std::time::Duration::from_millis(220));
                run.execute(&only(&issued[1]));
                run.execute(&only(&issued[1])).remove(0)
            };
            vec![attempt(run, &issued[0], 2, 1020), b2]
        });
        let judgement = run.judge_completed();
        assert_fails(
            &judgement,
            SPACED,
            &format!(
                "{} ('get_stock'): attempt 2 was refused with 429 asking to retry after 200 ms, and attempt 3 came",
                issued[1]["call_id"].as_str().unwrap()
            ),
        );
        assert!(
            !describe(&judgement).contains("attempt 1 was refused"),
            "{}",
            describe(&judgement)
        );
        assert_passes(&judgement, BOUNDED);
    }

    #[test]
    fn at_most_once_is_not_judged_when_nothing_was_executed() {
        let run = Run::case("budget/03-single-round", PreviousResponseId);
        run.create(&run.first_body());
        assert_not_judged(&run.judge_failed("max_rounds"), ID);
    }
}
