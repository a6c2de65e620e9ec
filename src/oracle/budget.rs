//! `budget`: at most `max_rounds` model requests, and nothing executed whose result could
//! no longer be sent back; and the optional budgets: at most `max_tool_calls` executions,
//! nothing started after `deadline_ms`, no tool waited for past `tool_timeout_ms`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks;
use super::correlation::carries;
use super::facts::{Facts, looks_like_error, output_text};
use super::verdict::CheckResult;
use crate::transcript::{ToolExchange, ToolRequestKind, Unfinished};

/// How much later than `deadline_ms` a request may start. Generous, because machines are
/// noisy and a controller's clock starts before its first request, which the oracle
/// measures from (so the measure is lenient already).
pub const DEADLINE_SLACK_MS: u64 = 500;

/// The `budget` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = rounds(f);
    out.extend(max_tool_calls(f));
    out.extend(deadline(f));
    out.extend(tool_timeout(f));
    out
}

/// `budget/max-rounds` and `budget/last-round-idle`.
fn rounds(f: &Facts) -> Vec<CheckResult> {
    if f.requests.is_empty() {
        return Vec::new();
    }
    let max = f.scenario.task.max_rounds as usize;
    let mut out = Vec::new();
    let problems = if let Some(Unfinished::StoppedOverLimit {
        requests,
        budget,
        limit,
    }) = f.unfinished
    {
        vec![format!(
            "the controller made {requests} model requests and was stopped, past the limit of {limit} for a budget of {budget} (max_rounds is {max}): the loop has no round limit"
        )]
    } else if f.requests.len() > max {
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

/// `budget/max-tool-calls`: distinct call_ids sent to the backend's `/call/{name}` (a
/// retry under the same call_id is the same execution).
fn max_tool_calls(f: &Facts) -> Option<CheckResult> {
    let cap = f.scenario.task.max_tool_calls? as usize;
    let mut seen = BTreeSet::new();
    let executions: Vec<&ToolExchange> = f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call)
        // A request without a call_id cannot be a retry: each one counts.
        .filter(|t| t.call_id.as_ref().is_none_or(|id| seen.insert(id.clone())))
        .collect();
    let problems = match executions.get(cap) {
        Some(first_over) => vec![format!(
            "the controller executed {} tool calls: max_tool_calls is {cap}; the {}, '{}' ({}), went past the cap and should not have run: expected the loop to stop with reason 'max_tool_calls'",
            executions.len(),
            ordinal(cap + 1),
            first_over.name,
            first_over.call_id.as_deref().unwrap_or("no call_id")
        )],
        None => Vec::new(),
    };
    Some(checks::BUDGET_MAX_TOOL_CALLS.judge(
        problems,
        format!("{} of at most {cap} tool execution(s)", executions.len()),
    ))
}

/// `1st`, `2nd`, `3rd`, `4th`, ... `11th`, `21st`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// `budget/deadline`: every API request and tool execution starts within `deadline_ms`
/// (plus [`DEADLINE_SLACK_MS`]) of the first API request. Judged by the server's arrival
/// times; a controller cannot be measured from its own start, so this is the lenient side.
fn deadline(f: &Facts) -> Option<CheckResult> {
    let limit = f.scenario.task.deadline_ms?;
    let first = f.exchanges.iter().map(|m| m.at_ms).min()?;
    let allowed = limit + DEADLINE_SLACK_MS;
    let mut starts: Vec<(u64, u64, String)> = f
        .exchanges
        .iter()
        .map(|m| (m.seq, m.at_ms, exchange_label(f, m.seq, &m.method, &m.path)))
        .collect();
    starts.extend(
        f.tools
            .iter()
            .filter(|t| t.kind == ToolRequestKind::Call)
            .map(|t| {
                (
                    t.seq,
                    t.at_ms,
                    format!(
                        "the execution of '{}' ({})",
                        t.name,
                        t.call_id.as_deref().unwrap_or("no call_id")
                    ),
                )
            }),
    );
    starts.sort();
    let latest = starts
        .iter()
        .map(|(_, at, _)| at.saturating_sub(first))
        .max()
        .unwrap_or(0);
    let late: Vec<(u64, &str)> = starts
        .iter()
        .map(|(_, at, what)| (at.saturating_sub(first), what.as_str()))
        .filter(|(after, _)| *after > allowed)
        .collect();
    // One problem, naming the first start past the deadline: the rest follow from it.
    let problems = match (late.first(), late.last()) {
        (Some((after, what)), Some((last, _))) => {
            let more = match late.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more after it, the last {last} ms after)"),
            };
            vec![format!(
                "{what} started {after} ms after the first API request{more}: deadline_ms is {limit}, and with {DEADLINE_SLACK_MS} ms of slack nothing may start after {allowed} ms; expected the loop to stop with reason 'timeout'"
            )]
        }
        _ => Vec::new(),
    };
    Some(checks::BUDGET_DEADLINE.judge(
        problems,
        format!(
            "the last request started {latest} ms after the first API request, within deadline_ms {limit} (+{DEADLINE_SLACK_MS} ms)"
        ),
    ))
}

/// `request 3 (POST /v1/responses)`, `attempt 2 of request 3 (...)`, or the method and
/// path of a request that is no model request (a poll, a conversation).
fn exchange_label(f: &Facts, seq: u64, method: &str, path: &str) -> String {
    let found = f.rounds.iter().enumerate().find_map(|(round, attempts)| {
        let attempt = attempts.iter().position(|a| a.seq == seq)?;
        Some((round, attempt))
    });
    match found {
        Some((round, 0)) => format!("{} ({method} {path})", f.request_label(round)),
        Some((round, attempt)) => format!(
            "attempt {} of {} ({method} {path})",
            attempt + 1,
            f.request_label(round)
        ),
        None => format!("{method} {path}"),
    }
}

/// `budget/tool-timeout`, judged by content, not by timing: a call whose tool attempt
/// was held past `tool_timeout_ms` must be answered with an error output, or with the
/// result of a later attempt under its call_id. An output carrying the held attempt's
/// result, with no other attempt made, means the controller waited out the whole hold.
fn tool_timeout(f: &Facts) -> Option<CheckResult> {
    let limit = f.scenario.task.tool_timeout_ms?;
    let held: Vec<&ToolExchange> = f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call && f.held_past_tool_timeout(t))
        .collect();
    if held.is_empty() {
        return None;
    }
    let mut problems = Vec::new();
    let mut judged = 0;
    for t in held {
        let Some(call) = t.call_id.as_deref().and_then(|id| f.call_by_id(id)) else {
            continue;
        };
        let retried = f
            .executions_of(&call.call_id)
            .iter()
            .any(|other| other.seq > t.seq);
        let Some((position, request)) = f.request_after(call.response) else {
            continue;
        };
        let Some(output) = Facts::outputs_for(request, &call.call_id)
            .into_iter()
            .next()
        else {
            continue;
        };
        judged += 1;
        if retried {
            continue;
        }
        let text = output_text(&output);
        let held_result = t.response.get("result").filter(|_| t.status == 200);
        let waited = held_result.is_some_and(|result| {
            serde_json::from_str::<Value>(&text).is_ok_and(|value| carries(&value, result))
        });
        let what = format!(
            "'{}' ({}) was held {} ms by the backend, past tool_timeout_ms {limit}",
            t.name, call.call_id, t.delay_ms
        );
        if waited {
            problems.push(format!(
                "{what}, and {} answers it with that attempt's result, with no other attempt made: the controller waited out the whole hold; expected it to give up after {limit} ms and send an error output, or retry under the same call_id",
                f.request_label(position)
            ));
        } else if !looks_like_error(&text, None) {
            problems.push(format!(
                "{what}, and {} answers it with {}, which is not an error: expected an error output saying the tool timed out",
                f.request_label(position),
                crate::text::clip(&text, 120)
            ));
        }
    }
    (judged > 0).then(|| {
        checks::BUDGET_TOOL_TIMEOUT.judge(
            problems,
            format!(
                "{judged} call(s) held past tool_timeout_ms {limit} were answered without waiting for the hold (an error output, or a retry under the same call_id)"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{PreviousResponseId, Stateless};

    const ENDLESS: &str = "budget/01-endless-tool-calls";

    /// Makes `requests` model requests of `case`, executing the calls of every response
    /// but the last unless `execute_last`.
    fn rounds(case: &str, requests: usize, execute_last: bool) -> Run {
        let run = Run::case(case, PreviousResponseId);
        let mut body = run.first_body();
        for round in 1..=requests {
            let response = run.create(&body);
            if round == requests && !execute_last {
                break;
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
        run
    }

    #[test]
    fn max_rounds_and_last_round_idle_pass_a_run_stopped_at_the_budget() {
        let judgement = rounds(ENDLESS, 4, false).judge_failed("max_rounds");
        assert_all_pass(&judgement, &["budget/max-rounds", "budget/last-round-idle"]);
    }

    #[test]
    fn max_rounds_passes_a_final_answer_on_the_last_round_allowed() {
        for state in [PreviousResponseId, Stateless] {
            let run = Run::played("budget/02-final-on-last-round", state);
            let judgement = run.judge_completed();
            assert_all_pass(&judgement, &["budget/max-rounds", "budget/last-round-idle"]);
        }
    }

    #[test]
    fn max_rounds_fails_a_request_beyond_the_budget() {
        let judgement = rounds(ENDLESS, 5, false).judge_failed("max_rounds");
        assert_fails(
            &judgement,
            "budget/max-rounds",
            "the controller made 5 model requests: max_rounds is 4",
        );
    }

    #[test]
    fn a_loop_past_the_request_limit_is_refused_and_fails_max_rounds_as_stopped() {
        // max_rounds 4: the limit is 24 (4 + 20), and request 25 is refused.
        let run = rounds(ENDLESS, 24, true);
        let (status, answer) = run.send("POST", "/v1/responses", Some(&run.first_body()));
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["code"], "request_limit_passed", "{answer}");
        let judgement = run.judge_stopped_over_limit();
        assert_eq!(judgement.verdict, crate::oracle::CaseVerdict::Fail);
        assert_fails(
            &judgement,
            "budget/max-rounds",
            "the controller made 25 model requests and was stopped, past the limit of 24 for a budget of 4 (max_rounds is 4): the loop has no round limit",
        );
        assert!(
            !judgement.checks.iter().any(|c| c.id == "terminal/finished"),
            "a stopped run is not judged as one that ended by itself"
        );
    }

    #[test]
    fn last_round_idle_fails_a_call_executed_on_the_last_round() {
        let judgement = rounds("budget/03-single-round", 1, true).judge_failed("max_rounds");
        assert_passes(&judgement, "budget/max-rounds");
        assert_fails_with(
            &judgement,
            "budget/last-round-idle",
            &[
                "'send_email' (call_",
                "was executed after the response to request 1, the last the budget allows: its result could never be sent back",
            ],
        );
    }

    #[test]
    fn last_round_idle_fails_the_fourth_call_of_an_endless_loop_executed() {
        let judgement = rounds(ENDLESS, 4, true).judge_failed("max_rounds");
        assert_fails(&judgement, "budget/last-round-idle", "'search_docs' (call_");
    }

    #[test]
    fn last_round_idle_is_not_judged_below_the_budget() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        let judgement = run.judge_completed();
        assert_passes(&judgement, "budget/max-rounds");
        assert_not_judged(&judgement, "budget/last-round-idle");
    }

    const CAP: &str = "budget/04-tool-call-cap";
    const DEADLINE: &str = "budget/05-deadline";
    const SLOW: &str = "budget/06-slow-tool";

    #[test]
    fn max_tool_calls_passes_a_run_stopped_before_the_call_beyond_the_cap() {
        // Three rounds executed, the fourth response's call left alone.
        let judgement = rounds(CAP, 4, false).judge_failed("max_tool_calls");
        assert_passes(&judgement, "budget/max-tool-calls");
        assert_eq!(
            check(&judgement, "budget/max-tool-calls").message,
            "3 of at most 3 tool execution(s)"
        );
        // Stopping there is no unanswered call and no valid call left unexecuted.
        assert_all_pass(
            &judgement,
            &[
                "call-id/answered",
                "dispatch/valid-executed",
                "terminal/reason",
            ],
        );
    }

    #[test]
    fn max_tool_calls_fails_the_call_beyond_the_cap_and_names_it() {
        let judgement = rounds(CAP, 4, true).judge_failed("max_tool_calls");
        assert_fails_with(
            &judgement,
            "budget/max-tool-calls",
            &[
                "the controller executed 4 tool calls: max_tool_calls is 3; the 4th, 'search_docs' (call_",
                "went past the cap and should not have run: expected the loop to stop with reason 'max_tool_calls'",
            ],
        );
    }

    #[test]
    fn max_tool_calls_counts_a_retry_under_the_same_call_id_once() {
        let run = Run::case(CAP, PreviousResponseId);
        let mut body = run.first_body();
        for round in 1..=4 {
            let response = run.create(&body);
            if round == 4 {
                break;
            }
            let outputs = run.execute(&response);
            // The same call sent again, as after a tool timeout.
            run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
        let judgement = run.judge_failed("max_tool_calls");
        assert_passes(&judgement, "budget/max-tool-calls");
    }

    #[test]
    fn a_stop_below_the_tool_call_cap_is_still_an_unanswered_call() {
        let judgement = rounds(CAP, 3, false).judge_failed("max_tool_calls");
        assert_passes(&judgement, "budget/max-tool-calls");
        assert_fails(
            &judgement,
            "call-id/answered",
            "the controller never sent its output: it made no further request",
        );
    }

    #[test]
    fn the_optional_budgets_are_not_judged_when_the_task_sets_none() {
        let judgement = rounds(ENDLESS, 4, false).judge_failed("max_rounds");
        for id in [
            "budget/max-tool-calls",
            "budget/deadline",
            "budget/tool-timeout",
        ] {
            assert_not_judged(&judgement, id);
        }
    }

    /// Three rounds of the deadline case, the calls of the first two executed; the
    /// transcript's arrival times moved by `edit`.
    fn deadline_run(
        result: serde_json::Value,
        edit: impl FnOnce(&mut crate::transcript::Transcript),
    ) -> crate::oracle::Judgement {
        rounds(DEADLINE, 3, false).judge_edited(result, edit)
    }

    fn timeout() -> serde_json::Value {
        serde_json::json!({"status": "failed", "reason": "timeout"})
    }

    #[test]
    fn deadline_passes_requests_within_the_deadline_and_its_slack() {
        let judgement = deadline_run(timeout(), |t| {
            t.model[2].at_ms = t.model[0].at_ms + 2000;
        });
        assert_passes(&judgement, "budget/deadline");
        assert_eq!(
            check(&judgement, "budget/deadline").message,
            "the last request started 2000 ms after the first API request, within deadline_ms 1500 (+500 ms)"
        );
        // Stopping at the deadline leaves the last response's call unanswered, rightly.
        assert_all_pass(
            &judgement,
            &["call-id/answered", "terminal/outcome", "terminal/reason"],
        );
    }

    #[test]
    fn deadline_fails_a_model_request_started_past_it() {
        let judgement = deadline_run(timeout(), |t| {
            t.model[2].at_ms = t.model[0].at_ms + 2001;
        });
        assert_fails(
            &judgement,
            "budget/deadline",
            "request 3 (POST /v1/responses) started 2001 ms after the first API request: deadline_ms is 1500, and with 500 ms of slack nothing may start after 2000 ms; expected the loop to stop with reason 'timeout'",
        );
    }

    #[test]
    fn deadline_fails_a_tool_executed_past_it() {
        let judgement = deadline_run(timeout(), |t| {
            let first = t.model[0].at_ms;
            t.tools[1].at_ms = first + 2600;
            t.model[2].at_ms = first + 2700;
        });
        assert_fails_with(
            &judgement,
            "budget/deadline",
            &[
                "the execution of 'search_docs' (call_",
                ") started 2600 ms after the first API request (and 1 more after it, the last 2700 ms after): deadline_ms is 1500",
            ],
        );
    }

    #[test]
    fn a_stop_under_a_deadline_with_another_reason_leaves_the_call_unanswered() {
        // Two requests of the three max_rounds allows: the second response's call is one
        // the controller could still have answered.
        let judgement = rounds(DEADLINE, 2, false).judge_failed("api_error");
        assert_passes(&judgement, "budget/deadline");
        assert_fails(
            &judgement,
            "call-id/answered",
            "the controller never sent its output",
        );
    }

    /// The slow case: the first response's two calls (Ghent fast, Oslo held), answered
    /// as `answer` does it on the backend, then the final request. Judged completed.
    fn slow_run(
        answer: impl Fn(&Run, &serde_json::Value) -> Vec<serde_json::Value>,
    ) -> crate::oracle::Judgement {
        let run = Run::case(SLOW, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let outputs = answer(&run, &response);
        run.create(&run.next_body(&first, &response, &outputs));
        run.judge_completed()
    }

    #[test]
    fn tool_timeout_passes_a_held_call_retried_under_its_call_id() {
        let judgement = slow_run(|run, response| {
            // The Oslo call's first attempt is held (the test does not wait for it), its
            // retry answered at once.
            let outputs = run.execute(response);
            let oslo = serde_json::json!({"output": [calls(response)[1]]});
            let retried = run.execute(&oslo);
            vec![outputs[0].clone(), retried[0].clone()]
        });
        assert_all_pass(
            &judgement,
            &[
                "budget/tool-timeout",
                "call-id/result-matches",
                "effects/at-most-once",
            ],
        );
    }

    #[test]
    fn only_the_held_attempt_is_exempt_from_at_most_once() {
        // Both calls sent again: the Oslo retry follows a held answer, the Ghent one an
        // answer the controller had.
        let judgement = slow_run(|run, response| {
            run.execute(response);
            run.execute(response)
        });
        assert_passes(&judgement, "budget/tool-timeout");
        assert_fails(
            &judgement,
            "effects/at-most-once",
            "('get_weather') was executed 2 times",
        );
        let effects = &check(&judgement, "effects/at-most-once").message;
        assert_eq!(
            effects.matches("was executed 2 times").count(),
            1,
            "{effects}"
        );
    }

    #[test]
    fn a_fast_call_retried_after_the_tool_timeout_is_not_a_second_effect() {
        // On a loaded machine the Ghent answer missed the controller's timeout too: its
        // retry, sent a timeout later within the round, is the same execution.
        let run = Run::case(SLOW, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        run.execute(&response);
        let outputs = run.execute(&response);
        run.create(&run.next_body(&first, &response, &outputs));
        let answer = serde_json::json!({"status": "completed", "output_text": "Ghent has drizzle at 12 °C. Oslo's weather service was slow to answer; ask again in a minute for Oslo."});
        let judgement = run.judge_edited(answer, |t| {
            let first_attempt = t.tools[0].at_ms;
            for retry in &mut t.tools[2..] {
                retry.at_ms = first_attempt + 200;
            }
        });
        assert_passes(&judgement, "effects/at-most-once");
    }

    #[test]
    fn tool_timeout_passes_a_held_call_answered_with_an_error_output() {
        let judgement = slow_run(|run, response| {
            let mut outputs = run.execute(response);
            outputs[1]["output"] = serde_json::json!(
                serde_json::json!({"error": "get_weather timed out after 200 ms"}).to_string()
            );
            outputs
        });
        assert_passes(&judgement, "budget/tool-timeout");
        assert_eq!(
            check(&judgement, "budget/tool-timeout").message,
            "1 call(s) held past tool_timeout_ms 200 were answered without waiting for the hold (an error output, or a retry under the same call_id)"
        );
        // The held result never had to reach the controller.
        assert_passes(&judgement, "call-id/result-matches");
    }

    #[test]
    fn tool_timeout_fails_a_call_answered_with_the_held_result() {
        let judgement = slow_run(|run, response| run.execute(response));
        assert_fails_with(
            &judgement,
            "budget/tool-timeout",
            &[
                "'get_weather' (call_",
                ") was held 1500 ms by the backend, past tool_timeout_ms 200, and request 2 answers it with that attempt's result, with no other attempt made: the controller waited out the whole hold",
            ],
        );
    }

    #[test]
    fn tool_timeout_fails_a_held_call_answered_with_something_that_is_no_error() {
        let judgement = slow_run(|run, response| {
            let mut outputs = run.execute(response);
            outputs[1]["output"] = serde_json::json!("null");
            outputs
        });
        assert_fails(
            &judgement,
            "budget/tool-timeout",
            "request 2 answers it with null, which is not an error: expected an error output saying the tool timed out",
        );
    }

    #[test]
    fn tool_timeout_is_not_judged_without_a_held_answer() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        assert_not_judged(&run.judge_completed(), "budget/tool-timeout");
    }

    #[test]
    fn a_run_without_model_requests_gives_the_budget_nothing_to_judge() {
        let run = Run::case(ENDLESS, PreviousResponseId);
        let judgement = run.judge_failed("api_error");
        assert_none_judged(&judgement, &["budget/max-rounds", "budget/last-round-idle"]);
    }
}
