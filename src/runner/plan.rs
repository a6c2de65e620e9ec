//! What a run covers: each case in each state mode and delivery a controller supports,
//! and the `unsupported` report of a run it cannot take.

use std::collections::BTreeSet;

use super::controller::Controller;
use crate::oracle::CaseVerdict;
use crate::report::CaseReport;
use crate::scenario::{Case, Delivery, OutputSpec, Scenario, StateMode, ToolRef};
use crate::transcript::Transcript;

/// The capabilities a case needs in a state mode.
pub fn required_capabilities(scenario: &Scenario, state: StateMode) -> Vec<&'static str> {
    let mut needed = vec![state.as_str()];
    let task = &scenario.task;
    if task.stream {
        needed.push("stream");
    }
    if task.background {
        needed.push("background");
    }
    if !task.approval_required.is_empty() {
        needed.push("approvals");
    }
    if task.has_budgets() {
        needed.push("budgets");
    }
    // A task that offers programmatic tool calling (or bounds its tools' callers) needs
    // it even when the model only calls directly.
    let offers_programs = task.tools.iter().any(|tool| match tool {
        ToolRef::Inline(def) => {
            def["type"] == "programmatic_tool_calling" || def.get("allowed_callers").is_some()
        }
        ToolRef::Fixture(_) => false,
    });
    let programmatic = offers_programs
        || scenario.script.iter().any(|turn| {
            turn.output
                .iter()
                .any(|item| matches!(item, OutputSpec::Program(_)))
                || turn.recorded.as_ref().is_some_and(|r| {
                    r.response["output"]
                        .as_array()
                        .is_some_and(|items| items.iter().any(|i| i["type"] == "program"))
                })
        });
    if programmatic {
        needed.push("programmatic");
    }
    needed
}

pub(super) fn unsupported(case: &Case, state: StateMode, missing: &[&str]) -> CaseReport {
    CaseReport {
        id: case.scenario.id.clone(),
        summary: case.scenario.summary.clone(),
        level: case.scenario.level,
        state,
        delivery: case.scenario.delivery(),
        verdict: CaseVerdict::Unsupported,
        duration_ms: 0,
        startup_ms: None,
        checks: Vec::new(),
        snapshot: None,
        recording: None,
        baseline: None,
        detail: Some(format!(
            "the controller does not declare: {}",
            missing.join(", ")
        )),
        transcript: Transcript::default(),
    }
}

/// The `unsupported` report when the controller lacks a capability the case needs.
pub(super) fn unsupported_by(
    case: &Case,
    state: StateMode,
    controller: &Controller,
) -> Option<CaseReport> {
    let missing: Vec<&str> = required_capabilities(&case.scenario, state)
        .into_iter()
        .filter(|c| !controller.supports.contains(*c))
        .collect();
    (!missing.is_empty()).then(|| unsupported(case, state, &missing))
}

/// Each case as it runs in each of its deliveries, for a controller that supports
/// `supports`: a controller that does not declare `stream` gets only each case as its
/// file asks, so its report gains no `unsupported` streamed runs.
pub fn delivered(cases: &[Case], supports: &BTreeSet<String>) -> Vec<Case> {
    let streams = supports.contains("stream");
    let mut runs = Vec::with_capacity(cases.len() * 2);
    for case in cases {
        let deliveries = case.scenario.run_deliveries();
        let as_written = case.scenario.delivery();
        let mut planned: Vec<Delivery> = deliveries
            .iter()
            .copied()
            .filter(|delivery| streams || *delivery == as_written)
            .collect();
        if planned.is_empty() {
            // Streamed only, for a controller that does not stream: reported unsupported.
            planned.push(deliveries[0]);
        }
        runs.extend(planned.into_iter().map(|delivery| case.delivered(delivery)));
    }
    runs
}

/// The (case, state) pairs a run covers, in report order. The `replay` runs a stateless
/// case adds are planned only for a controller that declares `replay`, so no other
/// controller's report gains `unsupported` runs.
pub fn plan(cases: &[Case], supports: &BTreeSet<String>) -> Vec<(usize, StateMode)> {
    let replays = supports.contains(StateMode::Replay.as_str());
    cases
        .iter()
        .enumerate()
        .flat_map(|(index, case)| {
            let listed = &case.scenario.states;
            case.scenario
                .run_states()
                .into_iter()
                .filter(move |state| {
                    *state != StateMode::Replay || replays || listed.contains(state)
                })
                .map(move |state| (index, state))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::scenario::catalogue;

    fn supports(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn runs_of(id: &str, words: &[&str]) -> Vec<Delivery> {
        let cases = catalogue().expect("the catalogue loads");
        let case: Vec<Case> = cases.into_iter().filter(|c| c.scenario.id == id).collect();
        delivered(&case, &supports(words))
            .iter()
            .map(|c| c.scenario.delivery())
            .collect()
    }

    #[test]
    fn a_json_case_runs_streamed_too_for_a_controller_that_streams() {
        let id = "authz/03-approval-granted";
        assert_eq!(
            runs_of(id, &["stateless", "stream"]),
            [Delivery::Json, Delivery::Stream]
        );
        assert_eq!(runs_of(id, &["stateless"]), [Delivery::Json]);
    }

    #[test]
    fn a_streamed_case_a_background_case_and_a_pinned_case_run_as_written() {
        for words in [&["stream"][..], &[]] {
            assert_eq!(runs_of("stream/01-single-call", words), [Delivery::Stream]);
            assert_eq!(runs_of("background/01-polling", words), [Delivery::Json]);
        }
        let mut case = crate::scenario::catalogue_scenario("correlation/01-single-call");
        case.deliveries = Some(vec![Delivery::Json]);
        let cases = [Case {
            scenario: case,
            source: PathBuf::new(),
        }];
        assert_eq!(delivered(&cases, &supports(&["stream"])).len(), 1);
    }

    #[test]
    fn a_streamed_run_asks_the_controller_for_a_stream() {
        let case = crate::scenario::catalogue_scenario("budget/01-endless-tool-calls");
        let streamed = case.delivered(Delivery::Stream);
        assert!(streamed.task.stream);
        assert_eq!(
            crate::scenario::task_json(&streamed, StateMode::Stateless)["stream"],
            true
        );
        assert!(required_capabilities(&streamed, StateMode::Stateless).contains(&"stream"));
        assert_eq!(streamed.script, case.script);
    }
}
