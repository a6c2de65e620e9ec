//! `dispatch`: only registered tools, with parseable, schema-valid arguments, are
//! executed; rejected calls are answered with an error output so the loop goes on; and
//! the valid calls are really executed.

use super::checks::{self, Check};
use super::error_output::Said;
use super::facts::{Facts, IssuedCall};
use super::verdict::CheckResult;
use crate::json_compare::{json_equal, matches_subset};
use crate::tools::CallValidity;
use crate::wire::call_kind::COMPUTER;

/// The `dispatch` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = Vec::new();
    let has = |pred: fn(&CallValidity) -> bool| f.actionable_calls().any(|c| pred(&c.validity));

    if has(|v| *v == CallValidity::UnknownTool) {
        out.push(not_dispatched(
            f,
            &checks::DISPATCH_REGISTERED_ONLY,
            |v| *v == CallValidity::UnknownTool,
            "is not in the task's registry",
            "no call to an unregistered tool was executed",
        ));
    }
    if has(|v| matches!(v, CallValidity::MalformedArguments(_))) {
        out.push(not_dispatched(
            f,
            &checks::DISPATCH_ARGUMENTS_PARSED,
            |v| matches!(v, CallValidity::MalformedArguments(_)),
            "has arguments that are not a JSON object",
            "no call with unparseable arguments was executed",
        ));
    }
    if has(|v| matches!(v, CallValidity::SchemaViolation(_))) {
        out.push(not_dispatched(
            f,
            &checks::DISPATCH_SCHEMA_VALID,
            |v| matches!(v, CallValidity::SchemaViolation(_)),
            "has arguments that violate the tool's schema",
            "no call with schema-violating arguments was executed",
        ));
    }
    if has(|v| matches!(v, CallValidity::CallerNotAllowed(_))) {
        out.push(not_dispatched(
            f,
            &checks::DISPATCH_CALLER_ALLOWED,
            |v| matches!(v, CallValidity::CallerNotAllowed(_)),
            "comes from a caller the tool's allowed_callers excludes",
            "no call from a caller outside allowed_callers was executed",
        ));
    }
    if has(|v| matches!(v, CallValidity::GrammarViolation(_))) {
        out.push(not_dispatched(
            f,
            &checks::DISPATCH_INPUT_GRAMMAR,
            |v| matches!(v, CallValidity::GrammarViolation(_)),
            "has input that breaks the custom tool's regex grammar",
            "no custom tool call whose input breaks its grammar was executed",
        ));
    }
    if f.actionable_calls()
        .any(|c| c.validity != CallValidity::Valid)
    {
        out.push(rejection_answered(f));
    }
    if let Some(check) = valid_executed(f) {
        out.push(check);
    }
    out
}

/// A rejected call is judged by the one check its defect breaks: the backend's own
/// refusal of it (404, 422) is a consequence, not a second finding.
fn not_dispatched(
    f: &Facts,
    check: &Check,
    rejected: fn(&CallValidity) -> bool,
    why: &str,
    pass: &str,
) -> CheckResult {
    let mut problems = Vec::new();
    for call in f.actionable_calls().filter(|c| rejected(&c.validity)) {
        if let Some(execution) = f.executions_of(&call.call_id).first() {
            let detail = match &call.validity {
                CallValidity::MalformedArguments(e)
                | CallValidity::SchemaViolation(e)
                | CallValidity::CallerNotAllowed(e)
                | CallValidity::GrammarViolation(e) => {
                    format!(" ({e})")
                }
                _ => String::new(),
            };
            // A controller that "repairs" the call (drops an unknown key, say) dispatches
            // arguments the model never sent: name them.
            let altered = match &call.parsed {
                Some(parsed) if !json_equal(parsed, &execution.arguments) => {
                    format!(" with its arguments altered to {}", execution.arguments)
                }
                // Arguments that never parsed were replaced by something: say what.
                None => format!(" with the arguments {}", execution.arguments),
                _ => String::new(),
            };
            problems.push(format!(
                "{}: the call {why}{detail}, yet the controller dispatched it to the backend{altered}: expected it rejected before dispatch with an error output",
                call.describe()
            ));
        }
    }
    check.judge(problems, pass)
}

/// A rejected call the controller dispatched anyway is judged by the dispatch check it
/// breaks; what it then answered follows from that.
fn rejection_answered(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    for call in f
        .actionable_calls()
        .filter(|c| c.validity != CallValidity::Valid && f.executions_of(&c.call_id).is_empty())
    {
        problems.extend(f.error_answer_problem(call, "the rejected", Said::Nothing));
    }
    checks::DISPATCH_REJECTION_ANSWERED.judge(
        problems,
        "every rejected call was answered with an error output and the loop went on",
    )
}

/// Whether the scenario's approver would refuse this call (a call to an
/// approval-required tool, or a computer call with pending safety checks).
fn approval_denied(f: &Facts, call: &IssuedCall) -> bool {
    let guarded = call.kind == COMPUTER && !call.pending_safety_checks.is_empty();
    if !f.needs_approval(&call.name) && !guarded {
        return false;
    }
    let arguments = call.parsed.clone().unwrap_or_default();
    f.scenario
        .tools
        .get(&call.name)
        .and_then(|b| {
            b.approvals.iter().find(|rule| {
                rule.when
                    .as_ref()
                    .is_none_or(|w| matches_subset(w, &arguments))
            })
        })
        .is_some_and(|rule| !rule.approved)
}

fn valid_executed(f: &Facts) -> Option<CheckResult> {
    let expected: Vec<&IssuedCall> = f
        .actionable_calls()
        .filter(|c| c.validity == CallValidity::Valid)
        .filter(|c| !f.may_stop_after(c.response))
        .filter(|c| !approval_denied(f, c))
        .collect();
    if expected.is_empty() {
        return None;
    }
    let problems = expected
        .iter()
        .filter(|c| f.executions_of(&c.call_id).is_empty())
        .map(|c| {
            format!(
                "{} is a valid call to a registered tool, but the controller never executed it on the backend",
                c.describe()
            )
        })
        .collect();
    Some(checks::DISPATCH_VALID_EXECUTED.judge(
        problems,
        format!("all {} valid call(s) were executed", expected.len()),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::Judgement;
    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    /// The error output a correct controller sends for a call it rejects.
    fn rejected(call: &Value) -> Value {
        output(
            call,
            &json!({"error": "rejected before dispatch"}).to_string(),
        )
    }

    /// Dispatches `call` as the model wrote it (arguments parsed, nothing validated) and
    /// relays the backend's answer: its result, or its error as an error output.
    fn dispatch(run: &Run, call: &Value) -> Value {
        let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        let body =
            json!({"call_id": call["call_id"], "arguments": arguments, "principal": "user-1"});
        run.call_tool(call, &body)
    }

    /// Case `id` with every call of its first round dispatched as the model wrote it.
    fn dispatched_as_written(id: &str) -> Judgement {
        answer_first_round(id, |run, calls| {
            calls.iter().map(|call| dispatch(run, call)).collect()
        })
    }

    /// Case `id` with every call of its first round rejected before dispatch.
    fn all_rejected(id: &str) -> Judgement {
        answer_first_round(id, |_, calls| calls.iter().map(rejected).collect())
    }

    /// A correct controller: the calls to the tools named in `valid` dispatched, the
    /// others rejected.
    fn correct(run: &Run, calls: &[Value], valid: &[&str]) -> Vec<Value> {
        calls
            .iter()
            .map(|call| {
                if valid.contains(&call["name"].as_str().unwrap()) {
                    dispatch(run, call)
                } else {
                    rejected(call)
                }
            })
            .collect()
    }

    #[test]
    fn an_unknown_tool_rejected_before_dispatch_passes_and_judges_nothing_else() {
        let judgement = all_rejected("dispatch/01-unknown-tool");
        assert_all_pass(
            &judgement,
            &["dispatch/registered-only", "dispatch/rejection-answered"],
        );
        for id in [
            "dispatch/arguments-parsed",
            "dispatch/schema-valid",
            "dispatch/caller-allowed",
            "dispatch/valid-executed",
        ] {
            assert_not_judged(&judgement, id);
        }
    }

    #[test]
    fn registered_only_fails_an_unknown_tool_dispatched_by_its_name() {
        let judgement = dispatched_as_written("dispatch/01-unknown-tool");
        assert_fails(
            &judgement,
            "dispatch/registered-only",
            "(delete_account {\"user_id\":\"user-1\",\"confirm\":true}): the call is not in the task's registry, yet the controller dispatched it to the backend",
        );
        // The backend's 404, relayed, is the error output: one finding, not two.
        assert_passes(&judgement, "dispatch/rejection-answered");
    }

    #[test]
    fn registered_only_fails_a_near_miss_name_normalised_into_a_registered_tool() {
        let judgement = answer_first_round("dispatch/06-near-miss-name", |run, calls| {
            calls
                .iter()
                .map(|call| {
                    let mut normalised = call.clone();
                    normalised["name"] = json!("get_stock");
                    dispatch(run, &normalised)
                })
                .collect()
        });
        assert_fails(
            &judgement,
            "dispatch/registered-only",
            "(functions.get_stock {\"sku\":\"C3\"}): the call is not in the task's registry",
        );
    }

    #[test]
    fn arguments_parsed_passes_truncated_json_rejected_before_dispatch() {
        let judgement = all_rejected("dispatch/04-malformed-arguments");
        assert_all_pass(
            &judgement,
            &["dispatch/arguments-parsed", "dispatch/rejection-answered"],
        );
        assert_not_judged(&judgement, "dispatch/schema-valid");
    }

    #[test]
    fn arguments_parsed_passes_an_array_rejected_before_dispatch() {
        let judgement = all_rejected("dispatch/02-arguments-not-object");
        assert_all_pass(
            &judgement,
            &["dispatch/arguments-parsed", "dispatch/rejection-answered"],
        );
    }

    #[test]
    fn an_array_dispatched_as_arguments_is_one_finding_of_arguments_parsed() {
        let judgement = dispatched_as_written("dispatch/02-arguments-not-object");
        assert_fails(
            &judgement,
            "dispatch/arguments-parsed",
            "the call has arguments that are not a JSON object (the JSON is an array), yet the controller dispatched it",
        );
        assert_not_judged(&judgement, "dispatch/schema-valid");
        assert_passes(&judgement, "dispatch/rejection-answered");
    }

    #[test]
    fn schema_valid_passes_a_schema_violation_rejected_before_dispatch() {
        let judgement = all_rejected("dispatch/09-schema-violation");
        assert_all_pass(
            &judgement,
            &["dispatch/schema-valid", "dispatch/rejection-answered"],
        );
        assert_none_judged(
            &judgement,
            &["dispatch/arguments-parsed", "dispatch/valid-executed"],
        );
    }

    #[test]
    fn schema_valid_fails_a_schema_violation_dispatched() {
        let judgement = dispatched_as_written("dispatch/09-schema-violation");
        assert_fails(
            &judgement,
            "dispatch/schema-valid",
            "(get_stock {\"sku\":42}): the call has arguments that violate the tool's schema (",
        );
        assert_passes(&judgement, "dispatch/rejection-answered");
    }

    #[test]
    fn schema_valid_fails_a_refund_without_its_amount_dispatched() {
        let judgement = dispatched_as_written("dispatch/05-missing-required-field");
        assert_fails(&judgement, "dispatch/schema-valid", "amount_cents");
    }

    #[test]
    fn caller_allowed_passes_a_program_call_to_a_direct_only_tool_refused() {
        let judgement = answer_first_round("program/03-caller-not-allowed", |run, calls| {
            correct(run, calls, &["get_stock"])
        });
        assert_all_pass(
            &judgement,
            &[
                "dispatch/caller-allowed",
                "dispatch/rejection-answered",
                "dispatch/valid-executed",
            ],
        );
    }

    #[test]
    fn registered_only_judges_a_program_call_to_an_unknown_tool_like_a_direct_one() {
        let judgement = answer_first_round("program/10-child-unknown-tool", |run, calls| {
            correct(run, calls, &["get_stock"])
        });
        assert_all_pass(
            &judgement,
            &[
                "dispatch/registered-only",
                "dispatch/rejection-answered",
                "dispatch/valid-executed",
                "program/caller-echoed",
            ],
        );

        let judgement = dispatched_as_written("program/10-child-unknown-tool");
        assert_fails_with(
            &judgement,
            "dispatch/registered-only",
            &[
                "(get_price {\"sku\":\"A7\"}, called by program call_",
                "): the call is not in the task's registry, yet the controller dispatched it to the backend",
            ],
        );
    }

    #[test]
    fn caller_allowed_fails_a_program_call_to_a_direct_only_tool_dispatched() {
        let judgement = dispatched_as_written("program/03-caller-not-allowed");
        assert_fails_with(
            &judgement,
            "dispatch/caller-allowed",
            &[
                "(send_email {\"to\":\"team@example.com\",\"subject\":\"A7\",\"body\":\"8\"}, called by program ",
                "): the call comes from a caller the tool's allowed_callers excludes (a call from a program, and the tool has no allowed_callers, so only direct calls), yet the controller dispatched it",
            ],
        );
    }

    #[test]
    fn caller_allowed_fails_a_direct_call_to_a_programmatic_only_tool_dispatched() {
        let judgement = dispatched_as_written("program/08-programmatic-only-called-directly");
        assert_fails(
            &judgement,
            "dispatch/caller-allowed",
            "(a direct call from the model, and allowed_callers is [\"programmatic\"])",
        );
    }

    #[test]
    fn arguments_parsed_fails_a_python_literal_run_as_empty_and_names_what_ran() {
        let judgement = answer_first_round("dispatch/12-python-literal-arguments", |run, calls| {
            let empty = |call: &Value| {
                let body =
                    json!({"call_id": call["call_id"], "arguments": {}, "principal": "user-1"});
                run.call_tool(call, &body)
            };
            calls.iter().map(empty).collect()
        });
        assert_fails_with(
            &judgement,
            "dispatch/arguments-parsed",
            &[
                "(get_stock {'sku': 'A7'}): the call has arguments that are not a JSON object",
                "yet the controller dispatched it to the backend with the arguments {}",
            ],
        );
    }

    const EXACT: &str = "dispatch/11-exact-arguments";

    fn is_valid_sibling(call: &Value) -> bool {
        call["arguments"] == r#"{"sku":"B2"}"#
    }

    #[test]
    fn schema_valid_passes_extra_keys_and_pattern_enum_minimum_violations_rejected() {
        let judgement = answer_first_round(EXACT, |run, calls| {
            let answer = |call: &Value| match is_valid_sibling(call) {
                true => dispatch(run, call),
                false => rejected(call),
            };
            calls.iter().map(answer).collect()
        });
        assert_all_pass(
            &judgement,
            &[
                "dispatch/schema-valid",
                "dispatch/rejection-answered",
                "dispatch/valid-executed",
            ],
        );
    }

    #[test]
    fn schema_valid_fails_a_call_dispatched_with_its_unknown_key_dropped() {
        let judgement = answer_first_round(EXACT, |run, calls| {
            let answer = |call: &Value| {
                if is_valid_sibling(call) {
                    return dispatch(run, call);
                }
                if call["arguments"] != r#"{"sku":"A7","warehouse":"north"}"# {
                    return rejected(call);
                }
                let mut trimmed = call.clone();
                trimmed["arguments"] = json!(r#"{"sku":"A7"}"#);
                output(call, dispatch(run, &trimmed)["output"].as_str().unwrap())
            };
            calls.iter().map(answer).collect()
        });
        assert_fails(
            &judgement,
            "dispatch/schema-valid",
            "('warehouse' was unexpected) (at '')), yet the controller dispatched it to the backend with its arguments altered to {\"sku\":\"A7\"}",
        );
    }

    #[test]
    fn schema_valid_fails_pattern_enum_and_minimum_violations_dispatched() {
        let judgement = dispatched_as_written(EXACT);
        for needle in [
            "\"a7\" does not match \"^[A-Z][0-9]+$\"",
            "\"CHF\" is not one of",
            "0 is less than the minimum of 1",
        ] {
            assert_fails(&judgement, "dispatch/schema-valid", needle);
        }
    }

    #[test]
    fn rejection_answered_fails_a_rejected_call_dropped_from_the_next_request() {
        let (run, _) = first_round("dispatch/08-parallel-one-rejected", |run, calls| {
            vec![dispatch(run, &calls[0])]
        });
        assert_fails(
            &run.judge_failed("api_error"),
            "dispatch/rejection-answered",
            "request 2 sends no error output for the rejected call",
        );
    }

    #[test]
    fn rejection_answered_fails_an_empty_or_null_output() {
        for text in ["", "null"] {
            let judgement = answer_first_round("dispatch/01-unknown-tool", |_, calls| {
                calls.iter().map(|call| output(call, text)).collect()
            });
            assert_passes(&judgement, "dispatch/registered-only");
            assert_fails(
                &judgement,
                "dispatch/rejection-answered",
                "which is not an error: expected it to say the call did not run",
            );
        }
    }

    #[test]
    fn rejection_answered_fails_a_loop_that_ends_at_the_rejected_call() {
        let run = Run::case("dispatch/04-malformed-arguments", PreviousResponseId);
        run.create(&run.first_body());
        assert_fails(
            &run.judge_failed("error"),
            "dispatch/rejection-answered",
            "the controller stopped after the rejected call",
        );
    }

    #[test]
    fn valid_executed_passes_the_valid_sibling_of_a_rejected_call() {
        let judgement = answer_first_round("dispatch/08-parallel-one-rejected", |run, calls| {
            correct(run, calls, &["get_stock"])
        });
        assert_all_pass(
            &judgement,
            &[
                "dispatch/valid-executed",
                "dispatch/registered-only",
                "dispatch/rejection-answered",
            ],
        );
    }

    #[test]
    fn valid_executed_fails_a_batch_abandoned_for_one_rejected_call() {
        let judgement = all_rejected("dispatch/08-parallel-one-rejected");
        assert_fails(
            &judgement,
            "dispatch/valid-executed",
            "(get_stock {\"sku\":\"A7\"}) is a valid call to a registered tool, but the controller never executed it on the backend",
        );
        assert_passes(&judgement, "dispatch/rejection-answered");
    }

    #[test]
    fn valid_executed_expects_no_call_the_approver_refuses() {
        let run = Run::played("authz/02-approval-denied", PreviousResponseId);
        assert_not_judged(&run.judge_completed(), "dispatch/valid-executed");
    }

    #[test]
    fn valid_executed_expects_no_call_on_the_last_round() {
        let run = Run::case("budget/03-single-round", PreviousResponseId);
        run.create(&run.first_body());
        assert_not_judged(&run.judge_failed("max_rounds"), "dispatch/valid-executed");
    }

    #[test]
    fn input_grammar_fails_a_custom_call_run_against_its_regex_grammar() {
        let judgement = dispatched_custom("custom/03-grammar-broken");
        assert_fails(
            &judgement,
            "dispatch/input-grammar",
            "(custom_tool_call stock_of \"a7; drop\"): the call has input that breaks the custom tool's regex grammar (the input does not match the whole regex grammar \"[A-Z][0-9]+\"), yet the controller dispatched it",
        );
    }

    #[test]
    fn input_grammar_passes_a_custom_call_rejected_with_an_error_output() {
        let judgement = all_rejected("custom/03-grammar-broken");
        assert_passes(&judgement, "dispatch/input-grammar");
        assert_passes(&judgement, "dispatch/rejection-answered");
    }

    #[test]
    fn a_valid_custom_call_is_judged_executed_with_its_input() {
        let judgement = dispatched_custom("custom/01-custom-call");
        assert_passes(&judgement, "dispatch/valid-executed");
        assert_passes(&judgement, "call-id/executed-as-issued");
    }

    /// Case `id` with every custom call of its first round run with its input unchecked.
    fn dispatched_custom(id: &str) -> Judgement {
        answer_first_round(id, |run, calls| {
            calls
                .iter()
                .map(|call| {
                    let body = json!({"call_id": call["call_id"], "input": call["input"], "principal": "user-1"});
                    run.call_tool(call, &body)
                })
                .collect()
        })
    }
}
