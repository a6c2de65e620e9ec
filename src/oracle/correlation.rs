//! `call-id`: every pending call answered exactly once, with its own `call_id`, and with
//! the result of that very call.

use serde_json::Value;

use super::checks;
use super::compaction;
use super::facts::{Facts, answer_result, output_text};
use super::verdict::{CheckResult, Diff};
use crate::json_compare::json_equal;
use crate::tools::CallValidity;
use crate::wire::call_kind::{self, FUNCTION, TOOL_SEARCH};
use crate::wire::request::{call_id, item_type};

/// The `call-id` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if f.calls.is_empty() {
        return Vec::new();
    }
    let mut out = vec![answered(f), own_id(f)];
    out.extend(answer_kind(f));
    out.extend(executed_as_issued(f));
    out.extend(result_matches(f));
    out
}

fn answered(f: &Facts) -> CheckResult {
    let compactions = compaction::compactions(f);
    let mut problems = Vec::new();
    let mut answered = 0;
    for (index, served) in f.served.iter().enumerate() {
        if served.calls.is_empty() || served.status != "completed" {
            continue;
        }
        match f.request_after(index) {
            None if f.may_stop_after(index) => {}
            None => {
                for &c in &served.calls {
                    problems.push(format!(
                        "{} issued {}, and the controller never sent its output: it made no further request",
                        f.response_label(index),
                        f.calls[c].describe()
                    ));
                }
            }
            Some((position, request)) => {
                // Outputs given to a compaction just before this request were sent.
                let compacted = compactions
                    .iter()
                    .find(|compaction| compaction.standalone && compaction.before == position);
                for &c in &served.calls {
                    let call = &f.calls[c];
                    let in_compaction = compacted.map_or(0, |compaction| {
                        compaction
                            .input
                            .iter()
                            .filter(|item| {
                                call_kind::of_answer(item_type(item)).is_some()
                                    && call_id(item) == Some(call.call_id.as_str())
                            })
                            .count()
                    });
                    match Facts::outputs_for(request, &call.call_id).len() + in_compaction {
                        0 => problems.push(format!(
                            "{} has no {} for {} from {}: expected exactly one",
                            f.request_label(position),
                            call.kind.answer,
                            call.describe(),
                            f.response_label(index)
                        )),
                        1 => answered += 1,
                        n => problems.push(format!(
                            "{} answers {} {n} times: expected exactly one {}",
                            f.request_label(position),
                            call.describe(),
                            call.kind.answer
                        )),
                    }
                }
            }
        }
    }
    checks::CALL_ID_ANSWERED.judge(
        problems,
        format!("{answered} pending call(s) each answered exactly once in the next request"),
    )
}

/// Each wrong call_id is reported once, where it first appears (a stateless replay
/// repeats it in every later request).
fn own_id(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut reported = std::collections::BTreeSet::new();
    let mut seen = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for (position, request) in f.requests.iter().enumerate() {
        for item in Facts::input_of(request) {
            let kind = item_type(&item);
            // A server-executed search's output, replayed, answers no call of the
            // controller's: it has no call_id.
            let hosted = kind == TOOL_SEARCH.answer && call_id(&item).is_none();
            if !call_kind::of_answer(kind).is_some_and(|kind| kind.runs_on_client()) || hosted {
                continue;
            }
            seen += 1;
            kinds.insert(kind.to_owned());
            let id = call_id(&item).unwrap_or_default();
            if f.call_by_id(id).is_some() || !reported.insert(id.to_owned()) {
                continue;
            }
            let expected = if let Some(call) = f.call_by_item_id(id) {
                format!(
                    " (the item id of {}), expected {}",
                    call.describe(),
                    call.call_id
                )
            } else if let Some(call) = f.calls.iter().find(|c| c.name == id) {
                format!(
                    " (a tool name), expected the call_id of the call, e.g. {}",
                    call.call_id
                )
            } else {
                " which matches no call the model issued".to_owned()
            };
            // The field naming the call: `call_id`, or a local shell output's `id`.
            let field = call_kind::of_answer(kind).map_or("call_id", |k| k.answer_ref);
            problems.push(match call_id(&item) {
                Some(_) => format!(
                    "{}: {kind} carries {field} '{id}'{expected}",
                    f.request_label(position)
                ),
                None => format!(
                    "{}: {kind} has no {field}: expected the call_id of the call it answers in its {field}",
                    f.request_label(position)
                ),
            });
        }
    }
    let answers = match kinds.len() {
        0 | 1 => kinds
            .pop_first()
            .unwrap_or_else(|| "function_call_output".to_owned()),
        _ => "answer".to_owned(),
    };
    checks::CALL_ID_OWN_ID.judge(
        problems,
        format!("{seen} {answers} item(s) all carry the call_id of a call the model issued"),
    )
}

/// Judged only in runs with calls of other kinds than `function`: a run of function
/// calls alone has no other kind to answer with.
fn answer_kind(f: &Facts) -> Option<CheckResult> {
    if f.calls.iter().all(|c| c.kind == FUNCTION) {
        return None;
    }
    let mut problems = Vec::new();
    let mut reported = std::collections::BTreeSet::new();
    let mut seen = 0;
    for (position, request) in f.requests.iter().enumerate() {
        for item in Facts::input_of(request) {
            let kind = item_type(&item);
            if !call_kind::of_answer(kind).is_some_and(|kind| kind.runs_on_client()) {
                continue;
            }
            let Some(call) = call_id(&item).and_then(|id| f.call_by_id(id)) else {
                continue;
            };
            seen += 1;
            if kind != call.kind.answer && reported.insert(call.call_id.clone()) {
                problems.push(format!(
                    "{}: {} is a {}, answered by a {kind}: expected a {}",
                    f.request_label(position),
                    call.describe(),
                    call.kind.call,
                    call.kind.answer
                ));
            }
        }
    }
    Some(checks::CALL_ID_ANSWER_KIND.judge(
        problems,
        format!("{seen} answer item(s) each of its call's kind"),
    ))
}

/// Judged over the valid calls of completed responses: dispatching an invalid or
/// unfinished call is its own finding (`dispatch/*`, `terminal/unfinished-not-executed`),
/// whatever it was dispatched with.
fn executed_as_issued(f: &Facts) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut judged = 0;
    for call in f
        .actionable_calls()
        .filter(|c| c.validity == CallValidity::Valid)
    {
        for execution in f.executions_of(&call.call_id) {
            judged += 1;
            if execution.name != call.name
                || !call
                    .parsed
                    .as_ref()
                    .is_some_and(|p| json_equal(p, &execution.arguments))
            {
                problems.push(format!(
                    "the backend was asked to run {} {} under {}, which the model issued as {} {}",
                    execution.name, execution.arguments, call.call_id, call.name, call.arguments
                ));
            }
        }
    }
    (judged > 0).then(|| {
        checks::CALL_ID_EXECUTED_AS_ISSUED.judge(
            problems,
            format!("{judged} execution(s) ran the tool and arguments of the call whose call_id they carried"),
        )
    })
}

fn result_matches(f: &Facts) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut diff = None;
    let mut judged = 0;
    let results: Vec<(&str, Value)> = f
        .tools
        .iter()
        .filter(|t| t.status == 200)
        // A result held past tool_timeout_ms never had to reach the controller (an error
        // output is as right): budget/tool-timeout judges those calls.
        .filter(|t| !f.held_past_tool_timeout(t))
        .filter_map(|t| Some((t.call_id.as_deref()?, t.response.get("result")?.clone())))
        .collect();
    for (index, served) in f.served.iter().enumerate() {
        let Some((position, request)) = f.request_after(index) else {
            continue;
        };
        for &c in &served.calls {
            let call = &f.calls[c];
            let outputs = Facts::outputs_for(request, &call.call_id);
            let Some(output) = outputs.first() else {
                continue;
            };
            let Some((_, expected)) = results.iter().find(|(id, _)| *id == call.call_id) else {
                problems.extend(borrowed_result(f, position, call, output, &results));
                continue;
            };
            judged += 1;
            let actual = answer_result(output);
            // An answer without `output` (a tool search's) is shown by what it carries.
            let text = match (output.get("output"), &actual) {
                (None, Some(value)) => value.to_string(),
                _ => output_text(output),
            };
            let others: Vec<&str> = results
                .iter()
                .filter(|(id, result)| {
                    *id != call.call_id
                        && !json_equal(result, expected)
                        && actual.as_ref().is_some_and(|a| carries(a, result))
                })
                .map(|(id, _)| *id)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let own = actual.as_ref().is_some_and(|a| carries(a, expected));
            if own && others.is_empty() {
                continue;
            }
            let problem = if own {
                format!(
                    "{}: the output for {} carries its result and also the result of {}: expected that call's result alone",
                    f.request_label(position),
                    call.describe(),
                    others.join(", ")
                )
            } else {
                let whose = others
                    .first()
                    .map(|id| format!(" (that is the result of {id})"))
                    .unwrap_or_default();
                format!(
                    "{}: the output for {} is {}{whose}; expected the backend's result for that call, {}",
                    f.request_label(position),
                    call.describe(),
                    crate::text::clip(&text, 120),
                    expected
                )
            };
            problems.push(problem);
            if diff.is_none() {
                diff = Some(Diff {
                    expected: pretty(expected),
                    actual: actual.as_ref().map_or(text.clone(), pretty),
                });
            }
        }
    }
    (judged > 0).then(|| {
        checks::CALL_ID_RESULT_MATCHES.judge(
            problems,
            format!(
                "{judged} output(s) carry the backend's result for their own call and no other's"
            ),
        )
        .with_diff(diff)
    })
}

/// A call the backend never ran whose output carries another call's result: the
/// controller ran one of two identical calls and answered both with its result (or
/// copied a result across). Scalar results are left out: an error output may hold
/// `true` or a number by chance.
fn borrowed_result(
    f: &Facts,
    position: usize,
    call: &super::facts::IssuedCall,
    output: &Value,
    results: &[(&str, Value)],
) -> Option<String> {
    let actual = answer_result(output)?;
    let (owner, _) = results.iter().find(|(id, result)| {
        *id != call.call_id && (result.is_object() || result.is_array()) && carries(&actual, result)
    })?;
    let executed = if f.executions_of(&call.call_id).is_empty() {
        "was never executed"
    } else {
        "got no result from the backend"
    };
    Some(format!(
        "{}: the output for {} carries the result of {owner}, but {} {executed}: each call's output must be the result of its own execution",
        f.request_label(position),
        call.describe(),
        call.call_id
    ))
}

/// Whether an output value carries `result`: it is the result, or a one-level envelope
/// around it (`{"result": ...}`, `{"ok": true, "data": ...}`, `[...]`).
pub(super) fn carries(output: &Value, result: &Value) -> bool {
    json_equal(output, result)
        || match output {
            Value::Object(fields) => fields.values().any(|v| json_equal(v, result)),
            Value::Array(items) => items.iter().any(|v| json_equal(v, result)),
            _ => false,
        }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{Conversation, PreviousResponseId, Stateless};

    const CHECKS: [&str; 4] = [
        "call-id/answered",
        "call-id/own-id",
        "call-id/executed-as-issued",
        "call-id/result-matches",
    ];

    /// Plays the first round of `case` correctly, lets `change` rewrite the outputs
    /// sent back, sends them and judges the run as failed (the API may refuse them).
    fn second_request_with(case: &str, change: impl Fn(&Value, Vec<Value>) -> Vec<Value>) -> Run {
        let run = Run::case(case, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let outputs = change(&response, run.execute(&response));
        run.create(&run.next_body(&first, &response, &outputs));
        run
    }

    /// The backend's result carried by a correct output.
    fn result_of(output: &Value) -> Value {
        serde_json::from_str(output["output"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn every_call_id_check_passes_a_correct_run_in_every_mode() {
        for case in [
            "correlation/05-parallel-same-tool",
            "correlation/03-mixed-items",
            "correlation/07-duplicate-calls",
        ] {
            for state in [PreviousResponseId, Stateless, Conversation] {
                let run = Run::played(case, state);
                let judgement = run.judge_completed();
                for id in CHECKS {
                    assert_passes(&judgement, id);
                }
            }
        }
    }

    #[test]
    fn a_run_without_calls_gives_the_call_id_checks_nothing_to_judge() {
        let run = Run::answer_only(PreviousResponseId);
        run.correct();
        let judgement = run.judge_completed();
        for id in CHECKS {
            assert_not_judged(&judgement, id);
        }
    }

    #[test]
    fn result_matches_fails_identical_calls_run_once_and_answered_with_one_result() {
        let run = Run::case("correlation/07-duplicate-calls", PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let calls = calls(&response);
        let mut once = response.clone();
        once["output"] = json!([calls[0].clone()]);
        let result = run.execute(&once)[0]["output"].as_str().unwrap().to_owned();
        let outputs: Vec<Value> = calls.iter().map(|call| output(call, &result)).collect();
        run.create(&run.next_body(&first, &response, &outputs));
        let (ran, skipped) = (&calls[0]["call_id"], &calls[1]["call_id"]);
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/result-matches",
            &format!(
                "carries the result of {}, but {} was never executed",
                ran.as_str().unwrap(),
                skipped.as_str().unwrap()
            ),
        );
    }

    #[test]
    fn result_matches_fails_identical_calls_whose_numbered_results_are_swapped() {
        let run = second_request_with("correlation/07-duplicate-calls", |_, outputs| {
            assert_ne!(result_of(&outputs[0]), result_of(&outputs[1]));
            vec![
                json!({"type": "function_call_output", "call_id": outputs[0]["call_id"], "output": outputs[1]["output"]}),
                json!({"type": "function_call_output", "call_id": outputs[1]["call_id"], "output": outputs[0]["output"]}),
            ]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/result-matches",
            "(that is the result of call_",
        );
    }

    #[test]
    fn answered_fails_a_parallel_call_left_without_output() {
        let run = second_request_with("correlation/04-parallel-different-tools", |_, outputs| {
            outputs[..1].to_vec()
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/answered",
            "request 2 has no function_call_output for",
        );
    }

    #[test]
    fn answered_fails_a_call_answered_twice() {
        let run = second_request_with("correlation/01-single-call", |_, outputs| {
            vec![outputs[0].clone(), outputs[0].clone()]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/answered",
            "2 times: expected exactly one function_call_output",
        );
    }

    #[test]
    fn answered_fails_a_controller_that_stops_with_a_call_pending() {
        let run = Run::case("correlation/01-single-call", PreviousResponseId);
        let response = run.create(&run.first_body());
        run.execute(&response);
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/answered",
            "and the controller never sent its output: it made no further request",
        );
    }

    #[test]
    fn answered_passes_a_call_left_pending_on_the_last_round_the_budget_allows() {
        let run = Run::case("budget/03-single-round", PreviousResponseId);
        run.create(&run.first_body());
        let judgement = run.judge_failed("max_rounds");
        assert_all_pass(&judgement, &["call-id/answered", "call-id/own-id"]);
        assert_none_judged(
            &judgement,
            &["call-id/executed-as-issued", "call-id/result-matches"],
        );
    }

    #[test]
    fn own_id_fails_an_output_under_the_item_id() {
        let run = second_request_with("correlation/02-call-id-distinct", |response, outputs| {
            let mut output = outputs[0].clone();
            output["call_id"] = calls(response)[0]["id"].clone();
            vec![output]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/own-id",
            "(the item id of call_",
        );
    }

    #[test]
    fn own_id_fails_an_output_under_the_tool_name() {
        let run = second_request_with("correlation/01-single-call", |_, outputs| {
            let mut output = outputs[0].clone();
            output["call_id"] = json!("get_weather");
            vec![output]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/own-id",
            "carries call_id 'get_weather' (a tool name), expected the call_id of the call",
        );
    }

    #[test]
    fn own_id_fails_an_output_under_an_invented_id() {
        let run = second_request_with("correlation/01-single-call", |_, outputs| {
            let mut output = outputs[0].clone();
            output["call_id"] = json!("call_0");
            vec![output]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/own-id",
            "carries call_id 'call_0' which matches no call the model issued",
        );
    }

    #[test]
    fn executed_as_issued_fails_arguments_run_under_the_sibling_call_id() {
        let judgement = answer_first_round("correlation/05-parallel-same-tool", |run, issued| {
            // Pairs arguments with call_ids in reverse: A7 runs under B2's call_id and back.
            let mut swapped = issued.to_vec();
            swapped[0]["call_id"] = issued[1]["call_id"].clone();
            swapped[1]["call_id"] = issued[0]["call_id"].clone();
            run.execute_calls(&swapped)
        });
        assert_fails(
            &judgement,
            "call-id/executed-as-issued",
            r#"the backend was asked to run get_stock {"sku":"B2"} under"#,
        );
    }

    #[test]
    fn result_matches_passes_a_result_in_a_one_level_envelope() {
        let run = Run::case("correlation/01-single-call", Stateless);
        let first = run.first_body();
        let response = run.create(&first);
        let outputs: Vec<Value> = run
            .execute(&response)
            .iter()
            .map(|o| {
                let wrapped = json!({"result": result_of(o)}).to_string();
                json!({"type": "function_call_output", "call_id": o["call_id"], "output": wrapped})
            })
            .collect();
        run.create(&run.next_body(&first, &response, &outputs));
        assert_passes(&run.judge_completed(), "call-id/result-matches");
    }

    #[test]
    fn result_matches_fails_parallel_results_swapped() {
        let run = second_request_with("correlation/05-parallel-same-tool", |_, outputs| {
            let mut swapped = outputs.clone();
            swapped[0]["output"] = outputs[1]["output"].clone();
            swapped[1]["output"] = outputs[0]["output"].clone();
            swapped
        });
        let judgement = run.judge_completed();
        assert_passes(&judgement, "call-id/executed-as-issued");
        assert_fails(
            &judgement,
            "call-id/result-matches",
            "(that is the result of call_",
        );
    }

    #[test]
    fn result_matches_fails_an_output_that_carries_another_calls_result_too() {
        let run = second_request_with("correlation/05-parallel-same-tool", |_, outputs| {
            let all: serde_json::Map<String, Value> = outputs
                .iter()
                .map(|o| (o["call_id"].as_str().unwrap().to_owned(), result_of(o)))
                .collect();
            let text = Value::Object(all).to_string();
            outputs
                .iter()
                .map(|o| json!({"type": "function_call_output", "call_id": o["call_id"], "output": text}))
                .collect()
        });
        assert_fails(
            &run.judge_completed(),
            "call-id/result-matches",
            "carries its result and also the result of call_",
        );
    }

    #[test]
    fn every_call_id_check_and_answer_kind_pass_a_correct_run_with_custom_calls() {
        for case in ["custom/01-custom-call", "custom/02-custom-beside-function"] {
            for state in [PreviousResponseId, Stateless] {
                let run = Run::case(case, state);
                run.correct();
                let judgement = run.judge_completed();
                assert_all_pass(&judgement, &CHECKS);
                assert_passes(&judgement, "call-id/answer-kind");
            }
        }
    }

    #[test]
    fn answer_kind_is_not_judged_in_a_run_of_function_calls_alone() {
        let run = Run::case("correlation/01-single-call", PreviousResponseId);
        run.correct();
        assert_none_judged(&run.judge_completed(), &["call-id/answer-kind"]);
    }

    #[test]
    fn answer_kind_fails_a_custom_call_answered_with_a_function_call_output() {
        let run = second_request_with("custom/02-custom-beside-function", |_, outputs| {
            outputs
                .into_iter()
                .map(|mut item| {
                    item["type"] = json!("function_call_output");
                    item
                })
                .collect()
        });
        let judgement = run.judge_failed("api_error");
        assert_fails(
            &judgement,
            "call-id/answer-kind",
            "(custom_tool_call run_sql \"SELECT count(*) FROM orders WHERE status = 'open'\") is a custom_tool_call, answered by a function_call_output: expected a custom_tool_call_output",
        );
        assert_fails(
            &judgement,
            "wire/accepted",
            "No tool call found for function call output",
        );
    }

    #[test]
    fn every_call_id_check_and_answer_kind_pass_a_correct_run_with_shell_and_patch_calls() {
        for case in [
            "shell/01-shell-call",
            "shell/03-local-shell-call",
            "shell/04-apply-patch",
            "shell/06-shell-beside-function",
        ] {
            for state in [PreviousResponseId, Stateless] {
                let run = Run::case(case, state);
                run.correct();
                let judgement = run.judge_completed();
                assert_all_pass(&judgement, &CHECKS);
                assert_passes(&judgement, "call-id/answer-kind");
            }
        }
    }

    #[test]
    fn answer_kind_fails_a_shell_call_answered_with_a_function_call_output() {
        let run = second_request_with("shell/06-shell-beside-function", |_, outputs| {
            outputs
                .into_iter()
                .map(|item| json!({"type": "function_call_output", "call_id": item["call_id"], "output": "done"}))
                .collect()
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/answer-kind",
            "(shell_call {\"commands\":[\"ls reports\"]}) is a shell_call, answered by a function_call_output: expected a shell_call_output",
        );
    }

    #[test]
    fn result_matches_fails_a_shell_output_that_is_not_the_backends_and_a_local_shell_answer_read_by_its_id()
     {
        let run = second_request_with("shell/01-shell-call", |_, mut outputs| {
            outputs[0]["output"][0]["stdout"] = json!("3 notes.md\n");
            outputs
        });
        assert_fails(
            &run.judge_completed(),
            "call-id/result-matches",
            "expected the backend's result for that call, [{\"stdout\":\"12 notes.md\\n\"",
        );
        let run = second_request_with("shell/03-local-shell-call", |_, outputs| {
            assert!(outputs[0].get("call_id").is_none(), "{}", outputs[0]);
            assert!(outputs[0]["id"].as_str().unwrap().starts_with("call_"));
            outputs
        });
        let judgement = run.judge_completed();
        assert_all_pass(&judgement, &CHECKS);
    }

    #[test]
    fn answered_names_the_answer_kind_a_custom_call_lacks() {
        let run = second_request_with("custom/01-custom-call", |_, _| Vec::new());
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/answered",
            "has no custom_tool_call_output for",
        );
    }

    #[test]
    fn own_id_names_a_custom_output_under_the_tool_name() {
        let run = second_request_with("custom/01-custom-call", |_, outputs| {
            vec![
                json!({"type": "custom_tool_call_output", "call_id": "run_sql", "output": outputs[0]["output"]}),
            ]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "call-id/own-id",
            "custom_tool_call_output carries call_id 'run_sql' (a tool name)",
        );
    }
}
