//! `loopcheck task`: a case as a controller's author meets it, before writing any code:
//! the task file it is handed, how the fixture tools answer, and what the model will say.

use std::fmt::Write as _;

use serde_json::Value;

use super::fixtures::DEFAULT_REFUSAL;
use super::{OutputSpec, Scenario, StateMode, ToolBehaviour, Turn};
use crate::scenario::task_json;

/// The whole preview, as text.
pub fn preview(scenario: &Scenario, state: StateMode) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} [{state}] ({})",
        scenario.id,
        scenario.level.as_str()
    );
    let _ = writeln!(out, "{}\n", scenario.summary);
    let task = serde_json::to_string_pretty(&task_json(scenario, state)).unwrap_or_default();
    let _ = writeln!(out, "The task file ($LOOPCHECK_TASK):\n{task}\n");
    let _ = writeln!(out, "The tool backend ($LOOPCHECK_TOOLS_URL):");
    out.push_str(&backend(scenario));
    let _ = writeln!(out, "\nThe model's turns (one per accepted request):");
    for (index, turn) in scenario.script.iter().enumerate() {
        out.push_str(&turn_lines(index + 1, turn));
    }
    let expect = &scenario.expect;
    let mut expected = format!("{:?}", expect.outcome).to_lowercase();
    if let Some(text) = &expect.output_text {
        let _ = write!(expected, ", output_text {text:?}");
    }
    if let Some(reason) = &expect.reason {
        let _ = write!(expected, ", reason {reason:?}");
    }
    let _ = writeln!(out, "\nA correct controller reports: {expected}");
    out
}

fn backend(scenario: &Scenario) -> String {
    let mut out = String::new();
    if scenario.tools.is_empty() {
        out.push_str(
            "  every call answers 200 {\"result\": {\"tool\", \"arguments\", \"ok\": true}}\n",
        );
    }
    for (name, behaviour) in &scenario.tools {
        let _ = writeln!(out, "  {name}:");
        for rule in rule_lines(behaviour) {
            let _ = writeln!(out, "    {rule}");
        }
    }
    if !scenario.task.approval_required.is_empty() {
        let _ = writeln!(
            out,
            "  approval needed first (POST /approvals) for: {}",
            scenario.task.approval_required.join(", ")
        );
    }
    out
}

/// How a tool answers, a line a rule, in the order the backend applies them: a denial
/// wins over a result.
fn rule_lines(behaviour: &ToolBehaviour) -> Vec<String> {
    let mut lines = Vec::new();
    for rule in &behaviour.deny {
        let principal = rule
            .principal
            .as_deref()
            .map_or(String::new(), |p| format!(" for principal {p}"));
        let after = if rule.after > 0 {
            format!(" once {} call(s) ran", rule.after)
        } else {
            String::new()
        };
        lines.push(format!(
            "{}{principal}{after} -> 403 {:?}",
            when(&rule.when),
            rule.message
        ));
    }
    for rule in &behaviour.unavailable {
        let attempts = attempts_shown(rule.attempts);
        lines.push(format!("{}: {attempts} -> 503", when(&rule.when)));
    }
    for rule in &behaviour.rate_limited {
        let asked = match (rule.retry_after, rule.retry_after_ms) {
            (Some(s), Some(ms)) => format!(" (retry-after {s} s, retry-after-ms {ms})"),
            (Some(s), None) => format!(" (retry-after {s} s)"),
            (None, Some(ms)) => format!(" (retry-after-ms {ms})"),
            (None, None) => String::new(),
        };
        let attempts = attempts_shown(rule.attempts);
        lines.push(format!("{}: {attempts} -> 429{asked}", when(&rule.when)));
    }
    for rule in &behaviour.slow {
        lines.push(format!(
            "{}: the first {} attempt(s) per call_id answer after {} ms",
            when(&rule.when),
            rule.attempts,
            rule.delay_ms
        ));
    }
    for rule in &behaviour.results {
        lines.push(format!(
            "{} -> 200 {{\"result\": {}}}",
            when(&rule.when),
            rule.result
        ));
    }
    lines.push(match &behaviour.default {
        Some(default) => format!("otherwise -> 200 {{\"result\": {default}}}"),
        None => "otherwise -> 200, an echo of the tool and its arguments".to_owned(),
    });
    for rule in &behaviour.approvals {
        let decision = if rule.approved {
            "granted (a token for that call_id)".to_owned()
        } else {
            format!(
                "refused: {:?}",
                rule.reason.as_deref().unwrap_or(DEFAULT_REFUSAL)
            )
        };
        lines.push(format!("approval {} -> {decision}", when(&rule.when)));
    }
    lines
}

fn when(pattern: &Option<Value>) -> String {
    match pattern {
        Some(pattern) => format!("when {pattern}"),
        None => "any call".to_owned(),
    }
}

/// Which attempts of a call a failure rule refuses.
fn attempts_shown(attempts: Option<u32>) -> String {
    match attempts {
        Some(n) => format!("the first {n} attempt(s) per call_id"),
        None => "every attempt".to_owned(),
    }
}

fn turn_lines(number: usize, turn: &Turn) -> String {
    let mut out = String::new();
    let mut notes = Vec::new();
    if !turn.faults.is_empty() {
        notes.push(format!("{} fault(s) first", turn.faults.len()));
    }
    if turn.status != Default::default() {
        notes.push(format!("status {:?}", turn.status).to_lowercase());
    }
    if turn.endless {
        notes.push("repeats for every later request".to_owned());
    }
    if turn.recorded.is_some() {
        notes.push("a recorded response".to_owned());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let _ = writeln!(out, "  {number}.{notes}");
    for item in &turn.output {
        let line = match item {
            OutputSpec::Reasoning(_) => "reasoning".to_owned(),
            OutputSpec::Message(message) => match message.refusal() {
                Some(refusal) => format!("message {:?}, refusal {refusal:?}", message.text()),
                None => format!("message {:?}", message.text()),
            },
            OutputSpec::Refusal(text) => format!("refusal {text:?}"),
            OutputSpec::Call(call) => {
                let caller = call
                    .caller
                    .as_deref()
                    .map_or(String::new(), |p| format!(" (from program {p})"));
                format!(
                    "function_call {} {}{caller}",
                    call.name,
                    call.arguments_string()
                )
            }
            OutputSpec::CustomCall(call) => {
                format!("custom_tool_call {} {:?}", call.name, call.input)
            }
            OutputSpec::McpApproval(request) => format!(
                "mcp_approval_request {}/{} {}",
                request.server_label,
                request.name,
                request.arguments_string()
            ),
            OutputSpec::Hosted(fields) => format!(
                "hosted {}",
                fields
                    .get("type")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("(no type)")
            ),
            OutputSpec::ShellCall(call) => format!("shell_call {}", call.action()),
            OutputSpec::LocalShellCall(call) => format!("local_shell_call {}", call.action()),
            OutputSpec::ApplyPatchCall(call) => {
                format!("apply_patch_call {}", call.operation())
            }
            OutputSpec::ComputerCall(call) => {
                let checks = call.pending_safety_checks.len();
                let guarded = if checks > 0 {
                    format!(" ({checks} pending safety check(s))")
                } else {
                    String::new()
                };
                format!("computer_call {}{guarded}", call.input())
            }
            OutputSpec::ToolSearchCall(search) => {
                format!(
                    "tool_search_call ({}) {}",
                    search.execution(),
                    search.arguments
                )
            }
            OutputSpec::ToolSearchOutput(output) => {
                let names: Vec<&str> = output
                    .tools
                    .iter()
                    .filter_map(|tool| tool["name"].as_str())
                    .collect();
                format!("tool_search_output loading {}", names.join(", "))
            }
            OutputSpec::Program(program) => format!("program {}", program.label),
            OutputSpec::Compaction(_) => "compaction".to_owned(),
            OutputSpec::ProgramOutput(output) => {
                format!("program_output of {}: {:?}", output.program, output.result)
            }
        };
        let _ = writeln!(out, "     {line}");
    }
    out
}
