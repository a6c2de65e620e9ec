//! `reasoning`: in stateless and replay mode, every prior output item replayed verbatim and
//! in order, reasoning items right before the item they produced; stateless, with their
//! `encrypted_content` (replay mode stores them, so their id is enough).
//! Judged from what the controller sent, not from what the server rejected: stripping
//! `fc_` ids and dropping reasoning passes the real API silently, yet loses the model's
//! reasoning.

use serde_json::Value;

use super::checks;
use super::compaction;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::json_compare::json_equal;
use crate::scenario::StateMode;
use crate::wire::replay::{is_replay_of, may_follow, message_text, same_content};
use crate::wire::request::{call_id, item_id, item_type};

/// The `reasoning` checks (stateless and replay mode only; the server carries reasoning
/// otherwise).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !matches!(f.state, StateMode::Stateless | StateMode::Replay) {
        return Vec::new();
    }
    let compactions = compaction::compactions(f);
    let replays: Vec<Replay<'_>> = (1..f.requests.len())
        .map(|position| {
            // What a compaction replaced is not replayed: the compaction item stands in
            // for it (judged by `compaction/*`).
            let from =
                compaction::latest_before(&compactions, position).map_or(0, |c| c.keeps_from);
            (position, from)
        })
        .map(|(position, from)| Replay {
            label: f.request_label(position),
            input: f.history_sent(position),
            prior: f
                .served
                .iter()
                .enumerate()
                .filter(|(_, s)| s.request < position && s.request >= from)
                .flat_map(|(index, s)| s.output.iter().map(move |item| (index, item)))
                .collect(),
        })
        .collect();
    let any_reasoning = replays
        .iter()
        .any(|r| r.prior.iter().any(|(_, item)| item["type"] == "reasoning"));
    let mut out = Vec::new();
    if any_reasoning {
        out.push(replayed(f, &replays));
        out.push(input_shape(&replays));
        out.extend(call_ids_kept(&replays));
    }
    if replays.iter().any(|r| !r.prior.is_empty()) {
        out.push(in_order(f, &replays));
        out.extend(unaltered(&replays));
        out.extend(kept_whole(&replays));
    }
    out
}

/// A request after the first: its input, and the output items served before it, each
/// with the index of the response that served it.
struct Replay<'f> {
    /// How messages name the request.
    label: String,
    input: Vec<Value>,
    prior: Vec<(usize, &'f Value)>,
}

fn replayed(f: &Facts, replays: &[Replay<'_>]) -> CheckResult {
    let mut problems = Vec::new();
    let mut count = 0;
    for replay in replays {
        let (input, prior) = (&replay.input, &replay.prior);
        for &(served_index, item) in prior {
            if item["type"] != "reasoning" {
                continue;
            }
            count += 1;
            let id = item["id"].as_str().unwrap_or_default();
            let label = replay.label.clone();
            let from = f.response_label(served_index);
            match input.iter().find(|i| item_type(i) == "reasoning" && item_id(i) == Some(id)) {
                None => problems.push(format!(
                    "{label} does not replay reasoning item {id} from {from}: in {} mode every reasoning item must be sent back",
                    f.state
                )),
                Some(sent) => match (sent.get("encrypted_content").and_then(Value::as_str), item["encrypted_content"].as_str()) {
                    // A stored reasoning item is found by its id.
                    (None, _) if f.state == StateMode::Replay => {}
                    // Nothing served to send back: why is `state/include-encrypted`'s.
                    (None, None) => {}
                    (None, Some(_)) => problems.push(format!(
                        "{label} replays reasoning item {id} without its encrypted_content: expected it verbatim"
                    )),
                    (Some(content), served) if Some(content) != served => problems.push(format!(
                        "{label} replays reasoning item {id} with an altered encrypted_content: expected it byte for byte as {from} sent it{}",
                        partial_from_stream(f, served_index, content, served)
                    )),
                    (Some(_), _) => {}
                },
            }
        }
    }
    checks::REASONING_REPLAYED.judge(
        problems,
        match f.state {
            StateMode::Replay => format!(
                "{count} reasoning replay(s), each by its stored id or with its encrypted_content intact"
            ),
            _ => format!("{count} reasoning replay(s), each with its encrypted_content intact"),
        },
    )
}

/// What to add when an altered `encrypted_content` is the partial one a stream's
/// `response.output_item.added` announces (a truncated copy of the whole one): the SDK
/// types say to take the item from `response.output_item.done`, where it is complete.
fn partial_from_stream(f: &Facts, served: usize, sent: &str, whole: Option<&str>) -> String {
    let streamed = f.served[served].exchange.stream.is_some();
    match whole {
        Some(whole) if streamed && !sent.is_empty() && sent.len() < whole.len() && whole.starts_with(sent) => {
            " (it is the truncated encrypted_content of the stream's `response.output_item.added` event, which may be incomplete: take the reasoning item from `response.output_item.done`, or from the terminal event's response)".to_owned()
        }
        _ => String::new(),
    }
}

fn input_shape(replays: &[Replay<'_>]) -> CheckResult {
    let mut problems = Vec::new();
    for replay in replays {
        let input = &replay.input;
        for (index, item) in input.iter().enumerate() {
            if item_type(item) == "reasoning" && item.get("status").is_some() {
                problems.push(format!(
                    "{}: input[{index}] is a reasoning item with `status` ({}), an output-only field the API rejects in input, even as null",
                    replay.label.clone(),
                    item["status"]
                ));
            }
        }
    }
    checks::REASONING_INPUT_SHAPE.judge(
        problems,
        "replayed reasoning items carry no output-only fields",
    )
}

/// Whether input item `input` is output item `output` sent back under another id: the
/// same type and `call_id` (a call or program), or the same message text.
fn same_item_other_id(input: &Value, output: &Value) -> bool {
    let Some(sent) = item_id(input) else {
        return false;
    };
    Some(sent) != item_id(output) && same_content(input, output)
}

/// Where a prior output item sits in a replayed input (see [`is_replay_of`]).
fn find(input: &[Value], item: &Value) -> Option<usize> {
    input.iter().position(|i| is_replay_of(i, item))
}

fn in_order(f: &Facts, replays: &[Replay<'_>]) -> CheckResult {
    let mut problems = Vec::new();
    let mut count = 0;
    for replay in replays {
        let (input, items) = (&replay.input, &replay.prior);
        let label = replay.label.clone();
        let mut last: Option<(usize, String)> = None;
        for (k, (served, item)) in items.iter().enumerate() {
            let id = item["id"].as_str().unwrap_or_default();
            let kind = item["type"].as_str().unwrap_or_default();
            let Some(at) = find(input, item) else {
                // Sent back under another id: the item is there, its identity is not.
                if let Some(other) = input.iter().find(|i| same_item_other_id(i, item)) {
                    let sent = item_id(other).unwrap_or_default();
                    let whose = if Some(sent) == call_id(item) {
                        " (its call_id)"
                    } else {
                        ""
                    };
                    problems.push(format!(
                        "{label} replays {kind} {id} from {} with a different item id, {sent}{whose}: a replayed item keeps the id the model gave it (or sends none)",
                        f.response_label(*served)
                    ));
                    continue;
                }
                // A missing reasoning item is reported by `reasoning/replayed`.
                if kind != "reasoning" {
                    let text = message_text(item)
                        .map(|t| format!(" ({:?})", crate::text::clip(&t, 60)))
                        .unwrap_or_default();
                    problems.push(format!(
                        "{label} does not replay {kind} {id}{text} from {}: every prior output item must be sent back, in order",
                        f.response_label(*served)
                    ));
                }
                continue;
            };
            count += 1;
            if let Some((previous_at, previous_id)) = &last
                && at < *previous_at
            {
                problems.push(format!(
                    "{label} replays {kind} {id} at input[{at}], before {previous_id} at input[{previous_at}]: expected the order the model produced them in"
                ));
            }
            if kind == "reasoning"
                && let Some((_, next)) = items.get(k + 1)
                && items[k + 1].0 == *served
                // A follower under another id is reported as that, not as a gap.
                && !input
                    .get(at + 1)
                    .is_some_and(|n| may_follow(n, next) || same_item_other_id(n, next))
            {
                problems.push(format!(
                    "{label}: reasoning item {id} at input[{at}] is not immediately followed by the item it produced ({} {})",
                    next["type"].as_str().unwrap_or_default(),
                    next["id"].as_str().unwrap_or_default()
                ));
            }
            last = Some((at, id.to_owned()));
        }
    }
    checks::REASONING_ITEMS_IN_ORDER.judge(
        problems,
        format!("{count} prior output item replay(s), all in the model's order"),
    )
}

/// `reasoning/call-ids-kept` (SHOULD): a function_call that the model produced right
/// after a reasoning item, replayed after that reasoning item, carries its `fc_` id. The
/// fake accepts the call without it (it pairs the two by position and `call_id`), but
/// public reports tie the real API's 400 "Item 'rs_...' of type 'reasoning' was provided
/// without its required following item." to this form (vercel/ai#7099,
/// langchain-ai/langchainjs#9082, continuedev/continue#8933), while other reports of the
/// same error have other causes: the evidence is mixed, so it is a SHOULD. Only calls
/// after a replayed reasoning item: an id-less message, or a call with no reasoning
/// before it, pairs with nothing; reasoning left out is `reasoning/replayed`'s, and a
/// call under another id `reasoning/items-in-order`'s.
fn call_ids_kept(replays: &[Replay<'_>]) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut judged = 0;
    for replay in replays {
        let (input, prior) = (&replay.input, &replay.prior);
        for pair in prior.windows(2) {
            let [(served, reasoning), (next_served, call)] = pair else {
                continue;
            };
            if served != next_served
                || reasoning["type"] != "reasoning"
                || call["type"] != "function_call"
                || find(input, reasoning).is_none()
            {
                continue;
            }
            let Some(sent) = input.iter().find(|i| is_replay_of(i, call)) else {
                continue;
            };
            judged += 1;
            if item_id(sent).is_none() {
                problems.push(format!(
                    "{} replays function_call {} ({}) after reasoning item {} without its id {}: expected the call's `fc_` id back, as the model gave it (a call replayed without it after its reasoning is publicly reported to meet the API's 400 \"Item '{}' of type 'reasoning' was provided without its required following item.\")",
                    replay.label.clone(),
                    call_id(call).unwrap_or_default(),
                    call["name"].as_str().unwrap_or_default(),
                    reasoning["id"].as_str().unwrap_or_default(),
                    item_id(call).unwrap_or_default(),
                    reasoning["id"].as_str().unwrap_or_default(),
                ));
            }
        }
    }
    (judged > 0).then(|| {
        checks::REASONING_CALL_IDS_KEPT.judge(
            problems,
            format!("{judged} call(s) replayed after their reasoning item, each with its fc_ id"),
        )
    })
}

/// What a replay changed in a call or message the model produced, if anything: a call's
/// name or arguments (compared as JSON values when both parse, so re-serialising them is
/// no change), a message's text.
fn alteration(sent: &Value, item: &Value) -> Option<String> {
    match item_type(item) {
        "function_call" => {
            let (name, sent_name) = (&item["name"], &sent["name"]);
            if name != sent_name {
                return Some(format!("the name {sent_name} instead of {name}"));
            }
            let arguments = item["arguments"].as_str().unwrap_or_default();
            let sent_arguments = sent["arguments"].as_str().unwrap_or_default();
            let same = match (
                serde_json::from_str::<Value>(arguments),
                serde_json::from_str::<Value>(sent_arguments),
            ) {
                (Ok(a), Ok(b)) => json_equal(&a, &b),
                _ => arguments == sent_arguments,
            };
            (!same).then(|| {
                format!(
                    "the arguments {:?} instead of {:?}",
                    crate::text::clip(sent_arguments, 60),
                    crate::text::clip(arguments, 60)
                )
            })
        }
        "message" => {
            let (text, sent_text) = (message_text(item), message_text(sent));
            (text != sent_text).then(|| {
                format!(
                    "the text {:?} instead of {:?}",
                    crate::text::clip(&sent_text.unwrap_or_default(), 60),
                    crate::text::clip(&text.unwrap_or_default(), 60)
                )
            })
        }
        _ => None,
    }
}

/// What a replay left out of a reasoning item's `reasoning_text` content, if anything.
fn reasoning_text_changed(sent: &Value, item: &Value) -> Option<String> {
    let texts = |item: &Value| -> Vec<Value> {
        item["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|part| part["type"] == "reasoning_text")
            .map(|part| part["text"].clone())
            .collect()
    };
    let (own, sent_texts) = (texts(item), texts(sent));
    (own != sent_texts).then(|| {
                if sent_texts.is_empty() {
                    format!(
                        "its reasoning_text content left out (the model produced {} part(s))",
                        own.len()
                    )
                } else {
                    format!(
                        "its reasoning_text content changed ({} part(s) sent for the {} the model produced)",
                        sent_texts.len(),
                        own.len()
                    )
                }
            })
}

/// Whether an output item carries what [`kept_whole`] judges: annotations on a text
/// part, or reasoning text.
fn has_extras(item: &Value) -> bool {
    item["content"].as_array().is_some_and(|parts| {
        parts.iter().any(|part| {
            part["type"] == "reasoning_text"
                || part["annotations"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
        })
    })
}

/// `reasoning/items-complete`: what the model put beside its text goes back with it, a
/// message's citations and a reasoning item's reasoning text. The API accepts a replay
/// without them, so leaving them out is a loss, not an error.
fn kept_whole(replays: &[Replay<'_>]) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut judged = 0;
    for replay in replays {
        for &(_, item) in &replay.prior {
            if !has_extras(item) {
                continue;
            }
            let Some(sent) = replay.input.iter().find(|i| is_replay_of(i, item)) else {
                continue;
            };
            judged += 1;
            let change = match item_type(item) {
                "message" => annotations_changed(sent, item),
                "reasoning" => reasoning_text_changed(sent, item),
                _ => None,
            };
            if let Some(change) = change {
                problems.push(format!(
                    "{} replays {} {} with {change}: the model's own history should go back whole",
                    replay.label,
                    item_type(item),
                    item_id(item).unwrap_or_default()
                ));
            }
        }
    }
    (judged > 0).then(|| {
        checks::REASONING_ITEMS_COMPLETE.judge(
            problems,
            format!("{judged} replayed item(s) with their annotations or reasoning text"),
        )
    })
}

/// A message replayed in parts form keeps each `output_text` part's annotations (its
/// citations); the text-only form (`content` as a string) carries none and is the
/// controller's choice.
fn annotations_changed(sent: &Value, item: &Value) -> Option<String> {
    let annotations = |item: &Value| -> Option<Vec<Value>> {
        let parts = item["content"].as_array()?;
        Some(
            parts
                .iter()
                .filter(|part| part["type"] == "output_text")
                .map(|part| {
                    part.get("annotations")
                        .cloned()
                        .unwrap_or(Value::Array(Vec::new()))
                })
                .collect(),
        )
    };
    let own = annotations(item)?;
    let replayed = annotations(sent)?;
    let count =
        |all: &[Value]| -> usize { all.iter().filter_map(Value::as_array).map(Vec::len).sum() };
    (own != replayed).then(|| {
        format!(
            "its output_text annotations changed ({} sent for the {} the model produced)",
            count(&replayed),
            count(&own)
        )
    })
}

/// The model's own calls and messages go back as it produced them: a replay that rewrites
/// a malformed call's arguments (to `"{}"`, or to a wrapper object) tells the model it
/// said something it did not.
fn unaltered(replays: &[Replay<'_>]) -> Option<CheckResult> {
    let mut problems = Vec::new();
    let mut judged = 0;
    for replay in replays {
        let (input, prior) = (&replay.input, &replay.prior);
        for &(_, item) in prior {
            if !matches!(item_type(item), "function_call" | "message") {
                continue;
            }
            let Some(sent) = input.iter().find(|i| is_replay_of(i, item)) else {
                continue;
            };
            judged += 1;
            if let Some(change) = alteration(sent, item) {
                problems.push(format!(
                    "{} replays {} {} with {change}: the model's own history must be sent back as the model produced it",
                    replay.label.clone(),
                    item_type(item),
                    item_id(item).unwrap_or_default()
                ));
            }
        }
    }
    (judged > 0).then(|| {
        checks::REASONING_ITEMS_UNALTERED.judge(
            problems,
            format!("{judged} replayed call(s) and message(s), each as the model produced it"),
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::oracle::{CaseVerdict, Judgement};
    use crate::scenario::StateMode::{self, Conversation, PreviousResponseId, Replay, Stateless};

    const RETENTION: &str = "reasoning/01-encrypted-retention";
    const TWO_PAIRS: &str = "reasoning/02-two-reasoning-items-one-turn";
    const MIXED: &str = "correlation/03-mixed-items";

    const ALL: [&str; 4] = [
        "reasoning/replayed",
        "reasoning/items-in-order",
        "reasoning/input-shape",
        "reasoning/items-unaltered",
    ];

    /// Plays `case` like a correct controller in `state`, except that `change` rewrites
    /// the input of each request after the first; stops at the first response without
    /// calls (or the server's rejection) and judges the run accordingly.
    fn replay_with(case: &str, state: StateMode, change: impl Fn(&mut Vec<Value>)) -> Judgement {
        let run = Run::case(case, state);
        let mut body = run.first_body();
        loop {
            let response = run.create(&body);
            if calls(&response).is_empty() {
                return if response["status"] == "completed" {
                    run.judge_completed()
                } else {
                    run.judge_failed("api_error")
                };
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
            let mut input = body["input"].as_array().cloned().unwrap_or_default();
            change(&mut input);
            body["input"] = json!(input);
        }
    }

    /// Applies `edit` to every replayed item of type `kind`.
    fn each(kind: &str, edit: impl Fn(&mut Value)) -> impl Fn(&mut Vec<Value>) {
        let kind = kind.to_owned();
        move |input| {
            input
                .iter_mut()
                .filter(|item| item["type"] == kind.as_str())
                .for_each(&edit)
        }
    }

    /// Removes `field` from every replayed item of type `kind`.
    fn without(kind: &str, field: &'static str) -> impl Fn(&mut Vec<Value>) {
        each(kind, move |item| {
            item.as_object_mut().unwrap().remove(field);
        })
    }

    /// Asserts the fake accepted the replay and every reasoning check passed.
    #[track_caller]
    fn assert_sound_replay(judgement: &Judgement) {
        assert_passes(judgement, "wire/accepted");
        assert_all_pass(judgement, &ALL);
    }

    /// Leaves every reasoning item out of the replay.
    fn drop_reasoning(input: &mut Vec<Value>) {
        input.retain(|item| item["type"] != "reasoning")
    }

    #[test]
    fn a_correct_stateless_replay_passes_every_reasoning_check() {
        for case in [RETENTION, TWO_PAIRS, MIXED] {
            let judgement = replay_with(case, Stateless, |_| {});
            assert_sound_replay(&judgement);
        }
    }

    #[test]
    fn reasoning_checks_are_not_judged_outside_stateless_mode() {
        for state in [PreviousResponseId, Conversation] {
            let judgement = replay_with(RETENTION, state, |_| {});
            assert_passes(&judgement, "wire/accepted");
            for id in ALL {
                assert_not_judged(&judgement, id);
            }
        }
    }

    #[test]
    fn items_in_order_names_a_call_replayed_under_another_id() {
        for (new_id, whose) in [(None, " (its call_id)"), (Some("fc_made_up"), "")] {
            let judgement = replay_with(
                RETENTION,
                Stateless,
                each("function_call", |call| {
                    call["id"] = new_id.map_or_else(|| call["call_id"].clone(), Value::from);
                }),
            );
            let message = &check(&judgement, "reasoning/items-in-order").message;
            assert_fails(
                &judgement,
                "reasoning/items-in-order",
                &format!("with a different item id, {}", new_id.unwrap_or("call_")),
            );
            assert!(
                message.contains(&format!(
                    "{whose}: a replayed item keeps the id the model gave it"
                )),
                "{message}"
            );
            assert!(message.contains("replays function_call fc_"), "{message}");
            assert!(!message.contains("not immediately followed"), "{message}");
            assert!(!message.contains("does not replay"), "{message}");
        }
    }

    #[test]
    fn a_single_request_gives_the_reasoning_checks_nothing_to_judge() {
        let run = Run::yaml(
            r#"
format: 1
id: demo/01-answer-after-reasoning
summary: One turn, reasoning then the answer.
level: must
task: {input: "Hi", tools: [get_stock]}
script:
  - output: [{reasoning: {summary: A greeting.}}, {message: "Hello."}]
expect: {outcome: completed}
"#,
            Stateless,
        );
        run.correct();
        let judgement = run.judge_completed();
        for id in ALL {
            assert_not_judged(&judgement, id);
        }
    }

    #[test]
    fn replay_mode_takes_stored_reasoning_by_id_and_still_needs_every_item() {
        for case in [RETENTION, TWO_PAIRS, MIXED] {
            let judgement = replay_with(case, Replay, without("reasoning", "encrypted_content"));
            assert_sound_replay(&judgement);
        }
        let judgement = replay_with(RETENTION, Replay, drop_reasoning);
        assert_fails_with(
            &judgement,
            "reasoning/replayed",
            &[
                "does not replay reasoning item rs_",
                "in replay mode every reasoning item must be sent back",
            ],
        );
    }

    #[test]
    fn a_replay_without_reasoning_judges_only_order_and_alteration() {
        let judgement = replay_with("dispatch/04-malformed-arguments", Stateless, |_| {});
        assert_none_judged(&judgement, &["reasoning/replayed", "reasoning/input-shape"]);
        assert_all_pass(
            &judgement,
            &["reasoning/items-in-order", "reasoning/items-unaltered"],
        );
    }

    const KEEPS_ID: &str = "reasoning/03-call-after-reasoning-keeps-id";

    #[test]
    fn call_ids_kept_passes_calls_replayed_with_their_ids_after_their_reasoning() {
        for case in [KEEPS_ID, RETENTION, TWO_PAIRS] {
            let judgement = replay_with(case, Stateless, |_| {});
            assert_passes(&judgement, "reasoning/call-ids-kept");
        }
    }

    #[test]
    fn call_ids_kept_reports_a_call_replayed_without_its_id_after_its_reasoning_as_non_strict() {
        let judgement = replay_with(KEEPS_ID, Stateless, without("function_call", "id"));
        assert_fails_with(
            &judgement,
            "reasoning/call-ids-kept",
            &[
                "request 2 replays function_call call_",
                "(get_weather) after reasoning item rs_",
                "without its required following item.",
            ],
        );
        // The fake accepts the form, and the rest of the replay is sound.
        assert_sound_replay(&judgement);
        assert_eq!(judgement.verdict, CaseVerdict::NonStrict);
    }

    #[test]
    fn call_ids_kept_leaves_reasoning_left_out_to_replayed_and_other_modes_alone() {
        let judgement = replay_with(KEEPS_ID, Stateless, |input| {
            input.retain(|item| item["type"] != "reasoning");
            for item in input.iter_mut() {
                item.as_object_mut().unwrap().remove("id");
            }
        });
        assert_fails(
            &judgement,
            "reasoning/replayed",
            "does not replay reasoning item",
        );
        assert_not_judged(&judgement, "reasoning/call-ids-kept");
        let judgement = replay_with(RETENTION, PreviousResponseId, |_| {});
        assert_not_judged(&judgement, "reasoning/call-ids-kept");
    }

    #[test]
    fn replayed_fails_dropped_reasoning_items() {
        let judgement = replay_with(RETENTION, Stateless, drop_reasoning);
        assert_fails(
            &judgement,
            "reasoning/replayed",
            "request 2 does not replay reasoning item rs_",
        );
        // A missing reasoning item is reported once, by reasoning/replayed.
        assert_passes(&judgement, "reasoning/items-in-order");
    }

    #[test]
    fn replayed_fails_reasoning_without_its_encrypted_content() {
        let judgement = replay_with(
            RETENTION,
            Stateless,
            without("reasoning", "encrypted_content"),
        );
        assert_fails(
            &judgement,
            "reasoning/replayed",
            "without its encrypted_content: expected it verbatim",
        );
    }

    #[test]
    fn replayed_fails_an_altered_encrypted_content() {
        // The partial content of the stream's `output_item.added`, kept instead of the
        // whole one.
        let judgement = replay_with(
            RETENTION,
            Stateless,
            each("reasoning", |item| {
                let content = item["encrypted_content"].as_str().unwrap().to_owned();
                item["encrypted_content"] = json!(&content[..content.len() / 2]);
            }),
        );
        assert_fails(
            &judgement,
            "reasoning/replayed",
            "with an altered encrypted_content: expected it byte for byte",
        );
        // Served as JSON, there was no `output_item.added` to take it from.
        let message = &check(&judgement, "reasoning/replayed").message;
        assert!(!message.contains("output_item.added"), "{message}");
    }

    #[test]
    fn replayed_names_the_added_event_when_a_streamed_replay_keeps_its_partial_content() {
        let run = Run::case(RETENTION, Stateless);
        let mut body = run.first_body();
        body["stream"] = json!(true);
        let (_, events) = run.send("POST", "/v1/responses", Some(&body));
        let events = events.as_array().unwrap();
        let response = events.last().unwrap()["response"].clone();
        let added = &events
            .iter()
            .find(|e| e["type"] == "response.output_item.added" && e["item"]["type"] == "reasoning")
            .unwrap()["item"];
        let outputs = run.execute(&response);
        let mut next = run.next_body(&body, &response, &outputs);
        each("reasoning", |item| {
            item["encrypted_content"] = added["encrypted_content"].clone()
        })(next["input"].as_array_mut().unwrap());
        let (status, _) = run.send("POST", "/v1/responses", Some(&next));
        assert_eq!(status, 400, "the fake refuses the partial content");
        assert_fails_with(
            &run.judge_failed("api_error"),
            "reasoning/replayed",
            &[
                "request 2 replays reasoning item rs_",
                "with an altered encrypted_content: expected it byte for byte as response 1",
                "the truncated encrypted_content of the stream's `response.output_item.added` event",
                "take the reasoning item from `response.output_item.done`",
            ],
        );
    }

    #[test]
    fn replayed_passes_reasoning_sent_back_as_served_without_encrypted_content() {
        let run = Run::case(RETENTION, Stateless);
        let first = run.first_body();
        run.play_from(first);
        // As a recording would hold reasoning served without its encrypted content: the
        // loop cannot send back what it never got (`state/include-encrypted` asks why).
        let judgement = run.judge_edited(json!({"status": "completed"}), |transcript| {
            for exchange in &mut transcript.model {
                let strip = |item: &mut Value| {
                    if item["type"] == "reasoning" {
                        item.as_object_mut().unwrap().remove("encrypted_content");
                    }
                };
                let mut response: Value = (*exchange.response).clone();
                response["output"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                    .for_each(strip);
                exchange.response = response.into();
                let mut body: Value = (*exchange.body).clone();
                body["input"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                    .for_each(strip);
                exchange.body = body.into();
            }
        });
        assert_passes(&judgement, "reasoning/replayed");
    }

    #[test]
    fn items_in_order_fails_reasoning_grouped_before_the_calls() {
        let judgement = replay_with(TWO_PAIRS, Stateless, |input| {
            let (reasoning, rest): (Vec<Value>, Vec<Value>) = input
                .drain(..)
                .partition(|item| item["type"] == "reasoning");
            let user = rest[0].clone();
            *input = [vec![user], reasoning, rest[1..].to_vec()].concat();
        });
        assert_fails_with(
            &judgement,
            "reasoning/items-in-order",
            &[
                "at input[1] is not immediately followed by the item it produced (function_call fc_",
                "at input[2], before fc_",
            ],
        );
        assert_passes(&judgement, "reasoning/replayed");
    }

    #[test]
    fn items_in_order_fails_a_dropped_preamble_message() {
        let judgement = replay_with(MIXED, Stateless, |input| {
            input.retain(|item| item["role"] != "assistant")
        });
        assert_fails_with(
            &judgement,
            "reasoning/items-in-order",
            &[
                "request 2 does not replay message msg_",
                "(\"I'll check the Oslo forecast and the umbrella stock.\")",
            ],
        );
    }

    #[test]
    fn items_in_order_accepts_an_assistant_message_replayed_without_its_id() {
        let forms: [fn(&str) -> Value; 2] = [
            |text| json!({"role": "assistant", "content": text}),
            |text| {
                json!({"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": text, "annotations": []}
                ]})
            },
        ];
        for form in forms {
            let judgement = replay_with(
                MIXED,
                Stateless,
                each("message", |item| {
                    let text = item["content"][0]["text"].as_str().unwrap().to_owned();
                    *item = form(&text);
                }),
            );
            assert_all_pass(
                &judgement,
                &[
                    "wire/accepted",
                    "reasoning/items-in-order",
                    "reasoning/items-unaltered",
                ],
            );
        }
    }

    #[test]
    fn input_shape_fails_a_replayed_reasoning_item_with_status() {
        for (status, shown) in [(json!("completed"), "\"completed\""), (Value::Null, "null")] {
            let judgement = replay_with(
                RETENTION,
                Stateless,
                each("reasoning", |item| item["status"] = status.clone()),
            );
            assert_fails(
                &judgement,
                "reasoning/input-shape",
                &format!(
                    "request 2: input[1] is a reasoning item with `status` ({shown}), an output-only field"
                ),
            );
            assert_passes(&judgement, "reasoning/replayed");
        }
    }

    #[test]
    fn items_unaltered_fails_a_call_replayed_with_empty_arguments() {
        let judgement = replay_with(
            "dispatch/04-malformed-arguments",
            Stateless,
            each("function_call", |item| item["arguments"] = json!("{}")),
        );
        assert_fails_with(
            &judgement,
            "reasoning/items-unaltered",
            &[
                r#"request 2 replays function_call fc_"#,
                r#"with the arguments "{}" instead of "{\"sku\": \"A7\"""#,
            ],
        );
    }

    #[test]
    fn items_unaltered_fails_a_message_replayed_with_clipped_text() {
        let judgement = replay_with(
            MIXED,
            Stateless,
            each("message", |item| {
                let text = item["content"][0]["text"].as_str().unwrap().to_owned();
                item["content"][0]["text"] = json!(text.chars().take(20).collect::<String>());
            }),
        );
        assert_fails_with(
            &judgement,
            "reasoning/items-unaltered",
            &[
                r#"replays message msg_"#,
                r#"with the text "I'll check the Oslo " instead of "I'll check the Oslo forecast"#,
            ],
        );
    }

    #[test]
    fn items_complete_passes_annotations_and_reasoning_text_replayed_as_given() {
        for case in ["output/01-annotations", "output/02-reasoning-text"] {
            let judgement = replay_with(case, Stateless, |_| {});
            assert_passes(&judgement, "reasoning/items-complete");
        }
    }

    #[test]
    fn items_complete_accepts_a_cited_message_replayed_as_text_alone() {
        let judgement = replay_with(
            "output/01-annotations",
            Stateless,
            each("message", |item| {
                let text = item["content"][0]["text"].clone();
                item["content"] = text;
            }),
        );
        assert_passes(&judgement, "reasoning/items-complete");
    }

    #[test]
    fn items_complete_fails_a_message_replayed_without_its_annotations() {
        let judgement = replay_with(
            "output/01-annotations",
            Stateless,
            each("message", |item| {
                item["content"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("annotations");
            }),
        );
        assert_fails_with(
            &judgement,
            "reasoning/items-complete",
            &[
                "replays message msg_",
                "with its output_text annotations changed (0 sent for the 1 the model produced)",
            ],
        );
    }

    #[test]
    fn items_complete_fails_a_reasoning_item_replayed_without_its_text() {
        let judgement = replay_with(
            "output/02-reasoning-text",
            Stateless,
            each("reasoning", |item| {
                item.as_object_mut().unwrap().remove("content");
            }),
        );
        assert_fails_with(
            &judgement,
            "reasoning/items-complete",
            &[
                "replays reasoning rs_",
                "with its reasoning_text content left out (the model produced 1 part(s))",
            ],
        );
    }

    #[test]
    fn items_unaltered_accepts_arguments_re_serialised_as_equal_json() {
        let judgement = replay_with(
            TWO_PAIRS,
            Stateless,
            each("function_call", |item| {
                let parsed: Value =
                    serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
                item["arguments"] = json!(serde_json::to_string_pretty(&parsed).unwrap());
            }),
        );
        assert_passes(&judgement, "reasoning/items-unaltered");
    }
}
