//! `websocket`: a run over the Responses API's WebSocket mode is judged by every other
//! family as a streamed run is; this family judges what only the socket adds: that the
//! controller used it, continued a `store: false` response only where the connection's
//! cache holds it, kept one response in flight per connection, and took no warm-up for
//! a turn.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks;
use super::facts::{Facts, response_made};
use super::verdict::CheckResult;
use crate::scenario::Outcome;
use crate::transcript::{ModelExchange, SocketEvent, SocketEventKind};

/// The `websocket` checks (runs over the socket only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !f.scenario.task.websocket || (f.requests.is_empty() && f.warm_ups.is_empty()) {
        return Vec::new();
    }
    let mut out = vec![over_the_socket(f), connection_kept(f), one_in_flight(f)];
    out.extend(cached_chain(f));
    if f.sockets.iter().any(time_up) {
        out.push(reconnects(f));
    }
    if !f.warm_ups.is_empty() {
        out.push(warm_up_not_a_turn(f));
    }
    out
}

fn over_the_socket(f: &Facts) -> CheckResult {
    let mut problems = Vec::new();
    let mut sockets = Vec::new();
    for (position, round) in f.rounds.iter().enumerate() {
        for attempt in round {
            match attempt.connection {
                Some(connection) => {
                    if !sockets.contains(&connection) {
                        sockets.push(connection);
                    }
                }
                None => problems.push(format!(
                    "{} was sent as HTTP `{} {}`, not as a `response.create` event over a WebSocket connection to `/v1/responses`: the task asks for the WebSocket mode",
                    f.request_label(position),
                    attempt.method,
                    attempt.path
                )),
            }
        }
    }
    let pass = match sockets.as_slice() {
        [one] => format!("every request went over the socket (connection {one})"),
        many => format!(
            "every request went over a socket ({} connections)",
            many.len()
        ),
    };
    checks::WEBSOCKET_OVER_THE_SOCKET.judge(problems, pass)
}

/// The id of the response a create got, if it got one.
fn response_id(create: &ModelExchange) -> Option<&str> {
    response_made(create).and_then(|response| response["id"].as_str())
}

/// How a create is named in a message: its request label (which names its connection),
/// a retry of it with its own connection, or `a warm-up` on its connection.
fn label(f: &Facts, create: &ModelExchange) -> String {
    let found = f.rounds.iter().enumerate().find_map(|(position, round)| {
        let attempt = round.iter().position(|m| m.seq == create.seq)?;
        Some((position, attempt))
    });
    match found {
        Some((position, 0)) => return f.request_label(position),
        Some((position, retry)) => {
            let on = create
                .connection
                .map(|c| format!(", on connection {c}"))
                .unwrap_or_default();
            return format!("request {} (retry {retry}{on})", position + 1);
        }
        None => {}
    }
    let what = if create.warm_up {
        "a warm-up `response.create`"
    } else {
        "a `response.create`"
    };
    match create.connection {
        Some(connection) => format!("{what} (connection {connection})"),
        None => format!("{what} (HTTP)"),
    }
}

/// How connection `connection` ended, as the transcript saw it, if it did.
fn ending(f: &Facts, connection: u32) -> String {
    f.sockets
        .iter()
        .find(|s| s.connection == connection && s.kind == SocketEventKind::Closed)
        .map(|closed| match (closed.code, &closed.detail) {
            (Some(code), Some(detail)) => format!(", which closed ({code}: {detail})"),
            (None, Some(detail)) => format!(", which ended ({detail})"),
            _ => ", which closed".to_owned(),
        })
        .unwrap_or_default()
}

/// The socket is there to keep one connection for the whole loop: a loop that opens a
/// new one per request while the last is still usable pays a handshake each turn, loses
/// what a `store: false` chain had cached, and runs into the API's limit on connections.
fn connection_kept(f: &Facts) -> CheckResult {
    let all = &f.creates;
    let mut problems = Vec::new();
    for pair in all.windows(2) {
        let (before, create) = (pair[0], pair[1]);
        let (Some(old), Some(new)) = (before.connection, create.connection) else {
            continue;
        };
        if old == new {
            continue;
        }
        let lost = f.sockets.iter().find(|e| {
            e.connection == old && e.kind == SocketEventKind::Closed && e.seq < create.seq
        });
        // A connection the server ended (its time limit, a drop, a protocol error) or that
        // broke is lost; one the controller closed itself, or left open, was not.
        let by_client = lost.is_some_and(|closed| {
            closed
                .detail
                .as_deref()
                .is_some_and(|d| d.starts_with("closed by the client"))
                && closed.code != Some(1006)
        });
        if lost.is_some() && !by_client {
            continue;
        }
        let why = if by_client {
            "closed by the controller itself"
        } else {
            "still open"
        };
        problems.push(format!(
            "{} opened connection {new} while connection {old} was {why}: the WebSocket mode keeps one connection for the loop (each new one costs a handshake, drops what a `store: false` chain had cached, and counts against the API's connection limit); send the next response.create on the open connection and reconnect only when it is lost",
            label(f, create)
        ));
    }
    let connections: BTreeSet<u32> = all.iter().filter_map(|c| c.connection).collect();
    checks::WEBSOCKET_CONNECTION_KEPT.judge(
        problems,
        format!(
            "{} connection(s), each new one opened after the last was lost",
            connections.len()
        ),
    )
}

/// Whether the server closed a connection because its time was up (or a turn's
/// `close_connection` said so).
fn time_up(event: &SocketEvent) -> bool {
    event.kind == SocketEventKind::Closed
        && event.code == Some(1001)
        && event
            .detail
            .as_deref()
            .is_some_and(|detail| detail.starts_with("connection time limit reached"))
}

/// The API closes a connection whose time is up (1001) and the loop goes on over a new
/// one: a loop that stops there, or keeps using the closed socket, ends a task the model
/// had not finished.
fn reconnects(f: &Facts) -> CheckResult {
    let finished = f.result.is_some_and(|r| r.status == "completed")
        || f.scenario.expect.outcome != Outcome::Completed;
    let mut problems = Vec::new();
    for closed in f.sockets.iter().filter(|event| time_up(event)) {
        let reopened = f
            .sockets
            .iter()
            .any(|e| e.kind == SocketEventKind::Opened && e.seq > closed.seq);
        if reopened || finished {
            continue;
        }
        let after = f
            .creates
            .iter()
            .filter(|c| c.connection == Some(closed.connection) && c.seq < closed.seq)
            .rev()
            .find_map(|c| response_id(c))
            .map(|id| format!(" after response {id}"))
            .unwrap_or_default();
        let ended = match f.result {
            Some(result) => format!(
                "the loop then reported {}{}",
                result.status,
                result
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
            None => "the loop then ended without a result".to_owned(),
        };
        problems.push(format!(
            "the server closed connection {} with 1001 (connection time limit reached){after} and no new connection was opened; {ended}: a closed connection is not a failed task; open a new connection and send the next response.create there (under `store: false`, with the whole context)",
            closed.connection
        ));
    }
    checks::WEBSOCKET_RECONNECTS.judge(problems, "the loop reconnected after each server close")
}

/// A `store: false` response lives only in the cache of the connection that made it: a
/// create on another connection (or over HTTP) that continues it is refused with
/// `previous_response_not_found`, and the loop has lost its chain.
fn cached_chain(f: &Facts) -> Option<CheckResult> {
    let all = &f.creates;
    let mut problems = Vec::new();
    let mut continued = 0;
    for (index, create) in all.iter().enumerate() {
        let Some(previous) = create
            .body
            .get("previous_response_id")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let made = all[..index]
            .iter()
            .find(|earlier| response_id(earlier) == Some(previous));
        let Some(made) = made else { continue };
        let unstored = made.body.get("store") == Some(&Value::Bool(false));
        let Some(home) = made.connection.filter(|_| unstored) else {
            continue;
        };
        continued += 1;
        if create.connection != Some(home) {
            problems.push(format!(
                "{} continues previous_response_id {previous}, a `store: false` response that only the cache of connection {home} held{}: a new connection does not have it (the API answers previous_response_not_found); after a reconnect under `store: false`, send the whole context again without previous_response_id, or start a new chain",
                label(f, create),
                ending(f, home),
            ));
        }
    }
    (continued > 0).then(|| {
        checks::WEBSOCKET_CACHED_CHAIN.judge(
            problems,
            format!("{continued} `store: false` response(s) continued, each on the connection that made it"),
        )
    })
}

/// Without a `stream_id`, a connection answers one create at a time: a second one
/// before the first's terminal event is refused with an error event.
fn one_in_flight(f: &Facts) -> CheckResult {
    let all = &f.creates;
    let mut problems = Vec::new();
    for (index, create) in all.iter().enumerate() {
        if !(create.connection.is_some() && create.rejected_by.as_deref() == Some("socket")) {
            continue;
        }
        let busy = all[..index]
            .iter()
            .rev()
            .find(|earlier| earlier.connection == create.connection && earlier.stream.is_some());
        let busy = match busy.and_then(|b| response_id(b).map(|id| (b, id))) {
            Some((earlier, id)) => {
                format!("response {id} ({}) was still streaming", label(f, earlier))
            }
            None => "a response was still in flight".to_owned(),
        };
        problems.push(format!(
            "{} came while {busy}: the API refuses a second `response.create` on a connection with a response in flight (an `error` event, 400); wait for the terminal event (response.completed, .failed or .incomplete) before sending the next, or give each create its own `stream_id`",
            label(f, create),
        ));
    }
    checks::WEBSOCKET_ONE_IN_FLIGHT.judge(
        problems,
        "each create waited for the last response's terminal event",
    )
}

/// A warm-up (`generate: false`) answers with a completed response without output: a
/// loop that takes it for the model's turn ends with nothing, or with no call run.
fn warm_up_not_a_turn(f: &Facts) -> CheckResult {
    let all = &f.creates;
    let mut problems = Vec::new();
    let last_generating = all.iter().rposition(|create| !create.warm_up);
    for (index, warm_up) in all.iter().enumerate().filter(|(_, c)| c.warm_up) {
        if last_generating.is_some_and(|last| last > index) {
            continue;
        }
        let id = response_id(warm_up).unwrap_or("(none)");
        problems.push(format!(
            "{} (response {id}) is the last create of the run: a warm-up (`generate: false`) only prepares the connection and its response has no output, so the loop ended without asking the model; send the real `response.create` (it may continue the warm-up's response) and read the model's turn from it",
            label(f, warm_up),
        ));
    }
    checks::WEBSOCKET_WARM_UP_NOT_A_TURN
        .judge(problems, "every warm-up was followed by a model request")
}
