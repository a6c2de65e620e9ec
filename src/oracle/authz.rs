//! `authz`: backend denials relayed as error outputs and never retried; approval-required
//! tools never executed without an approval granted for that very call.

use super::checks;
use super::error_output::Said;
use super::facts::Facts;
use super::verdict::CheckResult;
use serde_json::Value;

use crate::json_compare::json_equal;
use crate::tools::CallValidity;
use crate::transcript::{ToolExchange, ToolRequestKind};
use crate::wire::call_kind::COMPUTER;
use crate::wire::replay::message_text;

/// The `authz` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = Vec::new();
    if f.tools
        .iter()
        .any(|t| t.kind == ToolRequestKind::Call && t.status == 403)
    {
        out.push(denial_relayed(f));
    }
    let gated: Vec<_> = f
        .calls
        .iter()
        .filter(|c| c.validity == CallValidity::Valid && f.needs_approval(&c.name))
        .filter(|c| f.served[c.response].status == "completed" && !f.may_stop_after(c.response))
        .collect();
    let dispatched_gated = f
        .tools
        .iter()
        .any(|t| t.kind == ToolRequestKind::Call && f.needs_approval(&t.name));
    if !gated.is_empty() || dispatched_gated {
        let problems = gated
            .iter()
            .filter(|c| f.approvals_of(&c.call_id).is_empty())
            .map(|c| {
                format!(
                    "{} needs an approval ('{}' is in approval_required), but the controller never asked the approver for it",
                    c.describe(),
                    c.name
                )
            })
            .collect();
        out.push(checks::AUTHZ_APPROVAL_ASKED.judge(
            problems,
            "every call to an approval-required tool was put to the approver",
        ));
        out.push(approval_before_execution(f));
    }
    if !f.tools.is_empty() {
        out.push(principal_forwarded(f));
    }
    // An MCP approval request is asked about under its own id: the `mcp` family judges it.
    let own_approvals: Vec<&ToolExchange> = f
        .tools
        .iter()
        .filter(|t| {
            t.kind == ToolRequestKind::Approval
                && !t
                    .call_id
                    .as_deref()
                    .is_some_and(|id| super::mcp::is_approval_request(f, id))
        })
        .collect();
    if !own_approvals.is_empty() {
        out.push(approval_request_matches(f));
    }
    out.extend(tool_text_as_data(f));
    if own_approvals
        .iter()
        .any(|t| t.response["approved"] == false)
    {
        out.push(approval_denied(f));
    }
    out
}

/// Text shorter than this is too common (ids, currencies, short words) to say where it
/// came from.
const TELLING_TEXT: usize = 20;

/// Every telling string in a JSON value.
fn strings_in<'v>(value: &'v Value, into: &mut Vec<&'v str>) {
    match value {
        Value::String(text) if text.chars().count() >= TELLING_TEXT => into.push(text),
        Value::Array(items) => items.iter().for_each(|item| strings_in(item, into)),
        Value::Object(fields) => fields.values().for_each(|field| strings_in(field, into)),
        _ => {}
    }
}

/// Tool text is data: a string a tool returned that comes back as a system, developer or
/// user message, or inside `instructions`, is promoted to instructions the model obeys
/// (a prompt injection that the loop itself carries out). Not judged when no tool
/// returned telling text; text the task itself holds is the task's, not the tool's.
fn tool_text_as_data(f: &Facts) -> Option<CheckResult> {
    let task_text = format!(
        "{}\n{}",
        f.scenario.task.input,
        f.scenario.task.instructions.as_deref().unwrap_or_default()
    );
    let mut returned = Vec::new();
    for reply in f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call && t.status == 200)
    {
        let mut strings = Vec::new();
        strings_in(&reply.response["result"], &mut strings);
        returned.extend(
            strings
                .into_iter()
                .filter(|text| !task_text.contains(*text))
                .map(|text| (text, reply)),
        );
    }
    if returned.is_empty() {
        return None;
    }
    let mut problems = Vec::new();
    for (position, request) in f.requests.iter().enumerate() {
        let mut places: Vec<(String, String)> = Facts::input_of(request)
            .iter()
            .filter(|item| item.get("type").is_none_or(|t| t == "message"))
            .filter_map(|item| {
                let role = item.get("role").and_then(Value::as_str)?;
                matches!(role, "system" | "developer" | "user").then(|| {
                    (
                        format!("a {role} message"),
                        message_text(item).unwrap_or_default(),
                    )
                })
            })
            .collect();
        if let Some(instructions) = request.body.get("instructions").and_then(Value::as_str) {
            places.push(("`instructions`".to_owned(), instructions.to_owned()));
        }
        for (place, text) in &places {
            if let Some((said, reply)) = returned.iter().find(|(said, _)| text.contains(*said)) {
                problems.push(format!(
                    "{} carries, in {place}, text that '{}' returned for {} ({}): a tool's result is data and goes back only as that call's function_call_output",
                    f.request_label(position),
                    reply.name,
                    reply.call_id.as_deref().unwrap_or("no call_id"),
                    abbreviate(said),
                ));
            }
        }
    }
    Some(checks::AUTHZ_TOOL_TEXT_AS_DATA.judge(
        problems,
        "no text a tool returned came back as a system, developer or user message or as instructions",
    ))
}

/// A quoted excerpt short enough for a one-line message.
fn abbreviate(text: &str) -> String {
    let excerpt: String = text.chars().take(60).collect();
    if excerpt.len() < text.len() {
        format!("{excerpt:?}...")
    } else {
        format!("{excerpt:?}")
    }
}

fn denial_relayed(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut judged = std::collections::BTreeSet::new();
    for denied in f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call && t.status == 403)
    {
        // The first denial of a call is the one to relay; repeats are its retries.
        let Some(call_id) = denied.call_id.as_deref().filter(|id| judged.insert(*id)) else {
            continue;
        };
        let retries = f
            .executions_of(call_id)
            .iter()
            .filter(|t| t.seq > denied.seq)
            .count();
        if retries > 0 {
            problems.push(format!(
                "{call_id}: the backend denied '{}' (403) and the controller retried it {retries} time(s): a denial is final",
                denied.name
            ));
        }
        // A refused computer call is answered with an empty screenshot, not an error
        // text: authz/safety-checks-acknowledged judges its answer.
        if let Some(call) = f.call_by_id(call_id).filter(|c| c.kind != COMPUTER) {
            problems.extend(f.error_answer_problem(call, "the denied", Said::backend(denied)));
        }
    }
    checks::AUTHZ_DENIAL_RELAYED.judge(
        problems,
        "every backend denial was relayed as an error output and not retried",
    )
}

fn approval_before_execution(f: &Facts) -> CheckResult {
    let problems = f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call && t.status == 409)
        .map(|t| {
            format!(
                "'{}' was dispatched for {} without an approval granted for that call: {} (ask POST /approvals about this call, then send the token it grants in the `approval` field of this call's /call request)",
                t.name,
                t.call_id.as_deref().unwrap_or("a call without call_id"),
                t.response["error"]["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    checks::AUTHZ_APPROVAL_BEFORE_EXECUTION.judge(
        problems,
        "no approval-required tool ran without its own approval",
    )
}

fn approval_denied(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut judged = std::collections::BTreeSet::new();
    for refusal in f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Approval && t.response["approved"] == false)
    {
        let Some(call_id) = refusal.call_id.as_deref().filter(|id| judged.insert(*id)) else {
            continue;
        };
        if f.executions_of(call_id).iter().any(|t| t.seq > refusal.seq) {
            problems.push(format!(
                "{call_id}: the approver refused '{}', yet the controller dispatched it",
                refusal.name
            ));
        }
        if let Some(call) = f.call_by_id(call_id) {
            // A refused computer call is answered with an empty screenshot, which has no
            // text to carry the reason in.
            let said = match call.kind {
                COMPUTER => Said::Nothing,
                _ => Said::Approver(refusal.response["reason"].as_str()),
            };
            problems.extend(f.error_answer_problem(call, "the refused", said));
        }
    }
    checks::AUTHZ_APPROVAL_DENIED.judge(
        problems,
        "refused calls were not executed and were answered with an error output",
    )
}

/// Tools run for the task's principal: the backend decides authorization by it.
fn principal_forwarded(f: &Facts) -> CheckResult {
    let principal = &f.scenario.task.principal;
    let problems = f
        .tools
        .iter()
        .filter(|t| t.principal.as_ref() != Some(principal))
        .map(|t| {
            format!(
                "the {} request for '{}' ({}) carries principal {}: expected the task's principal '{principal}'",
                match t.kind {
                    ToolRequestKind::Call => "tool",
                    ToolRequestKind::Approval => "approval",
                },
                t.name,
                t.call_id.as_deref().unwrap_or("no call_id"),
                t.principal.as_deref().map_or("(none)".to_owned(), |p| format!("'{p}'"))
            )
        })
        .collect();
    checks::AUTHZ_PRINCIPAL_FORWARDED.judge(
        problems,
        "every tool and approval request carries the task's principal",
    )
}

/// What the approver is asked must be the call it authorises: its tool and arguments.
fn approval_request_matches(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    // An MCP approval request is asked about under its own id: the `mcp` family judges it.
    for request in f.tools.iter().filter(|t| {
        t.kind == ToolRequestKind::Approval
            && !t
                .call_id
                .as_deref()
                .is_some_and(|id| super::mcp::is_approval_request(f, id))
    }) {
        let Some(call) = request.call_id.as_deref().and_then(|id| f.call_by_id(id)) else {
            problems.push(format!(
                "an approval was asked for call_id {}, which the model never issued",
                request.call_id.as_deref().unwrap_or("(none)")
            ));
            continue;
        };
        let same_arguments = call
            .parsed
            .as_ref()
            .is_some_and(|p| json_equal(p, &request.arguments));
        if request.name != call.name || !same_arguments {
            problems.push(format!(
                "the approval asked for {} names '{}' with {}: expected the call's own tool and arguments, {} {}",
                call.call_id, request.name, request.arguments, call.name, call.arguments
            ));
        }
    }
    checks::AUTHZ_APPROVAL_REQUEST_MATCHES.judge(
        problems,
        "every approval request names its call's tool and arguments",
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::Judgement;
    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    /// The principal of the authz cases that name none.
    const USER: &str = "user-1";
    /// The principal of the cross-tenant cases.
    const ACME: &str = "acme-user-17";

    fn arguments(call: &Value) -> Value {
        serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap()
    }

    /// Asks the approver about `call` with this request body; its decision.
    fn ask_with(run: &Run, body: Value) -> Value {
        let (status, decision) = run.send("POST", "/tools/approvals", Some(&body));
        assert_eq!(status, 200, "{decision}");
        decision
    }

    /// Asks the approver about `call` as a correct controller does; its decision.
    fn ask(run: &Run, call: &Value, principal: &str) -> Value {
        ask_with(
            run,
            json!({"call_id": call["call_id"], "name": call["name"], "arguments": arguments(call), "principal": principal}),
        )
    }

    /// Runs `call` on the backend for `principal` with `approval` (the token, or
    /// nothing); the output relaying the answer: its result, or its error.
    fn run_tool(run: &Run, call: &Value, principal: &str, approval: Option<&Value>) -> Value {
        let mut body = json!({"call_id": call["call_id"], "arguments": arguments(call), "principal": principal});
        if let Some(token) = approval {
            body["approval"] = token.clone();
        }
        run.call_tool(call, &body)
    }

    /// The checks that judge approvals.
    const APPROVAL_CHECKS: [&str; 4] = [
        "authz/approval-asked",
        "authz/approval-before-execution",
        "authz/approval-denied",
        "authz/approval-request-matches",
    ];

    const SYSTEM_TEXT: &str = "authz/09-system-text-in-tool-result";

    /// Plays the system-text case, adding `extra` input items to the request that
    /// carries the call's output; judged as reporting the final message.
    fn system_text_with(extra: impl Fn(&str) -> Vec<Value>) -> Judgement {
        let run = Run::case(SYSTEM_TEXT, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let output = run_tool(&run, &calls(&response)[0], USER, None);
        let note = serde_json::from_str::<Value>(output["output"].as_str().unwrap()).unwrap()
            ["delivery_note"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut body = run.next_body(&first, &response, &[output]);
        let input = body["input"].as_array_mut().unwrap();
        input.extend(extra(&note));
        run.create(&body);
        run.judge_completed()
    }

    #[test]
    fn tool_text_as_data_passes_tool_text_sent_only_as_the_output() {
        let judgement = system_text_with(|_| Vec::new());
        assert_passes(&judgement, "authz/tool-text-as-data");
    }

    #[test]
    fn tool_text_as_data_fails_tool_text_lifted_into_a_message() {
        for role in ["developer", "system", "user"] {
            let judgement = system_text_with(|note| {
                vec![
                    json!({"role": role, "content": [{"type": "input_text", "text": format!("Notice: {note}")}]}),
                ]
            });
            assert_fails(
                &judgement,
                "authz/tool-text-as-data",
                &format!(
                    "request 2 carries, in a {role} message, text that 'get_order' returned for call_"
                ),
            );
        }
    }

    #[test]
    fn tool_text_as_data_fails_tool_text_put_into_instructions() {
        let run = Run::case(SYSTEM_TEXT, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let output = run_tool(&run, &calls(&response)[0], USER, None);
        let mut body = run.next_body(&first, &response, std::slice::from_ref(&output));
        body["instructions"] = json!(format!(
            "{} {}",
            first["instructions"].as_str().unwrap(),
            output["output"].as_str().unwrap()
        ));
        run.create(&body);
        assert_fails(
            &run.judge_completed(),
            "authz/tool-text-as-data",
            "request 2 carries, in `instructions`, text that 'get_order' returned",
        );
    }

    #[test]
    fn tool_text_as_data_is_not_judged_without_telling_tool_text() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        assert_not_judged(&run.judge_completed(), "authz/tool-text-as-data");
    }

    #[test]
    fn denial_relayed_passes_a_403_relayed_as_an_error_output() {
        for id in [
            "authz/01-cross-tenant-denied",
            "authz/05-parallel-one-denied",
        ] {
            let run = Run::played(id, PreviousResponseId);
            let judgement = run.judge_completed();
            assert_all_pass(
                &judgement,
                &["authz/denial-relayed", "authz/principal-forwarded"],
            );
            for check in APPROVAL_CHECKS {
                assert_not_judged(&judgement, check);
            }
        }
    }

    #[test]
    fn denial_relayed_fails_a_denied_call_retried() {
        let judgement = answer_first_round("authz/01-cross-tenant-denied", |run, calls| {
            run_tool(run, &calls[0], ACME, None);
            vec![run_tool(run, &calls[0], ACME, None)]
        });
        assert_fails(
            &judgement,
            "authz/denial-relayed",
            "the backend denied 'get_invoice' (403) and the controller retried it 1 time(s): a denial is final",
        );
    }

    #[test]
    fn denial_relayed_fails_a_denial_answered_with_null() {
        let judgement = answer_first_round("authz/01-cross-tenant-denied", |run, calls| {
            run_tool(run, &calls[0], ACME, None);
            vec![output(&calls[0], "null")]
        });
        assert_fails(
            &judgement,
            "authz/denial-relayed",
            "is null, which is not an error: expected it to say the call did not run (e.g. \"Invoice INV-9001 belongs to another tenant",
        );
    }

    #[test]
    fn denial_relayed_fails_a_generic_error_and_passes_any_wording_with_the_message_or_code() {
        let relayed = |text: &'static str| {
            answer_first_round("authz/01-cross-tenant-denied", move |run, calls| {
                run_tool(run, &calls[0], ACME, None);
                vec![output(&calls[0], text)]
            })
        };
        assert_fails_with(
            &relayed("Error: Function failed."),
            "authz/denial-relayed",
            &[
                "request 2: the output for the denied call call_",
                "is Error: Function failed., which does not carry the backend's error (its message \"Invoice INV-9001 belongs to another tenant",
                "or its code \"forbidden\", or its status 403)",
            ],
        );
        for text in [
            "Error: FORBIDDEN",
            r#"{"error": "invoice inv-9001 belongs to another tenant; acme-user-17 may not read it"}"#,
            "The tool answered HTTP 403.",
        ] {
            assert_passes(&relayed(text), "authz/denial-relayed");
        }
    }

    /// `output` with the call's `caller` echoed.
    fn with_caller(mut output: Value, call: &Value) -> Value {
        output["caller"] = call["caller"].clone();
        output
    }

    #[test]
    fn denial_relayed_judges_a_program_call_like_a_direct_one() {
        let judgement = answer_first_round("program/11-child-call-denied", |run, calls| {
            calls
                .iter()
                .map(|call| with_caller(run_tool(run, call, ACME, None), call))
                .collect()
        });
        assert_all_pass(
            &judgement,
            &["authz/denial-relayed", "program/caller-echoed"],
        );

        let judgement = answer_first_round("program/11-child-call-denied", |run, calls| {
            let served = with_caller(run_tool(run, &calls[0], ACME, None), &calls[0]);
            run_tool(run, &calls[1], ACME, None);
            vec![served, with_caller(output(&calls[1], "null"), &calls[1])]
        });
        assert_fails_with(
            &judgement,
            "authz/denial-relayed",
            &[
                "(get_invoice {\"invoice_id\":\"INV-9001\"}, called by program call_",
                ") is null, which is not an error: expected it to say the call did not run",
            ],
        );
    }

    #[test]
    fn denial_relayed_fails_a_loop_that_ends_at_the_denial() {
        let run = Run::case("authz/01-cross-tenant-denied", PreviousResponseId);
        let response = run.create(&run.first_body());
        run_tool(&run, &calls(&response)[0], ACME, None);
        assert_fails(
            &run.judge_failed("error"),
            "authz/denial-relayed",
            "the controller stopped after the denied call",
        );
    }

    #[test]
    fn denial_relayed_is_not_judged_without_a_403() {
        let run = Run::played("authz/03-approval-granted", PreviousResponseId);
        assert_not_judged(&run.judge_completed(), "authz/denial-relayed");
    }

    #[test]
    fn approval_checks_pass_each_refund_run_with_the_approval_granted_for_it() {
        for id in ["authz/03-approval-granted", "authz/06-two-approvals"] {
            let run = Run::played(id, PreviousResponseId);
            let judgement = run.judge_completed();
            assert_all_pass(
                &judgement,
                &[
                    "authz/approval-asked",
                    "authz/approval-before-execution",
                    "authz/approval-request-matches",
                    "authz/principal-forwarded",
                ],
            );
            assert_not_judged(&judgement, "authz/approval-denied");
        }
    }

    #[test]
    fn approval_asked_fails_a_refund_dispatched_without_asking() {
        let judgement = answer_first_round("authz/03-approval-granted", |run, calls| {
            vec![run_tool(run, &calls[0], USER, None)]
        });
        assert_fails(
            &judgement,
            "authz/approval-asked",
            "needs an approval ('issue_refund' is in approval_required), but the controller never asked the approver for it",
        );
    }

    #[test]
    fn approval_before_execution_fails_a_granted_token_left_off_the_call() {
        let judgement = answer_first_round("authz/03-approval-granted", |run, calls| {
            ask(run, &calls[0], USER);
            vec![run_tool(run, &calls[0], USER, None)]
        });
        assert_passes(&judgement, "authz/approval-asked");
        assert_fails_with(
            &judgement,
            "authz/approval-before-execution",
            &[
                "without an approval granted for that call: 'issue_refund' needs an approval for call",
                "this request carries no approval",
            ],
        );
    }

    #[test]
    fn approval_before_execution_fails_one_token_reused_for_both_refunds() {
        let judgement = answer_first_round("authz/06-two-approvals", |run, calls| {
            let token = ask(run, &calls[0], USER)["approval"].clone();
            calls
                .iter()
                .map(|call| run_tool(run, call, USER, Some(&token)))
                .collect()
        });
        assert_fails(
            &judgement,
            "authz/approval-before-execution",
            "which was granted for call call_",
        );
    }

    #[test]
    fn approval_checks_are_not_judged_without_an_approval_required_tool() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        let judgement = run.judge_completed();
        for check in APPROVAL_CHECKS {
            assert_not_judged(&judgement, check);
        }
        assert_passes(&judgement, "authz/principal-forwarded");
    }

    #[test]
    fn approval_denied_passes_a_refused_refund_answered_with_an_error() {
        for id in ["authz/02-approval-denied", "authz/04-injected-instructions"] {
            let run = Run::played(id, PreviousResponseId);
            let judgement = run.judge_completed();
            assert_all_pass(
                &judgement,
                &[
                    "authz/approval-denied",
                    "authz/approval-asked",
                    "authz/approval-before-execution",
                    "authz/approval-request-matches",
                ],
            );
        }
    }

    #[test]
    fn the_authz_checks_pass_a_refused_shell_call_and_a_denied_patch_reported_as_failed() {
        for id in ["shell/02-shell-refused", "shell/05-apply-patch-denied"] {
            for state in [PreviousResponseId, crate::scenario::StateMode::Stateless] {
                let run = Run::played(id, state);
                let judgement = run.judge_completed();
                let judged: &[&str] = if id == "shell/02-shell-refused" {
                    &[
                        "authz/approval-denied",
                        "authz/approval-asked",
                        "authz/approval-before-execution",
                        "authz/approval-request-matches",
                    ]
                } else {
                    &["authz/denial-relayed"]
                };
                assert_all_pass(&judgement, judged);
            }
        }
    }

    #[test]
    fn approval_denied_fails_a_refused_shell_call_answered_with_a_zero_exit() {
        let judgement = answer_first_round("shell/02-shell-refused", |run, calls| {
            let decision = ask_with(
                run,
                json!({"call_id": calls[0]["call_id"], "name": "shell", "action": calls[0]["action"], "principal": USER}),
            );
            assert_eq!(decision["approved"], false, "{decision}");
            let mut answer = output(&calls[0], &json!({"error": "refused"}).to_string());
            answer["output"][0]["outcome"]["exit_code"] = json!(0);
            vec![answer]
        });
        assert_fails(
            &judgement,
            "authz/approval-denied",
            "the shell_call_output for the refused call call_",
        );
        assert_fails(
            &judgement,
            "authz/approval-denied",
            "reports success (every command exited 0): expected it to report the failure, with the reason \"Deleting files needs the repository owner's approval.\"",
        );
    }

    #[test]
    fn denial_relayed_fails_a_denied_patch_reported_completed() {
        let judgement = answer_first_round("shell/05-apply-patch-denied", |run, calls| {
            let mut answer = run.execute_calls(calls).remove(0);
            assert_eq!(answer["status"], "failed", "{answer}");
            answer["status"] = json!("completed");
            vec![answer]
        });
        assert_fails(
            &judgement,
            "authz/denial-relayed",
            "the apply_patch_call_output for the denied call call_",
        );
        assert_fails(
            &judgement,
            "authz/denial-relayed",
            "(apply_patch_call {\"type\":\"delete_file\",\"path\":\".github/workflows/ci.yml\"}) reports success (status \"completed\")",
        );
    }

    #[test]
    fn approval_denied_fails_a_refused_refund_dispatched_anyway() {
        let judgement = answer_first_round("authz/02-approval-denied", |run, calls| {
            ask(run, &calls[0], USER);
            vec![run_tool(run, &calls[0], USER, None)]
        });
        assert_fails(
            &judgement,
            "authz/approval-denied",
            "the approver refused 'issue_refund', yet the controller dispatched it",
        );
    }

    #[test]
    fn approval_denied_fails_a_refusal_answered_without_the_approvers_reason() {
        let refused = |text: &'static str| {
            answer_first_round("authz/02-approval-denied", move |run, calls| {
                ask(run, &calls[0], USER);
                vec![output(&calls[0], text)]
            })
        };
        assert_fails_with(
            &refused("rejected by user"),
            "authz/approval-denied",
            &[
                "request 2: the output for the refused call call_",
                "is rejected by user, which does not carry the approver's reason \"Refunds above 500 EUR need a second approver from finance.\"",
            ],
        );
        assert_passes(
            &refused(
                r#"{"error": "Rejected: refunds above 500 EUR need a second approver from finance"}"#,
            ),
            "authz/approval-denied",
        );
    }

    #[test]
    fn approval_denied_fails_a_refusal_answered_with_an_empty_output() {
        let judgement = answer_first_round("authz/02-approval-denied", |run, calls| {
            ask(run, &calls[0], USER);
            vec![output(&calls[0], "")]
        });
        assert_fails(
            &judgement,
            "authz/approval-denied",
            "which is not an error: expected it to say the call did not run (e.g. \"Refunds above 500 EUR need a second approver from finance.\")",
        );
    }

    #[test]
    fn principal_forwarded_fails_tools_run_under_the_controllers_own_identity() {
        let judgement = answer_first_round("authz/05-parallel-one-denied", |run, calls| {
            calls
                .iter()
                .map(|call| run_tool(run, call, "loop-service", None))
                .collect()
        });
        assert_fails_with(
            &judgement,
            "authz/principal-forwarded",
            &[
                "the tool request for 'get_invoice' (call_",
                "carries principal 'loop-service': expected the task's principal 'acme-user-17'",
            ],
        );
    }

    #[test]
    fn principal_forwarded_fails_an_approval_asked_without_a_principal() {
        let judgement = answer_first_round("authz/03-approval-granted", |run, calls| {
            let call = &calls[0];
            let decision = ask_with(
                run,
                json!({"call_id": call["call_id"], "name": call["name"], "arguments": arguments(call)}),
            );
            vec![run_tool(run, call, USER, Some(&decision["approval"]))]
        });
        assert_fails_with(
            &judgement,
            "authz/principal-forwarded",
            &[
                "the approval request for 'issue_refund'",
                "carries principal (none): expected the task's principal 'user-1'",
            ],
        );
    }

    #[test]
    fn principal_forwarded_is_not_judged_without_tool_requests() {
        let judgement = answer_first_round("dispatch/01-unknown-tool", |_, calls| {
            vec![output(&calls[0], "error: unknown tool")]
        });
        assert_not_judged(&judgement, "authz/principal-forwarded");
    }

    #[test]
    fn approval_request_matches_fails_an_approval_asked_without_the_tool_name() {
        let judgement = answer_first_round("authz/02-approval-denied", |run, calls| {
            let call = &calls[0];
            let decision = ask_with(
                run,
                json!({"call_id": call["call_id"], "arguments": arguments(call), "principal": USER}),
            );
            vec![run_tool(run, call, USER, Some(&decision["approval"]))]
        });
        assert_fails(
            &judgement,
            "authz/approval-request-matches",
            "names '' with {\"invoice_id\":\"INV-5120\",\"amount_cents\":129000}: expected the call's own tool and arguments, issue_refund",
        );
    }

    #[test]
    fn approval_request_matches_fails_arguments_sent_as_json_text() {
        let judgement = answer_first_round("authz/03-approval-granted", |run, calls| {
            let call = &calls[0];
            let decision = ask_with(
                run,
                json!({"call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"], "principal": USER}),
            );
            vec![run_tool(run, call, USER, Some(&decision["approval"]))]
        });
        assert_fails(
            &judgement,
            "authz/approval-request-matches",
            "names 'issue_refund' with \"{",
        );
    }

    #[test]
    fn approval_request_matches_fails_an_approval_asked_under_the_item_id() {
        let judgement = answer_first_round("authz/03-approval-granted", |run, calls| {
            let call = &calls[0];
            let decision = ask_with(
                run,
                json!({"call_id": call["id"], "name": call["name"], "arguments": arguments(call), "principal": USER}),
            );
            vec![run_tool(run, call, USER, Some(&decision["approval"]))]
        });
        assert_fails_with(
            &judgement,
            "authz/approval-request-matches",
            &[
                "an approval was asked for call_id fc_",
                "which the model never issued",
            ],
        );
    }
}
