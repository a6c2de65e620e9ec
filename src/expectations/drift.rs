//! Replaying a cassette: the fake server serves the recorded responses, and what the
//! controller sends is compared with what the recording saw, after the same
//! normalization (ids renumbered in order of appearance, so a call_id matches by its place
//! in the chain; timestamps, platform and retry headers left out; JSON compared as
//! values) and the same redaction. A difference is `drift`, reported change by change,
//! with, for each request that matches nothing at its place, the recorded request that
//! came closest and why it did not match.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::redact::{self, Redactor};
use crate::scenario::Recorded;
use crate::transcript::drift::{Change, Comparison, ComparisonStatus, changes, text_diff};
use crate::transcript::normalize::{Normalized, Step, normalize, redact_steps, renumbered_alone};
use crate::transcript::{ModelExchange, Transcript};

/// The redactor a replay of `recorded` is seen through: the installed rules plus the
/// recording's own, so what the controller sends is redacted as the recording was.
pub fn redactor(recorded: &Recorded) -> Redactor {
    // The rules read back from a cassette that lint accepted; a bad rule adds nothing.
    let installed = redact::installed();
    installed
        .with(&recorded.redact_json, &recorded.redact_regex)
        .unwrap_or_else(|_| installed.clone())
}

/// A run's transcript normalized and redacted as its recording was.
pub(crate) fn comparable(recorded: &Recorded, transcript: &Transcript) -> Normalized {
    let mut actual = normalize(
        &recorded.transcript.case,
        recorded.transcript.state,
        transcript,
    );
    // What the controller sent is compared; what it reported is the oracle's to judge.
    actual.result = None;
    actual.unfinished = None;
    let redactor = redactor(recorded);
    let mut value = serde_json::to_value(&actual).unwrap_or(Value::Null);
    if let Some(steps) = value["steps"].as_array_mut() {
        redact_steps(steps, &redactor);
    }
    redactor.value(&mut value);
    serde_json::from_value(value).unwrap_or(actual)
}

/// Compares a run with its recording: in recorded order, or, for a cassette matched by
/// key, each request with the recorded request whose turn it was served.
pub fn compare(recorded: &Recorded, transcript: &Transcript, cassette: &Path) -> Comparison {
    let (expected, actual, mut found) = match &recorded.match_on {
        None => (
            recorded.transcript.clone(),
            comparable(recorded, transcript),
            Vec::new(),
        ),
        Some(_) => by_turn(recorded, transcript),
    };
    let expected = &expected;
    found.extend(changes(expected, &actual).iter().map(ToString::to_string));
    found.extend(near_misses(expected, &actual));
    let status = if found.is_empty() {
        ComparisonStatus::Matched
    } else {
        ComparisonStatus::Drifted
    };
    let render = |n: &Normalized| serde_json::to_string_pretty(n).unwrap_or_default();
    Comparison {
        path: cassette.to_owned(),
        diff: (status == ComparisonStatus::Drifted)
            .then(|| text_diff(&render(expected), &render(&actual))),
        status,
        changes: found,
    }
}

/// A replay of a cassette matched by key, paired with its recording turn by turn: the
/// replay's exchanges put in the recorded order of the turns they were served (an
/// attempt answered with a fault, a tool exchange or a poll goes with the turn it
/// belongs to), the recorded turns no request was served left out and named, and the
/// ids of every step numbered within the step, as keys are, so requests that came in
/// another order, or interleaved with another test's, compare equal.
fn by_turn(recorded: &Recorded, transcript: &Transcript) -> (Normalized, Normalized, Vec<String>) {
    let position: HashMap<usize, usize> = recorded
        .transcript
        .steps
        .iter()
        .enumerate()
        .filter_map(|(at, step)| match step {
            Step::Model(m) => m.answer.turn.map(|turn| (turn, at)),
            Step::Tool(_) => None,
        })
        .collect();
    let reordered = in_recorded_order(transcript, &position);
    let served: HashSet<usize> = transcript.model.iter().filter_map(|m| m.turn).collect();
    let mut expected = recorded.transcript.clone();
    let mut unsent = Vec::new();
    let mut number = 0;
    expected.steps.retain(|step| match step {
        Step::Model(m) => {
            number += 1;
            let kept = m.answer.turn.is_none_or(|turn| served.contains(&turn));
            if !kept {
                unsent.push(format!(
                    "recorded request {number} ({} {}) was not sent: no request was served its turn",
                    m.method, m.path
                ));
            }
            kept
        }
        Step::Tool(_) => true,
    });
    unsent.extend(wrong_continuations(recorded, transcript));
    let mut actual = comparable(recorded, &reordered);
    for steps in [&mut expected.steps, &mut actual.steps] {
        for step in steps.iter_mut() {
            if let Ok(value) = serde_json::to_value(&*step)
                && let Ok(alone) = serde_json::from_value(renumbered_alone(&value))
            {
                *step = alone;
            }
        }
    }
    (expected, actual, unsent)
}

/// The requests that continue another response than their recording did: ids numbered
/// within each request cannot tell, so the turn each one's `previous_response_id` names
/// is compared with the turn the recording's named.
fn wrong_continuations(recorded: &Recorded, transcript: &Transcript) -> Vec<String> {
    if recorded.continues.is_empty() {
        return Vec::new();
    }
    let turn_of: HashMap<&str, usize> = transcript
        .model
        .iter()
        .filter_map(|m| Some((m.served()?["id"].as_str()?, m.turn?)))
        .collect();
    let mut out = Vec::new();
    for m in transcript.model.iter().filter(|m| m.is_create()) {
        let (Some(turn), Some(id)) = (m.turn, m.body["previous_response_id"].as_str()) else {
            continue;
        };
        // A recorded request that continued no served response drifts in its body.
        let Some(was) = recorded.continues.get(turn).copied().flatten() else {
            continue;
        };
        let (was, now) = (Some(was), turn_of.get(id).copied());
        if was != now {
            let name = |t: Option<usize>| {
                t.map_or("a response the recording did not serve".to_owned(), |t| {
                    format!("the response of recorded turn {}", t + 1)
                })
            };
            out.push(format!(
                "the request served recorded turn {} continues {} instead of {}",
                turn + 1,
                name(now),
                name(was)
            ));
        }
    }
    out
}

/// `transcript` with its exchanges in the recorded order of the turns they belong to
/// (`position`: a turn's place in the recording), each group in arrival order; what
/// belongs to no turn comes last. Sequence numbers are given again in that order.
fn in_recorded_order(transcript: &Transcript, position: &HashMap<usize, usize>) -> Transcript {
    let model = &transcript.model;
    let place = |m: &ModelExchange| m.turn.and_then(|turn| position.get(&turn).copied());
    let model_place: Vec<usize> = model
        .iter()
        .enumerate()
        .map(|(index, m)| {
            if m.turn.is_some() {
                return place(m).unwrap_or(usize::MAX);
            }
            let mut later = model[index + 1..].iter().filter(|n| n.turn.is_some());
            let mut earlier = model[..index].iter().rev().filter(|n| n.turn.is_some());
            let group = if m.fault.is_some() {
                // An attempt answered with a fault: the retry that was served.
                later.find(|n| n.body == m.body)
            } else if !m.is_create() {
                // A poll or another call about a served response.
                earlier.find(|n| {
                    n.served()
                        .and_then(|r| r["id"].as_str())
                        .is_some_and(|id| m.path.contains(id))
                })
            } else if m.rejected_by.as_deref() == Some("script") {
                None // past the cassette's end
            } else {
                // A warm-up, or a create the API refused: before the next one served.
                later.next()
            };
            group.and_then(place).unwrap_or(usize::MAX)
        })
        .collect();
    let mut entries: Vec<(usize, u64, Option<usize>, Option<usize>)> = model_place
        .iter()
        .enumerate()
        .map(|(index, place)| (*place, model[index].seq, Some(index), None))
        .collect();
    for (index, tool) in transcript.tools.iter().enumerate() {
        // A tool result goes with the turn of the request that carried it on.
        let place = model
            .iter()
            .zip(&model_place)
            .find(|(m, _)| m.seq > tool.seq && m.turn.is_some())
            .map_or(usize::MAX, |(_, place)| *place);
        entries.push((place, tool.seq, None, Some(index)));
    }
    entries.sort_by_key(|(place, seq, _, _)| (*place, *seq));
    let mut out = transcript.clone();
    out.model.clear();
    out.tools.clear();
    for (seq, (_, _, model_index, tool_index)) in entries.into_iter().enumerate() {
        if let Some(index) = model_index {
            out.model.push(ModelExchange {
                seq: seq as u64,
                ..transcript.model[index].clone()
            });
        }
        if let Some(index) = tool_index {
            let mut tool = transcript.tools[index].clone();
            tool.seq = seq as u64;
            out.tools.push(tool);
        }
    }
    out
}

/// The model requests of a transcript, as (number, step).
fn requests(n: &Normalized) -> Vec<(usize, &Step)> {
    n.steps
        .iter()
        .filter(|s| matches!(s, Step::Model(_)))
        .enumerate()
        .map(|(i, s)| (i + 1, s))
        .collect()
}

/// A step without how it was answered, to match requests alone.
pub(crate) fn request_only(step: &Step) -> Normalized {
    let mut step = step.clone();
    if let Step::Model(m) = &mut step {
        m.answer = Default::default();
    }
    Normalized {
        steps: vec![step],
        ..Normalized::empty()
    }
}

/// For each request that differs from the recorded one at its place: the recorded
/// request that came closest (fewest changes), and what still differs from it.
fn near_misses(expected: &Normalized, actual: &Normalized) -> Vec<String> {
    let recorded = requests(expected);
    let mut out = Vec::new();
    for (number, step) in requests(actual) {
        let mine = request_only(step);
        let same_place = recorded
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, s)| changes(&request_only(s), &mine));
        if same_place.as_ref().is_some_and(Vec::is_empty) {
            continue;
        }
        let closest = recorded
            .iter()
            .map(|(n, s)| (*n, changes(&request_only(s), &mine)))
            .min_by_key(|(n, c)| (c.len(), n.abs_diff(number)));
        let Some((n, differences)) = closest else {
            out.push(format!(
                "request {number}: the recording has no model request at all"
            ));
            continue;
        };
        let why = |c: &[Change]| {
            c.iter()
                .map(|c| c.what.clone())
                .take(2)
                .collect::<Vec<_>>()
                .join("; ")
        };
        let beyond = number > recorded.len();
        out.push(if beyond {
            format!(
                "request {number} is not in the recording, which holds {} request(s); the closest recorded request is {n}{}",
                recorded.len(),
                if differences.is_empty() {
                    ", which it repeats".to_owned()
                } else {
                    format!(", which differs in {} way(s): {}", differences.len(), why(&differences))
                }
            )
        } else if differences.is_empty() {
            format!(
                "request {number} is not the recorded request {number}; it is what the recording sent as request {n}: the controller's requests came in another order"
            )
        } else {
            format!(
                "request {number} matches no recorded request; the closest is recorded request {n}, which differs in {} way(s): {}",
                differences.len(),
                why(&differences)
            )
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::scenario::StateMode;
    use crate::transcript::normalize::test_steps::{normalized, request};

    /// A recorded run that sent `bodies`, each answered alike.
    fn run(bodies: &[Value]) -> Normalized {
        let steps = bodies
            .iter()
            .map(|body| request(body.clone(), Default::default()))
            .collect();
        normalized("recorded/x", StateMode::PreviousResponseId, steps)
    }

    #[test]
    fn a_request_that_matches_nothing_names_the_closest_recorded_one() {
        let expected = run(&[
            json!({"input": "a", "model": "gpt-5"}),
            json!({"input": "b", "model": "gpt-5"}),
        ]);
        let actual = run(&[
            json!({"input": "a", "model": "gpt-5"}),
            json!({"input": "b", "model": "gpt-4o"}),
        ]);
        let misses = near_misses(&expected, &actual);
        assert_eq!(misses.len(), 1, "{misses:?}");
        assert!(
            misses[0].starts_with("request 2 matches no recorded request; the closest is recorded request 2, which differs in 1 way(s): `model` is \"gpt-4o\" instead of \"gpt-5\""),
            "{}",
            misses[0]
        );
    }

    #[test]
    fn requests_in_another_order_are_named_as_such() {
        let expected = run(&[json!({"input": "a"}), json!({"input": "b"})]);
        let actual = run(&[json!({"input": "b"}), json!({"input": "a"})]);
        let misses = near_misses(&expected, &actual);
        assert_eq!(
            misses[0],
            "request 1 is not the recorded request 1; it is what the recording sent as request 2: the controller's requests came in another order"
        );
    }
}
