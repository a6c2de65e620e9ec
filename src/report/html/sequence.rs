//! The sequence diagram of one case run, as inline SVG: the controller, the fake server
//! and the tool backend as lifelines, every model request and tool-backend request as an
//! arrow with its answer, in transcript order. A step a failing check names ("request
//! N", or a call_id) is marked, and so is every rejected request.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use regex::Regex;
use serde_json::Value;

use super::escape;
use crate::oracle::{CheckResult, CheckVerdict};
use crate::text::clip;
use crate::transcript::{
    ModelExchange, SocketEvent, SocketEventKind, ToolExchange, ToolRequestKind, Transcript,
    Unfinished,
};

/// Most steps drawn: a runaway controller can make thousands of requests, and the page
/// must stay small enough to open.
pub const MAX_STEPS: usize = 200;

const WIDTH: u32 = 1000;
const X_CONTROLLER: u32 = 170;
const X_SERVER: u32 = 580;
const X_TOOLS: u32 = 900;
const HEAD: u32 = 54;
const ROW: u32 = 62;
/// Most characters of a label drawn on an arrow (the step's tooltip has more).
const LABEL: usize = 80;
/// Most characters of a body quoted in a step's tooltip.
const TOOLTIP_BODY: usize = 600;

/// One exchange, in transcript order.
enum Exchange<'a> {
    /// A request to the fake Responses API; `round` is the request number the oracle's
    /// messages use ("request N", 1-based, retries folded in) and `attempt` the retry
    /// (0 for the first attempt), for create requests.
    Model {
        exchange: &'a ModelExchange,
        round: Option<(usize, usize)>,
    },
    Tool(&'a ToolExchange),
    /// A WebSocket connection opening or closing, or a message refused on it.
    Socket(&'a SocketEvent),
}

impl Exchange<'_> {
    fn seq(&self) -> u64 {
        match self {
            Self::Model { exchange, .. } => exchange.seq,
            Self::Tool(t) => t.seq,
            Self::Socket(s) => s.seq,
        }
    }
}

/// How a step's answer is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    Ok,
    /// Status >= 400 that loopcheck did not inject: the request was refused.
    Rejected,
    /// A transport fault the scenario injected (not the controller's doing).
    Fault,
    /// A stream closed early on purpose.
    Cut,
}

/// The model and tool exchanges merged by `seq`, create requests numbered as the oracle
/// numbers them.
fn exchanges(transcript: &Transcript) -> Vec<Exchange<'_>> {
    let creates: Vec<&ModelExchange> = transcript.model.iter().filter(|m| m.is_create()).collect();
    // Warm-ups are no model requests: the oracle numbers the others.
    let requests: Vec<&ModelExchange> = creates.iter().copied().filter(|m| !m.warm_up).collect();
    let mut rounds = BTreeMap::new();
    for (round, attempts) in crate::oracle::facts::group_retries(&requests, &creates)
        .iter()
        .enumerate()
    {
        for (attempt, exchange) in attempts.iter().enumerate() {
            rounds.insert(exchange.seq, (round + 1, attempt));
        }
    }
    let mut all: Vec<Exchange<'_>> = transcript
        .model
        .iter()
        .map(|exchange| Exchange::Model {
            exchange,
            round: rounds.get(&exchange.seq).copied(),
        })
        .chain(transcript.tools.iter().map(Exchange::Tool))
        .chain(transcript.sockets.iter().map(Exchange::Socket))
        .collect();
    all.sort_by_key(Exchange::seq);
    all
}

/// The checks that did not hold.
fn failing(checks: &[CheckResult]) -> impl Iterator<Item = &CheckResult> {
    checks
        .iter()
        .filter(|c| matches!(c.verdict, CheckVerdict::Fail | CheckVerdict::NonStrict))
}

/// Whether `id` occurs in `text` as a whole word (`call_1` is not in `call_12`).
fn names(text: &str, id: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    !id.is_empty()
        && text.match_indices(id).any(|(at, _)| {
            !text[..at].chars().next_back().is_some_and(word)
                && !text[at + id.len()..].chars().next().is_some_and(word)
        })
}

/// The request numbers a message names: "request 2", "requests 1, 3 and 4".
fn request_numbers(message: &str) -> BTreeSet<usize> {
    static RE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"\brequests? (\d+(?:(?:, | and )\d+)*)\b").expect("valid regex")
    });
    RE.captures_iter(message)
        .flat_map(|c| {
            c[1].split(|ch: char| !ch.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect::<Vec<usize>>()
        })
        .collect()
}

/// The call_ids a response issues (its output items', and a background create's
/// terminal response's).
fn issued_call_ids(exchange: &ModelExchange) -> Vec<&str> {
    [Some(&exchange.response), exchange.final_response.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("output").and_then(Value::as_array))
        .flatten()
        .filter_map(|item| item.get("call_id").and_then(Value::as_str))
        .collect()
}

/// Why each step is marked, by `seq`: the failing checks whose messages name it, by
/// request number or by call_id. A call_id names its tool exchanges, or, when the
/// controller never executed it, the response that issued it.
fn marks(steps: &[Exchange<'_>], checks: &[CheckResult]) -> BTreeMap<u64, Vec<String>> {
    let mut marks: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut call_ids: BTreeSet<&str> = BTreeSet::new();
    for step in steps {
        match step {
            Exchange::Model { exchange, .. } => call_ids.extend(issued_call_ids(exchange)),
            Exchange::Tool(t) => call_ids.extend(t.call_id.as_deref()),
            Exchange::Socket(_) => {}
        }
    }
    for check in failing(checks) {
        let reason = format!("{}: {}", check.id, clip(&check.message, 300));
        let mut named: BTreeSet<u64> = BTreeSet::new();
        let numbers = request_numbers(&check.message);
        for step in steps {
            if let Exchange::Model {
                exchange,
                round: Some((round, _)),
            } = step
                && numbers.contains(round)
            {
                named.insert(exchange.seq);
            }
        }
        for id in call_ids.iter().filter(|id| names(&check.message, id)) {
            let executed: Vec<u64> = steps
                .iter()
                .filter_map(|s| match s {
                    Exchange::Tool(t) if t.call_id.as_deref() == Some(*id) => Some(t.seq),
                    _ => None,
                })
                .collect();
            if executed.is_empty() {
                named.extend(steps.iter().filter_map(|s| match s {
                    Exchange::Model { exchange, .. } if issued_call_ids(exchange).contains(id) => {
                        Some(exchange.seq)
                    }
                    _ => None,
                }));
            } else {
                named.extend(executed);
            }
        }
        for seq in named {
            marks.entry(seq).or_default().push(reason.clone());
        }
    }
    marks
}

/// A long id cut to its start and end: `call_8f3a…c41e`.
fn short(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= 16 {
        return id.to_owned();
    }
    let head: String = chars[..9].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}

/// Compact JSON, redacted and then clipped (a clipped key would no longer be found).
fn compact(value: &Value, max: usize) -> String {
    let redactor = crate::redact::installed();
    match value {
        Value::String(s) => clip(&redactor.text(s), max),
        other => clip(&redactor.text(&other.to_string()), max),
    }
}

/// The state-relevant fields of a create request: what chains it, what it stores, how it
/// is answered.
fn create_detail(body: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(id) = body.get("previous_response_id").and_then(Value::as_str) {
        parts.push(format!("previous_response_id={}", short(id)));
    }
    if let Some(conversation) = crate::oracle::facts::conversation_of(body) {
        parts.push(format!("conversation={}", short(&conversation)));
    }
    if body.get("store") == Some(&Value::Bool(false)) {
        parts.push("store=false".to_owned());
    }
    if body.get("stream") == Some(&Value::Bool(true)) {
        parts.push("stream".to_owned());
    }
    if body.get("background") == Some(&Value::Bool(true)) {
        parts.push("background".to_owned());
    }
    match body.get("input") {
        Some(Value::Array(items)) => parts.push(format!("{} input item(s)", items.len())),
        Some(Value::String(_)) => parts.push("input text".to_owned()),
        _ => {}
    }
    parts.join(" · ")
}

/// What a response holds: its status and its output items (calls by name and call_id).
fn response_summary(response: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(id) = response.get("id").and_then(Value::as_str) {
        parts.push(short(id));
    }
    if let Some(status) = response.get("status").and_then(Value::as_str)
        && status != "completed"
    {
        parts.push(status.to_owned());
    }
    let items: Vec<String> = response
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("?");
            match (
                item.get("name").and_then(Value::as_str),
                item.get("call_id").and_then(Value::as_str),
            ) {
                (Some(name), Some(call_id)) => format!("{name}({})", short(call_id)),
                _ => kind.to_owned(),
            }
        })
        .collect();
    if !items.is_empty() {
        parts.push(items.join(", "));
    }
    if let Some(message) = response.pointer("/error/message").and_then(Value::as_str) {
        parts.push(message.to_owned());
    }
    parts.join(" · ")
}

/// The lines drawn for one step: the request (and a detail line), the answer, and the
/// tooltip.
struct Drawn {
    seq: u64,
    at_ms: u64,
    to_x: u32,
    request: String,
    detail: String,
    answer: String,
    kind: Answer,
    tooltip: String,
}

fn draw_model(exchange: &ModelExchange, round: Option<(usize, usize)>) -> Drawn {
    // A create over a WebSocket is a `response.create` event on its connection.
    let what = match exchange.connection {
        Some(connection) if exchange.warm_up => {
            format!("response.create (warm-up) · connection {connection}")
        }
        Some(connection) => format!("response.create · connection {connection}"),
        None => format!("{} {}", exchange.method, clip(&exchange.path, 60)),
    };
    let request = match round {
        Some((n, 0)) => format!("{what} · request {n}"),
        Some((n, retry)) => format!("{what} · request {n} (retry {retry})"),
        None => what,
    };
    let detail = if exchange.is_create() {
        create_detail(&exchange.body)
    } else {
        String::new()
    };
    let (answer, kind) = if let Some(fault) = &exchange.fault {
        let mut text = match fault.status {
            Some(status) if !fault.dropped => format!("{status} fault injected"),
            _ => "connection dropped (fault injected)".to_owned(),
        };
        if let Some(ms) = fault.retry_after_ms {
            let _ = write!(text, " · retry-after {ms} ms");
        }
        if let Some(retry) = fault.should_retry {
            let _ = write!(text, " · x-should-retry {retry}");
        }
        if fault.delay_ms > 0 {
            let _ = write!(text, " · after {} ms", fault.delay_ms);
        }
        (text, Answer::Fault)
    } else if exchange.status >= 400 {
        let mut text = format!("{} rejected", exchange.status);
        if let Some(rule) = &exchange.rejected_by {
            let _ = write!(text, " ({rule})");
        }
        if let Some(message) = exchange
            .response
            .pointer("/error/message")
            .and_then(Value::as_str)
        {
            let _ = write!(text, ": {message}");
        }
        (text, Answer::Rejected)
    } else if let Some(stream) = &exchange.stream {
        let served = exchange.served().map(response_summary).unwrap_or_default();
        if stream.cut {
            (
                format!(
                    "{} stream cut after {}/{} events · {served}",
                    exchange.status, stream.sent, stream.planned
                ),
                Answer::Cut,
            )
        } else {
            let last = stream.last_type.as_deref().unwrap_or("?");
            (
                format!(
                    "{} stream of {} events, last {last} · {served}",
                    exchange.status, stream.sent
                ),
                Answer::Ok,
            )
        }
    } else {
        let served = exchange.served().unwrap_or(&exchange.response);
        (
            format!("{} {}", exchange.status, response_summary(served)),
            Answer::Ok,
        )
    };
    let tooltip = format!(
        "{request}\nrequest body: {}\nanswer: {}",
        compact(&exchange.body, TOOLTIP_BODY),
        compact(
            exchange.served().unwrap_or(&exchange.response),
            TOOLTIP_BODY
        )
    );
    Drawn {
        seq: exchange.seq,
        at_ms: exchange.at_ms,
        to_x: X_SERVER,
        request,
        detail,
        answer,
        kind,
        tooltip,
    }
}

fn draw_tool(exchange: &ToolExchange) -> Drawn {
    let call = exchange
        .call_id
        .as_deref()
        .map(|id| format!(" ({})", short(id)))
        .unwrap_or_default();
    let request = format!("{} {}{call}", exchange.kind.as_str(), exchange.name);
    let mut detail = Vec::new();
    if exchange.kind == ToolRequestKind::Call {
        detail.push(format!("arguments {}", compact(&exchange.arguments, 60)));
    }
    if let Some(principal) = &exchange.principal {
        detail.push(format!("principal {principal}"));
    }
    if exchange.approval.is_some() {
        detail.push("with approval token".to_owned());
    }
    let mut answer = format!("{}", exchange.status);
    if exchange.effect {
        answer.push_str(" · effect");
    }
    if exchange.delay_ms > 0 {
        let _ = write!(answer, " · held {} ms", exchange.delay_ms);
    }
    let _ = write!(answer, " · {}", compact(&exchange.response, 60));
    let tooltip = format!(
        "{request}\ncall_id: {}\narguments: {}\nanswer: {}",
        exchange.call_id.as_deref().unwrap_or("(none)"),
        compact(&exchange.arguments, TOOLTIP_BODY),
        compact(&exchange.response, TOOLTIP_BODY)
    );
    Drawn {
        seq: exchange.seq,
        at_ms: exchange.at_ms,
        to_x: X_TOOLS,
        request,
        detail: detail.join(" · "),
        answer,
        kind: if exchange.status >= 400 {
            Answer::Rejected
        } else {
            Answer::Ok
        },
        tooltip,
    }
}

/// A WebSocket connection's opening, its close, or a message the server refused on it.
fn draw_socket(event: &SocketEvent) -> Drawn {
    let connection = event.connection;
    let detail = event.detail.clone().unwrap_or_default();
    let (request, answer, kind) = match event.kind {
        SocketEventKind::Opened => (
            format!("GET /v1/responses (WebSocket upgrade) · connection {connection}"),
            "101 switching protocols · connection open".to_owned(),
            Answer::Ok,
        ),
        SocketEventKind::Refused => (
            format!("a message on connection {connection}"),
            format!("error event: {}", clip(&detail, LABEL)),
            Answer::Rejected,
        ),
        SocketEventKind::Closed => (
            format!("connection {connection} ends"),
            match event.code {
                Some(code) => format!("close {code} · {}", clip(&detail, LABEL)),
                None => format!("no close frame · {}", clip(&detail, LABEL)),
            },
            Answer::Cut,
        ),
    };
    Drawn {
        seq: event.seq,
        at_ms: event.at_ms,
        to_x: X_SERVER,
        tooltip: format!("{request}\n{answer}"),
        request,
        detail: String::new(),
        answer,
        kind,
    }
}

/// The controller's ending, drawn under its lifeline.
fn ending(transcript: &Transcript) -> String {
    match (&transcript.result, &transcript.unfinished) {
        (Some(result), _) if result.status == "completed" => format!(
            "result: completed · {:?}",
            clip(result.output_text.as_deref().unwrap_or_default(), 60)
        ),
        (Some(result), _) => format!(
            "result: {} · {} {}",
            result.status,
            result.reason.as_deref().unwrap_or_default(),
            clip(result.detail.as_deref().unwrap_or_default(), 60)
        ),
        (None, Some(Unfinished::TimedOut { after_ms })) => {
            format!("no result: killed at the timeout after {after_ms} ms")
        }
        (None, Some(Unfinished::StartupTimedOut { after_ms })) => {
            format!("no result: still starting after {after_ms} ms, killed")
        }
        (None, Some(Unfinished::NoResult { why })) => format!("no result: {}", clip(why, 80)),
        (None, Some(Unfinished::StoppedOverLimit { requests, .. })) => {
            format!("no result: stopped after {requests} model requests")
        }
        (None, None) => "no result".to_owned(),
    }
}

/// The diagram of a case run, with the steps `checks` (the case's checks) name marked;
/// a short note instead when nothing was exchanged.
pub fn diagram(transcript: &Transcript, checks: &[CheckResult]) -> String {
    let steps = exchanges(transcript);
    let marks = marks(&steps, checks);
    let drawn: Vec<Drawn> = steps
        .iter()
        .take(MAX_STEPS)
        .map(|step| match step {
            Exchange::Model { exchange, round } => draw_model(exchange, *round),
            Exchange::Tool(t) => draw_tool(t),
            Exchange::Socket(s) => draw_socket(s),
        })
        .collect();
    let hidden = steps.len() - drawn.len();
    let hidden_marked = steps
        .iter()
        .skip(MAX_STEPS)
        .filter(|s| marks.contains_key(&s.seq()))
        .count();
    let height = HEAD + ROW * drawn.len() as u32 + 56;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="seq" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="sequence diagram: {} exchange(s)">"#,
        steps.len()
    );
    let bottom = height - 40;
    for (x, name) in [
        (X_CONTROLLER, "controller"),
        (X_SERVER, "fake server"),
        (X_TOOLS, "tool backend"),
    ] {
        let _ = write!(
            svg,
            r#"<rect class="actor" x="{}" y="8" width="150" height="28" rx="4"/><text class="actor" x="{x}" y="27" text-anchor="middle">{name}</text><line class="life" x1="{x}" y1="36" x2="{x}" y2="{bottom}"/>"#,
            x - 75
        );
    }
    for (row, step) in drawn.iter().enumerate() {
        let y = HEAD + ROW * row as u32;
        let reasons = marks.get(&step.seq);
        let mut class = String::from("step");
        match step.kind {
            Answer::Rejected => class.push_str(" rejected"),
            Answer::Fault => class.push_str(" fault"),
            Answer::Cut => class.push_str(" cut"),
            Answer::Ok => {}
        }
        if reasons.is_some() {
            class.push_str(" named");
        }
        let _ = write!(
            svg,
            r#"<g class="{class}" data-seq="{}"><title>{}"#,
            step.seq,
            escape(&format!(
                "#{} at {} ms\n{}",
                step.seq, step.at_ms, step.tooltip
            ))
        );
        for reason in reasons.into_iter().flatten() {
            let _ = write!(svg, "{}", escape(&format!("\nnamed by {reason}")));
        }
        svg.push_str("</title>");
        if reasons.is_some() || step.kind == Answer::Rejected {
            let _ = write!(
                svg,
                r#"<rect class="band" x="2" y="{}" width="{}" height="{}"/>"#,
                y + 2,
                WIDTH - 4,
                ROW - 4
            );
        }
        let mark = match (reasons.is_some(), step.kind) {
            (true, _) => "✗ ",
            (false, Answer::Rejected) => "! ",
            _ => "",
        };
        let _ = write!(
            svg,
            r#"<text class="seqno" x="8" y="{}">{mark}#{} · {} ms</text>"#,
            y + 36,
            step.seq,
            step.at_ms
        );
        let x = X_CONTROLLER + 8;
        label(&mut svg, "req", x, y + 16, &clip(&step.request, LABEL));
        if !step.detail.is_empty() {
            label(
                &mut svg,
                "detail",
                x,
                y + 28,
                &clip(&step.detail, LABEL + 20),
            );
        }
        arrow(&mut svg, "call", X_CONTROLLER, step.to_x - 1, y + 33);
        label(
            &mut svg,
            "answer",
            x,
            y + 48,
            &clip(&step.answer, LABEL + 20),
        );
        arrow(&mut svg, "reply", step.to_x, X_CONTROLLER + 1, y + 53);
        svg.push_str("</g>");
    }
    let ending = ending(transcript);
    label(
        &mut svg,
        "ending",
        X_CONTROLLER - 150 + 8,
        bottom + 22,
        &ending,
    );
    if hidden > 0 {
        label(
            &mut svg,
            "note",
            X_SERVER - 100,
            bottom + 22,
            &format!(
                "… {hidden} more exchange(s) not drawn ({hidden_marked} of them marked): the diagram stops at {MAX_STEPS}"
            ),
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A line of text of `class` starting at (`x`, `y`).
fn label(svg: &mut String, class: &str, x: u32, y: u32, text: &str) {
    let _ = write!(
        svg,
        r#"<text class="{class}" x="{x}" y="{y}">{}</text>"#,
        escape(text)
    );
}

/// A level arrow of `class` at height `y` from `from` to `to`. Its head is drawn, not
/// a `<marker>`: a marker is found by id, and ids repeat across the page's diagrams,
/// some of them hidden.
fn arrow(svg: &mut String, class: &str, from: u32, to: u32, y: u32) {
    let base = if to > from { to - 8 } else { to + 8 };
    let _ = write!(
        svg,
        r#"<line class="{class}" x1="{from}" y1="{y}" x2="{to}" y2="{y}"/><polygon class="{class}" points="{to},{y} {base},{} {base},{}"/>"#,
        y - 4,
        y + 4
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Level;
    use crate::transcript::{ControllerResult, FaultRecord};
    use serde_json::json;

    fn create(seq: u64, body: Value, status: u16, response: Value) -> ModelExchange {
        ModelExchange {
            seq,
            at_ms: seq * 10,
            method: "POST".into(),
            path: "/v1/responses".into(),
            headers: Default::default(),
            body: body.into(),
            body_unparsed: false,
            status,
            response: response.into(),
            rejected_by: (status >= 400).then(|| "E3".into()),
            turn: (status < 400).then_some(seq as usize),
            fault: None,
            stream: None,
            final_response: None,
            connection: None,
            warm_up: false,
        }
    }

    fn call(seq: u64, name: &str, call_id: &str, status: u16) -> ToolExchange {
        ToolExchange {
            seq,
            at_ms: seq * 10,
            kind: ToolRequestKind::Call,
            name: name.into(),
            call_id: Some(call_id.into()),
            arguments: json!({"ticker": "ACME"}),
            principal: None,
            approval: None,
            status,
            response: json!({"price": 12}),
            effect: status < 400,
            delay_ms: 0,
        }
    }

    fn failing_check(message: &str) -> CheckResult {
        CheckResult {
            id: "state/chained".into(),
            level: Level::Must,
            verdict: CheckVerdict::Fail,
            message: message.into(),
            rule: "chain".into(),
            diff: None,
        }
    }

    fn issuing(call_id: &str) -> Value {
        json!({"id": "resp_1", "status": "completed", "output": [
            {"type": "function_call", "name": "get_stock", "call_id": call_id}]})
    }

    fn transcript() -> Transcript {
        Transcript {
            model: vec![
                create(
                    0,
                    json!({"input": "hi", "stream": true}),
                    200,
                    issuing("call_1"),
                ),
                create(
                    2,
                    json!({"previous_response_id": "resp_1", "input": [{}]}),
                    200,
                    json!({"id": "resp_2", "output": [{"type": "message"}]}),
                ),
            ],
            tools: vec![call(1, "get_stock", "call_1", 200)],
            result: Some(ControllerResult {
                status: "completed".into(),
                output_text: Some("done".into()),
                reason: None,
                detail: None,
            }),
            ..Default::default()
        }
    }

    /// The `<g>` of the step with this seq.
    fn step(svg: &str, seq: u64) -> &str {
        let start = svg
            .find(&format!(r#"data-seq="{seq}""#))
            .unwrap_or_else(|| panic!("no step {seq} in {svg}"));
        let open = svg[..start].rfind("<g ").unwrap();
        let end = start + svg[start..].find("</g>").unwrap();
        &svg[open..end]
    }

    #[test]
    fn steps_follow_the_transcript_order_with_what_each_one_was() {
        let svg = diagram(&transcript(), &[]);
        let order: Vec<usize> = ["#0 ·", "#1 ·", "#2 ·"]
            .iter()
            .map(|s| svg.find(s).unwrap())
            .collect();
        assert!(order.is_sorted(), "{svg}");
        assert!(step(&svg, 0).contains("POST /v1/responses · request 1"));
        assert!(
            step(&svg, 0).contains("input text · stream")
                || step(&svg, 0).contains("stream · input text")
        );
        assert!(
            step(&svg, 0).contains("200 resp_1 · get_stock(call_1)"),
            "{svg}"
        );
        assert!(step(&svg, 1).contains("call get_stock (call_1)"), "{svg}");
        assert!(step(&svg, 1).contains("200 · effect"), "{svg}");
        assert!(step(&svg, 2).contains("request 2"), "{svg}");
        assert!(
            step(&svg, 2).contains("previous_response_id=resp_1"),
            "{svg}"
        );
        assert!(
            svg.contains("result: completed · &quot;done&quot;"),
            "{svg}"
        );
        assert!(
            !svg.contains("named"),
            "nothing fails, nothing is marked: {svg}"
        );
    }

    #[test]
    fn the_request_a_failing_message_names_is_marked() {
        let svg = diagram(
            &transcript(),
            &[failing_check("request 2 chains resp_0: expected resp_1")],
        );
        assert!(
            step(&svg, 2).starts_with(r#"<g class="step named""#),
            "{svg}"
        );
        assert!(step(&svg, 2).contains("named by state/chained: request 2 chains"));
        assert!(step(&svg, 2).contains("✗ #2"));
        assert!(!step(&svg, 0).contains("named"), "{svg}");
        assert!(!step(&svg, 1).contains("named"), "{svg}");
        // "requests 1 and 2" names both; a passing check's message names nothing.
        let both = diagram(&transcript(), &[failing_check("requests 1 and 2 lack x")]);
        assert!(step(&both, 0).contains("named") && step(&both, 2).contains("named"));
        let mut passing = failing_check("request 2 is fine");
        passing.verdict = CheckVerdict::Pass;
        assert!(!diagram(&transcript(), &[passing]).contains("named"));
    }

    #[test]
    fn a_call_id_names_its_execution_or_else_the_response_that_issued_it() {
        let svg = diagram(&transcript(), &[failing_check("call call_1 ran twice")]);
        assert!(step(&svg, 1).contains("named"), "{svg}");
        assert!(!step(&svg, 0).contains("named"), "{svg}");
        // Never executed: the response that issued it is the step to look at.
        let mut unexecuted = transcript();
        unexecuted.tools.clear();
        let svg = diagram(&unexecuted, &[failing_check("call_1 was never executed")]);
        assert!(step(&svg, 0).contains("named"), "{svg}");
        // A call_id inside a longer word is not named.
        let svg = diagram(&transcript(), &[failing_check("call_12 ran twice")]);
        assert!(!svg.contains("named"), "{svg}");
    }

    #[test]
    fn rejections_are_always_marked_and_faults_are_told_apart() {
        let mut t = transcript();
        t.model[1].status = 400;
        t.model[1].turn = None;
        t.model[1].rejected_by = Some("E7".into());
        t.model[1].response = json!({"error": {"message": "No tool output found"}}).into();
        t.model[0].fault = Some(FaultRecord {
            status: Some(503),
            retry_after_ms: Some(100),
            should_retry: None,
            dropped: false,
            delay_ms: 0,
        });
        t.tools[0].status = 403;
        let svg = diagram(&t, &[]);
        assert!(
            step(&svg, 2).starts_with(r#"<g class="step rejected""#),
            "{svg}"
        );
        assert!(step(&svg, 2).contains("400 rejected (E7): No tool output found"));
        assert!(step(&svg, 2).contains("! #2"));
        assert!(
            step(&svg, 1).starts_with(r#"<g class="step rejected""#),
            "{svg}"
        );
        assert!(
            step(&svg, 0).starts_with(r#"<g class="step fault""#),
            "{svg}"
        );
        assert!(step(&svg, 0).contains("503 fault injected · retry-after 100 ms"));
    }

    #[test]
    fn model_and_tool_text_cannot_break_the_svg() {
        let mut t = transcript();
        let nasty = "</text></svg><script>alert(1)</script> & \"q\" 'a' \u{0}\u{1b}";
        t.tools[0].name = nasty.into();
        t.model[0].response["output"][0]["name"] = json!(nasty);
        t.result.as_mut().unwrap().output_text = Some(nasty.into());
        let svg = diagram(&t, &[failing_check(nasty)]);
        assert!(!svg.contains("<script"), "{svg}");
        assert!(!svg.contains('\u{0}') && !svg.contains('\u{1b}'), "{svg}");
        assert_eq!(svg.matches("<svg").count(), 1);
        assert_eq!(svg.matches("</svg>").count(), 1);
        assert!(svg.ends_with("</svg>"));
        assert!(
            svg.contains("&lt;/text&gt;&lt;/svg&gt;&lt;script&gt;"),
            "{svg}"
        );
    }

    #[test]
    fn a_runaway_run_is_cut_at_the_cap_with_a_note() {
        let mut t = Transcript::default();
        for seq in 0..(MAX_STEPS as u64 + 50) {
            t.tools
                .push(call(seq, "get_stock", &format!("call_{seq}"), 200));
        }
        let last = format!("call_{}", MAX_STEPS + 10);
        let svg = diagram(
            &t,
            &[failing_check(&format!("{last} ran after the budget"))],
        );
        assert_eq!(svg.matches(r#"<g class="step"#).count(), MAX_STEPS);
        assert!(
            svg.contains("50 more exchange(s) not drawn (1 of them marked)"),
            "{}",
            &svg[svg.len() - 400..]
        );
    }
}
