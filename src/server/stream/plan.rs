//! Planning a response's stream: the exact event sequence the Responses API sends, written
//! event by event into the frames a front end delivers.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use super::StreamFrames;
use super::source::{Items, StreamedItem, StreamedResponse};
use crate::scenario::{ErrorShape, StreamSpec};
use crate::wire::IdGen;
use crate::wire::call_kind;
use crate::wire::hosted::{self, HostedKind};
use crate::wire::item::write_logprobs;
use crate::wire::write::{Set, field, raw_field, value_to};

/// The pieces of `text` of `size` characters each (an empty text is one empty piece): the
/// common case, on every delta of every stream, walked once without a table of character
/// offsets and without a list.
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let size = size.max(1);
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        let end = current
            .char_indices()
            .nth(size)
            .map_or(current.len(), |(at, _)| at);
        let (piece, after) = current.split_at(end);
        rest = (!after.is_empty()).then_some(after);
        Some(piece)
    })
}

/// Splits `text` at the given character offsets (out of range ones ignored).
fn split_at<'t>(text: &'t str, at: &[usize]) -> Vec<&'t str> {
    // Where each character starts, and the end.
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    let chars = bounds.len() - 1;
    let mut cuts: Vec<usize> = at.iter().copied().filter(|&i| i > 0 && i < chars).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts.into_iter().chain([chars]) {
        if cut > start {
            pieces.push(&text[bounds[start]..bounds[cut]]);
            start = cut;
        }
    }
    if pieces.is_empty() {
        pieces.push("");
    }
    pieces
}

/// Writes events one after the other, numbering them.
struct Builder<'a> {
    /// The response the stream is of.
    response: &'a dyn StreamedResponse,
    out: Vec<u8>,
    ends: Vec<usize>,
    /// Each delta's `obfuscation` padding.
    padding: &'a mut dyn FnMut() -> &'static [u8],
    obfuscate: bool,
    /// Event index and call_id of each function call's `output_item.done`.
    call_done: Vec<(usize, String)>,
    /// The last snapshot of the response written, and where.
    last_snapshot: Option<(&'static str, std::ops::Range<usize>)>,
    /// Where the terminal event's response was written.
    terminal_response: Option<std::ops::Range<usize>>,
}

/// The events and part of one kind of reasoning text: its content (`reasoning_text`) or
/// a summary (`summary_text`).
struct ReasoningPart {
    part_added: &'static str,
    /// The part as added, with its text empty.
    empty_part: &'static [u8],
    delta: &'static str,
    done: &'static str,
    part_done: &'static str,
    /// The part as done, up to its text.
    part_head: &'static [u8],
}

const REASONING_TEXT: ReasoningPart = ReasoningPart {
    part_added: "response.content_part.added",
    empty_part: br#"{"type":"reasoning_text","text":""}"#,
    delta: "response.reasoning_text.delta",
    done: "response.reasoning_text.done",
    part_done: "response.content_part.done",
    part_head: br#"{"type":"reasoning_text","text":"#,
};

const SUMMARY_TEXT: ReasoningPart = ReasoningPart {
    part_added: "response.reasoning_summary_part.added",
    empty_part: br#"{"type":"summary_text","text":""}"#,
    delta: "response.reasoning_summary_text.delta",
    done: "response.reasoning_summary_text.done",
    part_done: "response.reasoning_summary_part.done",
    part_head: br#"{"type":"summary_text","text":"#,
};

/// Where a delta or part event belongs: `item_id`, `output_index` and, for a part, its
/// `summary_index` or `content_index`. Written into the first of its events, and copied
/// from there into the others.
struct At<'i, I> {
    item: &'i I,
    output_index: usize,
    part: Option<(&'static str, usize)>,
    /// Where the fields were first written in the stream's bytes.
    written: Option<std::ops::Range<usize>>,
}

impl<'i, I: StreamedItem> At<'i, I> {
    fn new(item: &'i I, output_index: usize, part: Option<(&'static str, usize)>) -> Self {
        Self {
            item,
            output_index,
            part,
            written: None,
        }
    }

    /// Writes the fields at the end of `out`, the bytes of the stream being planned.
    fn write(&mut self, out: &mut Vec<u8>) {
        if let Some(written) = self.written.clone() {
            out.extend_from_within(written);
            return;
        }
        let start = out.len();
        raw_field(out, "item_id", b"");
        self.item.write_id(out);
        field(out, "output_index", &self.output_index);
        if let Some((key, index)) = self.part {
            field(out, key, &index);
        }
        self.written = Some(start..out.len());
    }
}

impl Builder<'_> {
    /// Starts event `kind` (a plain word: it needs no escaping): its frame up to the
    /// `type` field; fields follow with [`field`], and [`Builder::end`] closes it.
    #[inline]
    fn start(&mut self, kind: &'static str) -> &mut Vec<u8> {
        let out = &mut self.out;
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\ndata: {\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.push(b'"');
        out
    }

    /// Ends the event started last: a delta gets its `obfuscation` padding, every event
    /// its `sequence_number`.
    fn end(&mut self, delta: bool) {
        if delta && self.obfuscate {
            // Base62 needs no escaping: copied straight into the event.
            raw_field(&mut self.out, "obfuscation", b"\"");
            self.out.extend_from_slice((self.padding)());
            self.out.push(b'"');
        }
        let number = self.ends.len();
        field(&mut self.out, "sequence_number", &number);
        self.out.extend_from_slice(b"}\n\n");
        self.ends.push(self.out.len());
    }

    /// `{"type": kind, "delta": piece, <at>}` as the API orders it; an output text
    /// delta with its `logprobs` (the piece's tokens' when `tokens`, else empty).
    fn delta<I: StreamedItem>(
        &mut self,
        kind: &'static str,
        piece: &str,
        at: &mut At<'_, I>,
        logprobs: Logprobs,
    ) {
        let out = self.start(kind);
        field(out, "delta", piece);
        match logprobs {
            Logprobs::Absent => {}
            Logprobs::Empty => raw_field(out, "logprobs", b"[]"),
            Logprobs::Tokens => {
                raw_field(out, "logprobs", b"");
                write_logprobs(out, piece, false);
            }
        }
        at.write(out);
        self.end(true);
    }

    /// The events of one text part of a reasoning item: the part added empty, its text
    /// in deltas, the text done, and the part done with its text.
    fn reasoning_part<I: StreamedItem>(
        &mut self,
        kind: &ReasoningPart,
        mut at: At<'_, I>,
        text: &str,
        size: usize,
    ) {
        let out = self.start(kind.part_added);
        raw_field(out, "part", kind.empty_part);
        at.write(out);
        self.end(false);
        for piece in pieces(text, size) {
            self.delta(kind.delta, piece, &mut at, Logprobs::Absent);
        }
        let out = self.start(kind.done);
        field(out, "text", text);
        at.write(out);
        self.end(false);
        let out = self.start(kind.part_done);
        raw_field(out, "part", kind.part_head);
        value_to(out, text);
        out.push(b'}');
        at.write(out);
        self.end(false);
    }

    /// A lifecycle event carrying the response (as a snapshot while it runs; two events
    /// in a row carry the same snapshot, written once).
    fn lifecycle(&mut self, kind: &'static str, snapshot: Option<&'static str>) {
        let response = self.response;
        let last = self.last_snapshot.take();
        let out = self.start(kind);
        raw_field(out, "response", b"");
        let start = out.len();
        match (last, snapshot) {
            (Some((status, written)), Some(now)) if status == now => {
                out.extend_from_within(written);
            }
            _ => response.write(out, snapshot),
        }
        let written = start..self.out.len();
        match snapshot {
            Some(status) => self.last_snapshot = Some((status, written)),
            None => self.terminal_response = Some(written),
        }
        self.end(false);
    }

    /// `response.output_item.added` or `.done` for `item`, with some fields set.
    fn item<I: StreamedItem>(
        &mut self,
        kind: &'static str,
        index: usize,
        item: &I,
        set: &[(&str, Set<'_>)],
    ) {
        let response = self.response;
        let out = self.start(kind);
        field(out, "output_index", &index);
        raw_field(out, "item", b"");
        if !response.write_item_with(index, set, out) {
            item.write_with(out, set);
        }
        self.end(false);
    }

    /// `response.function_call_arguments.done` for output item `index`: its arguments
    /// copied as the response wrote them, escaped once, or written by `write` when the
    /// response cannot give them.
    fn arguments_done<I: StreamedItem>(
        &mut self,
        index: usize,
        at: &mut At<'_, I>,
        write: impl FnOnce(&mut Vec<u8>),
    ) {
        let written = self.response.item_field_json(index, "arguments");
        let out = self.start("response.function_call_arguments.done");
        raw_field(out, "arguments", written.unwrap_or_default());
        if written.is_none() {
            write(out);
        }
        at.write(out);
        self.end(false);
    }

    /// A function call's `output_item.done`, remembered for the oracle.
    fn call_done<I: StreamedItem>(&mut self, index: usize, item: &I) {
        self.call_done
            .push((self.ends.len(), item.call_id().to_owned()));
        self.done(index, item);
    }

    /// `response.output_item.done`: the item as the response holds it.
    fn done<I: StreamedItem>(&mut self, index: usize, item: &I) {
        let response = self.response;
        let out = self.start("response.output_item.done");
        field(out, "output_index", &index);
        raw_field(out, "item", b"");
        match response.item_json(index) {
            Some(json) => out.extend_from_slice(json),
            None => item.write_with(out, &[]),
        }
        self.end(false);
    }
}

/// A function call as announced: in progress, no arguments yet.
const CALL_ADDED: [(&str, Set<'static>); 2] = [
    ("status", Set::Str("in_progress")),
    ("arguments", Set::Str("")),
];

/// A computer call or a tool search as `output_item.added` announces it: in progress.
const COMPUTER_CALL_ADDED: [(&str, Set<'static>); 1] = [("status", Set::Str("in_progress"))];

/// A custom tool call as `output_item.added` announces it: its input empty.
const CUSTOM_CALL_ADDED: [(&str, Set<'static>); 1] = [("input", Set::Str(""))];

/// A hosted tool's item as announced: still running.
const HOSTED_ADDED: [(&str, Set<'static>); 1] = [("status", Set::Str("in_progress"))];

/// A hosted tool's item up to its `done`: added (in progress, where the kind has a
/// status, and its streamed text empty), then its progress events (the last one `failed`
/// for an item with an `error`, where the kind has that event), its streamed text after
/// the first of them, in deltas and whole.
fn hosted_events<I: StreamedItem>(
    b: &mut Builder,
    index: usize,
    item: &I,
    kind: HostedKind,
    size: usize,
) {
    let mut added: Vec<(&str, Set<'_>)> = Vec::with_capacity(2);
    if kind.has_status {
        added.extend(HOSTED_ADDED);
    }
    if let Some(text) = kind.streamed_text {
        added.push((text.field, Set::Str("")));
    }
    b.item("response.output_item.added", index, item, &added);
    let mut at = At::new(item, index, None);
    let last = kind.progress.len().saturating_sub(1);
    for (step, event) in kind.progress.iter().enumerate() {
        let event = match kind.failed {
            Some(failed) if step == last && item.has_error() => failed,
            _ => event,
        };
        let out = b.start(event);
        at.write(out);
        b.end(false);
        if let (0, Some(text)) = (step, kind.streamed_text) {
            let whole = item.hosted_text(text.field);
            for piece in pieces(whole, size) {
                b.delta(text.delta, piece, &mut at, Logprobs::Absent);
            }
            let out = b.start(text.done);
            field(out, text.field, whole);
            at.write(out);
            b.end(false);
        }
    }
}

/// Plans the stream of `response` (the final Response object).
pub fn plan(
    response: &dyn StreamedResponse,
    spec: &StreamSpec,
    ids: &mut IdGen,
    obfuscate: bool,
) -> StreamFrames {
    plan_padded(response, spec, &mut || ids.padding(), obfuscate)
}

/// [`plan`], each delta's padding taken from `padding` (a compiled stream marks where
/// each goes).
pub(in crate::server) fn plan_padded(
    response: &dyn StreamedResponse,
    spec: &StreamSpec,
    padding: &mut dyn FnMut() -> &'static [u8],
    obfuscate: bool,
) -> StreamFrames {
    let mut b = Builder {
        response,
        out: Vec::with_capacity(8192),
        // Room for a typical stream's events without growing.
        ends: Vec::with_capacity(32),
        padding,
        obfuscate,
        call_done: Vec::new(),
        last_snapshot: None,
        terminal_response: None,
    };
    let background = response.background();
    let created = if background { "queued" } else { "in_progress" };
    b.lifecycle("response.created", Some(created));
    if background {
        b.lifecycle("response.queued", Some("queued"));
    }
    b.lifecycle("response.in_progress", Some("in_progress"));
    match response.items() {
        Items::Values(items) => plan_items(&mut b, items, spec),
        Items::Generated(items) => plan_items(&mut b, items, spec),
    }
    let terminal = match response.status() {
        "incomplete" => "response.incomplete",
        "failed" => "response.failed",
        _ => "response.completed",
    };
    b.lifecycle(terminal, None);
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
        b.call_done.retain(|(index, _)| *index < after);
        // The terminal event is gone with the rest after `after`.
        b.terminal_response = None;
    }
    let events = b.ends.len();
    StreamFrames {
        bytes: Bytes::from(b.out),
        ends: b.ends,
        cut_after: spec.cut_after.map(|n| n.min(events.saturating_sub(1))),
        delay: Duration::from_millis(spec.delay_ms),
        pauses: Vec::new(),
        chunk_bytes: spec.chunk_bytes.filter(|&n| n > 0),
        call_done: b.call_done,
        terminal_response: b.terminal_response,
    }
}

/// What a text delta says of its tokens' log probabilities.
#[derive(Clone, Copy)]
enum Logprobs {
    /// No `logprobs` field (a refusal's, a call's arguments' deltas).
    Absent,
    /// `logprobs: []`: an output text delta of a request that did not ask for them.
    Empty,
    /// The piece's tokens' log probabilities.
    Tokens,
}

/// The events of every output item: added, its deltas and parts, done.
fn plan_items<I: StreamedItem>(b: &mut Builder, output: &[I], spec: &StreamSpec) {
    let size = spec.delta_size.unwrap_or(8);
    let mut interleaved = 0..0;
    for (index, item) in output.iter().enumerate() {
        if interleaved.contains(&index) {
            continue;
        }
        if spec.interleave && item.item_type() == "function_call" {
            let run = output[index..]
                .iter()
                .take_while(|item| item.item_type() == "function_call")
                .count();
            if run > 1 {
                interleaved = index..index + run;
                interleave_calls(b, output, interleaved.clone(), size);
                continue;
            }
        }
        match item.item_type() {
            "reasoning" => {
                // The added event's content "may be incomplete".
                let content = item.encrypted_content();
                let half = content.map_or("", |content| &content[..content.len() / 2]);
                let texts = item.reasoning_text();
                let added = [
                    ("encrypted_content", Set::Str(half)),
                    ("summary", Set::EmptyArray),
                    ("content", Set::EmptyArray),
                ];
                let from = usize::from(content.is_none());
                let to = if texts.is_empty() { 2 } else { 3 };
                b.item("response.output_item.added", index, item, &added[from..to]);
                // The reasoning comes before its summary, as the model writes it.
                for (c, text) in texts.into_iter().enumerate() {
                    let at = At::new(item, index, Some(("content_index", c)));
                    b.reasoning_part(&REASONING_TEXT, at, text, size);
                }
                for (s, text) in item.summary().into_iter().enumerate() {
                    let at = At::new(item, index, Some(("summary_index", s)));
                    b.reasoning_part(&SUMMARY_TEXT, at, text, size);
                }
            }
            "message" => {
                let added = [
                    ("status", Set::Str("in_progress")),
                    ("content", Set::EmptyArray),
                ];
                b.item("response.output_item.added", index, item, &added);
                for (c, part) in item.content().iter().enumerate() {
                    let mut at = At::new(item, index, Some(("content_index", c)));
                    let text = part.text;
                    if part.refusal {
                        let out = b.start("response.content_part.added");
                        raw_field(out, "part", br#"{"type":"refusal","refusal":""}"#);
                        at.write(out);
                        b.end(false);
                        for piece in pieces(text, size) {
                            b.delta("response.refusal.delta", piece, &mut at, Logprobs::Absent);
                        }
                        let out = b.start("response.refusal.done");
                        field(out, "refusal", text);
                        at.write(out);
                        b.end(false);
                    } else {
                        let out = b.start("response.content_part.added");
                        raw_field(
                            out,
                            "part",
                            br#"{"type":"output_text","annotations":[],"logprobs":[],"text":""}"#,
                        );
                        at.write(out);
                        b.end(false);
                        for piece in pieces(text, size) {
                            let logprobs = match part.logprobs {
                                true => Logprobs::Tokens,
                                false => Logprobs::Empty,
                            };
                            b.delta("response.output_text.delta", piece, &mut at, logprobs);
                        }
                        // Each annotation once the text is out, at the next index: the
                        // SDKs' accumulators append it to the part's annotations.
                        for (a, annotation) in part.annotations.iter().enumerate() {
                            let out = b.start("response.output_text.annotation.added");
                            field(out, "annotation", annotation);
                            field(out, "annotation_index", &a);
                            at.write(out);
                            b.end(false);
                        }
                        let out = b.start("response.output_text.done");
                        field(out, "text", text);
                        match part.logprobs {
                            true => {
                                raw_field(out, "logprobs", b"");
                                write_logprobs(out, text, false);
                            }
                            false => raw_field(out, "logprobs", b"[]"),
                        }
                        at.write(out);
                        b.end(false);
                    }
                    let out = b.start("response.content_part.done");
                    raw_field(out, "part", b"");
                    part.whole.write(out);
                    at.write(out);
                    b.end(false);
                }
            }
            "function_call" => {
                b.item("response.output_item.added", index, item, &CALL_ADDED);
                let arguments = item.arguments();
                let mut at = At::new(item, index, None);
                let mut delta = |piece| {
                    b.delta(
                        "response.function_call_arguments.delta",
                        piece,
                        &mut at,
                        Logprobs::Absent,
                    );
                };
                if spec.split_at.is_empty() {
                    pieces(arguments, size).for_each(&mut delta);
                } else {
                    split_at(arguments, &spec.split_at)
                        .into_iter()
                        .for_each(delta);
                }
                b.arguments_done(index, &mut at, |out| value_to(out, arguments));
            }
            "custom_tool_call" => {
                b.item(
                    "response.output_item.added",
                    index,
                    item,
                    &CUSTOM_CALL_ADDED,
                );
                let input = item.input();
                let mut at = At::new(item, index, None);
                for piece in pieces(input, size) {
                    b.delta(
                        "response.custom_tool_call_input.delta",
                        piece,
                        &mut at,
                        Logprobs::Absent,
                    );
                }
                let out = b.start("response.custom_tool_call_input.done");
                field(out, "input", input);
                at.write(out);
                b.end(false);
            }
            kind if hosted::of_item(kind).is_some() => {
                if let Some(kind) = hosted::of_item(kind) {
                    hosted_events(b, index, item, kind, size);
                }
            }
            "shell_call" => plan_shell_call(b, index, item, size),
            // A computer call and a tool search have no events of their own: announced
            // in progress, whole.
            "computer_call" | "tool_search_call" | "tool_search_output" => b.item(
                "response.output_item.added",
                index,
                item,
                &COMPUTER_CALL_ADDED,
            ),
            kind if call_kind::of_call(kind).is_some_and(|k| k.runs_on_client()) => b.item(
                "response.output_item.added",
                index,
                item,
                &[("status", Set::Str("in_progress"))],
            ),
            // Server-side compaction: the item, then the event that it is being sampled.
            "compaction" => {
                b.item("response.output_item.added", index, item, &[]);
                let out = b.start("response.compaction.compacting");
                At::new(item, index, None).write(out);
                b.end(false);
            }
            _ => b.item("response.output_item.added", index, item, &[]),
        }
        // A server-executed tool search has no call_id: hosted, nothing to execute.
        if call_kind::of_call(item.item_type()).is_some_and(|k| k.runs_on_client())
            && !item.call_id().is_empty()
        {
            b.call_done(index, item);
        } else {
            b.done(index, item);
        }
    }
}

/// A `shell_call` up to its `output_item.done`: announced in progress with no commands
/// yet, then each command added empty, its text in deltas, and done, as the SDKs'
/// accumulators append each `response.shell_call_command.added` to the action's commands.
/// These events name the item by `output_index` alone (no `item_id`).
fn plan_shell_call<I: StreamedItem>(b: &mut Builder, index: usize, item: &I, size: usize) {
    let mut whole = Vec::new();
    item.write_with(&mut whole, &[]);
    let mut announced: Value = serde_json::from_slice(&whole).unwrap_or(Value::Null);
    let commands: Vec<String> = announced["action"]["commands"]
        .as_array()
        .map(|commands| {
            commands
                .iter()
                .map(|c| c.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    if announced.is_object() {
        announced["status"] = json!("in_progress");
        if announced["action"].is_object() {
            announced["action"]["commands"] = json!([]);
        }
    }
    let out = b.start("response.output_item.added");
    field(out, "output_index", &index);
    field(out, "item", &announced);
    b.end(false);
    for (c, command) in commands.iter().enumerate() {
        let out = b.start("response.shell_call_command.added");
        field(out, "command", "");
        field(out, "command_index", &c);
        field(out, "output_index", &index);
        b.end(false);
        for piece in pieces(command, size) {
            let out = b.start("response.shell_call_command.delta");
            field(out, "command_index", &c);
            field(out, "delta", piece);
            field(out, "output_index", &index);
            b.end(true);
        }
        let out = b.start("response.shell_call_command.done");
        field(out, "command", command.as_str());
        field(out, "command_index", &c);
        field(out, "output_index", &index);
        b.end(false);
    }
}

/// Streams consecutive function calls side by side: every call opened, then their
/// argument deltas in turns, then each closed. Legal by the event schema (every delta
/// names its item and output_index), and what a client that appends each delta to the
/// latest call it saw gets wrong.
fn interleave_calls<I: StreamedItem>(
    b: &mut Builder,
    output: &[I],
    calls: std::ops::Range<usize>,
    size: usize,
) {
    let (mut calls_pieces, mut ats) = (Vec::new(), Vec::new());
    for index in calls.clone() {
        b.item(
            "response.output_item.added",
            index,
            &output[index],
            &CALL_ADDED,
        );
        calls_pieces.push(pieces(output[index].arguments(), size).collect::<Vec<_>>());
        ats.push(At::new(&output[index], index, None));
    }
    let turns = calls_pieces.iter().map(Vec::len).max().unwrap_or(0);
    for turn in 0..turns {
        for (call, at) in calls_pieces.iter().zip(&mut ats) {
            if let Some(piece) = call.get(turn) {
                b.delta(
                    "response.function_call_arguments.delta",
                    piece,
                    at,
                    Logprobs::Absent,
                );
            }
        }
    }
    for (index, at) in calls.zip(&mut ats) {
        let item = &output[index];
        b.arguments_done(index, at, |out| item.write_arguments(out));
        b.call_done(index, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn split_keeps_every_character_once() {
        let split = |text, size| pieces(text, size).collect::<Vec<_>>();
        assert_eq!(
            split("{\"city\":\"Zürich\"}", 4).concat(),
            "{\"city\":\"Zürich\"}"
        );
        assert_eq!(split_at("abcdef", &[1, 3]), vec!["a", "bc", "def"]);
        assert_eq!(split_at("abcdef", &[0, 9, 3, 3]), vec!["abc", "def"]);
        assert_eq!(split("", 8), vec![""]);
        assert_eq!(split_at("", &[1]), vec![""]);
        // Pieces count characters, not bytes.
        assert_eq!(split("aüb€cde", 2), vec!["aü", "b€", "cd", "e"]);
        assert_eq!(split("abcd", 2), vec!["ab", "cd"]);
        assert_eq!(split("abc", 0), vec!["a", "b", "c"]);
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
            frames
                .call_done
                .first()
                .map(|(_, call_id)| call_id.as_str()),
            Some("call_1")
        );
    }

    /// Each annotation of a text part is announced after the text's deltas and before
    /// its `output_text.done`, at indices counting from zero, and the part written whole
    /// at `content_part.done` carries them all.
    #[test]
    fn annotations_are_added_one_event_each_after_the_text() {
        let url = json!({"type": "url_citation", "start_index": 0, "end_index": 5, "title": "T", "url": "https://example.com/"});
        let file =
            json!({"type": "file_citation", "file_id": "file-1", "filename": "a.md", "index": 11});
        let response = json!({"id": "resp_1", "status": "completed", "background": false, "output": [
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [
                {"type": "output_text", "annotations": [url, file], "logprobs": [], "text": "Ghent, cited"}
            ]}
        ]});
        let frames = plan(&response, &StreamSpec::default(), &mut IdGen::new(1), false);
        let events = frames.events();
        let at = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
        let added: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "response.output_text.annotation.added")
            .collect();
        assert_eq!(added.len(), 2);
        for (index, (event, annotation)) in added.iter().zip([&url, &file]).enumerate() {
            assert_eq!(event["annotation_index"], index);
            assert_eq!(&event["annotation"], annotation);
            assert_eq!(event["item_id"], "msg_1");
            assert_eq!(event["content_index"], 0);
        }
        let first = at("response.output_text.annotation.added");
        assert!(at("response.output_text.delta") < first);
        assert!(first < at("response.output_text.done"));
        let done = &events[at("response.content_part.done")];
        assert_eq!(done["part"]["annotations"], json!([url, file]));
    }

    /// A reasoning item's `reasoning_text` part streams in its own content part events,
    /// before the summary's, and the added item announces an empty `content`.
    #[test]
    fn reasoning_text_streams_in_content_part_events_before_the_summary() {
        let response = json!({"id": "resp_1", "status": "completed", "background": false, "output": [
            {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA",
             "summary": [{"type": "summary_text", "text": "Short."}],
             "content": [{"type": "reasoning_text", "text": "Long thought."}]}
        ]});
        let frames = plan(&response, &StreamSpec::default(), &mut IdGen::new(1), false);
        let events = frames.events();
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        let at = |kind: &str| types.iter().position(|t| *t == kind).unwrap();
        assert_eq!(
            events[at("response.output_item.added")]["item"]["content"],
            json!([])
        );
        assert_eq!(
            events[at("response.content_part.added")]["part"],
            json!({"type": "reasoning_text", "text": ""})
        );
        let deltas: String = events
            .iter()
            .filter(|e| e["type"] == "response.reasoning_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, "Long thought.");
        assert_eq!(
            events[at("response.reasoning_text.done")]["text"],
            "Long thought."
        );
        assert_eq!(
            events[at("response.reasoning_text.done")]["content_index"],
            0
        );
        assert_eq!(
            events[at("response.content_part.done")]["part"]["text"],
            "Long thought."
        );
        assert!(at("response.content_part.done") < at("response.reasoning_summary_part.added"));
    }

    #[test]
    fn the_terminal_events_response_is_noted_and_follows_a_resumed_stream() {
        let response = json!({"id": "resp_1", "status": "completed", "background": false, "output": [
            {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{}", "call_id": "call_1", "name": "f"}
        ]});
        let frames = plan(&response, &StreamSpec::default(), &mut IdGen::new(1), true);
        let terminal = frames.terminal_response().expect("a terminal response");
        assert_eq!(
            serde_json::from_slice::<Value>(&terminal).unwrap(),
            response
        );
        let resumed = frames.resumed_after(3);
        assert_eq!(resumed.terminal_response(), Some(terminal));
        // A stream that breaks off with an error event has no terminal response.
        let spec = StreamSpec {
            error: Some(crate::scenario::StreamError {
                after: 2,
                shape: ErrorShape::Flat,
                code: "server_error".into(),
                message: "boom".into(),
            }),
            ..StreamSpec::default()
        };
        let broken = plan(&response, &spec, &mut IdGen::new(1), true);
        assert_eq!(broken.last_type(), Some("error"));
        assert_eq!(broken.terminal_response(), None);
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
