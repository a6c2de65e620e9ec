//! `dispatch`: only registered tools, with parseable, schema-valid arguments, are
//! executed; rejected calls are answered with an error output so the loop goes on; and
//! the valid calls are really executed.

use super::checks::{self, Check};
use super::facts::{Facts, IssuedCall};
use super::verdict::CheckResult;
use crate::tools::{CallValidity, matches_subset};

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
    if has(|v| *v == CallValidity::CallerNotAllowed) {
        out.push(not_dispatched(
            f,
            &checks::DISPATCH_CALLER_ALLOWED,
            |v| *v == CallValidity::CallerNotAllowed,
            "comes from a caller the tool's allowed_callers excludes",
            "no call from a caller outside allowed_callers was executed",
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
        if !f.executions_of(&call.call_id).is_empty() {
            let detail = match &call.validity {
                CallValidity::MalformedArguments(e) | CallValidity::SchemaViolation(e) => {
                    format!(" ({e})")
                }
                _ => String::new(),
            };
            problems.push(format!(
                "{}: the call {why}{detail}, yet the controller dispatched it to the backend: expected it rejected before dispatch with an error output",
                call.describe()
            ));
        }
    }
    check.judge(problems, pass)
}

fn rejection_answered(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    for call in f
        .actionable_calls()
        .filter(|c| c.validity != CallValidity::Valid)
    {
        problems.extend(f.error_answer_problem(call, "the rejected", None));
    }
    checks::DISPATCH_REJECTION_ANSWERED.judge(
        problems,
        "every rejected call was answered with an error output and the loop went on",
    )
}

/// Whether the scenario's approver would refuse this call.
fn approval_denied(f: &Facts, call: &IssuedCall) -> bool {
    if !f.needs_approval(&call.name) {
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
        .filter(|c| !f.is_last_round(c.response))
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
