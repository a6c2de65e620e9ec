//! `effects`: each call executed at most once, and only calls the model issued.

use std::collections::BTreeMap;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::transcript::ToolRequestKind;

/// The `effects` checks.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let executions: Vec<_> = f
        .tools
        .iter()
        .filter(|t| t.kind == ToolRequestKind::Call)
        .collect();
    if executions.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let mut successes: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for execution in &executions {
        let Some(call_id) = execution.call_id.as_deref() else {
            problems.push(format!(
                "'{}' was executed with no call_id at all",
                execution.name
            ));
            continue;
        };
        if f.call_by_id(call_id).is_none() {
            problems.push(format!(
                "'{}' was executed under call_id '{call_id}', which the model never issued",
                execution.name
            ));
        }
        if execution.status == 200 {
            successes.entry(call_id).or_insert((0, &execution.name)).0 += 1;
        }
    }
    for (call_id, (count, name)) in successes {
        if count > 1 {
            problems.push(format!(
                "{call_id} ('{name}') was executed {count} times: a call's side effect must happen at most once (the fixture backend de-duplicated it; a real tool would not)"
            ));
        }
    }
    vec![checks::EFFECTS_AT_MOST_ONCE.judge(
        problems,
        format!(
            "{} execution request(s), no call executed twice",
            executions.len()
        ),
    )]
}
