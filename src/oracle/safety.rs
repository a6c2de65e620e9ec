//! `authz/safety-checks-*`: a computer call with `pending_safety_checks` is put to the
//! approver before it is performed, performed only with the approval granted for it,
//! and answered with the checks acknowledged if, and only if, the approver approved it.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks;
use super::facts::{Facts, IssuedCall};
use super::verdict::CheckResult;
use crate::wire::call_kind::COMPUTER;
use crate::wire::request::item_type;

/// The safety-check checks: judged when the model raised safety checks on a computer
/// call, or the controller acknowledged some.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let guarded: Vec<&IssuedCall> = f
        .calls
        .iter()
        .filter(|c| c.kind == COMPUTER && !c.pending_safety_checks.is_empty())
        .collect();
    let acknowledging = f
        .calls
        .iter()
        .any(|c| c.kind == COMPUTER && answer(f, c).is_some_and(|a| !acknowledged(a).is_empty()));
    let mut out = Vec::new();
    if !guarded.is_empty() {
        out.push(approved(f, &guarded));
    }
    if !guarded.is_empty() || acknowledging {
        out.push(acknowledged_as_approved(f));
    }
    out
}

/// The ids of a list of safety checks.
fn ids(checks: &[Value]) -> BTreeSet<&str> {
    checks.iter().filter_map(|c| c["id"].as_str()).collect()
}

/// The ids an answer lists in `acknowledged_safety_checks`.
fn acknowledged(answer: &Value) -> BTreeSet<&str> {
    answer["acknowledged_safety_checks"]
        .as_array()
        .map(|checks| ids(checks))
        .unwrap_or_default()
}

/// The `computer_call_output` answering a call in the request after its response.
fn answer<'f>(f: &Facts<'f>, call: &IssuedCall) -> Option<&'f Value> {
    let (_, request) = f.request_after(call.response)?;
    let input = request.body.get("input")?.as_array()?;
    input
        .iter()
        .find(|item| item_type(item) == COMPUTER.answer && item["call_id"] == call.call_id)
}

/// The approval tokens the approver granted for a call.
fn granted<'f>(f: &Facts<'f>, call: &IssuedCall) -> Vec<&'f str> {
    f.approvals_of(&call.call_id)
        .into_iter()
        .filter(|a| a.status == 200 && a.response["approved"] == true)
        .filter_map(|a| a.response["approval"].as_str())
        .collect()
}

/// Whether the approver refused a call and never granted it.
fn refused(f: &Facts, call: &IssuedCall) -> bool {
    granted(f, call).is_empty()
        && f.approvals_of(&call.call_id)
            .iter()
            .any(|a| a.response["approved"] == false)
}

fn pending_list(call: &IssuedCall) -> String {
    ids(&call.pending_safety_checks)
        .into_iter()
        .collect::<Vec<_>>()
        .join(", ")
}

fn approved(f: &Facts, guarded: &[&IssuedCall]) -> CheckResult {
    let mut problems = Vec::new();
    for call in guarded {
        let executions = f.executions_of(&call.call_id);
        let asked = !f.approvals_of(&call.call_id).is_empty();
        let must_ask =
            f.served[call.response].status == "completed" && !f.may_stop_after(call.response);
        if !asked && (must_ask || !executions.is_empty()) {
            problems.push(format!(
                "{} has pending safety checks ({}), but the controller never put it to the approver (POST /approvals with the call and its checks)",
                call.describe(),
                pending_list(call)
            ));
            continue;
        }
        let tokens = granted(f, call);
        for execution in executions {
            let token = execution.approval.as_deref();
            if refused(f, call) {
                problems.push(format!(
                    "{} was performed though the approver refused its safety checks ({}): a refused computer call must never run",
                    call.describe(),
                    pending_list(call)
                ));
                break;
            }
            if !token.is_some_and(|t| tokens.contains(&t)) {
                problems.push(format!(
                    "{} was performed {}: expected the approval the approver granted for this call in the request's `approval` field",
                    call.describe(),
                    token.map_or("without an approval".to_owned(), |t| format!(
                        "with approval '{t}', which was not granted for it"
                    ))
                ));
                break;
            }
        }
    }
    checks::AUTHZ_SAFETY_CHECKS_APPROVED.judge(
        problems,
        format!(
            "{} computer call(s) with pending safety checks were put to the approver and performed only once approved",
            guarded.len()
        ),
    )
}

fn acknowledged_as_approved(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut judged = 0;
    for call in f.calls.iter().filter(|c| c.kind == COMPUTER) {
        let Some(answer) = answer(f, call) else {
            continue;
        };
        judged += 1;
        let pending = ids(&call.pending_safety_checks);
        let acknowledged = acknowledged(answer);
        let never_raised: Vec<&str> = acknowledged.difference(&pending).copied().collect();
        if !never_raised.is_empty() {
            problems.push(format!(
                "the computer_call_output for {} acknowledges safety check(s) {} that the model never raised on it",
                call.describe(),
                never_raised.join(", ")
            ));
        }
        if pending.is_empty() {
            continue;
        }
        let approved = !granted(f, call).is_empty();
        let raised: Vec<&str> = acknowledged.intersection(&pending).copied().collect();
        let missing: Vec<&str> = pending.difference(&acknowledged).copied().collect();
        if !approved && !raised.is_empty() {
            problems.push(format!(
                "the computer_call_output for {} acknowledges safety check(s) {} that the approver never approved: acknowledge a check only once the approver approved the call",
                call.describe(),
                raised.join(", ")
            ));
        } else if approved && !missing.is_empty() {
            problems.push(format!(
                "the computer_call_output for {} does not acknowledge safety check(s) {} that the approver approved: expected every pending check in acknowledged_safety_checks",
                call.describe(),
                missing.join(", ")
            ));
        }
    }
    checks::AUTHZ_SAFETY_CHECKS_ACKNOWLEDGED.judge(
        problems,
        format!(
            "{judged} computer_call_output item(s) acknowledge exactly the safety checks the approver approved"
        ),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::Judgement;
    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    const APPROVED: &str = "computer/03-safety-check-approved";
    const REFUSED: &str = "computer/04-safety-check-refused";
    const CHECKS: [&str; 2] = [
        "authz/safety-checks-approved",
        "authz/safety-checks-acknowledged",
    ];

    /// Case `id`'s computer call put to the approver when `ask`, performed when `perform`
    /// (with the approval granted, if any), and answered with its screenshot, the checks
    /// acknowledged as `acknowledge` gives them.
    fn run(
        id: &str,
        ask: bool,
        perform: bool,
        acknowledge: impl Fn(&Value) -> Option<Value>,
    ) -> Judgement {
        let run = Run::case(id, PreviousResponseId);
        let first = run.first_body();
        let response = run.create(&first);
        let call = response["output"][0].clone();
        let mut body =
            json!({"call_id": call["call_id"], "action": call["action"], "principal": "user-1"});
        if ask {
            let mut asked = body.clone();
            asked["name"] = json!("computer");
            asked["pending_safety_checks"] = call["pending_safety_checks"].clone();
            let (_, decision) = run.send("POST", "/tools/approvals", Some(&asked));
            if decision["approved"] == true {
                body["approval"] = decision["approval"].clone();
            }
        }
        let mut screenshot = json!({"type": "computer_screenshot"});
        if perform {
            let (_, answer) = run.send("POST", "/tools/call/computer", Some(&body));
            if let Some(url) = answer["result"].get("image_url") {
                screenshot["image_url"] = url.clone();
            }
        }
        let mut answer = json!({"type": "computer_call_output", "call_id": call["call_id"], "output": screenshot});
        if let Some(checks) = acknowledge(&call["pending_safety_checks"]) {
            answer["acknowledged_safety_checks"] = checks;
        }
        run.create(&run.next_body(&first, &response, &[answer]));
        run.judge_completed()
    }

    #[test]
    fn an_approved_call_performed_and_acknowledged_and_a_refused_one_left_alone_pass() {
        assert_all_pass(&run(APPROVED, true, true, |p| Some(p.clone())), &CHECKS);
        assert_all_pass(&run(REFUSED, true, false, |_| None), &CHECKS);
    }

    #[test]
    fn a_call_performed_without_asking_or_after_a_refusal_fails_approved() {
        assert_fails(
            &run(APPROVED, false, true, |_| None),
            "authz/safety-checks-approved",
            r#"(computer_call computer "{\"action\":{\"type\":\"click\",\"button\":\"left\",\"x\":140,\"y\":320}}") has pending safety checks (cu_sc_4f1a), but the controller never put it to the approver"#,
        );
        assert_fails(
            &run(REFUSED, true, true, |_| None),
            "authz/safety-checks-approved",
            "was performed though the approver refused its safety checks (cu_sc_9b27)",
        );
    }

    #[test]
    fn acknowledgements_must_be_the_approved_checks_exactly() {
        assert_fails(
            &run(APPROVED, true, true, |_| None),
            "authz/safety-checks-acknowledged",
            "does not acknowledge safety check(s) cu_sc_4f1a that the approver approved",
        );
        assert_fails(
            &run(REFUSED, true, false, |p| Some(p.clone())),
            "authz/safety-checks-acknowledged",
            "acknowledges safety check(s) cu_sc_9b27 that the approver never approved",
        );
        assert_fails(
            &run(APPROVED, true, true, |p| {
                let mut checks = p.as_array().cloned().unwrap_or_default();
                checks.push(json!({"id": "cu_sc_invented"}));
                Some(Value::Array(checks))
            }),
            "authz/safety-checks-acknowledged",
            "acknowledges safety check(s) cu_sc_invented that the model never raised on it",
        );
    }
}
