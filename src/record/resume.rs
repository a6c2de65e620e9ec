//! `record --mode new` on an existing cassette: the command is served from the cassette
//! while its requests match the recorded ones, in order; from the first request that
//! does not (or past the cassette's end) everything goes to the upstream and is
//! recorded. The engine and the proxy record into one session, so the cassette written
//! afterwards is one consistent transcript: the matched interactions, then the new ones.
//! (Recorded interactions after the first mismatch no longer fit the conversation and
//! are dropped.) A WebSocket connection goes to the upstream from its upgrade on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hyper::Response;
use hyper::header::{AUTHORIZATION, HeaderValue};
use serde_json::Value;

use super::proxy::Proxy;
use crate::expectations::drift::{comparable, request_only};
use crate::scenario::Recorded;
use crate::server::http::{DropConnection, ReplyStream, RunningServer, send};
use crate::server::{EngineRequest, Session};
use crate::transcript::ModelExchange;
use crate::transcript::drift::changes;
use crate::transcript::normalize::Step;

/// Serves from the cassette, then forwards.
pub struct Resume {
    session: Arc<Session>,
    proxy: Arc<Proxy>,
    recorded: Recorded,
    replaying: AtomicBool,
}

impl Resume {
    /// Serves `session` (the cassette's) while requests match `recorded`, then `proxy`,
    /// which records into the same session.
    pub fn new(session: Arc<Session>, proxy: Arc<Proxy>, recorded: Recorded) -> Arc<Self> {
        Arc::new(Self {
            session,
            proxy,
            recorded,
            replaying: AtomicBool::new(true),
        })
    }

    /// Serves on 127.0.0.1. A WebSocket connection is not served from the cassette:
    /// its creates are recorded from the upstream, and so is everything after it.
    pub async fn start(self: &Arc<Self>) -> std::io::Result<RunningServer> {
        let resume = self.clone();
        let (socket, proxy) = (self.clone(), self.proxy.upgrader());
        RunningServer::serve_with_upgrades(
            Arc::new(move |request| {
                let resume = resume.clone();
                Box::pin(async move { resume.answer(request).await })
            }),
            Arc::new(move |request, slot| {
                if socket.replaying.swap(false, Ordering::SeqCst) {
                    eprintln!(
                        "loopcheck: a WebSocket connection is not replayed from the cassette: recording from here on"
                    );
                }
                proxy(request, slot)
            }),
        )
        .await
    }

    async fn answer(
        self: Arc<Self>,
        request: EngineRequest,
    ) -> Result<Response<ReplyStream>, DropConnection> {
        if request.path.starts_with("/tools/") {
            return send(self.session.handle_async(request).await).await;
        }
        if self.replaying.load(Ordering::SeqCst) && self.recorded_next(&request) {
            // The command carries the caller's real key, for the upstream; the cassette's
            // engine takes its own.
            let mut request = request;
            let key = format!("Bearer {}", self.session.api_key());
            let key = HeaderValue::try_from(key).expect("a generated key is a valid header value");
            request.headers.insert(AUTHORIZATION, key);
            return send(self.session.handle_async(request).await).await;
        }
        if self.replaying.swap(false, Ordering::SeqCst) {
            eprintln!(
                "loopcheck: {} {} is not the next recorded request: recording from here on",
                request.method, request.path
            );
        }
        self.proxy.clone().answer(request).await
    }

    /// Whether `request` is the next request the cassette recorded, compared as a replay
    /// compares (normalized and redacted, in the context of what came before).
    fn recorded_next(&self, request: &EngineRequest) -> bool {
        let mut transcript = self.session.transcript();
        let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        transcript.model.push(ModelExchange {
            seq: u64::MAX,
            ..request.exchange(body, false)
        });
        let actual = comparable(&self.recorded, &transcript);
        let model = |steps: &[Step]| -> Vec<Step> {
            steps
                .iter()
                .filter(|s| matches!(s, Step::Model(_)))
                .cloned()
                .collect()
        };
        let (mine, theirs) = (model(&actual.steps), model(&self.recorded.transcript.steps));
        match (mine.last(), theirs.get(mine.len().saturating_sub(1))) {
            (Some(mine), Some(theirs)) => {
                changes(&request_only(theirs), &request_only(mine)).is_empty()
            }
            _ => false,
        }
    }
}
