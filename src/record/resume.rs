//! `record --mode new` on an existing cassette. A cassette matched by key (`match_on`)
//! serves each request that has the key of a recorded request not yet served, and sends
//! every other one to the upstream, which is recorded: the cassette written afterwards
//! keeps every recorded interaction, used or not, and gains the new ones. An older
//! cassette, matched by order, is served while the requests match the recorded ones in
//! order; from the first that does not (or past the cassette's end) everything goes to
//! the upstream. The engine and the proxy record into one session, so that cassette is
//! one consistent transcript: the matched interactions, then the new ones (recorded
//! interactions after the first mismatch no longer fit the conversation and are
//! dropped). A WebSocket connection goes to the upstream from its upgrade on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hyper::Response;
use hyper::header::{AUTHORIZATION, HeaderValue};
use serde_json::Value;

use super::proxy::Proxy;
use crate::expectations::drift::{comparable, request_only};
use crate::scenario::Recorded;
use crate::server::http::{DropConnection, ReplyStream, RunningServer, send};
use crate::server::keyed::TurnKeys;
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
    /// For a cassette matched by key: its turns' keys, and which are not yet served.
    unused: Option<(TurnKeys, Mutex<Vec<bool>>)>,
}

impl Resume {
    /// Serves `session` (the cassette's) while requests match `recorded`, then `proxy`,
    /// which records into the same session.
    pub fn new(session: Arc<Session>, proxy: Arc<Proxy>, recorded: Recorded) -> Arc<Self> {
        let unused = TurnKeys::of(session.scenario()).map(|keys| {
            let unused = (0..keys.len()).map(|t| keys.key(t).is_some()).collect();
            (keys, Mutex::new(unused))
        });
        Arc::new(Self {
            session,
            proxy,
            recorded,
            replaying: AtomicBool::new(true),
            unused,
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
        let from_cassette = match &self.unused {
            Some((keys, unused)) => self.take_turn(keys, unused, &request),
            None => self.replaying.load(Ordering::SeqCst) && self.recorded_next(&request),
        };
        if from_cassette {
            // The command carries the caller's real key, for the upstream; the cassette's
            // engine takes its own.
            let mut request = request;
            let key = format!("Bearer {}", self.session.api_key());
            let key = HeaderValue::try_from(key).expect("a generated key is a valid header value");
            request.headers.insert(AUTHORIZATION, key);
            return send(self.session.handle_async(request).await).await;
        }
        if self.unused.is_none() && self.replaying.swap(false, Ordering::SeqCst) {
            eprintln!(
                "loopcheck: {} {} is not the next recorded request: recording from here on",
                request.method, request.path
            );
        }
        self.proxy.clone().answer(request).await
    }

    /// Whether a recorded turn not yet served has the key of `request` (a create); if
    /// so it is taken, and the cassette's engine, which picks turns by the same keys,
    /// serves one. A request about a response it served goes to it too.
    fn take_turn(
        &self,
        keys: &TurnKeys,
        unused: &Mutex<Vec<bool>>,
        request: &EngineRequest,
    ) -> bool {
        let create = request.method == "POST"
            && request
                .path
                .split('?')
                .next()
                .is_some_and(|p| p.ends_with("/responses"));
        if !create {
            // A poll, cancel or delete of a response the cassette served goes where it is.
            let transcript = self.session.transcript();
            return transcript
                .model
                .iter()
                .filter_map(|m| m.served()?["id"].as_str().map(str::to_owned))
                .any(|id| request.path.contains(&id));
        }
        let key = keys.live(&request.path, &request.body);
        let mut unused = unused
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let found = (0..unused.len()).find(|t| unused[*t] && keys.key(*t) == Some(key.as_str()));
        match found {
            Some(turn) => {
                unused[turn] = false;
                true
            }
            None => false,
        }
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
