//! What a run covers: each case in each state mode and delivery a controller supports,
//! and the `unsupported` report of a run it cannot take.

use std::collections::BTreeSet;

use super::controller::Controller;
use crate::oracle::CaseVerdict;
use crate::report::CaseReport;
use crate::scenario::{Case, Delivery, OutputSpec, Scenario, StateMode, ToolRef};
use crate::transcript::Transcript;
use crate::wire::call_kind::COMPUTER_TOOL_TYPES;

/// The capabilities a case needs in a state mode.
pub fn required_capabilities(scenario: &Scenario, state: StateMode) -> Vec<&'static str> {
    let mut needed = vec![state.as_str()];
    let task = &scenario.task;
    // A run over the socket is asked for with `stream` set too, but it is the socket
    // the controller must speak: its events are the socket's, not server-sent ones.
    if task.websocket {
        needed.push("websocket");
    } else if task.stream {
        needed.push("stream");
    }
    if task.background {
        needed.push("background");
    }
    // A computer call's pending safety checks are put to the same approver.
    let safety_checks = scenario.script.iter().any(|turn| {
        turn.output.iter().any(|item| {
            matches!(item, OutputSpec::ComputerCall(call) if !call.pending_safety_checks.is_empty())
        })
    });
    if !task.approval_required.is_empty() || safety_checks {
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
    // Custom tools: offered by the task, or called in the script.
    let custom = task
        .tools
        .iter()
        .any(|tool| matches!(tool, ToolRef::Inline(def) if def["type"] == "custom"))
        || scenario.script.iter().any(|turn| {
            turn.output
                .iter()
                .any(|item| matches!(item, OutputSpec::CustomCall(_)))
        });
    if custom {
        needed.push("custom");
    }
    // MCP approvals: the controller decides each request the script makes. Hosted items
    // (an `mcp_call` included) need nothing: every controller replays output items.
    let mcp = scenario.script.iter().any(|turn| {
        turn.output
            .iter()
            .any(|item| matches!(item, OutputSpec::McpApproval(_)))
    });
    if mcp {
        needed.push("mcp");
    }
    // Shell and patch tools: offered by the task, or called in the script. `shell`
    // covers both shell tools.
    let offered = |types: &[&str]| {
        task.tools.iter().any(|tool| {
            matches!(tool, ToolRef::Inline(def)
                if def["type"].as_str().is_some_and(|t| types.contains(&t)))
        })
    };
    let called = |wanted: fn(&OutputSpec) -> bool| {
        scenario
            .script
            .iter()
            .any(|turn| turn.output.iter().any(wanted))
    };
    if offered(&["shell", "local_shell"])
        || called(|item| {
            matches!(
                item,
                OutputSpec::ShellCall(_) | OutputSpec::LocalShellCall(_)
            )
        })
    {
        needed.push("shell");
    }
    if offered(&["apply_patch"]) || called(|item| matches!(item, OutputSpec::ApplyPatchCall(_))) {
        needed.push("apply_patch");
    }
    if task.compact_after_rounds.is_some() || task.context_management.is_some() {
        needed.push("compaction");
    }
    if task.text_format.is_some() {
        needed.push("text_format");
    }
    // The computer: offered by the task, or called in the script.
    let computer =
        offered(&COMPUTER_TOOL_TYPES) || called(|item| matches!(item, OutputSpec::ComputerCall(_)));
    if computer {
        needed.push("computer");
    }
    // Namespaces: a controller that knows only top-level tools finds no namespaced one,
    // so a task that offers a namespace, or a script that calls into one, needs the word.
    let namespaces = task
        .tools
        .iter()
        .any(|tool| matches!(tool, ToolRef::Inline(def) if def["type"] == "namespace"))
        || scenario.script.iter().any(|turn| {
            turn.output
                .iter()
                .any(|item| matches!(item, OutputSpec::Call(call) if call.namespace.is_some()))
        });
    if namespaces {
        needed.push("namespaces");
    }
    // A client tool search is the controller's to run; a server-executed one is hosted,
    // replayed like any item, and needs nothing.
    let client_search = task.tools.iter().any(|tool| {
        matches!(tool, ToolRef::Inline(def) if def["type"] == "tool_search" && def["execution"] == "client")
    }) || scenario.script.iter().any(|turn| {
        turn.output.iter().any(
            |item| matches!(item, OutputSpec::ToolSearchCall(search) if search.execution() == "client"),
        )
    });
    if client_search {
        needed.push("tool_search");
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
        flaky: false,
        failed_tries: Vec::new(),
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
/// file asks, so its report gains no `unsupported` streamed runs. Runs over the socket
/// are planned only for a controller that declares `websocket`, as `replay` runs are
/// for one that declares `replay`: no other controller's report gains them.
pub fn delivered(cases: &[Case], supports: &BTreeSet<String>) -> Vec<Case> {
    let streams = supports.contains("stream");
    let sockets = supports.contains(Delivery::WebSocket.as_str());
    let mut runs = Vec::with_capacity(cases.len() * 2);
    for case in cases {
        let deliveries = case.scenario.run_deliveries();
        let as_written = case.scenario.delivery();
        let mut planned: Vec<Delivery> = deliveries
            .iter()
            .copied()
            .filter(|delivery| match delivery {
                Delivery::WebSocket => sockets,
                _ => streams || *delivery == as_written,
            })
            .collect();
        if planned.is_empty() {
            // Streamed only, for a controller that does not stream: reported unsupported.
            // A case run over the socket only is left out instead.
            planned.extend(
                deliveries
                    .iter()
                    .find(|delivery| **delivery != Delivery::WebSocket),
            );
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
    fn a_socket_case_runs_only_for_a_controller_that_declares_websocket() {
        let id = "websocket/01-single-call";
        assert_eq!(
            runs_of(id, &["stateless", "stream", "websocket"]),
            [Delivery::WebSocket]
        );
        for words in [&["stateless", "stream"][..], &["stateless"], &[]] {
            assert_eq!(runs_of(id, words), []);
        }
        // Nor does any other case gain a run over the socket.
        assert_eq!(
            runs_of("authz/03-approval-granted", &["stream", "websocket"]),
            [Delivery::Json, Delivery::Stream]
        );
    }

    #[test]
    fn a_case_listing_every_delivery_keeps_its_others_for_a_controller_without_the_socket() {
        let mut case = crate::scenario::catalogue_scenario("correlation/01-single-call");
        case.deliveries = Some(vec![Delivery::Stream, Delivery::WebSocket]);
        let cases = [Case {
            scenario: case,
            source: PathBuf::new(),
        }];
        let delivery_of = |words: &[&str]| -> Vec<Delivery> {
            delivered(&cases, &supports(words))
                .iter()
                .map(|c| c.scenario.delivery())
                .collect()
        };
        assert_eq!(
            delivery_of(&["stream", "websocket"]),
            [Delivery::Stream, Delivery::WebSocket]
        );
        assert_eq!(delivery_of(&["stream"]), [Delivery::Stream]);
        // Streamed only, for a controller that streams not at all: reported unsupported.
        assert_eq!(delivery_of(&[]), [Delivery::Stream]);
    }

    #[test]
    fn a_socket_run_asks_the_controller_for_the_socket() {
        let case = crate::scenario::catalogue_scenario("websocket/02-parallel-calls");
        let over_socket = case.delivered(Delivery::WebSocket);
        assert!(over_socket.task.websocket && over_socket.task.stream);
        assert_eq!(over_socket.delivery(), Delivery::WebSocket);
        let task = crate::scenario::task_json(&over_socket, StateMode::Stateless);
        assert_eq!(task["websocket"], true);
        assert_eq!(task["stream"], true);
        let needed = required_capabilities(&over_socket, StateMode::Stateless);
        assert!(needed.contains(&"websocket"), "{needed:?}");
        assert_eq!(over_socket.script, case.script);
        // Back to JSON or a stream, the task no longer asks for the socket.
        for delivery in [Delivery::Json, Delivery::Stream] {
            let again = over_socket.delivered(delivery);
            assert!(!again.task.websocket);
            assert_eq!(again.delivery(), delivery);
            let task = crate::scenario::task_json(&again, StateMode::Stateless);
            assert!(task.get("websocket").is_none(), "{task}");
            let needed = required_capabilities(&again, StateMode::Stateless);
            assert!(!needed.contains(&"websocket"), "{needed:?}");
        }
    }

    #[test]
    fn a_computer_case_needs_computer_and_approvals_only_with_safety_checks() {
        let needed = |id: &str| {
            let case = crate::scenario::catalogue_scenario(id);
            required_capabilities(&case, StateMode::PreviousResponseId)
        };
        let plain = needed("computer/01-screenshot-answered");
        assert!(
            plain.contains(&"computer") && !plain.contains(&"approvals"),
            "{plain:?}"
        );
        let guarded = needed("computer/03-safety-check-approved");
        assert!(
            guarded.contains(&"computer") && guarded.contains(&"approvals"),
            "{guarded:?}"
        );
        assert!(!needed("custom/01-custom-call").contains(&"computer"));
    }

    #[test]
    fn a_case_with_custom_tools_needs_custom_and_one_without_does_not() {
        for id in ["custom/01-custom-call", "custom/02-custom-beside-function"] {
            let case = crate::scenario::catalogue_scenario(id);
            let needed = required_capabilities(&case, StateMode::Stateless);
            assert!(needed.contains(&"custom"), "{id}: {needed:?}");
        }
        let case = crate::scenario::catalogue_scenario("correlation/01-single-call");
        let needed = required_capabilities(&case, StateMode::Stateless);
        assert!(!needed.contains(&"custom"), "{needed:?}");
    }

    #[test]
    fn a_case_with_mcp_approval_requests_needs_mcp_and_hosted_items_need_nothing() {
        for id in [
            "mcp/01-approval-granted",
            "mcp/03-two-approvals-one-refused",
        ] {
            let case = crate::scenario::catalogue_scenario(id);
            let needed = required_capabilities(&case, StateMode::Stateless);
            assert!(needed.contains(&"mcp"), "{id}: {needed:?}");
        }
        for id in ["mcp/04-list-tools-and-call", "hosted/01-search-and-code"] {
            let case = crate::scenario::catalogue_scenario(id);
            let needed = required_capabilities(&case, StateMode::Stateless);
            assert_eq!(needed, ["stateless"], "{id}");
        }
    }

    #[test]
    fn a_case_with_shell_or_patch_tools_needs_shell_or_apply_patch() {
        for (id, shell, patch) in [
            ("shell/01-shell-call", true, false),
            ("shell/03-local-shell-call", true, false),
            ("shell/04-apply-patch", false, true),
            ("custom/01-custom-call", false, false),
        ] {
            let case = crate::scenario::catalogue_scenario(id);
            let needed = required_capabilities(&case, StateMode::Stateless);
            assert_eq!(needed.contains(&"shell"), shell, "{id}: {needed:?}");
            assert_eq!(needed.contains(&"apply_patch"), patch, "{id}: {needed:?}");
        }
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
