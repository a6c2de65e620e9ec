//! The fake Responses API and tool backend of one case, served on a test's own wiremock
//! [`MockServer`] (cargo feature `wiremock`).
//!
//! For `#[tokio::test]`s of Rust tool loops that already use wiremock: a
//! [`LoopcheckFake`] mounts one mock that answers every path with loopcheck's session
//! engine, so `{server.uri()}/v1/...` is the scripted Responses API and
//! `{server.uri()}/tools/...` the fixture tool backend. Run the loop against them, then
//! hand its result to [`LoopcheckFake::verdict`] (or [`LoopcheckFake::assert_conforms`])
//! and the oracle judges the run as `loopcheck run` would.
//!
//! ```no_run
//! # async fn my_loop(_: loopcheck::runner::ControllerEnv, _: serde_json::Value) -> serde_json::Value { todo!() }
//! # async fn test() {
//! use loopcheck::scenario::StateMode;
//! use loopcheck::wiremock::LoopcheckFake;
//!
//! let server = wiremock::MockServer::start().await;
//! let fake = LoopcheckFake::from_catalogue("correlation/01-single-call", StateMode::PreviousResponseId)
//!     .expect("a case wiremock can serve");
//! fake.mount(&server).await;
//! let result = my_loop(fake.env(&server), fake.task()).await;
//! fake.assert_conforms(&result);
//! # }
//! ```
//!
//! # What wiremock cannot serve
//!
//! wiremock answers with whole bodies and cannot break a connection, so:
//!
//! - a stream is sent as one SSE body holding every event up to any scripted cut; every
//!   event counts as sent when the body is handed over, so `stream/executed-after-done`
//!   cannot catch a loop that runs a call on partial arguments (the `dispatch` checks still
//!   see the arguments it ran the call with);
//! - a stream cut before its terminal event ends cleanly where the cut is, instead of
//!   with a broken connection;
//! - a paced stream (a delay between events, or a recording's pauses) and a stream
//!   written a few bytes at a time arrive all at once;
//! - a dropped connection is answered with a `502 Bad Gateway` and `x-should-retry:
//!   true` (what a proxy in front of a vanished server answers, and retried as a dropped
//!   connection is);
//! - delays (a slow answer, a slow tool) are kept, through [`ResponseTemplate::set_delay`].
//!
//! wiremock answers HTTP alone: a case run over the Responses API's WebSocket mode (the
//! `websocket` delivery) is refused with [`FakeError::WebSocket`], by either constructor.
//!
//! The catalogue cases that need what wiremock lacks (`stream/02-cut-before-terminal`,
//! `stream/03-delayed-call-executed-after-done`, `stream/07-parallel-hostile-deltas`,
//! `transport/05-connection-dropped`) would be judged on something else than what they
//! script, so [`LoopcheckFake::new`] refuses them with [`FakeError::Approximated`];
//! [`LoopcheckFake::approximating`] serves them anyway and says so in every verdict's
//! `detail`. Run them with `loopcheck run` instead.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::wiremock::matchers::any;
use ::wiremock::{Mock, MockServer, Respond, ResponseTemplate};
use hyper::StatusCode;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::Value;

use crate::oracle::{CaseVerdict, CheckVerdict};
use crate::report::CaseReport;
use crate::runner::{ControllerEnv, finish};
use crate::scenario::task_json;
use crate::scenario::{Delivery, Scenario, StateMode};
use crate::server::{EngineReply, EngineRequest, ReplyBody, Session};
use crate::transcript::{ControllerResult, Unfinished};

/// The fake's mock yields to every other mock on the server: wiremock tries the lowest
/// priority number first, and the user's own mocks default to 5.
const FALLBACK_PRIORITY: u8 = u8::MAX;

/// Something a case scripts that wiremock can only approximate. Turns count from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Approximation {
    /// A fault drops the connection; a `502` with `x-should-retry: true` stands in.
    DroppedConnection {
        /// The turn whose attempt is dropped.
        turn: usize,
    },
    /// A stream is cut before its terminal event; its body ends cleanly at the cut.
    CutStream {
        /// The streamed turn.
        turn: usize,
    },
    /// A stream waits between its events; they arrive all at once.
    PacedStream {
        /// The streamed turn.
        turn: usize,
    },
    /// A stream is written a few bytes at a time; it is written whole.
    ChunkedStream {
        /// The streamed turn.
        turn: usize,
    },
}

impl fmt::Display for Approximation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DroppedConnection { turn } => write!(
                f,
                "turn {turn} drops a connection: wiremock answers 502 instead"
            ),
            Self::CutStream { turn } => write!(
                f,
                "turn {turn} cuts its stream: wiremock ends the body cleanly at the cut"
            ),
            Self::PacedStream { turn } => write!(
                f,
                "turn {turn} paces its stream: wiremock sends every event at once"
            ),
            Self::ChunkedStream { turn } => write!(
                f,
                "turn {turn} writes its stream in small chunks: wiremock writes it whole"
            ),
        }
    }
}

/// What wiremock would only approximate of `scenario`, in script order (the same in
/// every state mode). Empty when the plug-in serves the case as loopcheck's own server
/// does.
pub fn approximations(scenario: &Scenario) -> Vec<Approximation> {
    let streamed = scenario.task.stream;
    let mut found = Vec::new();
    for (index, turn) in scenario.script.iter().enumerate() {
        let turn_number = index + 1;
        if turn.faults.iter().any(|fault| fault.drop) {
            found.push(Approximation::DroppedConnection { turn: turn_number });
        }
        if !streamed {
            continue;
        }
        if turn.stream.cut_after.is_some() {
            found.push(Approximation::CutStream { turn: turn_number });
        }
        let recorded_pauses = turn
            .recorded
            .as_ref()
            .is_some_and(|recorded| recorded.events.iter().any(|event| event.after_ms > 0));
        let held = turn.stream.done_delay_ms.is_some() || turn.stream.terminal_delay_ms.is_some();
        if turn.stream.delay_ms > 0 || held || recorded_pauses {
            found.push(Approximation::PacedStream { turn: turn_number });
        }
        if turn.stream.chunk_bytes.is_some() {
            found.push(Approximation::ChunkedStream { turn: turn_number });
        }
    }
    found
}

/// Why a [`LoopcheckFake`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FakeError {
    /// The embedded catalogue has no case with this id.
    #[error("the catalogue has no case '{0}'")]
    UnknownCase(String),
    /// The embedded catalogue did not load (a build of loopcheck that is broken).
    #[error("the embedded catalogue does not load: {0}")]
    Catalogue(String),
    /// The case is not scripted for this state mode.
    #[error("case '{case}' does not run in the {state} mode (it lists: {listed})")]
    StateNotCovered {
        /// The case id.
        case: String,
        /// The state mode asked for.
        state: &'static str,
        /// The state modes the case lists.
        listed: String,
    },
    /// The case runs over the Responses API's WebSocket mode, which a wiremock server,
    /// answering HTTP requests one by one, cannot serve.
    #[error(
        "case '{case}' runs over the WebSocket mode (delivery `websocket`), which wiremock cannot serve; it serves the deliveries json and stream; run it with `loopcheck run`"
    )]
    WebSocket {
        /// The case id.
        case: String,
    },
    /// The case scripts what wiremock can only approximate; its verdict would judge
    /// something else (use [`LoopcheckFake::approximating`] to serve it anyway).
    #[error(
        "case '{case}' cannot be served faithfully through wiremock ({}); run it with `loopcheck run`",
        list(.approximations)
    )]
    Approximated {
        /// The case id.
        case: String,
        /// What wiremock would approximate.
        approximations: Vec<Approximation>,
    },
}

fn list(approximations: &[Approximation]) -> String {
    approximations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One case's fake Responses API and fixture tool backend, to mount on a wiremock
/// [`MockServer`], and the oracle that judges the loop run against it.
///
/// Each fake is one case run: a fresh session, its own API key and ledger. Make a new
/// one (and a new server, or at least a new mount) for every run.
pub struct LoopcheckFake {
    session: Arc<Session>,
    approximations: Vec<Approximation>,
    started: Instant,
}

impl LoopcheckFake {
    /// The fake for the embedded catalogue's case `id` in `state`; refused when the case
    /// is not faithful through wiremock (see the module docs).
    pub fn from_catalogue(id: &str, state: StateMode) -> Result<Self, FakeError> {
        Self::new(catalogue_scenario(id)?, state)
    }

    /// The fake for `scenario` in `state` (a scenario file the tests load, or one built in
    /// code); refused when the case is not faithful through wiremock.
    pub fn new(scenario: Scenario, state: StateMode) -> Result<Self, FakeError> {
        let fake = Self::approximating(scenario, state)?;
        if fake.approximations.is_empty() {
            Ok(fake)
        } else {
            Err(FakeError::Approximated {
                case: fake.session.scenario().id.clone(),
                approximations: fake.approximations,
            })
        }
    }

    /// The fake for `scenario` in `state`, serving what wiremock cannot do faithfully as
    /// best it can; every verdict's `detail` then names the approximations.
    pub fn approximating(scenario: Scenario, state: StateMode) -> Result<Self, FakeError> {
        // Asked for as written: a socket-only case, or one delivered over the socket.
        let over_socket = scenario.delivery() == Delivery::WebSocket
            || scenario
                .run_deliveries()
                .iter()
                .all(|delivery| *delivery == Delivery::WebSocket);
        if over_socket {
            return Err(FakeError::WebSocket {
                case: scenario.id.clone(),
            });
        }
        let states = scenario.run_states();
        if !states.contains(&state) {
            return Err(FakeError::StateNotCovered {
                case: scenario.id.clone(),
                state: state.as_str(),
                listed: states
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let approximations = approximations(&scenario);
        Ok(Self {
            session: Arc::new(Session::new(Arc::new(scenario), state)),
            approximations,
            started: Instant::now(),
        })
    }

    /// Mounts the fake on `server`: one mock answering every method and path, below
    /// every other mock on the server, so the test's own mocks still answer first.
    pub async fn mount(&self, server: &MockServer) {
        Mock::given(any())
            .respond_with(self.responder())
            .with_priority(FALLBACK_PRIORITY)
            .named(format!("loopcheck {}", self.session.scenario().id))
            .mount(server)
            .await;
    }

    /// The responder [`LoopcheckFake::mount`] mounts, for a mock of your own making (on
    /// a path prefix, say).
    pub fn responder(&self) -> EngineResponder {
        EngineResponder::new(self.session.clone())
    }

    /// The session behind the fake: its transcript so far, its scenario.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// What this fake only approximates (empty unless made with
    /// [`LoopcheckFake::approximating`]).
    pub fn approximations(&self) -> &[Approximation] {
        &self.approximations
    }

    /// The API key the loop must send (`Authorization: Bearer ...`).
    pub fn api_key(&self) -> &str {
        self.session.api_key()
    }

    /// The Responses API's base URL on `server`: `{server.uri()}/v1`.
    pub fn base_url(&self, server: &MockServer) -> String {
        format!("{}/v1", server.uri())
    }

    /// The fixture tool backend's base URL on `server`: `{server.uri()}/tools`.
    pub fn tools_url(&self, server: &MockServer) -> String {
        format!("{}/tools", server.uri())
    }

    /// Everything the contract hands a controller through its environment.
    pub fn env(&self, server: &MockServer) -> ControllerEnv {
        ControllerEnv {
            base_url: self.base_url(server),
            api_key: self.api_key().to_owned(),
            tools_url: self.tools_url(server),
            case: self.session.scenario().id.clone(),
        }
    }

    /// The task JSON, as `loopcheck run` writes it to the task file (docs/contract.md).
    pub fn task(&self) -> Value {
        task_json(self.session.scenario(), self.session.state())
    }

    /// The oracle's judgement of the run so far, given the loop's result object
    /// (`{"status": "completed", "output_text": ...}` or `{"status": "failed", "reason":
    /// ...}`, docs/contract.md). A result that is not one is judged `crashed`.
    pub fn verdict(&self, result: &Value) -> CaseReport {
        let result = ControllerResult::from_value(result).map_err(|err| Unfinished::NoResult {
            why: err.to_string(),
        });
        self.judge(result)
    }

    /// The oracle's judgement of a run whose loop produced no result (it panicked, or a
    /// timeout of the test's own cancelled it).
    pub fn verdict_unfinished(&self, unfinished: Unfinished) -> CaseReport {
        self.judge(Err(unfinished))
    }

    /// [`LoopcheckFake::verdict`], panicking with every check that did not hold and its
    /// message unless the run conforms as `loopcheck run` judges it: `pass`, or
    /// `non-strict` (only SHOULD checks failed), whose findings go to standard error.
    /// Returns the report otherwise. The panic names the caller's line, as `assert!` does.
    #[track_caller]
    pub fn assert_conforms(&self, result: &Value) -> CaseReport {
        let report = self.verdict(result);
        match report.verdict {
            CaseVerdict::Pass => {}
            CaseVerdict::NonStrict => eprintln!("{}", failure_text(&report)),
            _ => panic!("{}", failure_text(&report)),
        }
        report
    }

    fn judge(&self, result: Result<ControllerResult, Unfinished>) -> CaseReport {
        let session = &self.session;
        let mut report = finish(
            session.scenario(),
            session.state(),
            session,
            None,
            result,
            self.started,
        );
        if !self.approximations.is_empty() {
            let note = format!(
                "served through wiremock with approximations: {}",
                list(&self.approximations)
            );
            report.detail = Some(match report.detail.take() {
                Some(detail) => format!("{detail}; {note}"),
                None => note,
            });
        }
        report
    }
}

fn catalogue_scenario(id: &str) -> Result<Scenario, FakeError> {
    let cases = crate::scenario::catalogue().map_err(|errors| {
        FakeError::Catalogue(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    cases
        .into_iter()
        .find(|case| case.scenario.id == id)
        .map(|case| case.scenario)
        .ok_or_else(|| FakeError::UnknownCase(id.to_owned()))
}

/// What [`LoopcheckFake::assert_conforms`] panics with.
fn failure_text(report: &CaseReport) -> String {
    let mut text = format!(
        "{} [{}]: {}",
        report.id,
        report.state.as_str(),
        report.verdict.as_str()
    );
    if let Some(detail) = &report.detail {
        text.push_str(&format!(" ({detail})"));
    }
    for check in &report.checks {
        if !matches!(check.verdict, CheckVerdict::Pass | CheckVerdict::Info) {
            text.push_str(&format!(
                "\n  {} ({}): {}",
                check.id,
                check.verdict.as_str(),
                check.message
            ));
        }
    }
    text
}

/// A wiremock [`Respond`] that answers every request with one session's engine: the
/// Responses API under `/v1`, the tool backend under `/tools`. Streams go out as whole
/// SSE bodies (see the module docs for what that loses).
#[derive(Clone)]
pub struct EngineResponder {
    session: Arc<Session>,
}

impl EngineResponder {
    /// A responder for `session`.
    pub fn new(session: Arc<Session>) -> Self {
        Self { session }
    }
}

impl Respond for EngineResponder {
    fn respond(&self, request: &::wiremock::Request) -> ResponseTemplate {
        let reply = self.session.handle(EngineRequest {
            method: request.method.as_str().to_owned(),
            path: request.url.path().to_owned(),
            query: request.url.query().map(str::to_owned),
            headers: request.headers.clone(),
            body: request.body.clone().into(),
        });
        template(reply)
    }
}

/// An engine's reply as a wiremock response: the same status, headers and body the
/// hyper front sends, with the approximations of the module docs.
fn template(reply: EngineReply) -> ResponseTemplate {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut template = ResponseTemplate::new(status);
    for (name, value) in &reply.headers {
        // wiremock panics on a header it cannot convert; the hyper front skips those too.
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(*name),
            HeaderValue::try_from(value.as_ref()),
        ) {
            template = template.insert_header(name, value);
        }
    }
    if !reply.delay.is_zero() {
        template = template.set_delay(reply.delay);
    }
    match reply.body {
        ReplyBody::Json(bytes) => template.set_body_raw(bytes.to_vec(), "application/json"),
        ReplyBody::Raw { content_type, text } => template.set_body_raw(text, content_type),
        ReplyBody::Stream {
            events, progress, ..
        } => {
            // The whole body is handed over now, so every event counts as sent now.
            let written = events.written();
            progress.events_sent(0..written, &events);
            progress.ended();
            template.set_body_raw(
                events.frames(0, written).to_vec(),
                "text/event-stream; charset=utf-8",
            )
        }
        ReplyBody::Drop => dropped_connection(reply.delay),
    }
}

/// The stand-in for a dropped connection: what a proxy answers when the server behind
/// it vanished, marked retryable as the official SDKs treat a connection error.
fn dropped_connection(delay: Duration) -> ResponseTemplate {
    ResponseTemplate::new(StatusCode::BAD_GATEWAY)
        .insert_header("x-should-retry", "true")
        .set_delay(delay)
        .set_body_raw(
            "loopcheck: the script drops this connection; wiremock cannot, so 502 stands in",
            "text/plain",
        )
}
