//! `authz`: backend denials relayed as error outputs and never retried; approval-required
//! tools never executed without an approval granted for that very call.

use super::facts::{Facts, looks_like_error, output_text};
use super::verdict::CheckResult;
use crate::scenario::Level;
use crate::tools::CallValidity;
use crate::transcript::ToolRequestKind;

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
        .filter(|c| f.served[c.response].status == "completed" && !f.is_last_round(c.response))
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
        out.push(CheckResult::judge(
            "authz/approval-asked",
            Level::Must,
            problems,
            "every call to an approval-required tool was put to the approver",
        ));
        out.push(approval_before_execution(f));
    }
    if f.tools
        .iter()
        .any(|t| t.kind == ToolRequestKind::Approval && t.response["approved"] == false)
    {
        out.push(approval_denied(f));
    }
    out
}

fn denial_relayed(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    for denied in f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call && t.status == 403)
    {
        let Some(call_id) = denied.call_id.as_deref() else {
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
        let Some(call) = f.call_by_id(call_id) else {
            continue;
        };
        match f.request_after(call.response) {
            None if f.is_last_round(call.response) => {}
            None => problems.push(format!(
                "the controller stopped after the denial of {} instead of relaying it to the model as an error output",
                call.describe()
            )),
            Some((position, request)) => match Facts::outputs_for(request, call_id).first() {
                None => problems.push(format!(
                    "{} does not relay the denial of {} as an error output for that call",
                    Facts::request_label(position),
                    call.describe()
                )),
                Some(output) => {
                    let text = output_text(output);
                    let backend = denied.response["error"]["message"].as_str();
                    if !looks_like_error(&text, backend) {
                        problems.push(format!(
                            "{}: the output for the denied {} is {}, which is not an error: expected the denial relayed (e.g. the backend's message {:?})",
                            Facts::request_label(position),
                            call.describe(),
                            crate::transcript::clip(&text, 120),
                            backend.unwrap_or_default()
                        ));
                    }
                }
            },
        }
    }
    CheckResult::judge(
        "authz/denial-relayed",
        Level::Must,
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
                "'{}' was dispatched for {} without an approval granted for that call: {}",
                t.name,
                t.call_id.as_deref().unwrap_or("a call without call_id"),
                t.response["error"]["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    CheckResult::judge(
        "authz/approval-before-execution",
        Level::Must,
        problems,
        "no approval-required tool ran without its own approval",
    )
}

fn approval_denied(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    for refusal in f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Approval && t.response["approved"] == false)
    {
        let Some(call_id) = refusal.call_id.as_deref() else {
            continue;
        };
        if f.executions_of(call_id).iter().any(|t| t.seq > refusal.seq) {
            problems.push(format!(
                "{call_id}: the approver refused '{}', yet the controller dispatched it",
                refusal.name
            ));
        }
        let Some(call) = f.call_by_id(call_id) else {
            continue;
        };
        if let Some((position, request)) = f.request_after(call.response) {
            match Facts::outputs_for(request, call_id).first() {
                None => problems.push(format!(
                    "{} sends no error output for the refused call {}",
                    Facts::request_label(position),
                    call.describe()
                )),
                Some(output) if !looks_like_error(&output_text(output), refusal.response["reason"].as_str()) => {
                    problems.push(format!(
                        "{}: the output for the refused {} is {}, which is not an error: expected the refusal relayed",
                        Facts::request_label(position),
                        call.describe(),
                        crate::transcript::clip(&output_text(output), 120)
                    ))
                }
                Some(_) => {}
            }
        }
    }
    CheckResult::judge(
        "authz/approval-denied",
        Level::Must,
        problems,
        "refused calls were not executed and were answered with an error output",
    )
}
