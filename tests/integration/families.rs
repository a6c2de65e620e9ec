//! For every check family, a controller with one deliberate defect fails the named check
//! with a message that says what was wrong, and the same controller without the defect
//! passes the same case.

use std::time::Duration;

use loopcheck::oracle::{CaseVerdict, CheckVerdict};
use loopcheck::report::CaseReport;
use loopcheck::runner::run_in_process;
use loopcheck::scenario::StateMode::{self, PreviousResponseId as Chained, Stateless};

use crate::defective::{self, Defect};
use crate::support::case;

async fn run(id: &str, state: StateMode, defect: Defect) -> CaseReport {
    let case = case(id);
    run_in_process(&case, state, Duration::from_secs(20), |env, task| {
        defective::run(env, task, defect)
    })
    .await
}

fn describe(report: &CaseReport) -> String {
    report
        .checks
        .iter()
        .map(|c| format!("  {} {}: {}", c.verdict.as_str(), c.id, c.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the case with and without the defect: the control passes, the defective run
/// gets `verdict` on `check`, with `needle` in the message.
async fn assert_caught(
    id: &str,
    state: StateMode,
    defect: Defect,
    check: &str,
    verdict: CheckVerdict,
    needle: &str,
) -> CaseReport {
    let control = run(id, state, Defect::None).await;
    assert_eq!(
        control.verdict,
        CaseVerdict::Pass,
        "control run of {id} [{state}] must pass:\n{}",
        describe(&control)
    );
    let report = run(id, state, defect).await;
    let found = report
        .checks
        .iter()
        .find(|c| c.id == check)
        .unwrap_or_else(|| {
            panic!(
                "{defect:?} on {id} [{state}]: no check {check}:\n{}",
                describe(&report)
            )
        });
    assert_eq!(
        found.verdict,
        verdict,
        "{defect:?} on {id} [{state}]: {check}:\n{}",
        describe(&report)
    );
    assert!(
        found.message.contains(needle),
        "{defect:?} on {id} [{state}]: {check} message lacks {needle:?}: {}",
        found.message
    );
    let expected_case = if verdict == CheckVerdict::Fail {
        CaseVerdict::Fail
    } else {
        CaseVerdict::NonStrict
    };
    if verdict == CheckVerdict::Fail {
        assert_eq!(report.verdict, expected_case, "{}", describe(&report));
    }
    report
}

async fn assert_fails(
    id: &str,
    state: StateMode,
    defect: Defect,
    check: &str,
    needle: &str,
) -> CaseReport {
    assert_caught(id, state, defect, check, CheckVerdict::Fail, needle).await
}

fn verdict_of(report: &CaseReport, check: &str) -> Option<CheckVerdict> {
    report
        .checks
        .iter()
        .find(|c| c.id == check)
        .map(|c| c.verdict)
}

#[tokio::test]
async fn call_id_results_keyed_by_position() {
    let report = assert_fails(
        "correlation/05-parallel-same-tool",
        Chained,
        Defect::ResultsReversed,
        "call-id/result-matches",
        "that is the result of",
    )
    .await;
    let check = report
        .checks
        .iter()
        .find(|c| c.id == "call-id/result-matches")
        .unwrap();
    assert!(check.diff.is_some(), "a result mismatch carries a diff");
}

/// One defect per row, each on a case that exposes it: (case, state mode, defect, the
/// check it fails, words its message must hold). The control run of each case passes.
const CAUGHT: &[(&str, StateMode, Defect, &str, &str)] = &[
    (
        "correlation/02-call-id-distinct",
        Chained,
        Defect::ItemIdAsCallId,
        "call-id/own-id",
        "(the item id of",
    ),
    (
        "correlation/02-call-id-distinct",
        Stateless,
        Defect::ItemIdAsCallId,
        "call-id/own-id",
        "(the item id of",
    ),
    (
        "state/01-instructions-every-request",
        Chained,
        Defect::InstructionsOnce,
        "state/config-resent",
        "not inherited through previous_response_id",
    ),
    (
        "state/01-instructions-every-request",
        Stateless,
        Defect::InstructionsOnce,
        "state/config-resent",
        "inherits nothing, so it must carry them itself",
    ),
    (
        "correlation/05-parallel-same-tool",
        Stateless,
        Defect::FirstCallOnly,
        "call-id/answered",
        "has no function_call_output for",
    ),
    (
        "reasoning/01-encrypted-retention",
        Stateless,
        Defect::ReasoningWithStatus,
        "reasoning/input-shape",
        "output-only field",
    ),
    (
        "reasoning/01-encrypted-retention",
        Stateless,
        Defect::AlterEncryptedContent,
        "reasoning/replayed",
        "altered encrypted_content",
    ),
    (
        "correlation/06-three-rounds",
        Chained,
        Defect::StalePreviousResponseId,
        "state/chained",
        "a stale one",
    ),
    (
        "correlation/01-single-call",
        Stateless,
        Defect::StoreInStateless,
        "state/store-false",
        "store: false",
    ),
    (
        "dispatch/01-unknown-tool",
        Chained,
        Defect::NoValidation,
        "dispatch/registered-only",
        "not in the task's registry",
    ),
    (
        "dispatch/04-malformed-arguments",
        Stateless,
        Defect::NoValidation,
        "dispatch/arguments-parsed",
        "not a JSON object",
    ),
    (
        "dispatch/09-schema-violation",
        Chained,
        Defect::NoValidation,
        "dispatch/schema-valid",
        "violate the tool's schema",
    ),
    (
        "authz/01-cross-tenant-denied",
        Chained,
        Defect::RetryDenied,
        "authz/denial-relayed",
        "retried it",
    ),
    (
        "authz/01-cross-tenant-denied",
        Stateless,
        Defect::SwallowDenial,
        "authz/denial-relayed",
        "not an error",
    ),
    (
        "authz/02-approval-denied",
        Stateless,
        Defect::IgnoreApprovalRefusal,
        "authz/approval-denied",
        "yet the controller dispatched it",
    ),
    (
        "correlation/01-single-call",
        Chained,
        Defect::ExecuteTwice,
        "effects/at-most-once",
        "executed 2 times",
    ),
    (
        "budget/01-endless-tool-calls",
        Chained,
        Defect::NoBudget,
        "budget/max-rounds",
        "max_rounds is 4",
    ),
    (
        "budget/01-endless-tool-calls",
        Stateless,
        Defect::ExecuteOnLastRound,
        "budget/last-round-idle",
        "could never be sent back",
    ),
    (
        "terminal/05-incomplete-partial-text",
        Chained,
        Defect::IncompleteAsAnswer,
        "terminal/outcome",
        "expected failed",
    ),
    (
        "terminal/01-message-beside-calls",
        Stateless,
        Defect::MessageBesideCallsAsAnswer,
        "terminal/calls-beside-message",
        "taking the message as the answer",
    ),
    (
        "correlation/01-single-call",
        Chained,
        Defect::ContinueAfterAnswer,
        "terminal/stopped-at-answer",
        "the last scripted turn, whose message was the final answer",
    ),
    (
        "stream/03-delayed-call-executed-after-done",
        Chained,
        Defect::ExecuteOnDeltas,
        "stream/executed-after-done",
        "before its `response.output_item.done`",
    ),
    (
        "stream/02-cut-before-terminal",
        Stateless,
        Defect::BrokenStreamAsAnswer,
        "stream/broken-not-answer",
        "was cut after",
    ),
    (
        "transport/01-500-then-success",
        Chained,
        Defect::NoRetry,
        "transport/retried",
        "gave up after 1 attempt",
    ),
    (
        "transport/02-400-not-retried",
        Stateless,
        Defect::RetryClientErrors,
        "transport/no-retry-4xx",
        "which is not transient",
    ),
    (
        "transport/03-429-retry-after",
        Chained,
        Defect::IgnoreRetryAfter,
        "transport/retry-after-honoured",
        "asked to retry after",
    ),
    (
        "transport/06-persistent-500",
        Chained,
        Defect::RetryForever,
        "transport/retry-bounded",
        "was attempted",
    ),
    (
        "transport/07-retry-after-tools-ran",
        Stateless,
        Defect::ReexecuteOnRetry,
        "effects/at-most-once",
        "executed 2 times",
    ),
    (
        "background/01-polling",
        Chained,
        Defect::QueuedAsAnswer,
        "background/polled-to-terminal",
        "never saw a terminal status",
    ),
    (
        "program/01-one-pause",
        Chained,
        Defect::DropCaller,
        "program/caller-echoed",
        "expected the call's caller",
    ),
    (
        "program/04-output-without-final-message",
        Stateless,
        Defect::ProgramOutputAsEnd,
        "program/continued",
        "the controller stopped there",
    ),
    (
        "program/05-stateless-replay",
        Stateless,
        Defect::StripProgram,
        "program/replayed",
        "does not replay program",
    ),
    (
        "program/03-caller-not-allowed",
        Chained,
        Defect::NoValidation,
        "dispatch/caller-allowed",
        "allowed_callers excludes",
    ),
];

#[tokio::test]
async fn each_defect_fails_the_check_that_names_it() {
    for &(id, state, defect, check, needle) in CAUGHT {
        assert_fails(id, state, defect, check, needle).await;
    }
}

/// Reasoning left out of a stateless replay fails the oracle either way; the API rejects
/// it (E4) only while the calls keep their item ids.
#[tokio::test]
async fn reasoning_dropped_is_judged_whether_or_not_the_api_rejects_it() {
    for (defect, accepted, why) in [
        (
            Defect::DropReasoning,
            CheckVerdict::Fail,
            "the API rejects a call without its reasoning (E4)",
        ),
        (
            Defect::StripIdsAndDropReasoning,
            CheckVerdict::Pass,
            "the real API accepts this silently",
        ),
    ] {
        let report = assert_fails(
            "reasoning/01-encrypted-retention",
            Stateless,
            defect,
            "reasoning/replayed",
            "does not replay reasoning item",
        )
        .await;
        assert_eq!(
            verdict_of(&report, "wire/accepted"),
            Some(accepted),
            "{defect:?}: {why}"
        );
    }
}

#[tokio::test]
async fn state_history_resent_with_previous_response_id() {
    // A SHOULD of its own; the real API also rejects resent stored items (E6), so the
    // case fails on wire/accepted too.
    let report = assert_caught(
        "correlation/06-three-rounds",
        Chained,
        Defect::ResendHistory,
        "state/no-resend",
        CheckVerdict::NonStrict,
        "resends an item",
    )
    .await;
    let accepted = report
        .checks
        .iter()
        .find(|c| c.id == "wire/accepted")
        .unwrap();
    assert_eq!(
        accepted.verdict,
        CheckVerdict::Fail,
        "{}",
        describe(&report)
    );
    assert!(
        accepted
            .message
            .contains("(E6, HTTP 400): Duplicate item found with id"),
        "{}",
        accepted.message
    );
    assert_eq!(report.verdict, CaseVerdict::Fail);
}

/// The ids of the checks that did not pass.
fn failing(report: &CaseReport) -> Vec<&str> {
    report
        .checks
        .iter()
        .filter(|c| c.verdict != CheckVerdict::Pass)
        .map(|c| c.id.as_str())
        .collect()
}

#[tokio::test]
async fn dispatch_array_arguments_dispatched_are_one_finding() {
    let report = assert_fails(
        "dispatch/02-arguments-not-object",
        Chained,
        Defect::NoValidation,
        "dispatch/arguments-parsed",
        "not a JSON object",
    )
    .await;
    assert_eq!(
        failing(&report),
        ["dispatch/arguments-parsed"],
        "the backend's refusal of the dispatched call is a consequence, not a second finding:\n{}",
        describe(&report)
    );
}

#[tokio::test]
async fn terminal_asking_again_after_an_incomplete_response_is_one_finding() {
    let report = assert_fails(
        "terminal/05-incomplete-partial-text",
        Chained,
        Defect::AskAgainAfterUnfinished,
        "terminal/stopped-at-answer",
        "which was incomplete (max_output_tokens): an incomplete response ends the loop",
    )
    .await;
    assert_eq!(
        failing(&report),
        ["terminal/stopped-at-answer"],
        "the reason the controller gave answers the error past the script:\n{}",
        describe(&report)
    );
}

#[tokio::test]
async fn authz_approval_skipped() {
    let report = assert_fails(
        "authz/03-approval-granted",
        Chained,
        Defect::SkipApproval,
        "authz/approval-asked",
        "never asked the approver",
    )
    .await;
    assert_eq!(
        verdict_of(&report, "authz/approval-before-execution"),
        Some(CheckVerdict::Fail)
    );
}

#[tokio::test]
async fn terminal_wrong_answer_text_has_a_diff() {
    let report = assert_fails(
        "correlation/06-three-rounds",
        Chained,
        Defect::WrongAnswerText,
        "terminal/outcome",
        "expected the final message's text",
    )
    .await;
    let check = report
        .checks
        .iter()
        .find(|c| c.id == "terminal/outcome")
        .unwrap();
    assert!(check.diff.is_some());
}

#[tokio::test]
async fn stream_error_event_taken_as_answer() {
    for id in ["stream/05-error-event-nested", "stream/04-error-event-flat"] {
        assert_fails(
            id,
            Chained,
            Defect::BrokenStreamAsAnswer,
            "stream/broken-not-answer",
            "ended in an `error` event",
        )
        .await;
    }
}

#[tokio::test]
async fn conversation_not_carried() {
    assert_fails(
        "state/02-conversation-mode",
        StateMode::Conversation,
        Defect::ConversationDropped,
        "state/conversation",
        "carries no `conversation`",
    )
    .await;
}
