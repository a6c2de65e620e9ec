//! The task a scenario hands its controller, as the task file's JSON (docs/contract.md).

use serde_json::{Value, json};

use super::fixtures;
use super::{Scenario, StateMode, ToolRef};
use crate::contract::CONTRACT_VERSION;

/// The task JSON for a scenario in one state mode.
pub fn task_json(scenario: &Scenario, state: StateMode) -> Value {
    let tools: Vec<Value> = scenario
        .task
        .tools
        .iter()
        .map(|tool| match tool {
            ToolRef::Fixture(name) => fixtures::definition(name).unwrap_or(Value::Null),
            ToolRef::Inline(def) => def.clone(),
        })
        .collect();
    let mut task = json!({
        "contract": CONTRACT_VERSION,
        "case": scenario.id,
        "model": scenario.task.model,
        "input": scenario.task.input,
        "tools": tools,
        "approval_required": scenario.task.approval_required,
        "state": state.as_str(),
        "stream": scenario.task.stream,
        "background": scenario.task.background,
        "max_rounds": scenario.task.max_rounds,
        "principal": scenario.task.principal,
    });
    // Written only for a run over the socket, so every other task file stays as it was.
    if scenario.task.websocket {
        task["websocket"] = json!(true);
    }
    if let Some(instructions) = &scenario.task.instructions {
        task["instructions"] = json!(instructions);
    }
    // The optional budgets are written only when set, so the task file of every other
    // case stays as it was.
    if let Some(ms) = scenario.task.deadline_ms {
        task["deadline_ms"] = json!(ms);
    }
    if let Some(calls) = scenario.task.max_tool_calls {
        task["max_tool_calls"] = json!(calls);
    }
    if let Some(ms) = scenario.task.tool_timeout_ms {
        task["tool_timeout_ms"] = json!(ms);
    }
    // Compaction and structured output too: only the cases that ask for them.
    if let Some(rounds) = scenario.task.compact_after_rounds {
        task["compact_after_rounds"] = json!(rounds);
    }
    if !scenario.task.include.is_empty() {
        task["include"] = json!(scenario.task.include);
    }
    if let Some(management) = &scenario.task.context_management {
        task["context_management"] = management.clone();
    }
    if let Some(format) = &scenario.task.text_format {
        task["text_format"] = format.clone();
    }
    task
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::required_capabilities;

    use crate::scenario::catalogue_scenario as case;

    #[test]
    fn a_replay_run_names_its_state_and_needs_the_replay_capability() {
        let scenario = case("state/01-instructions-every-request");
        let task = task_json(&scenario, StateMode::Replay);
        assert_eq!(task["state"], "replay");
        assert_eq!(
            required_capabilities(&scenario, StateMode::Replay),
            ["replay"]
        );
    }

    #[test]
    fn the_budgets_are_written_and_needed_only_when_the_case_sets_them() {
        let budgets = ["deadline_ms", "max_tool_calls", "tool_timeout_ms"];
        let state = StateMode::PreviousResponseId;
        let plain = case("budget/01-endless-tool-calls");
        let task = task_json(&plain, state);
        assert!(budgets.iter().all(|key| task.get(key).is_none()), "{task}");
        assert!(!required_capabilities(&plain, state).contains(&"budgets"));
        for (id, key, value) in [
            ("budget/04-tool-call-cap", "max_tool_calls", json!(3)),
            ("budget/05-deadline", "deadline_ms", json!(1500)),
            ("budget/06-slow-tool", "tool_timeout_ms", json!(200)),
        ] {
            let scenario = case(id);
            let task = task_json(&scenario, state);
            assert_eq!(task[key], value, "{id}");
            let others = budgets.iter().filter(|k| **k != key);
            assert!(others.into_iter().all(|k| task.get(k).is_none()), "{task}");
            assert!(
                required_capabilities(&scenario, state).contains(&"budgets"),
                "{id}"
            );
        }
    }
}
