//! Server-sent events: the exact event sequence the Responses API streams for a response, and
//! the scripted ways to deliver it badly (hostile delta boundaries, byte-sized chunks,
//! delays, a cut before the terminal event, an in-stream `error` in either shape).

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::scenario::{ErrorShape, RecordedEvent, StreamSpec};
use crate::wire::IdGen;

/// A stream ready to send.
#[derive(Debug, Clone, Default)]
pub struct PlannedStream {
    /// Events in order, each with its `sequence_number`.
    pub events: Vec<Value>,
    /// Close the connection after this many events, without the rest.
    pub cut_after: Option<usize>,
    /// Wait before each event.
    pub delay: Duration,
    /// Wait before event `i` instead, when given (a recorded stream's own timing).
    pub pauses: Vec<Duration>,
    /// Write this many bytes at a time.
    pub chunk_bytes: Option<usize>,
    /// Event index of each function call's `output_item.done`, by call_id.
    pub call_done: HashMap<usize, String>,
}

impl PlannedStream {
    /// The wait before event `index`.
    pub fn pause(&self, index: usize) -> Duration {
        self.pauses.get(index).copied().unwrap_or(self.delay)
    }

    /// The type of the last event that will be sent (the terminal one unless cut).
    pub fn last_type(&self) -> Option<&str> {
        let last = match self.cut_after {
            Some(n) => self.events.get(n.checked_sub(1)?),
            None => self.events.last(),
        };
        last.and_then(|e| e["type"].as_str())
    }
}

/// One SSE frame: `event: <type>\ndata: <json>\n\n`.
pub fn frame(event: &Value) -> String {
    let mut out = Vec::new();
    write_frame(&mut out, event);
    String::from_utf8(out).expect("JSON and event types are UTF-8")
}

fn write_frame(out: &mut Vec<u8>, event: &Value) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event["type"].as_str().unwrap_or_default().as_bytes());
    out.extend_from_slice(b"\ndata: ");
    serde_json::to_writer(&mut *out, event).expect("a Value always serializes");
    out.extend_from_slice(b"\n\n");
}

impl PlannedStream {
    /// Renders every event once, for a front end to write; gives the events back for the
    /// transcript, so they are neither cloned nor rendered twice.
    pub fn render(self) -> (StreamFrames, Vec<Value>) {
        let mut bytes = Vec::with_capacity(self.events.len() * 256);
        let mut ends = Vec::with_capacity(self.events.len());
        for event in &self.events {
            write_frame(&mut bytes, event);
            ends.push(bytes.len());
        }
        let frames = StreamFrames {
            bytes: Bytes::from(bytes),
            ends,
            cut_after: self.cut_after,
            delay: self.delay,
            pauses: self.pauses,
            chunk_bytes: self.chunk_bytes,
            call_done: self.call_done,
        };
        (frames, self.events)
    }
}

/// A planned stream rendered to the bytes a front end writes, with how to deliver them.
#[derive(Debug, Clone, Default)]
pub struct StreamFrames {
    /// Every event's SSE frame, back to back.
    pub bytes: Bytes,
    /// Where each event's frame ends in `bytes`.
    pub ends: Vec<usize>,
    /// Close the connection after this many events, without the rest.
    pub cut_after: Option<usize>,
    /// Wait before each event.
    pub delay: Duration,
    /// Wait before event `i` instead, when given.
    pub pauses: Vec<Duration>,
    /// Write this many bytes at a time.
    pub chunk_bytes: Option<usize>,
    /// Event index of each function call's `output_item.done`, by call_id.
    pub call_done: HashMap<usize, String>,
}

impl StreamFrames {
    /// How many events are written: all of them, or those before the cut.
    pub fn written(&self) -> usize {
        self.cut_after
            .unwrap_or(self.ends.len())
            .min(self.ends.len())
    }

    /// Event `index`'s frame.
    pub fn frame(&self, index: usize) -> Bytes {
        let start = index.checked_sub(1).map_or(0, |i| self.ends[i]);
        self.bytes.slice(start..self.ends[index])
    }

    /// Events `from..to`'s frames, back to back.
    pub fn frames(&self, from: usize, to: usize) -> Bytes {
        let start = from.checked_sub(1).map_or(0, |i| self.ends[i]);
        let end = to.checked_sub(1).map_or(0, |i| self.ends[i]);
        self.bytes.slice(start..end.max(start))
    }

    /// Event `index` as JSON (its frame's `data`).
    pub fn event(&self, index: usize) -> Value {
        let frame = self.frame(index);
        let data = frame
            .split(|&b| b == b'\n')
            .find_map(|line| line.strip_prefix(b"data: "))
            .unwrap_or_default();
        serde_json::from_slice(data).unwrap_or(Value::Null)
    }

    /// The wait before event `index`.
    pub fn pause(&self, index: usize) -> Duration {
        self.pauses.get(index).copied().unwrap_or(self.delay)
    }

    /// The `call_id` whose `output_item.done` event `index` is, if it is one.
    pub fn call_done(&self, index: usize) -> Option<&str> {
        self.call_done.get(&index).map(String::as_str)
    }
}

/// Splits `text` into pieces of `size` characters, or at the given character offsets.
fn split(text: &str, size: usize, at: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut cuts: Vec<usize> = if at.is_empty() {
        (size.max(1)..chars.len()).step_by(size.max(1)).collect()
    } else {
        at.iter()
            .copied()
            .filter(|&i| i > 0 && i < chars.len())
            .collect()
    };
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([chars.len()]) {
        if cut > start {
            pieces.push(chars[start..cut].iter().collect());
            start = cut;
        }
    }
    if pieces.is_empty() {
        pieces.push(String::new());
    }
    pieces
}

struct Builder<'a> {
    events: Vec<Value>,
    ids: &'a mut IdGen,
    obfuscate: bool,
}

impl Builder<'_> {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.events.len());
        self.events.push(event);
    }

    fn delta(&mut self, mut event: Value) {
        if self.obfuscate {
            let len = 3 + (self.ids.next_u64() % 14) as usize;
            event["obfuscation"] = json!(self.ids.base62(len));
        }
        self.push(event);
    }
}

/// The response as it looks before it ends (or once cancelled): no output, no usage.
pub fn snapshot(response: &Value, status: &str) -> Value {
    let replaced = |key: &str| -> Option<Value> {
        Some(match key {
            "status" => json!(status),
            "output" => json!([]),
            "usage" | "completed_at" | "error" | "incomplete_details" => Value::Null,
            _ => return None,
        })
    };
    let Some(fields) = response.as_object() else {
        let mut snapshot = response.clone();
        for key in SNAPSHOT_KEYS {
            snapshot[key] = replaced(key).unwrap_or_default();
        }
        return snapshot;
    };
    // Built key by key rather than cloned and overwritten: the output and usage it drops
    // are most of a response.
    let mut snapshot = serde_json::Map::with_capacity(fields.len() + SNAPSHOT_KEYS.len());
    for (key, value) in fields {
        let value = replaced(key).unwrap_or_else(|| value.clone());
        snapshot.insert(key.clone(), value);
    }
    for key in SNAPSHOT_KEYS {
        if !snapshot.contains_key(key) {
            snapshot.insert(key.to_owned(), replaced(key).unwrap_or_default());
        }
    }
    Value::Object(snapshot)
}

/// The keys a snapshot sets, in the order it adds those the response lacks.
const SNAPSHOT_KEYS: [&str; 6] = [
    "status",
    "output",
    "usage",
    "completed_at",
    "error",
    "incomplete_details",
];

/// Streams consecutive function calls side by side: every call opened, then their
/// argument deltas in turns, then each closed. Legal by the event schema (every delta
/// names its item and output_index), and what a client that appends each delta to the
/// latest call it saw gets wrong.
fn interleave_calls(
    b: &mut Builder,
    output: &[Value],
    calls: std::ops::Range<usize>,
    size: usize,
    call_done: &mut HashMap<usize, String>,
) {
    let mut pieces = Vec::new();
    for index in calls.clone() {
        let mut added = output[index].clone();
        added["status"] = json!("in_progress");
        added["arguments"] = json!("");
        b.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
        pieces.push(split(
            output[index]["arguments"].as_str().unwrap_or_default(),
            size,
            &[],
        ));
    }
    let turns = pieces.iter().map(Vec::len).max().unwrap_or(0);
    for turn in 0..turns {
        for (index, call) in calls.clone().zip(&pieces) {
            if let Some(piece) = call.get(turn) {
                let at = json!({"item_id": output[index]["id"], "output_index": index});
                b.delta(merge(
                    &at,
                    json!({"type": "response.function_call_arguments.delta", "delta": piece}),
                ));
            }
        }
    }
    for index in calls {
        let item = &output[index];
        let at = json!({"item_id": item["id"], "output_index": index});
        b.push(merge(&at, json!({"type": "response.function_call_arguments.done", "arguments": item["arguments"]})));
        call_done.insert(
            b.events.len(),
            item["call_id"].as_str().unwrap_or_default().to_owned(),
        );
        b.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
}

/// Plans the stream of `response` (the final Response object).
pub fn plan(
    response: &Value,
    spec: &StreamSpec,
    ids: &mut IdGen,
    obfuscate: bool,
) -> PlannedStream {
    let size = spec.delta_size.unwrap_or(8);
    let mut b = Builder {
        events: Vec::new(),
        ids,
        obfuscate,
    };
    let mut call_done = HashMap::new();
    let background = response["background"] == true;
    b.push(json!({"type": "response.created", "response": snapshot(response, if background { "queued" } else { "in_progress" })}));
    if background {
        b.push(json!({"type": "response.queued", "response": snapshot(response, "queued")}));
    }
    b.push(json!({"type": "response.in_progress", "response": snapshot(response, "in_progress")}));
    let output = response["output"].as_array().map_or(&[][..], Vec::as_slice);
    let mut interleaved = 0..0;
    for (index, item) in output.iter().enumerate() {
        if interleaved.contains(&index) {
            continue;
        }
        if spec.interleave && item["type"] == "function_call" {
            let run = output[index..]
                .iter()
                .take_while(|item| item["type"] == "function_call")
                .count();
            if run > 1 {
                interleaved = index..index + run;
                interleave_calls(&mut b, output, interleaved.clone(), size, &mut call_done);
                continue;
            }
        }
        let item_id = item["id"].clone();
        match item["type"].as_str().unwrap_or_default() {
            "reasoning" => {
                let mut added = item.clone();
                if let Some(content) = item["encrypted_content"].as_str() {
                    // The added event's content "may be incomplete".
                    added["encrypted_content"] = json!(&content[..content.len() / 2]);
                }
                added["summary"] = json!([]);
                b.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                for (s, part) in item["summary"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .enumerate()
                {
                    let text = part["text"].as_str().unwrap_or_default();
                    let at = json!({"item_id": item_id, "output_index": index, "summary_index": s});
                    b.push(merge(&at, json!({"type": "response.reasoning_summary_part.added", "part": {"type": "summary_text", "text": ""}})));
                    for piece in split(text, size, &[]) {
                        b.delta(merge(&at, json!({"type": "response.reasoning_summary_text.delta", "delta": piece})));
                    }
                    b.push(merge(
                        &at,
                        json!({"type": "response.reasoning_summary_text.done", "text": text}),
                    ));
                    b.push(merge(&at, json!({"type": "response.reasoning_summary_part.done", "part": {"type": "summary_text", "text": text}})));
                }
            }
            "message" => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["content"] = json!([]);
                b.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                for (c, part) in item["content"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .enumerate()
                {
                    let at = json!({"item_id": item_id, "output_index": index, "content_index": c});
                    if part["type"] == "refusal" {
                        let text = part["refusal"].as_str().unwrap_or_default();
                        b.push(merge(&at, json!({"type": "response.content_part.added", "part": {"type": "refusal", "refusal": ""}})));
                        for piece in split(text, size, &[]) {
                            b.delta(merge(
                                &at,
                                json!({"type": "response.refusal.delta", "delta": piece}),
                            ));
                        }
                        b.push(merge(
                            &at,
                            json!({"type": "response.refusal.done", "refusal": text}),
                        ));
                    } else {
                        let text = part["text"].as_str().unwrap_or_default();
                        b.push(merge(&at, json!({"type": "response.content_part.added", "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}})));
                        for piece in split(text, size, &[]) {
                            b.delta(merge(&at, json!({"type": "response.output_text.delta", "delta": piece, "logprobs": []})));
                        }
                        b.push(merge(&at, json!({"type": "response.output_text.done", "text": text, "logprobs": []})));
                    }
                    b.push(merge(
                        &at,
                        json!({"type": "response.content_part.done", "part": part}),
                    ));
                }
            }
            "function_call" => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["arguments"] = json!("");
                b.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                let arguments = item["arguments"].as_str().unwrap_or_default();
                let at = json!({"item_id": item_id, "output_index": index});
                for piece in split(arguments, size, &spec.split_at) {
                    b.delta(merge(
                        &at,
                        json!({"type": "response.function_call_arguments.delta", "delta": piece}),
                    ));
                }
                b.push(merge(&at, json!({"type": "response.function_call_arguments.done", "arguments": arguments})));
            }
            _ => {
                b.push(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
            }
        }
        if item["type"] == "function_call" {
            call_done.insert(
                b.events.len(),
                item["call_id"].as_str().unwrap_or_default().to_owned(),
            );
        }
        b.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    let terminal = match response["status"].as_str() {
        Some("incomplete") => "response.incomplete",
        Some("failed") => "response.failed",
        _ => "response.completed",
    };
    b.push(json!({"type": terminal, "response": response}));
    let mut events = b.events;
    if let Some(error) = &spec.error {
        let after = error.after.min(events.len() - 1);
        events.truncate(after);
        let mut event = match error.shape {
            ErrorShape::Flat => {
                json!({"type": "error", "code": error.code, "message": error.message, "param": Value::Null})
            }
            ErrorShape::Nested => {
                json!({"type": "error", "error": {"type": error.code, "code": error.code, "message": error.message, "param": Value::Null}})
            }
        };
        event["sequence_number"] = json!(after);
        events.push(event);
        call_done.retain(|index, _| *index < after);
    }
    PlannedStream {
        cut_after: spec
            .cut_after
            .map(|n| n.min(events.len().saturating_sub(1))),
        events,
        delay: Duration::from_millis(spec.delay_ms),
        pauses: Vec::new(),
        chunk_bytes: spec.chunk_bytes.filter(|&n| n > 0),
        call_done,
    }
}

/// Longest wait replayed between two recorded events: a real model can pause for
/// seconds, and a replay keeps the event boundaries and order without making CI wait.
const MAX_REPLAYED_PAUSE: Duration = Duration::from_millis(100);

/// A recorded stream, replayed as it arrived: the same events, each after the wait it
/// came after (capped), cut where the recording broke off without a terminal event.
pub fn replay(recorded: &[RecordedEvent]) -> PlannedStream {
    let events: Vec<Value> = recorded.iter().map(|r| r.event.clone()).collect();
    let call_done = events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e["type"] == "response.output_item.done" && e["item"]["type"] == "function_call"
        })
        .filter_map(|(i, e)| Some((i, e["item"]["call_id"].as_str()?.to_owned())))
        .collect();
    let terminal = events
        .last()
        .and_then(|e| e["type"].as_str())
        .is_some_and(|t| {
            matches!(
                t,
                "response.completed" | "response.incomplete" | "response.failed" | "error"
            )
        });
    PlannedStream {
        cut_after: (!terminal).then_some(events.len()),
        pauses: recorded
            .iter()
            .map(|r| Duration::from_millis(r.after_ms).min(MAX_REPLAYED_PAUSE))
            .collect(),
        events,
        call_done,
        ..PlannedStream::default()
    }
}

/// `extra` with `base`'s keys set over it, `type` first (it reads better in captures;
/// serde_json keeps insertion order).
fn merge(base: &Value, extra: Value) -> Value {
    let Value::Object(mut merged) = extra else {
        let mut ordered = serde_json::Map::new();
        ordered.insert("type".to_owned(), extra["type"].clone());
        return Value::Object(ordered);
    };
    if let Some(source) = base.as_object() {
        for (key, value) in source {
            merged.insert(key.clone(), value.clone());
        }
    }
    let kind = merged.shift_remove("type").unwrap_or(Value::Null);
    merged.shift_insert(0, "type".to_owned(), kind);
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_every_character_once() {
        assert_eq!(
            split("{\"city\":\"Zürich\"}", 4, &[]).concat(),
            "{\"city\":\"Zürich\"}"
        );
        assert_eq!(split("abcdef", 100, &[1, 3]), vec!["a", "bc", "def"]);
        assert_eq!(split("", 8, &[]), vec![""]);
    }

    #[test]
    fn sequence_numbers_count_from_zero_and_the_terminal_event_is_last() {
        let response = json!({"id": "resp_1", "status": "completed", "background": false, "output": [
            {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{\"a\":1}", "call_id": "call_1", "name": "f"}
        ]});
        let stream = plan(&response, &StreamSpec::default(), &mut IdGen::new(1), true);
        for (i, event) in stream.events.iter().enumerate() {
            assert_eq!(event["sequence_number"], i);
        }
        let types: Vec<&str> = stream
            .events
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(types.first(), Some(&"response.created"));
        assert_eq!(types.last(), Some(&"response.completed"));
        assert!(
            stream
                .events
                .iter()
                .filter(|e| e["type"] == "response.function_call_arguments.delta")
                .all(|e| e["obfuscation"].is_string())
        );
        assert_eq!(
            stream.call_done.values().next().map(String::as_str),
            Some("call_1")
        );
    }

    #[test]
    fn interleaved_calls_alternate_their_deltas_and_each_reassembles() {
        let call = |n: u32, arguments: &str| json!({"id": format!("fc_{n}"), "type": "function_call", "status": "completed", "arguments": arguments, "call_id": format!("call_{n}"), "name": "f"});
        let response = json!({"id": "resp_1", "status": "completed", "background": false, "output": [
            call(1, "{\"sku\":\"A7\"}"), call(2, "{\"sku\":\"B12\"}")
        ]});
        let spec = StreamSpec {
            interleave: true,
            delta_size: Some(4),
            ..StreamSpec::default()
        };
        let stream = plan(&response, &spec, &mut IdGen::new(1), false);
        let deltas: Vec<&Value> = stream
            .events
            .iter()
            .filter(|e| e["type"] == "response.function_call_arguments.delta")
            .collect();
        let owners: Vec<u64> = deltas
            .iter()
            .map(|e| e["output_index"].as_u64().unwrap())
            .collect();
        assert_eq!(&owners[..4], &[0, 1, 0, 1], "{owners:?}");
        for (index, expected) in [(0, "{\"sku\":\"A7\"}"), (1, "{\"sku\":\"B12\"}")] {
            let assembled: String = deltas
                .iter()
                .filter(|e| e["output_index"] == index)
                .map(|e| e["delta"].as_str().unwrap())
                .collect();
            assert_eq!(assembled, expected);
        }
        for (i, event) in stream.events.iter().enumerate() {
            assert_eq!(event["sequence_number"], i);
        }
        assert_eq!(stream.call_done.len(), 2);
    }
}
