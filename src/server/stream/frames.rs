//! A stream's frames: the server-sent events of one response, rendered, and how they are delivered.

use std::borrow::Cow;
use std::ops::Range;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use super::StreamedResponse;
use crate::scenario::RecordedEvent;
use crate::transcript::event_data;
use crate::wire::call_kind;
use crate::wire::write::value_to;

/// A stream's events rendered to the bytes a front end writes, with how to deliver them.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// Each function call's `output_item.done`: its event index and the call's
    /// `call_id`, in event order (a stream has a few, so a list beats a map).
    pub call_done: Vec<(usize, String)>,
    /// Where the terminal event's Response object is in `bytes`, when the stream has one
    /// (one that ends in an error event has none): the final response, kept once.
    pub terminal_response: Option<Range<usize>>,
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
        event_data(&self.frame(index))
            .into_iter()
            .next()
            .unwrap_or(Value::Null)
    }

    /// Every event as JSON.
    pub fn events(&self) -> Vec<Value> {
        event_data(&self.bytes)
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
        self.call_done
            .iter()
            .find(|(at, _)| *at == index)
            .map(|(_, call_id)| call_id.as_str())
    }

    /// The terminal event's Response object, as it was written into the stream.
    pub fn terminal_response(&self) -> Option<Bytes> {
        let range = self.terminal_response.clone()?;
        (range.end <= self.bytes.len()).then(|| self.bytes.slice(range))
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
                .filter(|(i, _)| *i >= start)
                .map(|(i, c)| (i - start, c.clone()))
                .collect(),
            terminal_response: self
                .terminal_response
                .clone()
                .filter(|range| range.start >= offset)
                .map(|range| range.start - offset..range.end - offset),
        }
    }
}

/// The types of the events a stream ends with (the terminal events and `error`).
const TERMINAL_TYPES: [&str; 4] = [
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

/// `kind`, when a stream ends with events of that type.
pub fn terminal_type(kind: &str) -> Option<&'static str> {
    TERMINAL_TYPES
        .into_iter()
        .find(|terminal| *terminal == kind)
}

/// An event type as a stream record keeps it: a terminal one without a copy.
pub fn recorded_type(kind: &str) -> Cow<'static, str> {
    crate::text::known_or_owned(kind, &TERMINAL_TYPES)
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

/// The response as it looks before it ends (or once cancelled): no output, no usage.
pub fn snapshot(response: &Value, status: &str) -> Value {
    let mut out = Vec::new();
    response.write(&mut out, Some(status));
    serde_json::from_slice(&out).expect("written as JSON")
}

/// Longest wait replayed between two recorded events: a real model can pause for
/// seconds, and a replay keeps the event boundaries and order without making CI wait.
const MAX_REPLAYED_PAUSE: Duration = Duration::from_millis(100);

/// A recorded stream, replayed as it arrived: the same events, each after the wait it
/// came after (capped), cut where the recording broke off without a terminal event.
pub fn replay(recorded: &[RecordedEvent]) -> StreamFrames {
    let mut out = Vec::new();
    let mut ends = Vec::with_capacity(recorded.len());
    let mut call_done = Vec::new();
    for (index, RecordedEvent { event, .. }) in recorded.iter().enumerate() {
        write_frame(&mut out, event);
        ends.push(out.len());
        // Every kind of call the controller runs, not function calls alone: the oracle
        // judges a custom call run before its `output_item.done` too.
        if event["type"] == "response.output_item.done"
            && let Some(kind) = event["item"]["type"].as_str().and_then(call_kind::of_call)
            && let Some(call_id) = event["item"][kind.call_ref].as_str()
        {
            call_done.push((index, call_id.to_owned()));
        }
    }
    let terminal = recorded
        .last()
        .and_then(|r| r.event["type"].as_str())
        .is_some_and(|t| terminal_type(t).is_some());
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
