//! Replaying a cassette: the fake server serves the recorded responses, and what the
//! controller sends is compared with what the recording saw, after the same
//! normalization (ids renumbered in order of appearance, so a call_id matches by its place
//! in the chain; timestamps, platform and retry headers left out; JSON compared as
//! values) and the same redaction. A difference is `drift`, reported change by change,
//! with, for each request that matches nothing at its place, the recorded request that
//! came closest and why it did not match.

use std::path::Path;

use serde_json::Value;

use crate::redact::{self, Redactor};
use crate::scenario::Recorded;
use crate::transcript::Transcript;
use crate::transcript::drift::{Change, Comparison, ComparisonStatus, changes, text_diff};
use crate::transcript::normalize::{Normalized, Step, normalize, redact_steps, with_connections};

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
    let mut actual = with_connections(
        normalize(
            &recorded.transcript.case,
            recorded.transcript.state,
            transcript,
        ),
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

/// Compares a run with its recording.
pub fn compare(recorded: &Recorded, transcript: &Transcript, cassette: &Path) -> Comparison {
    let actual = comparable(recorded, transcript);
    let expected = &recorded.transcript;
    let mut found: Vec<String> = changes(expected, &actual)
        .iter()
        .map(ToString::to_string)
        .collect();
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
