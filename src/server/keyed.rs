//! Turn pick by key, for a cassette that records its `match_on`: a request is served the
//! first unused recorded turn whose recorded request has its key; when none has, the first
//! unused turn in recorded order (so a changed request is still answered, and its drift
//! reported). Order and parallel clients stop mattering for requests that match.

use std::collections::HashMap;

use serde_json::Value;

use crate::redact::{self, Redactor};
use crate::scenario::{Recorded, Scenario};
use crate::transcript::normalize::Step;
use crate::transcript::request_key::MatchOn;

/// The keys of a cassette's turns, and how to key a live request as they were.
pub(crate) struct TurnKeys {
    match_on: MatchOn,
    /// The recording's rules, to see a live request as its recording was seen.
    redactor: Redactor,
    /// By turn: the key of the request it answered (none for a turn of faults only).
    keys: Vec<Option<String>>,
    /// The id of each recorded response, and its turn: a replay gets them verbatim.
    responses: HashMap<String, usize>,
}

impl TurnKeys {
    /// The keys of `scenario`'s turns, when it is a recording that names its keys.
    pub fn of(scenario: &Scenario) -> Option<Self> {
        let recorded = scenario.recorded.as_ref()?;
        let match_on = recorded.match_on.clone()?;
        let turns = scenario.script.len();
        let mut keys = vec![None; turns];
        for step in &recorded.transcript.steps {
            if let Step::Model(m) = step
                && let Some(turn) = m.answer.turn.filter(|t| *t < turns)
            {
                let continues = recorded.continues.get(turn).copied().flatten();
                keys[turn] = Some(match_on.recorded_key(&m.method, &m.path, &m.body, continues));
            }
        }
        let responses = scenario
            .script
            .iter()
            .enumerate()
            .filter_map(|(turn, t)| {
                let id = t.recorded.as_ref()?.response["id"].as_str()?;
                Some((id.to_owned(), turn))
            })
            .collect();
        Some(Self {
            redactor: redactor(recorded),
            match_on,
            keys,
            responses,
        })
    }

    /// The number of turns.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key of turn `turn`'s recorded request.
    pub fn key(&self, turn: usize) -> Option<&str> {
        self.keys.get(turn)?.as_deref()
    }

    /// The key of a live create at `path` with body `raw`.
    pub fn live(&self, path: &str, raw: &[u8]) -> String {
        let body: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
        let continues = body["previous_response_id"]
            .as_str()
            .and_then(|id| self.responses.get(id).copied());
        self.match_on
            .live_key("POST", path, &body, &self.redactor, continues)
    }
}

/// The keys of a cassette's turns and which of them were served.
pub(super) struct KeyedTurns {
    keys: TurnKeys,
    used: Vec<bool>,
    /// By turn: attempts already made at it (its faults are answered per attempt).
    attempts: Vec<usize>,
}

impl KeyedTurns {
    /// The keyed turns of `scenario`, when it is a recording that names its keys.
    pub fn of(scenario: &Scenario) -> Option<Self> {
        let keys = TurnKeys::of(scenario)?;
        let turns = keys.len();
        Some(Self {
            keys,
            used: vec![false; turns],
            attempts: vec![0; turns],
        })
    }

    /// The turn a create at `path` with body `raw` is at: the first unused one with its
    /// key, else the first unused one, else past the end.
    pub fn pick(&self, path: &str, raw: &[u8]) -> usize {
        let key = self.keys.live(path, raw);
        let unused = || (0..self.used.len()).filter(|t| !self.used[*t]);
        unused()
            .find(|t| self.keys.key(*t) == Some(key.as_str()))
            .or_else(|| unused().next())
            .unwrap_or(self.used.len())
    }

    /// Counts an attempt at `turn` and gives the attempts made before it.
    pub fn attempt(&mut self, turn: usize) -> usize {
        match self.attempts.get_mut(turn) {
            Some(count) => {
                *count += 1;
                *count - 1
            }
            None => 0,
        }
    }

    /// Marks `turn` served.
    pub fn served(&mut self, turn: usize) {
        if let Some(used) = self.used.get_mut(turn) {
            *used = true;
        }
    }
}

/// The installed redactor with the recording's own rules (a rule that lint accepted;
/// a bad one adds nothing).
fn redactor(recorded: &Recorded) -> Redactor {
    let installed = redact::installed();
    installed
        .with(&recorded.redact_json, &recorded.redact_regex)
        .unwrap_or_else(|_| installed.clone())
}
