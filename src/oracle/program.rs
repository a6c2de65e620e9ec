//! `program`: programmatic tool calling. Child calls answered with their `caller`
//! echoed, program items replayed verbatim when stateless, and the loop continued past
//! `program_output` to the model's final message.

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::scenario::StateMode;
use crate::wire::request::{item_id, item_type};

/// The `program` checks (cases with program items only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let programs: Vec<(usize, &Value)> = f
        .served
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.output
                .iter()
                .filter(|item| item["type"] == "program")
                .map(move |item| (i, item))
        })
        .collect();
    if programs.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();

    let mut echoed = Vec::new();
    let mut judged = 0;
    for (index, served) in f.served.iter().enumerate() {
        let Some((position, request)) = f.request_after(index) else {
            continue;
        };
        for &c in &served.calls {
            let call = &f.calls[c];
            let item = served
                .output
                .iter()
                .find(|i| i["call_id"] == call.call_id.as_str());
            let Some(caller) = item.and_then(|i| i.get("caller")).filter(|c| !c.is_null()) else {
                continue;
            };
            for output in Facts::outputs_for(request, &call.call_id) {
                judged += 1;
                if output.get("caller") != Some(caller) {
                    echoed.push(format!(
                        "{}: the output for {} carries caller {}; expected the call's caller {caller} unchanged",
                        f.request_label(position),
                        call.describe(),
                        output.get("caller").map_or("(none)".to_owned(), Value::to_string)
                    ));
                }
            }
        }
    }
    if judged > 0 {
        out.push(checks::PROGRAM_CALLER_ECHOED.judge(
            echoed,
            format!("{judged} output(s) of program-owned calls echo their caller"),
        ));
    }

    if matches!(f.state, StateMode::Stateless | StateMode::Replay) {
        let mut problems = Vec::new();
        let mut count = 0;
        for (position, request) in f.requests.iter().enumerate() {
            let input = Facts::input_of(request);
            for (served, program) in programs
                .iter()
                .filter(|(s, _)| f.served[*s].request < position)
            {
                count += 1;
                let id = item_id(program).unwrap_or_default();
                match input.iter().find(|i| item_type(i) == "program" && i.get("call_id") == program.get("call_id")) {
                    None => problems.push(format!(
                        "{} does not replay program {id} from {}: in {} mode the program item travels with its calls",
                        f.request_label(position),
                        f.response_label(*served),
                        f.state
                    )),
                    Some(sent) if sent.get("fingerprint") != program.get("fingerprint") || sent.get("code") != program.get("code") => {
                        problems.push(format!(
                            "{} replays program {id} altered (code or fingerprint): expected it verbatim",
                            f.request_label(position)
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        if count > 0 {
            out.push(checks::PROGRAM_REPLAYED.judge(
                problems,
                format!("{count} program replay(s), each verbatim"),
            ));
        }
    }

    let pauses: Vec<usize> = (0..f.served.len())
        .filter(|&i| {
            let s = &f.served[i];
            s.status == "completed"
                && s.calls.is_empty()
                && !s.has_message
                && s.output.iter().any(|item| item["type"] == "program_output")
                && !f.may_stop_after(i)
        })
        .collect();
    if !pauses.is_empty() {
        let problems = pauses
            .iter()
            .filter(|&&i| f.request_after(i).is_none())
            .map(|&i| {
                format!(
                    "{} ends with a program_output and no message; the controller stopped there: expected it to continue to the model's final message",
                    f.response_label(i)
                )
            })
            .collect();
        out.push(checks::PROGRAM_CONTINUED.judge(
            problems,
            "the loop went on past program_output to the final message",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{self, PreviousResponseId, Stateless};

    const ONE_PAUSE: &str = "program/01-one-pause";
    const TWO_PAUSES: &str = "program/02-two-pauses";
    const NO_MESSAGE: &str = "program/04-output-without-final-message";
    const STATELESS: &str = "program/05-stateless-replay";

    /// The outputs of a controller that drops each call's `caller`.
    fn without_caller(run: &Run, response: &Value) -> Vec<Value> {
        run.execute(response)
            .into_iter()
            .map(|mut output| {
                output.as_object_mut().unwrap().remove("caller");
                output
            })
            .collect()
    }

    /// Plays `case` in `state` like a correct controller (going on past a response that
    /// only holds a `program_output`), with `answer` giving each round's outputs and
    /// `change` rewriting each request after the first. Returns the run once a response
    /// holds a message, or has no calls and is not a program pause, or was rejected.
    fn play(
        case: &str,
        state: StateMode,
        answer: impl Fn(&Run, &Value) -> Vec<Value>,
        change: impl Fn(&mut Value),
    ) -> Run {
        let run = Run::case(case, state);
        let mut body = run.first_body();
        loop {
            let response = run.create(&body);
            let items = response["output"].as_array().cloned().unwrap_or_default();
            let pause = items.iter().any(|i| i["type"] == "program_output")
                && !items.iter().any(|i| i["type"] == "message");
            if response["status"] != "completed" || (calls(&response).is_empty() && !pause) {
                return run;
            }
            let outputs = answer(&run, &response);
            body = run.next_body(&body, &response, &outputs);
            change(&mut body);
        }
    }

    #[test]
    fn a_correct_run_passes_every_program_check() {
        for (case, state) in [
            (ONE_PAUSE, PreviousResponseId),
            (TWO_PAUSES, PreviousResponseId),
            (TWO_PAUSES, Stateless),
            (STATELESS, Stateless),
        ] {
            let judgement = play(case, state, Run::execute, |_| {}).judge_completed();
            assert_all_pass(&judgement, &["wire/accepted", "program/caller-echoed"]);
            if state == Stateless {
                assert_passes(&judgement, "program/replayed");
            } else {
                assert_not_judged(&judgement, "program/replayed");
            }
        }
    }

    #[test]
    fn program_checks_are_not_judged_without_a_program() {
        let run = Run::played("correlation/01-single-call", Stateless);
        let judgement = run.judge_completed();
        for id in [
            "program/caller-echoed",
            "program/replayed",
            "program/continued",
        ] {
            assert_not_judged(&judgement, id);
        }
    }

    #[test]
    fn caller_echoed_fails_an_output_without_the_caller() {
        let judgement =
            play(ONE_PAUSE, PreviousResponseId, without_caller, |_| {}).judge_failed("api_error");
        assert_fails_with(
            &judgement,
            "program/caller-echoed",
            &[
                "request 2: the output for call_",
                "carries caller (none); expected the call's caller {",
            ],
        );
    }

    #[test]
    fn caller_echoed_fails_a_caller_of_another_shape() {
        // The caller's id alone, not the object the model sent.
        let judgement = play(
            ONE_PAUSE,
            PreviousResponseId,
            |run, response| {
                let mut outputs = run.execute(response);
                for output in &mut outputs {
                    output["caller"] = output["caller"]["caller_id"].clone();
                }
                outputs
            },
            |_| {},
        )
        .judge_failed("api_error");
        assert_fails(&judgement, "program/caller-echoed", "carries caller \"");
    }

    #[test]
    fn replayed_fails_a_program_dropped_from_the_stateless_replay() {
        let judgement = play(STATELESS, Stateless, Run::execute, |body| {
            let input: Vec<Value> = body["input"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|item| item["type"] != "program")
                .cloned()
                .collect();
            body["input"] = json!(input);
        })
        .judge_failed("api_error");
        assert_fails_with(
            &judgement,
            "program/replayed",
            &[
                "request 2 does not replay program ",
                "in stateless mode the program item travels with its calls",
            ],
        );
    }

    #[test]
    fn replayed_fails_a_program_with_reformatted_code() {
        let judgement = play(STATELESS, Stateless, Run::execute, |body| {
            for item in body["input"].as_array_mut().unwrap() {
                if item["type"] == "program" {
                    let code = item["code"].as_str().unwrap().trim().to_owned();
                    item["code"] = json!(code);
                }
            }
        })
        .judge_failed("api_error");
        assert_fails_with(
            &judgement,
            "program/replayed",
            &[
                "request 2 replays program ",
                "altered (code or fingerprint): expected it verbatim",
            ],
        );
    }

    #[test]
    fn continued_passes_a_loop_that_goes_past_the_program_output() {
        let judgement =
            play(NO_MESSAGE, PreviousResponseId, Run::execute, |_| {}).judge_completed();
        assert_passes(&judgement, "program/continued");
    }

    #[test]
    fn continued_fails_a_loop_that_stops_at_the_program_output() {
        let (run, _) = first_round(NO_MESSAGE, |run, calls| run.execute_calls(calls));
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_fails_with(
            &judgement,
            "program/continued",
            &[
                "response 2 (resp_",
                "ends with a program_output and no message; the controller stopped there",
            ],
        );
    }

    #[test]
    fn continued_is_not_judged_when_the_program_output_comes_with_the_answer() {
        let judgement = play(ONE_PAUSE, PreviousResponseId, Run::execute, |_| {}).judge_completed();
        assert_not_judged(&judgement, "program/continued");
    }
}
