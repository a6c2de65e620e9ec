//! `authz`: backend denials relayed as error outputs and never retried; approval-required
//! tools never executed without an approval granted for that very call.

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::tools::{CallValidity, json_equal};
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
        out.push(checks::AUTHZ_APPROVAL_ASKED.judge(
            problems,
            "every call to an approval-required tool was put to the approver",
        ));
        out.push(approval_before_execution(f));
    }
    if !f.tools.is_empty() {
        out.push(principal_forwarded(f));
    }
    if f.tools.iter().any(|t| t.kind == ToolRequestKind::Approval) {
        out.push(approval_request_matches(f));
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
        if let Some(call) = f.call_by_id(call_id) {
            problems.extend(f.error_answer_problem(
                call,
                "the denied",
                denied.response["error"]["message"].as_str(),
            ));
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
                "'{}' was dispatched for {} without an approval granted for that call: {}",
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
        if let Some(call) = f.call_by_id(call_id) {
            problems.extend(f.error_answer_problem(
                call,
                "the refused",
                refusal.response["reason"].as_str(),
            ));
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
    for request in f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Approval)
    {
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
