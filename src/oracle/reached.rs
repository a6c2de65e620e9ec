//! `terminal/reached-outcome`: a result counts only when the model requests it rests on
//! reached the fake. Without this floor a controller that never talks to the API and
//! prints a canned failure (`api_error`, `incomplete`, `max_rounds`, ...) would pass
//! every case whose expected outcome is that failure. The oracle asks for it only when
//! no other check fails, and no case level softens it: a run that proved nothing fails.

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::scenario::{OutputSpec, Scenario, Turn, TurnStatus};

/// The `terminal/reached-outcome` check, for a run that printed a result.
pub fn check(f: &Facts) -> Option<CheckResult> {
    let result = f.result?;
    // A request the emulation rejected stopped the run short with a finding at its
    // cause (`wire/accepted`); the floor is for runs that never tried.
    if f.exchanges.iter().any(|m| m.rejected_by_api()) {
        return None;
    }
    let needed = needed_requests(f.scenario);
    let reached = reached_requests(f);
    let problems = if reached >= needed {
        Vec::new()
    } else {
        let reported = match result.reason.as_deref() {
            Some(reason) if result.status == "failed" => format!("failed ('{reason}')"),
            _ => format!("'{}'", result.status),
        };
        vec![format!(
            "the controller reported {reported} after {reached} of the {needed} model request(s) that outcome rests on reached the API: it never reached {}, {}; a result printed without the requests behind it proves nothing",
            turn_label(f.scenario, needed),
            what_request_meets(f.scenario, needed),
        )]
    };
    Some(checks::TERMINAL_REACHED_OUTCOME.judge(
        problems,
        format!("{reached} model request(s) reached the API, of the {needed} the outcome rests on"),
    ))
}

/// The fewest model requests (retries folded in) a correct run makes before it can know
/// its outcome: the case's own `expect.min_requests`, else one per scripted turn, bounded
/// by the round budget, and for a budget outcome the request that exhausts the budget.
pub fn needed_requests(scenario: &Scenario) -> usize {
    if let Some(declared) = scenario.expect.min_requests {
        return declared as usize;
    }
    let script = &scenario.script;
    let max_rounds = scenario.task.max_rounds as usize;
    let needed = match scenario.expect.reason.as_deref() {
        Some("max_rounds") => max_rounds,
        Some("max_tool_calls") => scenario
            .task
            .max_tool_calls
            .and_then(|cap| request_past_cap(script, cap as usize, max_rounds))
            .unwrap_or(script.len()),
        _ => script.len(),
    };
    // A script without an endless last turn serves no request past its end.
    let served = if script.last().is_some_and(|t| t.endless) {
        usize::MAX
    } else {
        script.len()
    };
    needed.min(max_rounds).min(served).max(1)
}

/// The 1-based request whose turn brings the call beyond `cap`, if one does within
/// `max_rounds` requests (an endless last turn repeats for every later request).
fn request_past_cap(script: &[Turn], cap: usize, max_rounds: usize) -> Option<usize> {
    let mut issued = 0;
    for request in 0..max_rounds {
        issued += turn_at(script, request)?
            .output
            .iter()
            .filter(|o| matches!(o, OutputSpec::Call(_)))
            .count();
        if issued > cap {
            return Some(request + 1);
        }
    }
    None
}

/// The turn request `index` (0-based) is served, or `None` past a script without an
/// endless last turn.
fn turn_at(script: &[Turn], index: usize) -> Option<&Turn> {
    script
        .get(index)
        .or_else(|| script.last().filter(|last| last.endless))
}

/// Model requests that reached the script: served a turn, or answered one of its
/// scripted faults. A request rejected by the emulation, or past the script, did not.
fn reached_requests(f: &Facts) -> usize {
    f.rounds
        .iter()
        .filter(|round| {
            round.iter().any(|attempt| {
                attempt.turn.is_some() || (attempt.fault.is_some() && attempt.rejected_by.is_none())
            })
        })
        .count()
}

/// `turn 2 of 3`, or `turn 2 (repeated: request 4)` for an endless turn served again.
fn turn_label(scenario: &Scenario, request: usize) -> String {
    let turns = scenario.script.len();
    if request <= turns {
        format!("request {request}, which is served scripted turn {request} of {turns}")
    } else {
        format!("request {request}, which is served the repeating turn {turns} again")
    }
}

/// What the request-th request meets, in a few words, so the message says which turn
/// produces the outcome.
fn what_request_meets(scenario: &Scenario, request: usize) -> String {
    let Some(turn) = turn_at(&scenario.script, request - 1) else {
        return "the turn that produces the expected outcome".to_owned();
    };
    let budget = scenario
        .expect
        .reason
        .as_deref()
        .filter(|r| r.starts_with("max_"));
    if let Some(reason) = budget.filter(|_| request > scenario.script.len() || turn.endless) {
        return format!("the request that exhausts the {reason} budget");
    }
    if let Some(fault) = turn.faults.first() {
        return match fault.status {
            _ if fault.drop => "whose connection is dropped".to_owned(),
            Some(status) => format!("answered HTTP {status}"),
            None if fault.is_delay_only() => format!("answered {} ms late", fault.delay_ms),
            None => "answered a transport fault".to_owned(),
        };
    }
    if turn.stream.cut_after.is_some() {
        return "whose stream is cut".to_owned();
    }
    if turn.stream.error.is_some() {
        return "whose stream ends in an error event".to_owned();
    }
    match turn.status {
        TurnStatus::Incomplete => "whose response is incomplete".to_owned(),
        TurnStatus::Failed => "whose response failed".to_owned(),
        _ if turn.output.iter().any(|o| match o {
            OutputSpec::Refusal(_) => true,
            OutputSpec::Message(m) => m.refusal().is_some(),
            _ => false,
        }) =>
        {
            "whose response is a refusal".to_owned()
        }
        _ if turn
            .output
            .iter()
            .any(|o| matches!(o, OutputSpec::Message(_))) =>
        {
            "whose response holds the final message".to_owned()
        }
        _ => "the turn that produces the expected outcome".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{Run, assert_fails, assert_passes};
    use super::*;
    use crate::scenario::{StateMode, catalogue_scenario as scenario};

    #[test]
    fn a_canned_failure_with_no_request_fails_and_names_the_turn() {
        let run = Run::case(
            "transport/02-400-not-retried",
            StateMode::PreviousResponseId,
        );
        let judgement = run.judge_failed("api_error");
        assert_fails(
            &judgement,
            "terminal/reached-outcome",
            "reported failed ('api_error') after 0 of the 1 model request(s) that outcome rests on reached the API: it never reached request 1, which is served scripted turn 1 of 1, answered HTTP 400",
        );
        assert_eq!(judgement.verdict, crate::oracle::CaseVerdict::Fail);
    }

    #[test]
    fn a_faulted_request_reaches_its_turn() {
        let run = Run::case(
            "transport/02-400-not-retried",
            StateMode::PreviousResponseId,
        );
        let (status, _) = run.send("POST", "/v1/responses", Some(&run.first_body()));
        assert_eq!(status, 400);
        assert_passes(&run.judge_failed("api_error"), "terminal/reached-outcome");
    }

    #[test]
    fn a_run_stopped_short_by_a_rejected_request_is_judged_at_the_rejection() {
        let run = Run::case("correlation/01-single-call", StateMode::PreviousResponseId);
        let (status, _) = run.send(
            "POST",
            "/v1/responses",
            Some(&serde_json::json!({"model": "gpt-5", "input": "Hi", "previous_response_id": "resp_unknown"})),
        );
        assert_eq!(status, 400);
        let judgement = run.judge_failed("api_error");
        assert!(
            judgement
                .checks
                .iter()
                .all(|c| c.id != "terminal/reached-outcome")
        );
        assert_eq!(judgement.verdict, crate::oracle::CaseVerdict::Fail);
    }

    #[test]
    fn a_should_case_does_not_soften_the_floor() {
        let mut case = scenario("terminal/05-incomplete-partial-text");
        case.level = crate::scenario::Level::Should;
        let judgement = Run::of(case, StateMode::Stateless).judge_failed("incomplete");
        assert_eq!(judgement.verdict, crate::oracle::CaseVerdict::Fail);
    }

    #[test]
    fn budget_outcomes_rest_on_the_request_that_exhausts_the_budget() {
        assert_eq!(
            needed_requests(&scenario("budget/01-endless-tool-calls")),
            scenario("budget/01-endless-tool-calls").task.max_rounds as usize
        );
        assert_eq!(needed_requests(&scenario("budget/03-single-round")), 1);
        // max_tool_calls 3, one call a turn: the 4th request brings the 4th call.
        assert_eq!(needed_requests(&scenario("budget/04-tool-call-cap")), 4);
        assert_eq!(needed_requests(&scenario("budget/05-deadline")), 2);
    }
}
