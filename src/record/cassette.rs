//! A recording becomes a cassette, and a cassette is an ordinary scenario (format 2): its
//! script is the recorded responses (items, status, stream events with their waits,
//! faults such as a 429 the upstream really sent), its `recorded` section the
//! normalized requests the recording saw. `lint`, `run` and snapshots work on it; a
//! replay is compared with `recorded`. A recording of the WebSocket mode is a case of the
//! `websocket` delivery: it replays over the fake's socket, each request on the
//! connection it came on.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::proxy::Extra;
use crate::redact::Redactor;
use crate::scenario::{
    Delivery, Expectation, FORMAT_VERSION, Fault, Level, Outcome, Recorded, RecordedEvent,
    RecordedTurn, Scenario, ScenarioError, StateMode, TaskSpec, ToolBehaviour, ToolRef, Turn,
};
use crate::transcript::normalize::{normalize, redact_steps};
use crate::transcript::request_key::MatchOn;
use crate::transcript::{FaultRecord, ModelExchange, SocketEventKind, Transcript};

/// The part of a scenario file `--task` reads: the task and the fixture tools'
/// behaviour (a whole scenario file works too; its other sections are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct TaskFile {
    /// The task handed to the controller.
    pub task: TaskSpec,
    /// Scripted behaviour of the fixture tools.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolBehaviour>,
}

/// Why a cassette cannot be made: its task file is unreadable, or nothing was recorded.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The `--task` file cannot be read.
    #[error("failed to read {}: {source}", .path.display())]
    ReadTask {
        /// The file.
        path: std::path::PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The `--task` file has no task, or one that does not read: where, and why.
    #[error("{0}")]
    NotATask(ScenarioError),
    /// The command made no model request through the proxy.
    #[error(
        "nothing to save: the command made no model request through the proxy (hint: does it read OPENAI_BASE_URL?)"
    )]
    NothingRecorded,
    /// The cassette does not turn into JSON.
    #[error("{0}")]
    Json(serde_json::Error),
    /// The cassette, once redacted, is no scenario.
    #[error("the redacted cassette does not read back: {0}")]
    ReadBack(serde_json::Error),
}

impl TaskFile {
    /// Reads a task file (YAML, or JSON for `.json`).
    pub fn load(path: &Path) -> Result<Self, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::ReadTask {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text).map_err(CassetteError::NotATask)
    }

    /// Parses the text of task file `path`; an error says where, as `lint` does.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        crate::scenario::deserialize(path, text)
    }

    /// True when `text` reads as a task file rather than a scenario: a document with a
    /// `task` and none of the sections only a scenario has (`format`, `id`, `script`).
    /// Text that does not read at all is no task file.
    pub fn is_task_only(path: &Path, text: &str) -> bool {
        let Ok(Value::Object(document)) = crate::scenario::deserialize::<Value>(path, text) else {
            return false;
        };
        document.contains_key("task")
            && !["format", "id", "script"]
                .iter()
                .any(|key| document.contains_key(*key))
    }
}

/// Everything a session of the proxy recorded.
pub struct Recording<'a> {
    /// Every exchange, model and tool, with its order number.
    pub transcript: &'a Transcript,
    /// Answer headers and event timing, by model exchange index.
    pub extras: &'a HashMap<usize, Extra>,
    /// The upstream it was recorded from.
    pub upstream: &'a str,
}

fn terminal(status: &str) -> bool {
    !matches!(status, "queued" | "in_progress")
}

/// The header's value in an answer.
fn header<'a>(extra: Option<&'a Extra>, name: &str) -> Option<&'a str> {
    extra?
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The scripted fault a failed attempt becomes, and how the replay's transcript records
/// it.
fn fault_of(m: &ModelExchange, extra: Option<&Extra>) -> (Fault, FaultRecord) {
    let dropped = m.status == 0;
    let retry_after_ms = header(extra, "retry-after-ms").and_then(|v| v.trim().parse().ok());
    let retry_after = header(extra, "retry-after").and_then(|v| v.trim().parse::<f64>().ok());
    let should_retry = header(extra, "x-should-retry").and_then(|v| v.trim().parse().ok());
    let body = match &*m.response {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    };
    let fault = Fault {
        status: (!dropped).then_some(m.status),
        retry_after,
        retry_after_ms,
        should_retry,
        body: if dropped { None } else { body },
        drop: dropped,
        delay_ms: 0,
    };
    let record = FaultRecord {
        status: fault.status,
        retry_after_ms: retry_after_ms.or(retry_after.map(|s| (s * 1000.0) as u64)),
        should_retry,
        dropped,
        delay_ms: 0,
    };
    (fault, record)
}

/// Turns the recorded creates into script turns, and marks each exchange the way the
/// replay's engine will record it (the turn served, the fault answered), so the two
/// normalized transcripts compare equal when the controller does the same. Exchanges a
/// cassette's engine already answered (`--mode new`) keep that cassette's turns; a
/// cassette matched by key (`keyed`) keeps all of them, and the new ones follow.
fn script(
    recording: &Recording<'_>,
    marked: &mut Transcript,
    old: &[Turn],
    keyed: bool,
) -> Vec<Turn> {
    let mut turns = if keyed { old.to_vec() } else { Vec::new() };
    let mut faults = Vec::new();
    for index in 0..marked.model.len() {
        if !marked.model[index].is_create() {
            continue;
        }
        if let Some(turn) = marked.model[index].turn {
            if !keyed
                && turn == turns.len()
                && let Some(old) = old.get(turn)
            {
                turns.push(old.clone());
            }
            continue;
        }
        if marked.model[index].fault.is_some() || marked.model[index].rejected_by.is_some() {
            continue; // the cassette's engine answered it: a fault its turn holds
        }
        let extra = recording.extras.get(&index);
        if extra.is_some_and(|extra| extra.warm_up) {
            continue; // the replay's engine answers it itself, as the upstream did
        }
        let m = &marked.model[index];
        if !(200..300).contains(&m.status) {
            let (fault, record) = fault_of(m, extra);
            faults.push(fault);
            marked.model[index].fault = Some(record);
            continue;
        }
        let streamed = m.stream.is_some();
        let events: Vec<RecordedEvent> = match (&*m.response, extra) {
            (Value::Array(events), Some(extra)) if streamed => events
                .iter()
                .zip(extra.event_waits.iter().chain(std::iter::repeat(&0)))
                .map(|(event, wait)| RecordedEvent {
                    after_ms: *wait,
                    event: event.clone(),
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut response = match &m.final_response {
            Some(response) => response.value().clone(),
            None if streamed => Value::Null,
            None => m.response.value().clone(),
        };
        // A background run: the polls that found it unfinished, and what it became.
        let mut polls = None;
        if !terminal(response["status"].as_str().unwrap_or("completed"))
            && let Some(id) = response["id"].as_str()
        {
            let path = format!("/responses/{id}");
            let mut unfinished = 0;
            for later in &marked.model[index + 1..] {
                if later.method == "GET"
                    && later
                        .path
                        .split('?')
                        .next()
                        .is_some_and(|p| p.ends_with(&path))
                {
                    match later.response["status"].as_str() {
                        Some(status) if terminal(status) => {
                            response = later.response.value().clone();
                            break;
                        }
                        Some(_) => unfinished += 1,
                        None => {}
                    }
                }
            }
            polls = Some(unfinished);
        }
        let m = &mut marked.model[index];
        m.turn = Some(turns.len());
        if streamed || polls.is_some() {
            m.final_response = Some(response.clone().into());
        }
        turns.push(Turn {
            faults: std::mem::take(&mut faults),
            polls,
            recorded: Some(RecordedTurn { response, events }),
            ..Turn::default()
        });
    }
    if !faults.is_empty() {
        // Attempts that never got an answer: a turn that is only reached by retrying
        // more than the recording did.
        turns.push(Turn {
            faults,
            ..Turn::default()
        });
    }
    turns
}

/// The state mode the recorded requests used.
fn state_of(transcript: &Transcript) -> StateMode {
    let creates = || transcript.model.iter().filter(|m| m.is_create());
    if creates().any(|m| m.body.get("conversation").is_some_and(|v| !v.is_null())) {
        StateMode::Conversation
    } else if creates().any(|m| m.body.get("store") == Some(&Value::Bool(false))) {
        StateMode::Stateless
    } else {
        StateMode::PreviousResponseId
    }
}

/// The task a controller would have been given, read off the first request.
fn inferred_task(transcript: &Transcript, creates: usize) -> TaskSpec {
    let first = transcript
        .model
        .iter()
        .find(|m| m.is_create())
        .map(|m| m.body.value().clone())
        .unwrap_or(Value::Null);
    let tools = first["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|tool| {
            tool["type"] == "function"
                || crate::scenario::HOSTED_TOOLS
                    .contains(&tool["type"].as_str().unwrap_or_default())
        })
        .cloned()
        .map(ToolRef::Inline)
        .collect();
    TaskSpec {
        model: first["model"].as_str().unwrap_or("gpt-5").to_owned(),
        input: match &first["input"] {
            Value::Null => json!(""),
            input => input.clone(),
        },
        instructions: first["instructions"].as_str().map(str::to_owned),
        tools,
        approval_required: Vec::new(),
        max_rounds: (creates as u32).max(6),
        principal: "user-1".to_owned(),
        stream: first["stream"] == true,
        websocket: false,
        background: first["background"] == true,
        deadline_ms: None,
        max_tool_calls: None,
        tool_timeout_ms: None,
        compact_after_rounds: None,
        context_management: None,
        include: Vec::new(),
        text_format: None,
    }
}

/// What a correct controller reports, from the last recorded response.
fn expectation(turns: &[Turn]) -> Expectation {
    let last = turns
        .iter()
        .rev()
        .find_map(|t| t.recorded.as_ref())
        .map(|r| r.response.clone())
        .unwrap_or(Value::Null);
    let output = last["output"].as_array().cloned().unwrap_or_default();
    let text: String = output
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect();
    let calls = output.iter().any(|item| item["type"] == "function_call");
    let failed = |reason: &str| Expectation {
        outcome: Outcome::Failed,
        output_text: None,
        reason: Some(reason.to_owned()),
        min_requests: None,
    };
    match last["status"].as_str() {
        Some("completed") if !calls => Expectation {
            outcome: Outcome::Completed,
            output_text: Some(text),
            reason: None,
            min_requests: None,
        },
        Some("completed") => failed("max_rounds"),
        Some("incomplete") => failed("incomplete"),
        Some("cancelled") => failed("cancelled"),
        Some(_) => failed("response_failed"),
        None => failed("api_error"),
    }
}

/// What a cassette adds to: its turns, and, for one matched by key, its recorded
/// requests and keys (kept whole, used or not, with the new ones after them).
#[derive(Clone, Copy, Default)]
pub struct Previous<'a> {
    /// The cassette's turns.
    pub turns: &'a [Turn],
    /// For a cassette matched by key: what it recorded.
    pub keyed: Option<&'a Recorded>,
}

/// Builds the cassette of a recording, redacted: nothing it returns holds a secret. A
/// new recording is matched on `match_on` when replayed.
pub fn build(
    id: &str,
    recording: &Recording<'_>,
    task: Option<&TaskFile>,
    redactor: &Redactor,
    rules: (&[String], &[String]),
    previous: Previous<'_>,
    match_on: Option<MatchOn>,
) -> Result<Scenario, CassetteError> {
    let mut marked = recording.transcript.clone();
    // Exchanges the cassette's engine served, which a keyed cassette already holds.
    let replayed: HashSet<u64> = marked
        .model
        .iter()
        .filter(|m| m.turn.is_some())
        .map(|m| m.seq)
        .collect();
    let keyed = previous.keyed.is_some();
    let match_on = previous
        .keyed
        .and_then(|recorded| recorded.match_on.clone())
        .or(match_on);
    let script = script(recording, &mut marked, previous.turns, keyed);
    let chained = match match_on {
        Some(_) => continues(&marked, &script, previous, &replayed),
        None => Vec::new(),
    };
    if script.is_empty() || (keyed && script.len() == previous.turns.len()) {
        return Err(CassetteError::NothingRecorded);
    }
    let state = state_of(&marked);
    let creates = marked.model.iter().filter(|m| m.is_create()).count();
    let expect = expectation(&script);
    // Requests that came over the socket replay over it: the task asks for the mode, as
    // a run of the `websocket` delivery gives it (streamed, as the socket is).
    let socket = marked
        .model
        .iter()
        .any(|m| m.is_create() && m.connection.is_some());
    let mut spec = match task {
        Some(file) => file.task.clone(),
        None => inferred_task(&marked, creates),
    };
    spec.websocket = socket;
    spec.stream |= socket;
    let connections = marked
        .sockets
        .iter()
        .filter(|s| s.kind == SocketEventKind::Opened)
        .count();
    let over = if socket {
        format!(" over {connections} WebSocket connection(s)")
    } else {
        String::new()
    };
    // Credentials and secret query parameters in the URL are redacted.
    let upstream = redactor.text(recording.upstream).into_owned();
    let scenario = Scenario {
        format: FORMAT_VERSION,
        id: id.to_owned(),
        summary: format!(
            "Recorded from {upstream} by `loopcheck record`: {creates} model request(s){over}."
        ),
        level: Level::Must,
        origin: None,
        tags: vec!["recorded".to_owned()],
        task: spec,
        states: vec![state],
        deliveries: socket.then(|| vec![Delivery::WebSocket]),
        tools: task.map(|f| f.tools.clone()).unwrap_or_default(),
        script,
        expect,
        recorded: Some(Recorded {
            upstream,
            redact_json: rules.0.to_vec(),
            redact_regex: rules.1.to_vec(),
            continues: chained,
            match_on,
            transcript: match previous.keyed {
                None => normalize(id, state, &marked),
                Some(recorded) => {
                    let mut kept = recorded.transcript.clone();
                    let added = normalize(id, state, &without(&marked, &replayed));
                    kept.steps.extend(added.steps);
                    kept
                }
            },
        }),
    };
    let mut document = serde_json::to_value(&scenario).map_err(CassetteError::Json)?;
    redact_document(&mut document, redactor);
    serde_json::from_value(document).map_err(CassetteError::ReadBack)
}

/// By turn: the turn whose response its request continued (`previous_response_id`),
/// read off the raw ids before they are renumbered. A keyed cassette's own turns keep
/// what it says of them.
fn continues(
    marked: &Transcript,
    script: &[Turn],
    previous: Previous<'_>,
    replayed: &HashSet<u64>,
) -> Vec<Option<usize>> {
    let mut continues = previous.keyed.map_or(Vec::new(), |r| r.continues.clone());
    continues.resize(script.len(), None);
    let mut responses: HashMap<&str, usize> = HashMap::new();
    for (turn, t) in script.iter().enumerate() {
        if let Some(id) = t.recorded.as_ref().and_then(|r| r.response["id"].as_str()) {
            responses.insert(id, turn);
        }
    }
    for m in &marked.model {
        let Some(turn) = m.turn.filter(|t| *t < script.len()) else {
            continue;
        };
        if previous.keyed.is_some() && replayed.contains(&m.seq) {
            continue;
        }
        continues[turn] = m.body["previous_response_id"]
            .as_str()
            .and_then(|id| responses.get(id).copied());
    }
    continues
}

/// `transcript` without the model exchanges `replayed` names and the tool exchanges
/// that led to them: what a keyed `--mode new` adds to its cassette.
fn without(transcript: &Transcript, replayed: &HashSet<u64>) -> Transcript {
    let mut out = transcript.clone();
    out.model.retain(|m| !replayed.contains(&m.seq));
    out.tools.retain(|tool| {
        transcript
            .model
            .iter()
            .find(|m| m.seq > tool.seq)
            .is_none_or(|next| !replayed.contains(&next.seq))
    });
    out
}

/// Redacts a cassette document: the user's JSON pointers on every body it holds (request
/// and response bodies, events, tool arguments and results), then every string in it.
pub fn redact_document(document: &mut Value, redactor: &Redactor) {
    for turn in document["script"].as_array_mut().into_iter().flatten() {
        // `get_mut`, not indexing: indexing a missing key would insert a null.
        if let Some(recorded) = turn.get_mut("recorded") {
            if let Some(response) = recorded.get_mut("response") {
                redactor.body(response);
            }
            let events = recorded.get_mut("events").and_then(Value::as_array_mut);
            let mut events: Vec<&mut Value> = events
                .into_iter()
                .flatten()
                .filter_map(|event| event.get_mut("event"))
                .collect();
            // What the deltas spell together first: a key split across them.
            redactor.stream(&mut events);
            for event in events {
                redactor.body(event);
            }
        }
    }
    if let Some(steps) = document
        .pointer_mut("/recorded/transcript/steps")
        .and_then(Value::as_array_mut)
    {
        redact_steps(steps, redactor);
    }
    redactor.value(document);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_body_echoing_a_key_seen_in_the_query_is_redacted() {
        let redactor = Redactor::default();
        // The key went to the upstream as `?api-key=` and came back in its 429 body.
        let _ = redactor.text("/v1/responses?api-key=echoedkey0042");
        let mut document = json!({"script": [{"faults": [{"status": 429,
            "body": "{\"error\":{\"message\":\"rate limit for echoedkey0042\"}}"}]}]});
        redact_document(&mut document, &redactor);
        assert!(
            !document.to_string().contains("echoedkey0042"),
            "{document}"
        );
    }
}
