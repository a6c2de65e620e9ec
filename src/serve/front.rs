//! The session server: its control routes, and each session's API and tool backend behind them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::registry::Admission;
use super::{Limits, Registry, SessionError};
use crate::contract::ControllerEnv;
use crate::expectations::Snapshots;
use crate::runner;
use crate::scenario::{Case, Delivery, StateMode};
use crate::server::http::{self, DropConnection, ReplyStream, RunningServer};
use crate::server::{EngineReply, EngineRequest, HttpLimits, ReplyBody};
use crate::transcript::{ControllerResult, Unfinished};

/// How a serve server is set up.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The port on 127.0.0.1; 0 takes a free one.
    pub port: u16,
    /// How far sessions may grow.
    pub limits: Limits,
    /// The seed sessions use unless their creation names one.
    pub seed: u64,
    /// What the HTTP front lets each client do.
    pub http: HttpLimits,
    /// The snapshot folder every verdict is held to (`--snapshots`), if any.
    pub snapshots: Option<Snapshots>,
}

/// A running serve server; dropping it (or [`SessionServer::shutdown`]) stops it.
pub struct SessionServer {
    server: RunningServer,
    registry: Arc<Registry>,
    reaper: JoinHandle<()>,
}

/// What every request handler shares.
struct Front {
    cases: Vec<Arc<Case>>,
    by_id: HashMap<String, Arc<Case>>,
    registry: Arc<Registry>,
    /// `http://127.0.0.1:PORT`, known once the port is bound.
    origin: OnceLock<String>,
}

impl SessionServer {
    /// Binds 127.0.0.1 and serves sessions of `cases`.
    pub async fn start(cases: Vec<Case>, options: ServeOptions) -> std::io::Result<Self> {
        let cases: Vec<Arc<Case>> = cases.into_iter().map(Arc::new).collect();
        let registry =
            Arc::new(Registry::new(options.limits, options.seed).with_snapshots(options.snapshots));
        let front = Arc::new(Front {
            by_id: cases
                .iter()
                .map(|case| (case.scenario.id.clone(), case.clone()))
                .collect(),
            cases,
            registry: registry.clone(),
            origin: OnceLock::new(),
        });
        let handler = {
            let front = front.clone();
            Arc::new(move |request| {
                let front = front.clone();
                Box::pin(async move { front.answer(request).await }) as http::BoxFuture<'static, _>
            })
        };
        let upgrades = {
            let (front, limits) = (front.clone(), options.http);
            http::Upgrades {
                on_path: is_session_socket_path,
                upgrader: Arc::new(move |request, slot| {
                    let front = front.clone();
                    Box::pin(async move { front.session_socket(request, limits, slot).await })
                }),
            }
        };
        let server =
            RunningServer::serve_on_with_upgrades(options.port, handler, upgrades, options.http)
                .await?;
        let _ = front.origin.set(server.base_url());
        let reaper = tokio::spawn(reap(Arc::downgrade(&registry)));
        Ok(Self {
            server,
            registry,
            reaper,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server.base_url()
    }

    /// The sessions.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Stops serving and drops every session.
    pub async fn shutdown(self) {
        self.reaper.abort();
        self.server.shutdown().await;
    }
}

/// Drops idle sessions now and then, so an abandoned session's memory comes back even
/// when no new session is created; ends once the server is gone.
async fn reap(registry: std::sync::Weak<Registry>) {
    let Some(idle) = registry.upgrade().map(|registry| registry.limits().idle) else {
        return;
    };
    let every = (idle / 2).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        match registry.upgrade() {
            Some(registry) => registry.expire_idle(),
            None => return,
        }
    }
}

/// A control route's answer.
type Answer = (u16, Value);

fn error(status: u16, message: impl std::fmt::Display) -> Answer {
    (
        status,
        json!({"error": {"message": message.to_string(), "type": "loopcheck_error"}}),
    )
}

/// A session request's choice the case does not run in: `state previous_response_id,
/// stateless; got "replay"` (what the case runs in, and what was asked).
#[derive(Debug, thiserror::Error)]
#[error("{key} {}; got {asked}", .allowed.join(", "))]
struct NotRun {
    /// `state` or `delivery`.
    key: String,
    /// What the case runs in.
    allowed: Vec<&'static str>,
    /// What the request named.
    asked: Value,
}

/// The `key` a session request names, one of `allowed` (the first when absent); else
/// what the case runs in, and what was asked.
fn chosen<T: Copy + PartialEq>(
    request: &Value,
    key: &str,
    allowed: &[T],
    parse: fn(&str) -> Option<T>,
    word: fn(T) -> &'static str,
) -> Result<T, NotRun> {
    match request.get(key) {
        None | Some(Value::Null) => Ok(allowed[0]),
        Some(asked) => asked
            .as_str()
            .and_then(parse)
            .filter(|value| allowed.contains(value))
            .ok_or_else(|| NotRun {
                key: key.to_owned(),
                allowed: allowed.iter().map(|value| word(*value)).collect(),
                asked: asked.clone(),
            }),
    }
}

/// The deliveries of a case serve mode offers: all of them, the socket too.
fn served_deliveries(scenario: &crate::scenario::Scenario) -> Vec<Delivery> {
    scenario.run_deliveries()
}

fn session_error(err: SessionError) -> Answer {
    let status = match err {
        SessionError::Unknown(_) => 404,
        SessionError::NoToken => 401,
        SessionError::Gone(_) => 410,
        SessionError::Full(_) => 503,
        SessionError::ResultTwice(_) => 409,
    };
    error(status, err)
}

impl Front {
    async fn answer(
        &self,
        request: EngineRequest,
    ) -> Result<hyper::Response<ReplyStream>, DropConnection> {
        let path = request.path.clone();
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let method = request.method.as_str();
        let (status, body) = match segments.as_slice() {
            ["s", id, rest @ ..] => return self.session_request(id, rest, request).await,
            ["loopcheck", "cases"] if method == "GET" => (200, self.cases()),
            ["loopcheck", "sessions"] if method == "POST" => self.create(&request.body),
            ["loopcheck", "sessions", id, rest @ ..] => self.control(id, rest, &request),
            _ => not_found(method, &path),
        };
        let mut reply = json_reply(status, body);
        if status == 401 {
            reply
                .headers
                .push(("www-authenticate", Cow::Borrowed("Bearer")));
        }
        http::send(reply).await
    }

    /// A session's control route, with the `/loopcheck/sessions/{id}` prefix taken off:
    /// only for the session's own token.
    fn control(&self, id: &str, rest: &[&str], request: &EngineRequest) -> Answer {
        let method = request.method.as_str();
        let known = matches!(
            (method, rest),
            ("DELETE", []) | ("POST", ["result"]) | ("GET", ["verdict" | "transcript"])
        );
        if !known {
            return not_found(method, &request.path);
        }
        let Some(token) = request.bearer() else {
            return session_error(SessionError::NoToken);
        };
        let answer = match rest {
            [] => self
                .registry
                .delete(id, &token)
                .map(|()| json!({"id": id, "deleted": true})),
            ["result"] => return self.take_result(id, &token, &request.body),
            ["verdict"] => self.registry.verdict(id, &token).map(|report| {
                let mut answer = serde_json::to_value(&report).unwrap_or_default();
                // What a test failure says of the snapshot, in the console's words.
                if let (Some(snapshots), Value::Object(fields)) =
                    (self.registry.snapshots(), &mut answer)
                    && let Some(message) = super::snapshots::message(&report, snapshots.dir())
                {
                    fields.insert("snapshot_message".to_owned(), Value::String(message));
                }
                answer
            }),
            _ => self
                .registry
                .transcript(id, &token)
                .map(|transcript| serde_json::to_value(&transcript).unwrap_or_default()),
        };
        match answer {
            Ok(body) => (200, body),
            Err(err) => session_error(err),
        }
    }

    /// A WebSocket upgrade of a session's `/s/{id}/v1/responses`: the session's own
    /// socket, as a per-case server serves it.
    async fn session_socket(
        &self,
        mut request: hyper::Request<hyper::body::Incoming>,
        limits: HttpLimits,
        slot: http::UpgradeSlot,
    ) -> Result<hyper::Response<ReplyStream>, DropConnection> {
        let path = request.uri().path().to_owned();
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let ["s", id, rest @ ..] = segments.as_slice() else {
            let (status, body) = not_found("GET", &path);
            return http::send(json_reply(status, body)).await;
        };
        let reply = match self.registry.admit(id, 0) {
            Ok(Admission::Serve(session)) => {
                // The session's own path, as its API sees every request.
                if let Ok(uri) = format!("/{}", rest.join("/")).parse() {
                    *request.uri_mut() = uri;
                }
                return http::upgrade(session, request, limits, slot).await;
            }
            Ok(Admission::Refuse(why)) => error(400, format!("loopcheck serve: {why}")),
            Err(err) => session_error(err),
        };
        http::send(json_reply(reply.0, reply.1)).await
    }

    /// A request to a session's fake API or tool backend, with the `/s/{id}` prefix
    /// taken off.
    async fn session_request(
        &self,
        id: &str,
        rest: &[&str],
        mut request: EngineRequest,
    ) -> Result<hyper::Response<ReplyStream>, DropConnection> {
        let reply = match self.registry.admit(id, request.body.len()) {
            Ok(Admission::Serve(session)) => {
                request.path = format!("/{}", rest.join("/"));
                session.handle_async(request).await
            }
            Ok(Admission::Refuse(why)) => {
                let (status, body) = error(400, format!("loopcheck serve: {why}"));
                json_reply(status, body)
            }
            Err(err) => {
                let (status, body) = session_error(err);
                json_reply(status, body)
            }
        };
        http::send(reply).await
    }

    fn cases(&self) -> Value {
        let cases: Vec<Value> = self
            .cases
            .iter()
            .map(|case| {
                let scenario = &case.scenario;
                let runs: Vec<Value> = served_deliveries(scenario)
                    .into_iter()
                    .flat_map(|delivery| {
                        let delivered = scenario.delivered(delivery);
                        scenario.run_states().into_iter().map(move |state| {
                            json!({
                                "state": state.as_str(),
                                "delivery": delivery.as_str(),
                                "requires": runner::required_capabilities(&delivered, state),
                            })
                        })
                    })
                    .collect();
                json!({
                    "id": scenario.id,
                    "summary": scenario.summary.trim(),
                    "level": scenario.level.as_str(),
                    "area": scenario.area(),
                    "runs": runs,
                })
            })
            .collect();
        json!({ "cases": cases })
    }

    fn create(&self, body: &[u8]) -> Answer {
        let request: Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(err) => {
                return error(
                    400,
                    format!(
                        "the body is not JSON ({err}); expected {{\"case\": ID, \"state\": MODE}}"
                    ),
                );
            }
        };
        let Some(id) = request.get("case").and_then(Value::as_str) else {
            return error(
                400,
                "`case` is missing: expected {\"case\": ID, \"state\": MODE} (ids from GET /loopcheck/cases)",
            );
        };
        let Some(case) = self.by_id.get(id) else {
            return error(
                404,
                format!("no case `{id}` on this server (GET /loopcheck/cases lists them)"),
            );
        };
        let state = match chosen(
            &request,
            "state",
            &case.scenario.run_states(),
            StateMode::parse,
            StateMode::as_str,
        ) {
            Ok(state) => state,
            Err(listed) => return error(400, format!("case `{id}` runs in {listed}")),
        };
        let deliveries = served_deliveries(&case.scenario);
        let delivery = match chosen(
            &request,
            "delivery",
            &deliveries,
            Delivery::parse,
            Delivery::as_str,
        ) {
            Ok(delivery) => delivery,
            Err(listed) => return error(400, format!("case `{id}` runs in {listed}")),
        };
        let case = Arc::new(case.delivered(delivery));
        let seed = match request.get("seed") {
            None | Some(Value::Null) => None,
            Some(seed) => match seed.as_u64() {
                Some(seed) => Some(seed),
                None => return error(400, format!("`seed` must be a whole number; got {seed}")),
            },
        };
        let snapshot = match super::snapshots::requested_name(&request) {
            Ok(snapshot) => snapshot,
            Err(why) => return error(400, why),
        };
        let snapshot_path = self.registry.snapshots().map(|snapshots| {
            snapshots
                .path(snapshot.as_deref().unwrap_or(id), state, delivery)
                .display()
                .to_string()
        });
        let created = match self.registry.create(case.clone(), state, seed, snapshot) {
            Ok(created) => created,
            Err(err) => return session_error(err),
        };
        let origin = self.origin.get().cloned().unwrap_or_default();
        let session_url = format!("{origin}/s/{}", created.id);
        let control_url = format!("{origin}/loopcheck/sessions/{}", created.id);
        let base_url = format!("{session_url}/v1");
        let tools_url = format!("{session_url}/tools");
        let api_key = created.session.api_key().to_owned();
        let env: serde_json::Map<String, Value> = ControllerEnv {
            base_url: base_url.clone(),
            api_key: api_key.clone(),
            tools_url: tools_url.clone(),
            case: id.to_owned(),
        }
        .vars()
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
        let mut answer = json!({
                "id": created.id,
                "token": created.token,
                "case": id,
                "state": state.as_str(),
                "delivery": delivery.as_str(),
                "requires": runner::required_capabilities(&case.scenario, state),
                "base_url": base_url,
                "tools_url": tools_url,
                "api_key": api_key,
                "task": crate::scenario::task_json(&case.scenario, state),
                "env": env,
                "result_url": format!("{control_url}/result"),
                "verdict_url": format!("{control_url}/verdict"),
                "url": control_url,
        });
        if let (Some(path), Value::Object(fields)) = (snapshot_path, &mut answer) {
            fields.insert("snapshot".to_owned(), Value::String(path));
        }
        (201, answer)
    }

    /// Takes the loop's result object; one that is not a result is kept as the reason
    /// there is none, so the verdict says what was wrong with it.
    fn take_result(&self, id: &str, token: &str, body: &[u8]) -> Answer {
        let parsed = serde_json::from_slice::<Value>(body)
            .map_err(|err| format!("the posted result is not JSON ({err})"))
            .and_then(|value| ControllerResult::from_value(&value).map_err(|err| err.to_string()));
        let (status, answer) = match &parsed {
            Ok(_) => (200, json!({"id": id, "accepted": true})),
            Err(why) => error(422, why),
        };
        let result = parsed.map_err(|why| Unfinished::NoResult { why });
        match self.registry.set_result(id, token, result) {
            Ok(()) => (status, answer),
            Err(err) => session_error(err),
        }
    }
}

fn not_found(method: &str, path: &str) -> Answer {
    error(
        404,
        format!(
            "no route {method} {path}: loopcheck serve answers GET /loopcheck/cases, \
             POST /loopcheck/sessions, POST /loopcheck/sessions/{{id}}/result, \
             GET /loopcheck/sessions/{{id}}/verdict and /transcript, DELETE /loopcheck/sessions/{{id}} \
             (each with `Authorization: Bearer TOKEN`), and a session's API under /s/{{id}}/v1 \
             and its tools under /s/{{id}}/tools"
        ),
    )
}

/// Whether `path` is a session's Responses path, `/s/{id}/v1/responses`, where its
/// socket opens.
fn is_session_socket_path(path: &str) -> bool {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    matches!((segments.next(), segments.next()), (Some("s"), Some(_)))
        && crate::server::websocket::is_socket_path(&segments.collect::<Vec<_>>().join("/"))
}

fn json_reply(status: u16, body: Value) -> EngineReply {
    EngineReply {
        status,
        headers: Vec::new(),
        body: ReplyBody::Json(body.to_string().into()),
        delay: Duration::ZERO,
    }
}
