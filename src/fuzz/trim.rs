//! The second half of shrinking: once proptest's shrinking of the plan is done, what the
//! failure does not need is taken out of the scenario itself, one piece at a time and
//! only while the failure persists: task tools no turn calls, tool behaviours
//! (fixtures), and policies (deny, approval, unavailability, rate-limit and slowness
//! rules, approval requirements). A plan always carries them; a reader of a shrunk
//! failure should not have to wonder whether they matter.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::scenario::{OutputSpec, Scenario, ToolBehaviour, ToolRef};

/// One scenario smaller by one piece, and a key naming the piece (so that a removal
/// that made the failure go away is not tried again).
pub(super) struct Candidate {
    pub(super) key: String,
    pub(super) scenario: Scenario,
}

/// The tool names the script's turns call, and whether it runs a program.
fn called(scenario: &Scenario) -> (BTreeSet<&str>, bool) {
    let mut names = BTreeSet::new();
    let mut program = false;
    for output in scenario.script.iter().flat_map(|turn| &turn.output) {
        match output {
            OutputSpec::Call(call) => {
                names.insert(call.name.as_str());
            }
            OutputSpec::CustomCall(call) => {
                names.insert(call.name.as_str());
            }
            OutputSpec::Program(_) | OutputSpec::ProgramOutput(_) => program = true,
            _ => {}
        }
    }
    (names, program)
}

/// The name of a task tool no turn calls: a fixture, function or custom tool no call
/// names, or programs' tool when no program runs. Other tools are kept.
fn unused(tool: &ToolRef, names: &BTreeSet<&str>, program: bool) -> Option<String> {
    match tool {
        ToolRef::Fixture(name) => (!names.contains(name.as_str())).then(|| name.clone()),
        ToolRef::Inline(definition) => match definition["type"].as_str() {
            Some("function" | "custom") => definition["name"]
                .as_str()
                .filter(|name| !names.contains(name))
                .map(str::to_owned),
            Some(kind @ "programmatic_tool_calling") if !program => Some(kind.to_owned()),
            _ => None,
        },
    }
}

/// The rule lists of a behaviour, by kind, as JSON (to name and remove one).
fn rules(behaviour: &ToolBehaviour) -> Vec<(&'static str, Vec<Value>)> {
    let json = |rules: Vec<Result<Value, serde_json::Error>>| {
        rules.into_iter().flatten().collect::<Vec<_>>()
    };
    vec![
        (
            "deny",
            json(behaviour.deny.iter().map(serde_json::to_value).collect()),
        ),
        (
            "approvals",
            json(
                behaviour
                    .approvals
                    .iter()
                    .map(serde_json::to_value)
                    .collect(),
            ),
        ),
        (
            "unavailable",
            json(
                behaviour
                    .unavailable
                    .iter()
                    .map(serde_json::to_value)
                    .collect(),
            ),
        ),
        (
            "rate_limited",
            json(
                behaviour
                    .rate_limited
                    .iter()
                    .map(serde_json::to_value)
                    .collect(),
            ),
        ),
        (
            "slow",
            json(behaviour.slow.iter().map(serde_json::to_value).collect()),
        ),
    ]
}

/// `behaviour` without its `index`-th rule of `kind`.
fn without_rule(behaviour: &ToolBehaviour, kind: &str, index: usize) -> ToolBehaviour {
    fn drop<T: Clone>(rules: &[T], index: usize) -> Vec<T> {
        let mut rules = rules.to_vec();
        rules.remove(index);
        rules
    }
    let mut smaller = behaviour.clone();
    match kind {
        "deny" => smaller.deny = drop(&behaviour.deny, index),
        "approvals" => smaller.approvals = drop(&behaviour.approvals, index),
        "unavailable" => smaller.unavailable = drop(&behaviour.unavailable, index),
        "rate_limited" => smaller.rate_limited = drop(&behaviour.rate_limited, index),
        _ => smaller.slow = drop(&behaviour.slow, index),
    }
    smaller
}

/// Every scenario one piece smaller than `scenario`, the biggest pieces first: unused
/// tools (with their behaviour and approval requirement), then single policies, then
/// whole behaviours, then approval requirements.
pub(super) fn candidates(scenario: &Scenario) -> Vec<Candidate> {
    let mut out = Vec::new();
    let (names, program) = called(scenario);
    for (index, tool) in scenario.task.tools.iter().enumerate() {
        let Some(name) = unused(tool, &names, program) else {
            continue;
        };
        let mut smaller = scenario.clone();
        smaller.task.tools.remove(index);
        smaller.tools.remove(&name);
        smaller.task.approval_required.retain(|n| *n != name);
        out.push(Candidate {
            key: format!("tool {name}"),
            scenario: smaller,
        });
    }
    for (name, behaviour) in &scenario.tools {
        for (kind, rules) in rules(behaviour) {
            for (index, rule) in rules.iter().enumerate() {
                let mut smaller = scenario.clone();
                smaller
                    .tools
                    .insert(name.clone(), without_rule(behaviour, kind, index));
                out.push(Candidate {
                    key: format!("{kind} {name} {rule}"),
                    scenario: smaller,
                });
            }
        }
    }
    for name in scenario.tools.keys() {
        let mut smaller = scenario.clone();
        smaller.tools.remove(name);
        out.push(Candidate {
            key: format!("behaviour {name}"),
            scenario: smaller,
        });
    }
    for name in &scenario.task.approval_required {
        let mut smaller = scenario.clone();
        smaller.task.approval_required.retain(|n| n != name);
        out.push(Candidate {
            key: format!("approval {name}"),
            scenario: smaller,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::plan::{CallKind, End, Plan, Round};
    use crate::scenario::StateMode;

    fn plan(calls: Vec<CallKind>) -> Plan {
        Plan {
            state: StateMode::PreviousResponseId,
            stream: None,
            websocket: false,
            approvals: true,
            programmatic: false,
            rounds: vec![Round {
                reasoning: false,
                preamble: false,
                calls,
                program: false,
                faults: Vec::new(),
                close_connection: false,
                reasoning_text: false,
                cited: false,
                custom: None,
            }],
            end: End::Answer(false),
            budget: None,
            cited: false,
            reasoning_text: false,
            filtered: false,
        }
    }

    #[test]
    fn unused_tools_are_offered_for_removal_with_their_behaviour_and_approval() {
        let scenario = plan(vec![CallKind::Stock(0)]).scenario("fuzz/t", "t");
        let keys: Vec<String> = candidates(&scenario).into_iter().map(|c| c.key).collect();
        assert!(keys.contains(&"tool get_weather".to_owned()), "{keys:?}");
        assert!(keys.contains(&"tool issue_refund".to_owned()), "{keys:?}");
        assert!(!keys.contains(&"tool get_stock".to_owned()), "{keys:?}");
        let refund = candidates(&scenario)
            .into_iter()
            .find(|c| c.key == "tool issue_refund")
            .map(|c| c.scenario)
            .expect("a candidate");
        assert!(refund.task.approval_required.is_empty());
        assert!(!refund.tools.contains_key("issue_refund"));
    }

    #[test]
    fn each_policy_is_offered_for_removal_alone() {
        let scenario = plan(vec![CallKind::Stock(0)]).scenario("fuzz/t", "t");
        let keys: Vec<String> = candidates(&scenario).into_iter().map(|c| c.key).collect();
        assert!(
            keys.iter().any(|k| k.starts_with("deny get_stock")),
            "{keys:?}"
        );
        assert!(
            keys.iter().any(|k| k.starts_with("unavailable get_stock")),
            "{keys:?}"
        );
        assert!(
            keys.contains(&"approval issue_refund".to_owned()),
            "{keys:?}"
        );
    }

    #[test]
    fn a_called_tool_is_kept() {
        let scenario = plan(vec![CallKind::Stock(0), CallKind::Weather(1)]).scenario("fuzz/t", "t");
        assert!(
            candidates(&scenario)
                .iter()
                .all(|c| !c.key.starts_with("tool get_"))
        );
    }
}
