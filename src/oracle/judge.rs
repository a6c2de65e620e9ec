//! Judging a case run: every family's checks over the transcript, folded into one verdict.

use super::facts::Facts;
use super::{CaseVerdict, CheckResult, CheckVerdict};
use super::{
    authz, background, budget, checks, compaction, correlation, dispatch, effects, hosted, mcp,
    program, reached, reasoning, safety, state, stream, terminal, tool_search, transport,
    websocket,
};
use crate::scenario::{Scenario, StateMode};
use crate::transcript::{Transcript, Unfinished};

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
        Some(Unfinished::StartupTimedOut { after_ms }) => (
            CaseVerdict::Timeout,
            Some(format!(
                "the persistent controller had not read its case line {after_ms} ms after it was started (the start-up timeout); it was killed"
            )),
        ),
        Some(Unfinished::NoResult { why }) => (CaseVerdict::Crashed, Some(why.clone())),
        Some(Unfinished::StoppedOverLimit {
            requests,
            budget,
            limit,
        }) => (
            CaseVerdict::Fail,
            Some(format!(
                "loopcheck stopped the controller after {requests} model requests, past the limit of {limit} for a budget of {budget} (the loop has no round limit)"
            )),
        ),
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
    checks.extend(tool_search::check(&facts));
    checks.extend(authz::check(&facts));
    checks.extend(safety::check(&facts));
    checks.extend(effects::check(&facts));
    checks.extend(budget::check(&facts));
    checks.extend(transport::check(&facts));
    checks.extend(stream::check(&facts));
    checks.extend(websocket::check(&facts));
    checks.extend(background::check(&facts));
    checks.extend(program::check(&facts));
    checks.extend(mcp::check(&facts));
    checks.extend(hosted::check(&facts));
    checks.extend(compaction::check(&facts));
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
    // The floor is what stands between a run that proved nothing and a pass: a run that
    // fails already is told its failures, not also that it stopped short of them.
    if !checks.iter().any(|c| c.verdict == CheckVerdict::Fail) {
        checks.extend(reached::check(&facts));
    }
    checks
}

/// `wire/accepted`: every request passed the strict emulation of the real API (script
/// exhaustion is judged by `terminal/stopped-at-answer`).
fn accepted(f: &Facts, transcript: &Transcript) -> CheckResult {
    let problems = transcript
        .model
        .iter()
        .filter(|m| m.rejected_by_api())
        .map(|m| {
            let position = f.requests.iter().position(|r| r.seq == m.seq);
            let label = position.map_or_else(
                || format!("{} {}", m.method, m.path),
                |p| f.request_label(p),
            );
            format!(
                "{label} was rejected by the API ({}, HTTP {}): {}",
                m.rejected_by.as_deref().unwrap_or_default(),
                m.status,
                m.response["error"]["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let past_script = transcript
        .model
        .iter()
        .filter(|m| m.rejected_by.as_deref() == Some("script"))
        .count();
    let judged = transcript.model.len() - past_script;
    let pass = if past_script == 0 {
        format!("all {judged} API request(s) were accepted")
    } else {
        format!(
            "all {judged} API request(s) within the script were accepted ({past_script} past its end: see terminal/stopped-at-answer)"
        )
    };
    checks::WIRE_ACCEPTED.judge(problems, pass)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{CaseVerdict, CheckVerdict};
    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    /// Answers the first call of `case` under `call_id`, as a controller that sends the
    /// wrong id would; the run, judged failed as that controller reports.
    fn answered_as(case: &str, call_id: impl Fn(&Value) -> Value) -> super::Judgement {
        let run = Run::case(case, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let outputs: Vec<Value> = run
            .execute(&response)
            .into_iter()
            .zip(calls(&response))
            .map(|(mut output, call)| {
                output["call_id"] = call_id(&call);
                output
            })
            .collect();
        run.create(&run.next_body(&first, &response, &outputs));
        run.judge_failed("api_error")
    }

    #[test]
    fn accepted_passes_a_correct_run_and_counts_its_requests() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        let judgement = run.judge_completed();
        assert_passes(&judgement, "wire/accepted");
        assert_eq!(
            check(&judgement, "wire/accepted").message,
            "all 2 API request(s) were accepted"
        );
    }

    #[test]
    fn accepted_fails_an_output_for_the_item_id_instead_of_the_call_id_with_the_apis_message() {
        let judgement = answered_as("correlation/01-single-call", |call| call["id"].clone());
        assert_fails_with(
            &judgement,
            "wire/accepted",
            &[
                "request 2 was rejected by the API (",
                "HTTP 400): No tool call found for function call output with call_id fc_",
            ],
        );
        assert_eq!(judgement.verdict, CaseVerdict::Fail);
    }

    #[test]
    fn accepted_fails_an_output_for_a_call_the_model_never_made() {
        let judgement = answered_as("correlation/01-single-call", |_| json!("call_made_up"));
        assert_fails(
            &judgement,
            "wire/accepted",
            "No tool call found for function call output with call_id call_made_up.",
        );
    }

    #[test]
    fn accepted_names_a_rejected_request_that_is_not_a_model_request_by_method_and_path() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        run.send("GET", "/v1/responses/resp_missing", None);
        assert_fails(
            &run.judge_completed(),
            "wire/accepted",
            "GET /v1/responses/resp_missing was rejected by the API (not-found, HTTP 404): Response with id 'resp_missing' not found.",
        );
    }

    #[test]
    fn a_request_past_the_script_is_judged_by_stopped_at_answer_not_wire_accepted() {
        let run = Run::case("correlation/01-single-call", PreviousResponseId);
        let first = run.first_body();
        let one = run.create(&first);
        let second = run.next_body(&first, &one, &run.execute(&one));
        let two = run.create(&second);
        let nudge = json!({"role": "user", "content": "Anything else?"});
        run.create(&run.next_body(&second, &two, &[nudge]));
        let judgement = run.judge_completed();
        assert_passes(&judgement, "wire/accepted");
        assert_fails(
            &judgement,
            "terminal/stopped-at-answer",
            "request 3 came after response 2",
        );
    }

    #[test]
    fn a_must_check_failing_in_a_should_case_is_non_strict() {
        // terminal/02-empty-output is a SHOULD case: its MUST checks weigh as SHOULDs.
        let judgement = answered_as("terminal/02-empty-output", |_| json!("call_made_up"));
        assert_fails(&judgement, "wire/accepted", "call_made_up");
        assert_eq!(
            check(&judgement, "wire/accepted").verdict,
            CheckVerdict::NonStrict
        );
        assert_eq!(judgement.verdict, CaseVerdict::NonStrict);
    }
}
