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
        assert_passes(&judgement, "budget/max-rounds");
        assert_passes(&judgement, "budget/last-round-idle");
    }

    #[test]
    fn max_rounds_passes_a_final_answer_on_the_last_round_allowed() {
        for state in [PreviousResponseId, Stateless] {
            let run = Run::case("budget/02-final-on-last-round", state);
            run.correct();
            let judgement = run.judge_completed();
            assert_passes(&judgement, "budget/max-rounds");
            assert_passes(&judgement, "budget/last-round-idle");
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
    fn last_round_idle_fails_a_call_executed_on_the_last_round() {
        let judgement = rounds("budget/03-single-round", 1, true).judge_failed("max_rounds");
        assert_passes(&judgement, "budget/max-rounds");
        assert_fails(&judgement, "budget/last-round-idle", "'send_email' (call_");
        assert_fails(
            &judgement,
            "budget/last-round-idle",
            "was executed after the response to request 1, the last the budget allows: its result could never be sent back",
        );
    }

    #[test]
    fn last_round_idle_fails_the_fourth_call_of_an_endless_loop_executed() {
        let judgement = rounds(ENDLESS, 4, true).judge_failed("max_rounds");
        assert_fails(&judgement, "budget/last-round-idle", "'search_docs' (call_");
    }

    #[test]
    fn last_round_idle_is_not_judged_below_the_budget() {
        let run = Run::case("correlation/01-single-call", PreviousResponseId);
        run.correct();
        let judgement = run.judge_completed();
        assert_passes(&judgement, "budget/max-rounds");
        assert_not_judged(&judgement, "budget/last-round-idle");
    }

    #[test]
    fn a_run_without_model_requests_gives_the_budget_nothing_to_judge() {
        let run = Run::case(ENDLESS, PreviousResponseId);
        let judgement = run.judge_failed("api_error");
        assert_not_judged(&judgement, "budget/max-rounds");
        assert_not_judged(&judgement, "budget/last-round-idle");
    }
}
