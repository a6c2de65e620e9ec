//! `compaction`: a loop that compacts its context carries on from the compaction item.
//! Standalone (`POST /v1/responses/compact`, task `compact_after_rounds`): once that many
//! responses were answered the loop compacts, and in stateless and replay mode every later
//! request carries the compacted output, its compaction item byte for byte, and nothing
//! it replaced. Server-side (task `context_management`, a response carrying a
//! `compaction` item): every request sends the task's `context_management`, and a
//! stateless or replay loop appends the item like any output item; dropping what came
//! before it is the API guide's latency tip, not a duty, so either way passes.
//! Judged from what the controller sent: the fake accepts a replaced item sent again
//! (the API's evidence is mixed), so only these checks see it.

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::scenario::StateMode;
use crate::wire::call_kind;
use crate::wire::replay::is_replay_of;
use crate::wire::request::{call_id, item_id, item_type};

/// A compaction the server answered: a standalone one, or a compaction item in a
/// response (server-side).
pub struct Compaction {
    /// Its number among the run's compactions, from 1, for messages.
    pub number: usize,
    /// `POST /v1/responses/compact`, rather than an item in a response.
    pub standalone: bool,
    /// The position of the first request that carries on from it.
    pub before: usize,
    /// The position of the first request whose response's output must still be
    /// replayed after it: what came before was replaced (a standalone compaction
    /// replaced every response before it; a server-side one leaves its own response's
    /// other items to replay).
    pub keeps_from: usize,
    /// The items it was given.
    pub input: Vec<Value>,
    /// Its output: the user messages kept and the compaction item.
    pub output: Vec<Value>,
}

impl Compaction {
    /// The `compaction` item it issued.
    pub fn item(&self) -> Option<&Value> {
        self.output
            .iter()
            .find(|item| item_type(item) == "compaction")
    }

    /// The items it replaced: what it was given, but the user's messages.
    fn replaced(&self) -> impl Iterator<Item = &Value> {
        self.input.iter().filter(|item| !is_user_message(item))
    }

    /// Whether `sent` is an item this compaction replaced, sent again.
    fn replaced_item(&self, sent: &Value) -> Option<&Value> {
        self.replaced().find(|replaced| {
            is_replay_of(sent, replaced)
                || (call_kind::of_answer(item_type(sent)).is_some()
                    && item_type(sent) == item_type(replaced)
                    && call_id(sent).is_some()
                    && call_id(sent) == call_id(replaced))
        })
    }

    fn label(&self) -> String {
        match self.item().and_then(item_id) {
            Some(id) => format!("compaction {} ({id})", self.number),
            None => format!("compaction {}", self.number),
        }
    }
}

fn is_user_message(item: &Value) -> bool {
    item_type(item) == "message" && item["role"] == "user"
}

/// The run's compactions, standalone and server-side, in the order requests met them.
pub fn compactions(f: &Facts) -> Vec<Compaction> {
    let mut all = standalone(f);
    for served in &f.served {
        let Some(item) = served
            .output
            .iter()
            .find(|item| item_type(item) == "compaction")
        else {
            continue;
        };
        all.push(Compaction {
            number: 0,
            standalone: false,
            before: served.request + 1,
            keeps_from: served.request,
            input: f.history_sent(served.request),
            output: vec![item.clone()],
        });
    }
    all.sort_by_key(|c| c.before);
    for (index, compaction) in all.iter_mut().enumerate() {
        compaction.number = index + 1;
    }
    all
}

/// The run's answered `POST /v1/responses/compact` exchanges.
fn standalone(f: &Facts) -> Vec<Compaction> {
    f.exchanges
        .iter()
        .filter(|exchange| {
            exchange.method == "POST"
                && exchange.status == 200
                && exchange
                    .path
                    .split('?')
                    .next()
                    .is_some_and(|path| path.ends_with("/responses/compact"))
        })
        .enumerate()
        .map(|(index, exchange)| {
            let before = f.requests.iter().filter(|r| r.seq < exchange.seq).count();
            (index, exchange, before)
        })
        .map(|(index, exchange, before)| Compaction {
            number: index + 1,
            standalone: true,
            before,
            keeps_from: before,
            input: Facts::input_of(exchange),
            output: exchange.response["output"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        })
        .collect()
}

/// The latest compaction that request `position` carries on from.
pub fn latest_before(compactions: &[Compaction], position: usize) -> Option<&Compaction> {
    compactions.iter().rev().find(|c| c.before <= position)
}

/// The `compaction` checks: when the task asks for compaction, and in stateless and
/// replay mode when the run compacted.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let mut out = Vec::new();
    if let Some(management) = &f.scenario.task.context_management {
        out.push(management_sent(f, management));
    }
    if !matches!(f.state, StateMode::Stateless | StateMode::Replay) {
        return out;
    }
    let compactions = compactions(f);
    if let Some(rounds) = f.scenario.task.compact_after_rounds {
        out.push(compacted(f, &compactions, rounds as usize));
    }
    if compactions.is_empty() {
        return out;
    }
    out.push(replayed(f, &compactions));
    if compactions.iter().any(|c| c.standalone) {
        out.push(nothing_resent(f, &compactions));
    }
    out
}

/// Server-side compaction: every request sends the task's `context_management`.
fn management_sent(f: &Facts, management: &Value) -> CheckResult {
    let problems = f
        .requests
        .iter()
        .enumerate()
        .filter_map(|(position, request)| {
            let sent = request.body.get("context_management");
            (!sent.is_some_and(|sent| crate::json_compare::json_equal(sent, management))).then(
                || {
                    format!(
                        "{} sends context_management {}: expected the task's {management} with every request",
                        f.request_label(position),
                        sent.map_or("(none)".to_owned(), Value::to_string)
                    )
                },
            )
        })
        .collect();
    checks::COMPACTION_COMPACTED.judge(
        problems,
        "the task's context_management sent with every request",
    )
}

/// Compacted after the task's round, before the next request, and that request carries
/// on from the compacted output.
fn compacted(f: &Facts, compactions: &[Compaction], rounds: usize) -> CheckResult {
    let mut problems = Vec::new();
    // Judged only when the loop went past that round.
    if f.requests.len() > rounds {
        let label = f.request_label(rounds);
        match compactions
            .iter()
            .find(|c| c.standalone && c.before == rounds)
        {
            None => problems.push(format!(
                "{label} follows the {rounds} answered response(s) compact_after_rounds asks to compact after, and no POST /v1/responses/compact came before it: expected the context compacted first"
            )),
            Some(compaction) => {
                let sent = f.history_sent(rounds);
                let carried = compaction.output.len() <= sent.len()
                    && compaction
                        .output
                        .iter()
                        .zip(&sent)
                        .all(|(kept, sent)| same_item(sent, kept));
                if !carried {
                    problems.push(format!(
                        "{label} does not start with the output of {}: expected its {} item(s) (the user's messages, then the compaction item) at the head of the input",
                        compaction.label(),
                        compaction.output.len()
                    ));
                }
            }
        }
    }
    checks::COMPACTION_COMPACTED.judge(
        problems,
        format!("compacted after {rounds} round(s) and carried on from the compacted output"),
    )
}

/// An item sent as the compacted output gave it: a message by its text and role, any
/// other item by value (null fields aside).
fn same_item(sent: &Value, kept: &Value) -> bool {
    if item_type(kept) == "message" {
        return item_type(sent) == "message"
            && sent["role"] == kept["role"]
            && crate::wire::replay::message_text(sent) == crate::wire::replay::message_text(kept);
    }
    without_nulls(sent) == without_nulls(kept)
}

fn without_nulls(item: &Value) -> Value {
    match item {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Every request after a compaction sends its item back as issued.
fn replayed(f: &Facts, compactions: &[Compaction]) -> CheckResult {
    let mut problems = Vec::new();
    let mut count = 0;
    for position in 0..f.requests.len() {
        let Some(compaction) = latest_before(compactions, position) else {
            continue;
        };
        let Some(item) = compaction.item() else {
            continue;
        };
        count += 1;
        let label = f.request_label(position);
        let id = item_id(item).unwrap_or_default();
        let sent = f.history_sent(position);
        let found = sent
            .iter()
            .filter(|sent| item_type(sent) == "compaction")
            .collect::<Vec<_>>();
        let same = |sent: &&Value| {
            item_id(sent) == Some(id) && sent["encrypted_content"] == item["encrypted_content"]
        };
        if found.iter().any(same) {
            continue;
        }
        problems.push(match found.first() {
            None => format!(
                "{label} does not send back compaction item {id} from compaction {}: every request after a compaction must carry it",
                compaction.number
            ),
            Some(other) if item_id(other) != Some(id) => format!(
                "{label} sends a compaction item with id {} in place of {id} from compaction {}: expected it byte for byte",
                item_id(other).unwrap_or("(none)"),
                compaction.number
            ),
            Some(_) => format!(
                "{label} sends compaction item {id} from compaction {} with an altered encrypted_content: expected it byte for byte",
                compaction.number
            ),
        });
    }
    checks::COMPACTION_REPLAYED.judge(
        problems,
        format!("{count} request(s) after a compaction, each with its compaction item intact"),
    )
}

/// No request after a standalone compaction sends an item it replaced.
fn nothing_resent(f: &Facts, compactions: &[Compaction]) -> CheckResult {
    let mut problems = Vec::new();
    for position in 0..f.requests.len() {
        let Some(compaction) = latest_before(compactions, position).filter(|c| c.standalone) else {
            continue;
        };
        let label = f.request_label(position);
        for sent in f.history_sent(position) {
            if let Some(replaced) = compaction.replaced_item(&sent) {
                let name = item_id(replaced)
                    .or_else(|| call_id(replaced))
                    .unwrap_or("(no id)");
                problems.push(format!(
                    "{label} sends again {} {name}, which {} replaced: after a compaction only its output and the items after it go back",
                    item_type(replaced),
                    compaction.label()
                ));
            }
        }
    }
    checks::COMPACTION_NOTHING_RESENT
        .judge(problems, "no item a compaction replaced was sent again")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::{Run, assert_fails, assert_not_judged, assert_passes, calls};
    use crate::oracle::{CaseVerdict, Judgement};
    use crate::scenario::StateMode::{self, PreviousResponseId, Stateless};

    const STANDALONE: &str = "compaction/01-compact-stateless";
    const SERVER_SIDE: &str = "compaction/02-server-side";

    /// Plays `case` as a correct loop would, `edit` changing each request's body before
    /// it is sent (the request's position, from 0); in the standalone case it compacts
    /// after the task's round, its input then `compacted` of the context and the
    /// compacted output.
    fn play(
        case: &str,
        state: StateMode,
        compacted: impl Fn(&[Value], &[Value]) -> Vec<Value>,
        edit: impl Fn(usize, &mut Value),
    ) -> Judgement {
        let task = crate::scenario::catalogue_scenario(case).task;
        let (management, after) = (task.context_management, task.compact_after_rounds);
        let run = Run::case(case, state);
        let mut body = run.first_body();
        for round in 1u32.. {
            if let Some(management) = &management {
                body["context_management"] = management.clone();
            }
            edit(round as usize - 1, &mut body);
            let response = run.create(&body);
            if calls(&response).is_empty() {
                return run.judge_completed();
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
            if after == Some(round) {
                let context = body["input"].as_array().cloned().unwrap_or_default();
                let compact = json!({"model": body["model"], "input": context});
                let (status, answer) = run.send("POST", "/v1/responses/compact", Some(&compact));
                assert_eq!(status, 200, "{answer}");
                let output = answer["output"].as_array().cloned().unwrap_or_default();
                body["input"] = json!(compacted(&context, &output));
            }
        }
        unreachable!("the loop returns")
    }

    fn as_compacted(_: &[Value], output: &[Value]) -> Vec<Value> {
        output.to_vec()
    }

    fn unchanged(_: usize, _: &mut Value) {}

    #[test]
    fn a_loop_that_compacts_and_carries_on_passes_every_check() {
        let judgement = play(STANDALONE, Stateless, as_compacted, unchanged);
        for id in [
            "compaction/compacted",
            "compaction/replayed",
            "compaction/nothing-resent",
            "reasoning/items-in-order",
            "reasoning/replayed",
            "call-id/answered",
            "wire/accepted",
        ] {
            assert_passes(&judgement, id);
        }
        assert_eq!(judgement.verdict, CaseVerdict::Pass, "{judgement:?}");
    }

    #[test]
    fn compacted_fails_a_loop_that_compacts_and_sends_the_old_context_on() {
        let judgement = play(
            STANDALONE,
            Stateless,
            |context, _| context.to_vec(),
            unchanged,
        );
        assert_fails(
            &judgement,
            "compaction/compacted",
            "request 3 does not start with the output of compaction 1 (cmp_",
        );
        assert_fails(
            &judgement,
            "compaction/replayed",
            "request 3 does not send back compaction item cmp_",
        );
    }

    #[test]
    fn replayed_fails_a_request_that_drops_the_compaction_item() {
        let judgement = play(STANDALONE, Stateless, as_compacted, |position, body| {
            if position == 3
                && let Some(input) = body["input"].as_array_mut()
            {
                input.retain(|item| item["type"] != "compaction");
            }
        });
        assert_fails(
            &judgement,
            "compaction/replayed",
            "request 4 does not send back compaction item cmp_",
        );
    }

    #[test]
    fn nothing_resent_fails_the_replaced_items_sent_again_and_names_them() {
        let judgement = play(
            STANDALONE,
            Stateless,
            |context, output| {
                let mut input = output.to_vec();
                input.extend(context.iter().filter(|i| i["role"] != "user").cloned());
                input
            },
            unchanged,
        );
        assert_fails(
            &judgement,
            "compaction/nothing-resent",
            "request 3 sends again reasoning rs_",
        );
        assert_fails(
            &judgement,
            "compaction/nothing-resent",
            "which compaction 1 (cmp_",
        );
    }

    #[test]
    fn server_side_compaction_passes_chained_and_stateless_and_judges_the_item_only_stateless() {
        let chained = play(SERVER_SIDE, PreviousResponseId, as_compacted, unchanged);
        assert_passes(&chained, "compaction/compacted");
        assert_not_judged(&chained, "compaction/replayed");
        let stateless = play(SERVER_SIDE, Stateless, as_compacted, unchanged);
        assert_passes(&stateless, "compaction/compacted");
        assert_passes(&stateless, "compaction/replayed");
        assert_not_judged(&stateless, "compaction/nothing-resent");
        assert_eq!(stateless.verdict, CaseVerdict::Pass, "{stateless:?}");
    }

    #[test]
    fn server_side_compaction_lets_a_stateless_loop_drop_what_came_before_the_item() {
        let judgement = play(SERVER_SIDE, Stateless, as_compacted, |position, body| {
            if position == 3
                && let Some(input) = body["input"].as_array_mut()
                && let Some(at) = input.iter().position(|i| i["type"] == "compaction")
            {
                input.drain(..at);
            }
        });
        assert_passes(&judgement, "compaction/replayed");
        assert_passes(&judgement, "reasoning/items-in-order");
        assert_passes(&judgement, "state/input-replayed");
        assert_eq!(judgement.verdict, CaseVerdict::Pass, "{judgement:?}");
    }

    #[test]
    fn compacted_fails_a_request_without_the_tasks_context_management() {
        let judgement = play(
            SERVER_SIDE,
            PreviousResponseId,
            as_compacted,
            |position, body| {
                if position == 1
                    && let Some(body) = body.as_object_mut()
                {
                    body.remove("context_management");
                }
            },
        );
        assert_fails(
            &judgement,
            "compaction/compacted",
            "request 2 sends context_management (none)",
        );
    }
}
