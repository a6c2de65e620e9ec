//! Scripted turns compiled once per session: a turn served again (an endless turn, a
//! retried one) is written on every serving with the same bytes but for a few values.
//! Those are the ids, `call_id`s and encrypted content the serving draws, each delta's
//! padding, and the response snapshots, which echo the request.
//!
//! Compiling writes the turn's output items, and its stream, through the same writers a
//! serving runs, with a marker in place of each such value. The bytes are then split into
//! literal runs and holes. Serving a compiled turn copies the runs and fills the holes,
//! drawing from the session's generator in the same order as the writers would.
//!
//! A turn is compiled at its second serving, from that serving's own answer: the compiled
//! form, filled with that serving's values, must give back exactly the bytes the writers
//! gave, or the turn is not compiled. A turn served once is never compiled.
//!
//! Everything here is the server's own (`pub(super)`): the rest of the crate sees only
//! what a turn served either way gives.
//!
//! Off switch: `LOOPCHECK_PLAIN_TURNS=1` in the environment makes every session plan
//! each turn at each serving, as it does a turn's first, and compile none. It is read
//! once per process, when the first session is made; to measure what compiling gives,
//! or to rule it out.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use bytes::Bytes;

use super::script::{self, Draws, Issued};
use super::stream::{Items, Prerendered, StreamFrames, StreamedResponse, plan_padded};
use crate::scenario::{OutputSpec, Turn};
use crate::wire::item::{self, OutputItem};
use crate::wire::response::{Layout, ResponseParts};
use crate::wire::{CreateRequest, IdGen};

/// What starts and ends a marker: characters of Unicode's private use area, which every
/// JSON writer here writes as they are.
const MARK_START: &str = "\u{E000}";
const MARK_END: &str = "\u{E001}";

/// A marker's length: start, kind, two hex digits of an item's index, end. Every marker
/// has it, so the first half of an encrypted content's two markers is the first marker.
const MARKER_LEN: usize = MARK_START.len() + 3 + MARK_END.len();

/// At most this many output items: their index is two hex digits.
const MAX_ITEMS: usize = 256;

/// Room in a filled stream beyond the last one's length: its paddings may be longer.
const LEN_SLACK: usize = 256;

/// The marker of a delta's padding.
const PADDING_MARKER: &[u8] = "\u{E000}p00\u{E001}".as_bytes();

/// What a hole is filled with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Hole {
    /// Output item `n`'s `id`.
    ItemId(usize),
    /// Output item `n`'s `call_id`.
    CallId(usize),
    /// The first half of reasoning item `n`'s `encrypted_content` (what its
    /// `output_item.added` carries), and the rest.
    EncryptedHead(usize),
    EncryptedTail(usize),
    /// A delta's `obfuscation` padding, drawn.
    Padding,
    /// The response as it looks with a status, before it ends.
    Snapshot(&'static str),
    /// The final response.
    Terminal,
}

impl Hole {
    /// The marker's kind letter.
    fn kind(self) -> u8 {
        match self {
            Hole::ItemId(_) => b'i',
            Hole::CallId(_) => b'c',
            Hole::EncryptedHead(_) => b'h',
            Hole::EncryptedTail(_) => b't',
            Hole::Padding => b'p',
            Hole::Snapshot("queued") => b'q',
            Hole::Snapshot(_) => b'r',
            Hole::Terminal => b'T',
        }
    }

    /// The hole a marker's kind and index stand for.
    fn of(kind: u8, index: usize) -> Option<Hole> {
        Some(match kind {
            b'i' => Hole::ItemId(index),
            b'c' => Hole::CallId(index),
            b'h' => Hole::EncryptedHead(index),
            b't' => Hole::EncryptedTail(index),
            b'p' => Hole::Padding,
            b'q' => Hole::Snapshot("queued"),
            b'r' => Hole::Snapshot("in_progress"),
            b'T' => Hole::Terminal,
            _ => return None,
        })
    }

    /// Its marker.
    fn marker(self) -> String {
        let index = match self {
            Hole::ItemId(n) | Hole::CallId(n) | Hole::EncryptedHead(n) | Hole::EncryptedTail(n) => {
                n
            }
            _ => 0,
        };
        format!("{MARK_START}{}{index:02x}{MARK_END}", self.kind() as char)
    }

    /// Writes an item's value (nothing for a hole that is not an item's).
    #[inline]
    fn write_item_value(self, items: &[OutputItem<'_>], out: &mut Vec<u8>) {
        let value = match self {
            Hole::ItemId(n) => items.get(n).map(OutputItem::id),
            Hole::CallId(n) => items.get(n).and_then(OutputItem::call_id),
            Hole::EncryptedHead(n) | Hole::EncryptedTail(n) => items
                .get(n)
                .and_then(OutputItem::encrypted_content)
                .map(|content| {
                    let (head, tail) = content.split_at(content.len() / 2);
                    if matches!(self, Hole::EncryptedHead(_)) {
                        head
                    } else {
                        tail
                    }
                }),
            _ => None,
        };
        out.extend_from_slice(value.unwrap_or_default().as_bytes());
    }
}

/// Bytes with holes: literal runs, each followed by a hole (the last by none), and
/// where in the literal bytes each event ends.
#[derive(Debug)]
struct Template {
    bytes: Vec<u8>,
    /// Each hole, after the literal bytes up to `.0`.
    holes: Vec<(usize, Hole)>,
    /// Where each event ends in the literal bytes, in order.
    ends: Vec<usize>,
}

impl Template {
    /// Splits bytes written with markers; `ends` are where events end in them. `None`
    /// when a marker does not read as one (a scripted text holding a marker's start
    /// character) or an event ends inside one.
    fn parse(written: &[u8], ends: &[usize]) -> Option<Template> {
        let start = MARK_START.as_bytes();
        let events = ends.len();
        let mut template = Template {
            bytes: Vec::with_capacity(written.len()),
            holes: Vec::new(),
            ends: Vec::with_capacity(ends.len()),
        };
        let mut ends = ends.iter().copied().peekable();
        let mut at = 0;
        loop {
            while ends.next_if(|&end| end <= at).is_some() {
                template.ends.push(template.bytes.len());
            }
            if at == written.len() {
                break;
            }
            if !written[at..].starts_with(start) {
                template.bytes.push(written[at]);
                at += 1;
                continue;
            }
            let marker = written.get(at..at + MARKER_LEN)?;
            let rest = &marker[start.len()..];
            let index = std::str::from_utf8(&rest[1..3]).ok()?;
            let index = usize::from_str_radix(index, 16).ok()?;
            if &rest[3..] != MARK_END.as_bytes()
                || ends.peek().is_some_and(|&end| end < at + MARKER_LEN)
            {
                return None;
            }
            template
                .holes
                .push((template.bytes.len(), Hole::of(rest[0], index)?));
            at += MARKER_LEN;
        }
        (template.ends.len() == events).then_some(template)
    }

    /// Writes the template, each hole by `fill`; returns where each event ends in `out`.
    fn fill(&self, out: &mut Vec<u8>, mut fill: impl FnMut(Hole, &mut Vec<u8>)) -> Vec<usize> {
        let mut ends = Vec::with_capacity(self.ends.len());
        let mut pending = self.ends.iter().copied().peekable();
        // Copies the literal bytes up to `at`, noting the events that end in them.
        let mut copy_literal = |out: &mut Vec<u8>, from: usize, at: usize| {
            out.extend_from_slice(&self.bytes[from..at]);
            while let Some(end) = pending.next_if(|&end| end <= at) {
                ends.push(out.len() - (at - end));
            }
        };
        let mut literal = 0;
        for &(at, hole) in &self.holes {
            copy_literal(out, literal, at);
            fill(hole, out);
            literal = at;
        }
        copy_literal(out, literal, self.bytes.len());
        ends
    }
}

/// Draws markers in place of a serving's values.
struct Marked;

impl Draws for Marked {
    fn item_id(&mut self, _: &str, index: usize) -> String {
        Hole::ItemId(index).marker()
    }

    fn encrypted_content(&mut self, index: usize) -> String {
        Hole::EncryptedHead(index).marker() + &Hole::EncryptedTail(index).marker()
    }

    fn call_id(&mut self, index: usize) -> String {
        Hole::CallId(index).marker()
    }

    fn fingerprint(&mut self, _: usize) -> String {
        // Programs are not compiled (see `compilable`): nothing reads this.
        String::new()
    }
}

/// Whether a turn can be compiled: scripted, and without programs, whose items carry
/// values the session's earlier turns decided (a call's `caller`, an output's program).
fn compilable(turn: &Turn) -> bool {
    turn.recorded.is_none()
        && turn.output.len() <= MAX_ITEMS
        && turn.output.iter().all(|spec| match spec {
            OutputSpec::Call(call) => call.caller.is_none(),
            OutputSpec::Program(_) | OutputSpec::ProgramOutput(_) => false,
            // Served by the writers and the planner: rare enough not to be compiled.
            OutputSpec::CustomCall(_)
            | OutputSpec::ShellCall(_)
            | OutputSpec::LocalShellCall(_)
            | OutputSpec::ApplyPatchCall(_)
            | OutputSpec::McpApproval(_)
            | OutputSpec::Hosted(_)
            | OutputSpec::Compaction(_)
            | OutputSpec::ComputerCall(_)
            | OutputSpec::ToolSearchCall(_)
            | OutputSpec::ToolSearchOutput(_) => false,
            _ => true,
        })
}

/// A turn's output items with markers for their drawn values.
fn marked_items(turn: &Turn) -> Vec<OutputItem<'_>> {
    script::output_items(turn, &mut Marked, &mut Issued::default())
}

/// A compiled turn: its output items, and its stream for each way a request asks for
/// one (in the background or not, with padding or without), compiled when first served.
#[derive(Debug)]
pub(super) struct CompiledTurn {
    output: Template,
    streams: [OnceLock<Option<CompiledStream>>; 4],
}

impl CompiledTurn {
    /// Compiles `turn`, served with `items`: `None` when it cannot be, or when its
    /// compiled output filled with `items` is not what the item writer writes of them.
    fn compile(turn: &Turn, items: &[OutputItem<'_>]) -> Option<CompiledTurn> {
        if !compilable(turn) {
            return None;
        }
        let mut written = Vec::new();
        item::write_all(&mut written, &marked_items(turn), None);
        let compiled = CompiledTurn {
            output: Template::parse(&written, &[])?,
            streams: Default::default(),
        };
        let (mut expected, mut filled) = (Vec::new(), Vec::new());
        item::write_all(&mut expected, items, None);
        compiled.write_output(items, &mut filled);
        (filled == expected).then_some(compiled)
    }

    /// Writes the output items, as the array a response holds.
    pub(super) fn write_output(&self, items: &[OutputItem<'_>], out: &mut Vec<u8>) {
        self.output
            .fill(out, |hole, out| hole.write_item_value(items, out));
    }

    /// The stream compiled for a request in the background or not, with padding or
    /// without, once it is.
    pub(super) fn stream(&self, background: bool, obfuscate: bool) -> Option<&CompiledStream> {
        self.streams[Self::slot(background, obfuscate)]
            .get()
            .and_then(Option::as_ref)
    }

    fn slot(background: bool, obfuscate: bool) -> usize {
        usize::from(background) * 2 + usize::from(obfuscate)
    }
}

/// A compiled stream: its events' bytes with holes, and how they are delivered.
#[derive(Debug)]
pub(super) struct CompiledStream {
    template: Template,
    /// Each function call's `output_item.done`: its event index and the call's item.
    call_done: Vec<(usize, usize)>,
    /// The frames' delivery, as planned (its bytes, ends and calls left empty).
    delivery: StreamFrames,
    /// The length of the stream last served: room for the next, which differs by its
    /// paddings and the request its snapshots echo.
    last_len: AtomicUsize,
    /// Paddings drawn for events an in-stream error then replaced: drawn after the
    /// others, as the planner draws them.
    dropped_paddings: usize,
}

impl CompiledStream {
    /// Compiles the stream of `turn` for a request in the background or not, with
    /// padding or without.
    fn compile(turn: &Turn, background: bool, obfuscate: bool) -> Option<CompiledStream> {
        let items = marked_items(turn);
        let body = match background {
            true => br#"{"stream":true,"background":true}"#.as_slice(),
            false => br#"{"stream":true}"#.as_slice(),
        };
        let request = CreateRequest::from_json(body).ok()?;
        let parts = ResponseParts {
            id: "resp",
            created_at: 0,
            status: script::response_status(turn),
            output: &items,
            write_output: None,
            request: &request,
            incomplete_reason: None,
            error: None,
            conversation: None,
        };
        let mut json = Vec::new();
        let layout = parts.write_spanned(&mut json);
        let response = Marking(Prerendered {
            response: &parts,
            json: &json,
            layout: Some(&layout),
        });
        let mut paddings = 0;
        let mut padding = || {
            paddings += 1;
            PADDING_MARKER
        };
        let planned = plan_padded(&response, &turn.stream, &mut padding, obfuscate);
        let call_done = planned
            .call_done
            .iter()
            .map(|(event, call_id)| {
                let marker = call_id.as_bytes();
                match Template::parse(marker, &[])?.holes[..] {
                    [(0, Hole::CallId(item))] => Some((*event, item)),
                    _ => None,
                }
            })
            .collect::<Option<Vec<_>>>()?;
        let template = Template::parse(&planned.bytes, &planned.ends)?;
        let holes = template
            .holes
            .iter()
            .filter(|(_, hole)| *hole == Hole::Padding);
        let dropped_paddings = paddings - holes.count();
        Some(CompiledStream {
            dropped_paddings,
            last_len: AtomicUsize::new(planned.bytes.len()),
            template,
            call_done,
            delivery: StreamFrames {
                bytes: Bytes::new(),
                ends: Vec::new(),
                call_done: Vec::new(),
                terminal_response: None,
                ..planned
            },
        })
    }

    /// The stream of a response whose items are `items`, written as `json` (laid out as
    /// `layout`), each padding drawn from `ids`.
    pub(super) fn fill(
        &self,
        items: &[OutputItem<'_>],
        json: &[u8],
        layout: &Layout,
        ids: &mut IdGen,
    ) -> StreamFrames {
        let mut out = Vec::with_capacity(self.last_len.load(Ordering::Relaxed) + LEN_SLACK);
        let mut terminal = None;
        // Two snapshots in a row are the same bytes, written once (as the planner does).
        let mut last_snapshot: Option<(&str, Range<usize>)> = None;
        let ends = self.template.fill(&mut out, |hole, out| match hole {
            Hole::Padding => out.extend_from_slice(ids.padding()),
            Hole::Terminal => {
                let start = out.len();
                out.extend_from_slice(json);
                terminal = Some(start..out.len());
            }
            Hole::Snapshot(status) => match &last_snapshot {
                Some((last, written)) if *last == status => out.extend_from_within(written.clone()),
                _ => {
                    let start = out.len();
                    layout.write_snapshot(json, status, out);
                    last_snapshot = Some((status, start..out.len()));
                }
            },
            item => item.write_item_value(items, out),
        });
        self.last_len.store(out.len(), Ordering::Relaxed);
        for _ in 0..self.dropped_paddings {
            ids.padding();
        }
        let call_done = self
            .call_done
            .iter()
            .map(|&(event, item)| {
                let call_id = items.get(item).and_then(OutputItem::call_id);
                (event, call_id.unwrap_or_default().to_owned())
            })
            .collect();
        StreamFrames {
            bytes: Bytes::from(out),
            ends,
            call_done,
            terminal_response: terminal,
            ..self.delivery.clone()
        }
    }
}

/// A marked response whose snapshots and final form are markers too: they echo the
/// request, and are filled in from each serving's own.
struct Marking<'a>(Prerendered<'a>);

impl StreamedResponse for Marking<'_> {
    fn output(&self) -> std::borrow::Cow<'_, [serde_json::Value]> {
        self.0.output()
    }

    fn items(&self) -> Items<'_> {
        self.0.items()
    }

    fn status(&self) -> &str {
        self.0.status()
    }

    fn background(&self) -> bool {
        self.0.background()
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        let hole = match snapshot {
            None => Hole::Terminal,
            Some("queued") => Hole::Snapshot("queued"),
            Some("in_progress") => Hole::Snapshot("in_progress"),
            // No other snapshot is streamed; one would not read as a marker.
            Some(_) => {
                out.extend_from_slice(MARK_START.as_bytes());
                return;
            }
        };
        out.extend_from_slice(hole.marker().as_bytes());
    }

    fn item_json(&self, index: usize) -> Option<&[u8]> {
        self.0.item_json(index)
    }

    fn write_item_with(
        &self,
        index: usize,
        set: &[(&str, crate::wire::write::Set<'_>)],
        out: &mut Vec<u8>,
    ) -> bool {
        self.0.write_item_with(index, set, out)
    }

    fn item_field_json(&self, index: usize, key: &str) -> Option<&[u8]> {
        self.0.item_field_json(index, key)
    }
}

/// The environment variable that turns compiled turns off when it is `1`.
const PLAIN_TURNS: &str = "LOOPCHECK_PLAIN_TURNS";

/// Whether `LOOPCHECK_PLAIN_TURNS=1` turned compiled turns off, read once.
static TURNS_PLANNED: LazyLock<bool> =
    LazyLock::new(|| std::env::var_os(PLAIN_TURNS).is_some_and(|value| value == "1"));

/// What a session has compiled of its script, by turn.
pub(super) struct CompiledTurns {
    turns: Vec<Compilation>,
    /// Every turn planned at every serving, none compiled (the off switch).
    planned: bool,
}

impl Default for CompiledTurns {
    fn default() -> Self {
        Self {
            turns: Vec::new(),
            planned: *TURNS_PLANNED,
        }
    }
}

#[derive(Default, Clone)]
enum Compilation {
    #[default]
    Unserved,
    ServedOnce,
    /// Compiled, or found not to compile.
    Done(Option<Arc<CompiledTurn>>),
}

impl CompiledTurns {
    /// Turn `position` of the script, served now with `items`: compiled from its second
    /// serving on, unless compiled turns are switched off.
    pub(super) fn serve(
        &mut self,
        position: usize,
        turn: &Turn,
        items: &[OutputItem<'_>],
    ) -> Option<Arc<CompiledTurn>> {
        if self.planned {
            return None;
        }
        if self.turns.len() <= position {
            self.turns.resize(position + 1, Compilation::Unserved);
        }
        let compilation = &mut self.turns[position];
        match compilation {
            Compilation::Unserved => {
                *compilation = Compilation::ServedOnce;
                None
            }
            Compilation::ServedOnce => {
                let compiled = CompiledTurn::compile(turn, items).map(Arc::new);
                *compilation = Compilation::Done(compiled.clone());
                compiled
            }
            Compilation::Done(compiled) => compiled.clone(),
        }
    }
}

/// The events of a scripted turn's response: filled in from the turn's compiled stream,
/// or planned. A compiled turn whose stream is not yet compiled compiles it from this
/// plan: it is kept only if, filled with this serving's values, it gives the same frames
/// and draws the same paddings.
pub(super) fn scripted_stream(
    compiled: Option<&CompiledTurn>,
    turn: &Turn,
    response: &Prerendered<'_>,
    items: &[OutputItem<'_>],
    obfuscate: bool,
    ids: &mut IdGen,
) -> StreamFrames {
    let background = response.background();
    let layout = response.layout;
    let Some((compiled, layout)) = compiled.zip(layout) else {
        return super::stream::plan(response, &turn.stream, ids, obfuscate);
    };
    if let Some(stream) = compiled.stream(background, obfuscate) {
        return stream.fill(items, response.json, layout, ids);
    }
    let before = ids.clone();
    let planned = super::stream::plan(response, &turn.stream, ids, obfuscate);
    compiled.streams[CompiledTurn::slot(background, obfuscate)].get_or_init(|| {
        let stream = CompiledStream::compile(turn, background, obfuscate)?;
        let mut drawn = before;
        let filled = stream.fill(items, response.json, layout, &mut drawn);
        (filled == planned && drawn == *ids).then_some(stream)
    });
    planned
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::fuzz::strategy::{Profile, plans};
    use crate::scenario::{
        Annotation, CallSpec, ErrorShape, MessageFull, MessageSpec, ReasoningSpec, StreamError,
        StreamSpec, TurnError, TurnStatus,
    };
    use crate::wire::response::WriteOutput;

    /// One serving of `turn`, as `create` makes it: through the session's compiled
    /// turns, or (`None`) always written and planned.
    struct Serving {
        json: Vec<u8>,
        frames: StreamFrames,
        /// Whether the stream was filled in from a compiled one.
        filled: bool,
    }

    fn serve(
        turn: &Turn,
        compiled_turns: Option<&mut CompiledTurns>,
        ids: &mut IdGen,
        request: &CreateRequest,
        obfuscate: bool,
    ) -> Serving {
        let created_at = 1_759_064_126;
        let tail = ids.tail();
        let id = ids.item_id("resp", created_at, &tail);
        let expanded = script::expand(turn, ids, created_at, &tail, &mut Issued::default());
        let compiled = compiled_turns.and_then(|turns| turns.serve(0, turn, &expanded.output));
        let stream = compiled
            .as_deref()
            .and_then(|c| c.stream(request.background, obfuscate));
        let items = &expanded.output;
        let write_output = stream
            .and(compiled.as_deref())
            .map(|c| move |out: &mut Vec<u8>| c.write_output(items, out));
        let parts = ResponseParts {
            id: &id,
            created_at,
            status: expanded.status,
            output: &expanded.output,
            write_output: write_output.as_ref().map(|w| w as WriteOutput),
            request,
            incomplete_reason: expanded.incomplete_reason.as_deref(),
            error: expanded.error.as_ref(),
            conversation: Some("conv_1"),
        };
        let mut json = Vec::new();
        let layout = parts.write_spanned(&mut json);
        let response = Prerendered {
            response: &parts,
            json: &json,
            layout: Some(&layout),
        };
        let filled = stream.is_some();
        let frames = scripted_stream(
            compiled.as_deref(),
            turn,
            &response,
            &expanded.output,
            obfuscate,
            ids,
        );
        Serving {
            json,
            frames,
            filled,
        }
    }

    /// The ways a turn is streamed that change its events: each catalogue turn is tried
    /// with each.
    fn stream_specs(turn: &Turn) -> Vec<StreamSpec> {
        let error = |after, shape| StreamError {
            after,
            shape,
            code: "server_error".into(),
            message: "An \"error\" occurred".into(),
        };
        let base = turn.stream.clone();
        vec![
            base.clone(),
            StreamSpec {
                interleave: true,
                delta_size: Some(3),
                ..base.clone()
            },
            StreamSpec {
                split_at: vec![1, 4, 9],
                cut_after: Some(5),
                chunk_bytes: Some(7),
                ..base.clone()
            },
            StreamSpec {
                error: Some(error(4, ErrorShape::Flat)),
                ..base.clone()
            },
            StreamSpec {
                error: Some(error(2, ErrorShape::Nested)),
                delay_ms: 3,
                ..base
            },
        ]
    }

    /// Every catalogue turn, with every way of streaming it, in the background or not,
    /// with padding or without: four servings through compiled turns give the bytes,
    /// events and draws of four servings written and planned each time; and a turn that
    /// can be compiled is filled in from its third serving on.
    #[test]
    fn a_compiled_turn_serves_what_the_writers_and_the_planner_serve() {
        let cases = crate::scenario::catalogue().expect("the catalogue loads");
        let (mut compared, mut filled) = (0, 0);
        for case in &cases {
            for (position, scripted) in case.scenario.script.iter().enumerate() {
                for spec in stream_specs(scripted) {
                    let turn = Turn {
                        stream: spec,
                        ..scripted.clone()
                    };
                    for (background, obfuscate) in
                        [(false, true), (false, false), (true, true), (true, false)]
                    {
                        let body = serde_json::json!({
                            "model": "gpt-5", "input": "hi", "stream": true,
                            "background": background, "instructions": "Be \"brief\".",
                            "tools": [{"type": "function", "name": "f"}],
                            "metadata": {"k": "v"},
                        });
                        let request =
                            CreateRequest::from_json(body.to_string().as_bytes()).unwrap();
                        let mut turns = CompiledTurns::default();
                        let (mut ids, mut reference_ids) = (IdGen::new(7), IdGen::new(7));
                        for serving in 0..4 {
                            let what = format!(
                                "{} turn {position}, serving {serving}, {:?}, background {background}, padding {obfuscate}",
                                case.scenario.id, turn.stream
                            );
                            let got = serve(&turn, Some(&mut turns), &mut ids, &request, obfuscate);
                            let want = serve(&turn, None, &mut reference_ids, &request, obfuscate);
                            assert_eq!(
                                String::from_utf8_lossy(&got.json),
                                String::from_utf8_lossy(&want.json),
                                "{what}"
                            );
                            let (got, want, used) = (got.frames, want.frames, got.filled);
                            assert_eq!(
                                String::from_utf8_lossy(&got.bytes),
                                String::from_utf8_lossy(&want.bytes),
                                "{what}"
                            );
                            assert_eq!(got.ends, want.ends, "{what}");
                            assert_eq!(got.call_done, want.call_done, "{what}");
                            assert_eq!(got.terminal_response, want.terminal_response, "{what}");
                            assert_eq!(
                                (got.cut_after, got.chunk_bytes, got.delay, got.pauses),
                                (want.cut_after, want.chunk_bytes, want.delay, want.pauses),
                                "{what}"
                            );
                            assert_eq!(ids, reference_ids, "{what}: the same draws");
                            compared += 1;
                            let expected = serving >= 2 && compilable(&turn);
                            if expected && !used {
                                panic!("{what}: not filled in from a compiled stream");
                            }
                            assert!(used <= expected, "{what}: filled in too early");
                            filled += usize::from(used);
                        }
                    }
                }
            }
        }
        assert!(
            filled > compared / 3,
            "{filled} of {compared} servings filled in"
        );
    }

    /// Text as scripts may hold it: plain words, characters JSON escapes, characters
    /// beyond ASCII, and the markers' own characters (a turn holding one is not compiled).
    fn text() -> impl Strategy<Value = String> {
        let chars = prop::sample::select(vec![
            'a', 'z', ' ', '{', '"', '\\', '\n', '\t', '\u{1}', '\u{7f}', 'é', '😀', '\u{E000}',
            '\u{E001}', '0', 'p',
        ]);
        prop_oneof![
            4 => prop::collection::vec(chars, 0..24).prop_map(String::from_iter),
            1 => any::<String>(),
        ]
    }

    /// Output items of every kind but programs', with generated texts and arguments.
    fn annotations() -> impl Strategy<Value = Vec<Annotation>> {
        let one = prop_oneof![
            (any::<u32>(), any::<u32>(), text(), text()).prop_map(
                |(start_index, end_index, title, url)| Annotation::UrlCitation {
                    start_index,
                    end_index,
                    title,
                    url,
                }
            ),
            (text(), text(), any::<u32>()).prop_map(|(file_id, filename, index)| {
                Annotation::FileCitation {
                    file_id,
                    filename,
                    index,
                }
            }),
        ];
        prop::collection::vec(one, 0..3)
    }

    fn output_spec() -> impl Strategy<Value = OutputSpec> {
        let status = prop::option::of(prop::sample::select(vec!["completed", "incomplete"]))
            .prop_map(|status| status.map(str::to_owned));
        let arguments = prop_oneof![
            text().prop_map(serde_json::Value::String),
            (text(), text(), any::<i32>())
                .prop_map(|(key, value, n)| serde_json::json!({ key: value, "n": n })),
        ];
        prop_oneof![
            (prop::option::of(text()), prop::option::of(text()))
                .prop_map(|(summary, text)| OutputSpec::Reasoning(ReasoningSpec { summary, text })),
            text().prop_map(|text| OutputSpec::Message(MessageSpec::Text(text))),
            (
                text(),
                status.clone(),
                prop::option::of(text()),
                annotations()
            )
                .prop_map(|(text, status, refusal, annotations)| OutputSpec::Message(
                    MessageSpec::Full(MessageFull {
                        text,
                        status,
                        refusal,
                        annotations,
                    })
                )),
            text().prop_map(OutputSpec::Refusal),
            (text(), arguments, status).prop_map(|(name, arguments, status)| {
                OutputSpec::Call(CallSpec {
                    name,
                    arguments,
                    status,
                    caller: None,
                    namespace: None,
                })
            }),
        ]
    }

    /// The ways a turn is streamed that change its events.
    fn stream_spec() -> impl Strategy<Value = StreamSpec> {
        let error =
            (0usize..12, any::<bool>(), text()).prop_map(|(after, flat, message)| StreamError {
                after,
                shape: if flat {
                    ErrorShape::Flat
                } else {
                    ErrorShape::Nested
                },
                code: "server_error".into(),
                message,
            });
        (
            prop::option::of(1usize..12),
            prop::collection::vec(0usize..40, 0..4),
            any::<bool>(),
            prop::option::of(1usize..16),
            prop::option::of(0usize..12),
            prop::option::weighted(0.25, error),
        )
            .prop_map(
                |(delta_size, mut split_at, interleave, chunk_bytes, cut_after, error)| {
                    split_at.sort_unstable();
                    split_at.dedup();
                    StreamSpec {
                        delta_size,
                        split_at,
                        interleave,
                        chunk_bytes,
                        cut_after,
                        error,
                        ..StreamSpec::default()
                    }
                },
            )
    }

    /// Turns of generated cases (programs and all, as the fuzzer writes them), and turns
    /// of generated items with any status.
    fn turn() -> impl Strategy<Value = Turn> {
        let profile = Profile {
            supports: ["stream", "programmatic", "approvals", "stateless"]
                .map(str::to_owned)
                .into(),
            max_turns: 4,
        };
        let fuzzed = (plans(&profile), any::<prop::sample::Index>()).prop_map(|(plan, pick)| {
            let script = plan.scenario("fuzz/compiled", "A generated case.").script;
            script[pick.index(script.len())].clone()
        });
        let status = prop::sample::select(vec![
            TurnStatus::Completed,
            TurnStatus::Incomplete,
            TurnStatus::Failed,
        ]);
        let made = (
            prop::collection::vec(output_spec(), 0..5),
            status,
            prop::option::of(text()),
        )
            .prop_map(|(output, status, reason)| Turn {
                output,
                status,
                incomplete_reason: reason.clone().filter(|_| status == TurnStatus::Incomplete),
                error: reason
                    .filter(|_| status == TurnStatus::Failed)
                    .map(|message| TurnError {
                        code: "server_error".into(),
                        message,
                    }),
                ..Turn::default()
            });
        (prop_oneof![fuzzed, made], stream_spec())
            .prop_map(|(turn, stream)| Turn { stream, ..turn })
    }

    /// A session's turn served again and again through compiled turns, and the same
    /// session served with every turn written and planned: each serving's body, its
    /// events (bytes, where each ends, the calls each completes, the final response, the
    /// delivery) and the draws from the session's generator are the same, on generated
    /// turns, streamed any way, for any request.
    #[test]
    fn compiled_and_planned_servings_of_generated_turns_are_the_same() {
        let config = ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let (servings, filled) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let mut runner = proptest::test_runner::TestRunner::new(config);
        let session = (
            turn(),
            any::<bool>(),
            any::<bool>(),
            text(),
            any::<u64>(),
            2usize..6,
        );
        let result = runner.run(
            &session,
            |(turn, background, obfuscate, instructions, seed, times)| {
                let body = serde_json::json!({
                    "model": "gpt-5", "input": "hi", "stream": true,
                    "background": background, "instructions": instructions,
                    "tools": [{"type": "function", "name": "f"}],
                    "metadata": {"k": "v"},
                });
                let request =
                    CreateRequest::from_json(body.to_string().as_bytes()).expect("a valid create");
                let mut turns = CompiledTurns::default();
                let (mut ids, mut reference_ids) = (IdGen::new(seed), IdGen::new(seed));
                for serving in 0..times {
                    let got = serve(&turn, Some(&mut turns), &mut ids, &request, obfuscate);
                    let want = serve(&turn, None, &mut reference_ids, &request, obfuscate);
                    prop_assert_eq!(
                        String::from_utf8_lossy(&got.json),
                        String::from_utf8_lossy(&want.json),
                        "body of serving {}",
                        serving
                    );
                    let (used, got, want) = (got.filled, got.frames, want.frames);
                    prop_assert_eq!(
                        String::from_utf8_lossy(&got.bytes),
                        String::from_utf8_lossy(&want.bytes),
                        "events of serving {}",
                        serving
                    );
                    prop_assert_eq!(&got.ends, &want.ends);
                    prop_assert_eq!(&got.call_done, &want.call_done);
                    prop_assert_eq!(&got.terminal_response, &want.terminal_response);
                    prop_assert_eq!(
                        (got.cut_after, got.chunk_bytes, got.delay, &got.pauses),
                        (want.cut_after, want.chunk_bytes, want.delay, &want.pauses)
                    );
                    prop_assert_eq!(&ids, &reference_ids, "the same draws");
                    servings.set(servings.get() + usize::from(serving >= 2));
                    filled.set(filled.get() + usize::from(used));
                }
                Ok(())
            },
        );
        if let Err(failure) = result {
            panic!("{failure}");
        }
        // The comparison is only worth as much as the servings filled in (from the
        // third on: a turn is compiled at its second).
        let (servings, filled) = (servings.get(), filled.get());
        assert!(
            filled > servings / 3,
            "{filled} of {servings} servings from the third on filled in"
        );
    }

    /// With compiled turns switched off, no turn is compiled, however often served.
    #[test]
    fn switched_off_a_session_compiles_no_turn() {
        let cases = crate::scenario::catalogue().expect("the catalogue loads");
        let turn = cases
            .iter()
            .flat_map(|case| &case.scenario.script)
            .find(|turn| compilable(turn))
            .expect("a turn that compiles");
        let mut ids = IdGen::new(7);
        let tail = ids.tail();
        let expanded = script::expand(turn, &mut ids, 0, &tail, &mut Issued::default());
        let mut turns = CompiledTurns {
            planned: true,
            ..CompiledTurns::default()
        };
        for _ in 0..4 {
            assert!(turns.serve(0, turn, &expanded.output).is_none());
        }
        let mut turns = CompiledTurns {
            planned: false,
            ..CompiledTurns::default()
        };
        let compiled = (0..4).filter_map(|_| turns.serve(0, turn, &expanded.output));
        assert_eq!(compiled.count(), 3, "compiled from the second serving on");
    }

    #[test]
    fn a_marker_that_does_not_read_as_one_is_not_compiled() {
        let marker = Hole::CallId(3).marker();
        let parsed = Template::parse(format!("a{marker}b").as_bytes(), &[]).unwrap();
        assert_eq!(parsed.bytes, b"ab");
        assert_eq!(parsed.holes, [(1, Hole::CallId(3))]);
        // Event ends stay where they are in the literal bytes; one inside a marker is
        // not an event's end.
        let written = format!("ab\n{marker}c\n");
        let parsed = Template::parse(written.as_bytes(), &[3, written.len()]).unwrap();
        assert_eq!(parsed.ends, [3, 5]);
        assert!(Template::parse(written.as_bytes(), &[5]).is_none());
        // A scripted text holding a marker's start character is not compiled.
        assert!(Template::parse("a\u{E000}b".as_bytes(), &[]).is_none());
        assert!(Template::parse(format!("{MARK_START}x00{MARK_END}").as_bytes(), &[]).is_none());
    }
}
