//! `loopcheck record --listen`: a recorder for test frameworks, with no command of its
//! own. It serves on 127.0.0.1 (the proxy, recording; or the cassette, replaying), says
//! where on one JSON line on stdout (`{"base_url": ..., "replaying": ...}`), serves until
//! its stdin closes
//! (or SIGTERM / Ctrl-C), then writes the cassette and says how it went on a second
//! line: what was recorded and replayed, the drift, the requests the cassette does not
//! hold. A test's fixture starts one per test, each on its own file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper::header::{AUTHORIZATION, HeaderValue};
use serde::Serialize;
use serde_json::Value;

use super::command::{Mode, RecordError, RecordOptions, Recording, load_recording};
use crate::server::http::{RunningServer, send, upgrade};
use crate::server::{HttpLimits, Session};
use crate::transcript::Transcript;
use crate::transcript::drift::ComparisonStatus;

/// How a listening recorder ended: the second line it prints.
#[derive(Debug, Clone, Serialize)]
pub struct ListenOutcome {
    /// `recorded` (the cassette was written) or `replayed`.
    pub mode: &'static str,
    /// The cassette.
    pub path: PathBuf,
    /// Model requests recorded from the upstream.
    pub recorded: usize,
    /// Model requests served from the cassette.
    pub replayed: usize,
    /// Whether the cassette was written.
    pub written: bool,
    /// Each difference from the recording, named by request and field.
    pub drift: Vec<String>,
    /// The requests the cassette does not hold (every recorded turn was already
    /// served): `POST /v1/responses: {...}`.
    pub missing: Vec<String>,
}

impl ListenOutcome {
    /// Exit 0 when nothing drifted and nothing was missing.
    pub fn ok(&self) -> bool {
        self.drift.is_empty() && self.missing.is_empty()
    }
}

/// `loopcheck record --listen`: prints `{"base_url": ...}`, serves until stdin closes,
/// then prints the outcome.
pub async fn listen(options: &RecordOptions) -> Result<ListenOutcome, RecordError> {
    if !options.command.is_empty() {
        return Err(RecordError::CommandWithListen);
    }
    let out = &options.out;
    let exists = out.exists();
    if !exists && (crate::ci::is_ci() || options.mode == Mode::None) && options.mode != Mode::All {
        return Err(RecordError::MissingCassette {
            cassette: out.clone(),
            ci: options.mode != Mode::None,
        });
    }
    let replaying = options.mode == Mode::None || (options.mode == Mode::Once && exists);
    if replaying {
        replay(out).await
    } else {
        record(options).await
    }
}

/// Records through the proxy (serving from the cassette first under `--mode new`).
async fn record(options: &RecordOptions) -> Result<ListenOutcome, RecordError> {
    let mut recording = Recording::start(options).await?;
    recording.allow_empty = true;
    announce(&recording.server, false)?;
    until_stdin_closes().await;
    let saved = recording.finish(&options.out, true).await?;
    Ok(ListenOutcome {
        mode: "recorded",
        path: options.out.clone(),
        recorded: saved.recorded,
        replayed: saved.replayed,
        written: saved.written,
        drift: Vec::new(),
        missing: Vec::new(),
    })
}

/// Serves the cassette, as `loopcheck replay` does, and compares what came with it.
async fn replay(cassette: &Path) -> Result<ListenOutcome, RecordError> {
    let (scenario, recorded) = load_recording(cassette)?;
    let state = recorded.transcript.state;
    let session = Arc::new(Session::new(Arc::new(scenario), state));
    // The test's client carries whatever key it has (a real one, or none at all in CI):
    // the cassette's engine takes its own.
    let key = HeaderValue::try_from(format!("Bearer {}", session.api_key()))
        .map_err(|_| RecordError::Build("the session key is no header value".to_owned()))?;
    let (handled, upgraded, header) = (session.clone(), session.clone(), key.clone());
    let server = RunningServer::serve_with_upgrades(
        Arc::new(move |mut request| {
            let session = handled.clone();
            request.headers.insert(AUTHORIZATION, key.clone());
            Box::pin(async move { send(session.handle_async(request).await).await })
        }),
        Arc::new(move |mut request, slot| {
            request.headers_mut().insert(AUTHORIZATION, header.clone());
            Box::pin(upgrade(
                upgraded.clone(),
                request,
                HttpLimits::default(),
                slot,
            ))
        }),
    )
    .await
    .map_err(|source| RecordError::Io {
        what: "start the fake server".to_owned(),
        source,
    })?;
    announce(&server, true)?;
    until_stdin_closes().await;
    server.shutdown().await;
    let transcript = session.transcript();
    let comparison = crate::expectations::drift::compare(&recorded, &transcript, cassette);
    let drift = match comparison.status {
        ComparisonStatus::Matched => Vec::new(),
        _ => comparison.changes,
    };
    Ok(ListenOutcome {
        mode: "replayed",
        path: cassette.to_owned(),
        recorded: 0,
        replayed: transcript.model.iter().filter(|m| m.turn.is_some()).count(),
        written: false,
        drift,
        missing: missing(&transcript),
    })
}

/// The requests past the cassette's end, each with the start of its body (redacted).
fn missing(transcript: &Transcript) -> Vec<String> {
    transcript
        .model
        .iter()
        .filter(|m| m.rejected_by.as_deref() == Some("script"))
        .map(|m| {
            let body: &Value = &m.body;
            let body = crate::redact::installed()
                .text(&body.to_string())
                .into_owned();
            format!("{} {}: {}", m.method, m.path, crate::text::clip(&body, 200))
        })
        .collect()
}

/// Prints where the server listens, and whether it replays, as one JSON line, and
/// flushes it: the caller waits for it.
fn announce(server: &RunningServer, replaying: bool) -> Result<(), RecordError> {
    let line = serde_json::json!({
        "base_url": format!("{}/v1", server.base_url()),
        "replaying": replaying,
    });
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|source| RecordError::Io {
            what: "write the base URL".to_owned(),
            source,
        })
}

/// Resolves when stdin reaches its end (the caller closed it, or went away), or at
/// SIGTERM or Ctrl-C.
async fn until_stdin_closes() {
    let interrupt = crate::interrupt::Interrupt::listen().ok();
    // A thread of its own: reading stdin blocks.
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 1024];
        let mut stdin = std::io::stdin().lock();
        while stdin.read(&mut buffer).is_ok_and(|n| n > 0) {}
        let _ = closed.send(());
    });
    let stdin = async {
        let _ = stdin_closed.await;
    };
    match interrupt {
        Some(interrupt) => {
            tokio::select! {
                () = stdin => {}
                () = interrupt.first() => {}
            }
        }
        None => stdin.await,
    }
}
