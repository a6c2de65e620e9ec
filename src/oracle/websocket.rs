//! `websocket`: a run over the Responses API's WebSocket mode is judged by every other
//! family as a streamed run is; this family judges what only the socket adds: that the
//! controller used it at all.

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;

/// The `websocket` checks (runs over the socket only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !f.scenario.task.websocket || f.requests.is_empty() {
        return Vec::new();
    }
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
                    Facts::request_label(position),
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
    vec![checks::WEBSOCKET_OVER_THE_SOCKET.judge(problems, pass)]
}
