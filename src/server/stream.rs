//! Server-sent events: the exact event sequence the Responses API streams for a response, and
//! the scripted ways to deliver it badly (hostile delta boundaries, byte-sized chunks,
//! delays, a cut before the terminal event, an in-stream `error` in either shape). Events
//! are written straight to the bytes that go out; the transcript parses them only when
//! it is read.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use crate::scenario::{ErrorShape, RecordedEvent, StreamSpec};
use crate::wire::IdGen;
use crate::wire::response::ResponseParts;
use crate::wire::write::{Set, field, object_with, raw_field, value_to};

/// A stream's events rendered to the bytes a front end writes, with how to deliver them.
#[derive(Debug, Clone, Default)]
pub struct StreamFrames {
    /// Every event's SSE frame (`event: <type>\ndata: <json>\n\n`), back to back.
    pub bytes: Bytes,
    /// Where each event's frame ends in `bytes`.
    pub ends: Vec<usize>,
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

impl StreamFrames {
    /// How many events there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

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

    /// Every event as JSON.
    pub fn events(&self) -> Vec<Value> {
        (0..self.len()).map(|index| self.event(index)).collect()
    }

    /// The type of the last event that will be sent (the terminal one unless cut).
    pub fn last_type(&self) -> Option<&str> {
        let last = match self.cut_after {
            Some(n) => n.checked_sub(1).filter(|&i| i < self.ends.len())?,
            None => self.ends.len().checked_sub(1)?,
        };
        let start = last.checked_sub(1).map_or(0, |i| self.ends[i]);
        let frame = self.bytes.get(start..self.ends[last])?;
        let kind = frame.strip_prefix(b"event: ")?;
        let kind = &kind[..kind.iter().position(|&b| b == b'\n')?];
        std::str::from_utf8(kind)
            .ok()
            .filter(|kind| !kind.is_empty())
    }

    /// The wait before event `index`.
    pub fn pause(&self, index: usize) -> Duration {
        self.pauses.get(index).copied().unwrap_or(self.delay)
    }

    /// The `call_id` whose `output_item.done` event `index` is, if it is one.
    pub fn call_done(&self, index: usize) -> Option<&str> {
        self.call_done.get(&index).map(String::as_str)
    }

    /// The stream without its first `start` events (a stream resumed after them).
    pub fn resumed_after(&self, start: usize) -> StreamFrames {
        let start = start.min(self.ends.len());
        let offset = start.checked_sub(1).map_or(0, |i| self.ends[i]);
        StreamFrames {
            bytes: self.bytes.slice(offset..),
            ends: self.ends[start..].iter().map(|end| end - offset).collect(),
            cut_after: self.cut_after.map(|n| n.saturating_sub(start)),
            delay: self.delay,
            pauses: self.pauses.get(start..).unwrap_or_default().to_vec(),
            chunk_bytes: self.chunk_bytes,
            call_done: self
                .call_done
                .iter()
                .filter(|(i, _)| **i >= start)
                .map(|(i, c)| (i - start, c.clone()))
                .collect(),
        }
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
    value_to(out, event);
    out.extend_from_slice(b"\n\n");
}

/// The Response object a stream carries in its lifecycle events.
pub trait StreamedResponse {
    /// Its output items.
    fn output(&self) -> &[Value];
    /// Its terminal `status`.
    fn status(&self) -> &str;
    /// Whether it runs in the background.
    fn background(&self) -> bool;
    /// Writes it as JSON; with `snapshot`, as it looks while it has that status (before it
    /// ends, or once cancelled): no output, no usage, no outcome.
    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>);
}

impl StreamedResponse for Value {
    fn output(&self) -> &[Value] {
        self["output"].as_array().map_or(&[][..], Vec::as_slice)
    }

    fn status(&self) -> &str {
        self["status"].as_str().unwrap_or_default()
    }

    fn background(&self) -> bool {
        self["background"] == true
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        match snapshot {
            None => value_to(out, self),
            Some(status) => object_with(
                out,
                self,
                &[
                    ("status", Set::Str(status)),
                    ("output", Set::EmptyArray),
                    ("usage", Set::Null),
                    ("completed_at", Set::Null),
                    ("error", Set::Null),
                    ("incomplete_details", Set::Null),
                ],
            ),
        }
    }
}

impl StreamedResponse for ResponseParts<'_> {
    fn output(&self) -> &[Value] {
        self.output
    }

    fn status(&self) -> &str {
        self.status.as_str()
    }

    fn background(&self) -> bool {
        self.request.background
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        ResponseParts::write(self, out, snapshot);
    }
}

/// A response whose final JSON is rendered already: the terminal event copies it.
pub struct Prerendered<'a> {
    /// The response.
    pub response: &'a dyn StreamedResponse,
    /// Its final JSON.
    pub json: &'a [u8],
}

impl StreamedResponse for Prerendered<'_> {
    fn output(&self) -> &[Value] {
        self.response.output()
    }

    fn status(&self) -> &str {
        self.response.status()
    }

    fn background(&self) -> bool {
        self.response.background()
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        match snapshot {
            None => out.extend_from_slice(self.json),
            Some(_) => self.response.write(out, snapshot),
        }
    }
}

/// The response as it looks before it ends (or once cancelled): no output, no usage.
pub fn snapshot(response: &Value, status: &str) -> Value {
    let mut out = Vec::new();
    response.write(&mut out, Some(status));
    serde_json::from_slice(&out).expect("written as JSON")
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

/// Writes events one after the other, numbering them.
struct Builder<'a> {
    out: Vec<u8>,
    ends: Vec<usize>,
    ids: &'a mut IdGen,
    obfuscate: bool,
}

/// Where a delta or part event belongs: `item_id`, `output_index` and, for a part, its
/// `summary_index` or `content_index`.
struct At<'a> {
    item_id: &'a Value,
    output_index: usize,
    part: Option<(&'static str, usize)>,
}

impl At<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        field(out, "item_id", self.item_id);
        field(out, "output_index", &self.output_index);
        if let Some((key, index)) = self.part {
            field(out, key, &index);
        }
    }
}

impl Builder<'_> {
    /// Starts event `kind`: its frame up to the `type` field; fields follow with
    /// [`field`], and [`Builder::end`] closes it.
    fn start(&mut self, kind: &str) -> &mut Vec<u8> {
        let out = &mut self.out;
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\ndata: {\"type\":");
        value_to(out, kind);
        out
    }

    /// Ends the event started last: a delta gets its `obfuscation` padding, every event
    /// its `sequence_number`.
    fn end(&mut self, delta: bool) {
        if delta && self.obfuscate {
            let len = 3 + (self.ids.next_u64() % 14) as usize;
            let padding = self.ids.base62(len);
            field(&mut self.out, "obfuscation", &padding);
        }
        let number = self.ends.len();
        field(&mut self.out, "sequence_number", &number);
        self.out.extend_from_slice(b"}\n\n");
        self.ends.push(self.out.len());
    }

    /// `{"type": kind, <at>, "delta": piece}` as the API orders it.
    fn delta(&mut self, kind: &str, piece: &str, at: &At<'_>, logprobs: bool) {
        let out = self.start(kind);
        field(out, "delta", piece);
        if logprobs {
            raw_field(out, "logprobs", b"[]");
        }
        at.write(out);
        self.end(true);
    }

    /// A lifecycle event carrying the response (as a snapshot while it runs).
    fn lifecycle(&mut self, kind: &str, response: &dyn StreamedResponse, snapshot: Option<&str>) {
        let out = self.start(kind);
        raw_field(out, "response", b"");
        response.write(out, snapshot);
        self.end(false);
    }

    /// `response.output_item.added` or `.done` for `item`, with some fields set.
    fn item(&mut self, kind: &str, index: usize, item: &Value, set: &[(&str, Set<'_>)]) {
        let out = self.start(kind);
        field(out, "output_index", &index);
        raw_field(out, "item", b"");
        object_with(out, item, set);
        self.end(false);
    }

    /// A function call's `output_item.done`, remembered for the oracle.
    fn call_done(&mut self, index: usize, item: &Value, call_done: &mut HashMap<usize, String>) {
        call_done.insert(
            self.ends.len(),
            item["call_id"].as_str().unwrap_or_default().to_owned(),
        );
        self.item("response.output_item.done", index, item, &[]);
    }
}

/// A function call as announced: in progress, no arguments yet.
const CALL_ADDED: [(&str, Set<'static>); 2] = [
    ("status", Set::Str("in_progress")),
    ("arguments", Set::Str("")),
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
        b.item(
            "response.output_item.added",
            index,
            &output[index],
            &CALL_ADDED,
        );
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
                let at = At {
                    item_id: &output[index]["id"],
                    output_index: index,
                    part: None,
                };
                b.delta("response.function_call_arguments.delta", piece, &at, false);
            }
        }
    }
    for index in calls {
        let item = &output[index];
        let at = At {
            item_id: &item["id"],
            output_index: index,
            part: None,
        };
        let out = b.start("response.function_call_arguments.done");
        field(out, "arguments", &item["arguments"]);
        at.write(out);
        b.end(false);
        b.call_done(index, item, call_done);
    }
}

/// Plans the stream of `response` (the final Response object).
pub fn plan(
    response: &dyn StreamedResponse,
    spec: &StreamSpec,
    ids: &mut IdGen,
    obfuscate: bool,
) -> StreamFrames {
    let size = spec.delta_size.unwrap_or(8);
    let output = response.output();
    let mut b = Builder {
        out: Vec::with_capacity(2048 + output.len() * 1024),
        ends: Vec::new(),
        ids,
        obfuscate,
    };
    let mut call_done = HashMap::new();
    let background = response.background();
    let created = if background { "queued" } else { "in_progress" };
    b.lifecycle("response.created", response, Some(created));
    if background {
        b.lifecycle("response.queued", response, Some("queued"));
    }
    b.lifecycle("response.in_progress", response, Some("in_progress"));
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
        let item_id = &item["id"];
        match item["type"].as_str().unwrap_or_default() {
            "reasoning" => {
                // The added event's content "may be incomplete".
                let half = item["encrypted_content"]
                    .as_str()
                    .map(|content| &content[..content.len() / 2]);
                let mut added = vec![];
                if let Some(half) = half {
                    added.push(("encrypted_content", Set::Str(half)));
                }
                added.push(("summary", Set::EmptyArray));
                b.item("response.output_item.added", index, item, &added);
                for (s, part) in item["summary"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .enumerate()
                {
                    let text = part["text"].as_str().unwrap_or_default();
                    let at = At {
                        item_id,
                        output_index: index,
                        part: Some(("summary_index", s)),
                    };
                    let out = b.start("response.reasoning_summary_part.added");
                    raw_field(out, "part", br#"{"type":"summary_text","text":""}"#);
                    at.write(out);
                    b.end(false);
                    for piece in split(text, size, &[]) {
                        b.delta("response.reasoning_summary_text.delta", &piece, &at, false);
                    }
                    let out = b.start("response.reasoning_summary_text.done");
                    field(out, "text", text);
                    at.write(out);
                    b.end(false);
                    let out = b.start("response.reasoning_summary_part.done");
                    raw_field(out, "part", br#"{"type":"summary_text","text":"#);
                    value_to(out, text);
                    out.push(b'}');
                    at.write(out);
                    b.end(false);
                }
            }
            "message" => {
                let added = [
                    ("status", Set::Str("in_progress")),
                    ("content", Set::EmptyArray),
                ];
                b.item("response.output_item.added", index, item, &added);
                for (c, part) in item["content"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .enumerate()
                {
                    let at = At {
                        item_id,
                        output_index: index,
                        part: Some(("content_index", c)),
                    };
                    if part["type"] == "refusal" {
                        let text = part["refusal"].as_str().unwrap_or_default();
                        let out = b.start("response.content_part.added");
                        raw_field(out, "part", br#"{"type":"refusal","refusal":""}"#);
                        at.write(out);
                        b.end(false);
                        for piece in split(text, size, &[]) {
                            b.delta("response.refusal.delta", &piece, &at, false);
                        }
                        let out = b.start("response.refusal.done");
                        field(out, "refusal", text);
                        at.write(out);
                        b.end(false);
                    } else {
                        let text = part["text"].as_str().unwrap_or_default();
                        let out = b.start("response.content_part.added");
                        raw_field(
                            out,
                            "part",
                            br#"{"type":"output_text","annotations":[],"logprobs":[],"text":""}"#,
                        );
                        at.write(out);
                        b.end(false);
                        for piece in split(text, size, &[]) {
                            b.delta("response.output_text.delta", &piece, &at, true);
                        }
                        let out = b.start("response.output_text.done");
                        field(out, "text", text);
                        raw_field(out, "logprobs", b"[]");
                        at.write(out);
                        b.end(false);
                    }
                    let out = b.start("response.content_part.done");
                    field(out, "part", part);
                    at.write(out);
                    b.end(false);
                }
            }
            "function_call" => {
                b.item("response.output_item.added", index, item, &CALL_ADDED);
                let arguments = item["arguments"].as_str().unwrap_or_default();
                let at = At {
                    item_id,
                    output_index: index,
                    part: None,
                };
                for piece in split(arguments, size, &spec.split_at) {
                    b.delta("response.function_call_arguments.delta", &piece, &at, false);
                }
                let out = b.start("response.function_call_arguments.done");
                field(out, "arguments", arguments);
                at.write(out);
                b.end(false);
            }
            _ => b.item("response.output_item.added", index, item, &[]),
        }
        if item["type"] == "function_call" {
            b.call_done(index, item, &mut call_done);
        } else {
            b.item("response.output_item.done", index, item, &[]);
        }
    }
    let terminal = match response.status() {
        "incomplete" => "response.incomplete",
        "failed" => "response.failed",
        _ => "response.completed",
    };
    b.lifecycle(terminal, response, None);
    if let Some(error) = &spec.error {
        // The stream breaks off with an error event in place of event `after`.
        let after = error.after.min(b.ends.len() - 1);
        b.out
            .truncate(after.checked_sub(1).map_or(0, |i| b.ends[i]));
        b.ends.truncate(after);
        let out = b.start("error");
        match error.shape {
            ErrorShape::Flat => {
                field(out, "code", &error.code);
                field(out, "message", &error.message);
                raw_field(out, "param", b"null");
            }
            ErrorShape::Nested => {
                raw_field(out, "error", b"{\"type\":");
                value_to(out, &error.code);
                field(out, "code", &error.code);
                field(out, "message", &error.message);
                raw_field(out, "param", b"null}");
            }
        }
        b.end(false);
        call_done.retain(|index, _| *index < after);
    }
    let events = b.ends.len();
    StreamFrames {
        bytes: Bytes::from(b.out),
        ends: b.ends,
        cut_after: spec.cut_after.map(|n| n.min(events.saturating_sub(1))),
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
pub fn replay(recorded: &[RecordedEvent]) -> StreamFrames {
    let mut out = Vec::new();
    let mut ends = Vec::with_capacity(recorded.len());
    let mut call_done = HashMap::new();
    for (index, RecordedEvent { event, .. }) in recorded.iter().enumerate() {
        write_frame(&mut out, event);
        ends.push(out.len());
        if event["type"] == "response.output_item.done"
            && event["item"]["type"] == "function_call"
            && let Some(call_id) = event["item"]["call_id"].as_str()
        {
            call_done.insert(index, call_id.to_owned());
        }
    }
    let terminal = recorded
        .last()
        .and_then(|r| r.event["type"].as_str())
        .is_some_and(|t| {
            matches!(
                t,
                "response.completed" | "response.incomplete" | "response.failed" | "error"
            )
        });
    StreamFrames {
        bytes: Bytes::from(out),
        cut_after: (!terminal).then_some(ends.len()),
        ends,
        pauses: recorded
            .iter()
            .map(|r| Duration::from_millis(r.after_ms).min(MAX_REPLAYED_PAUSE))
            .collect(),
        call_done,
        ..StreamFrames::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let frames = plan(&response, &StreamSpec::default(), &mut IdGen::new(1), true);
        let events = frames.events();
        for (i, event) in events.iter().enumerate() {
            assert_eq!(event["sequence_number"], i);
        }
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"response.created"));
        assert_eq!(types.last(), Some(&"response.completed"));
        assert!(
            events
                .iter()
                .filter(|e| e["type"] == "response.function_call_arguments.delta")
                .all(|e| e["obfuscation"].is_string())
        );
        assert_eq!(
            frames.call_done.values().next().map(String::as_str),
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
        let frames = plan(&response, &spec, &mut IdGen::new(1), false);
        let events = frames.events();
        let deltas: Vec<&Value> = events
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
        for (i, event) in events.iter().enumerate() {
            assert_eq!(event["sequence_number"], i);
        }
        assert_eq!(frames.call_done.len(), 2);
    }
}
