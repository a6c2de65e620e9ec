//! The messages a newcomer meets first, under insta snapshots: each names its cause once
//! and says what to do instead. A change to them is reviewed, not accidental.

use serde_json::{Value, json};

use super::Judgement;
use super::test_support::*;
use crate::scenario::StateMode::PreviousResponseId;

/// The failing checks' messages, one per line, with run-to-run ids masked.
fn failures(judgement: &Judgement) -> String {
    let ids = regex::Regex::new(r"\b(resp|call|apr|fc|rs|msg)_[0-9A-Za-z]{16,}\b").unwrap();
    judgement
        .checks
        .iter()
        .filter(|c| c.verdict != super::CheckVerdict::Pass)
        .map(|c| format!("{}: {}", c.id, ids.replace_all(&c.message, "${1}_[id]")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Plays `case` to its last turn without streaming, executing every call correctly.
fn play_without_stream(case: &str) -> Run {
    let run = Run::case(case, PreviousResponseId);
    let mut body = run.first_body();
    body.as_object_mut().unwrap().remove("stream");
    run.play_from(body);
    run
}

#[test]
fn a_stream_not_requested_is_one_finding_at_its_cause() {
    let run = play_without_stream("stream/02-cut-before-terminal");
    insta::assert_snapshot!(failures(&run.judge_completed()));
}

#[test]
fn a_refusal_reported_as_an_answer_says_what_to_report() {
    let run = Run::played("terminal/09-refusal", PreviousResponseId);
    insta::assert_snapshot!(failures(&run.judge_completed()));
}

#[test]
fn a_reason_word_not_recognised_lists_the_words() {
    let run = Run::played("terminal/05-incomplete-partial-text", PreviousResponseId);
    insta::assert_snapshot!(failures(
        &run.judge(json!({"status": "failed", "reason": "truncated"}))
    ));
}

#[test]
fn a_call_run_without_its_approval_names_the_field_the_token_goes_in() {
    let run = Run::case("authz/03-approval-granted", PreviousResponseId);
    let first = run.first_body();
    let response = run.create(&first);
    // Asked, granted, but dispatched without the token.
    let outputs: Vec<Value> = calls(&response)
        .iter()
        .map(|call| {
            let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
            let ask = json!({"call_id": call["call_id"], "name": call["name"], "arguments": arguments, "principal": "user-1"});
            run.send("POST", "/tools/approvals", Some(&ask));
            let body = json!({"call_id": call["call_id"], "arguments": arguments, "principal": "user-1"});
            let (_, answer) = run.send("POST", "/tools/call/issue_refund", Some(&body));
            output(call, &json!({"error": answer["error"]["message"]}).to_string())
        })
        .collect();
    run.create(&run.next_body(&first, &response, &outputs));
    insta::assert_snapshot!(failures(&run.judge_completed()));
}
