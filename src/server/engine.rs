//! The session engine: one case's fake API and tool backend, free of any transport.
//! It takes a request (method, path, headers, body) and returns a reply, writing every
//! exchange to the case's transcript.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::script::{self, Issued};
use super::validate;
use crate::scenario::{Scenario, StateMode};
use crate::tools::{BackendReply, BackendState, ToolBackend};
use crate::transcript::{ModelExchange, ToolExchange, Transcript};
use crate::wire::request::{item_id, item_type};
use crate::wire::response::{self, ResponseParts};
use crate::wire::{ApiError, CreateRequest, IdGen};

/// A transport-neutral HTTP request.
#[derive(Debug, Clone)]
pub struct EngineRequest {
    /// Method, uppercase.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Raw query string, if any.
    pub query: Option<String>,
    /// Headers (names in any case).
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// A transport-neutral reply.
#[derive(Debug, Clone)]
pub struct EngineReply {
    /// HTTP status.
    pub status: u16,
    /// Headers to send.
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: Value,
}

/// A stored response and the whole context it continues (for `previous_response_id`).
struct StoredResponse {
    response: Value,
    /// Input items of this request, with ids, for `input_items`.
    input_items: Vec<Value>,
    /// Chain + input + output: what a request continuing it inherits.
    context: Vec<Value>,
}

struct Inner {
    ids: IdGen,
    next_turn: usize,
    seq: u64,
    responses: HashMap<String, StoredResponse>,
    stored_items: HashMap<String, Value>,
    issued: Issued,
    backend: BackendState,
    transcript: Transcript,
}

/// One case's session: fake Responses API plus fixture tool backend.
pub struct Session {
    scenario: Arc<Scenario>,
    state: StateMode,
    api_key: String,
    backend: ToolBackend,
    started: Instant,
    inner: Mutex<Inner>,
}

/// Headers kept out of transcripts (secrets never reach disk).
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "api-key",
    "openai-api-key",
    "x-api-key",
    "cookie",
];

impl Session {
    /// A fresh session for `scenario` in `state` mode; ids are seeded from both, so a
    /// case replays with the same ids.
    pub fn new(scenario: Arc<Scenario>, state: StateMode) -> Self {
        let mut ids = IdGen::from_key(&format!("{}:{}", scenario.id, state.as_str()));
        let api_key = format!("sk-loopcheck-{}", ids.base62(32));
        Self {
            backend: ToolBackend::new(&scenario),
            scenario,
            state,
            api_key,
            started: Instant::now(),
            inner: Mutex::new(Inner {
                ids,
                next_turn: 0,
                seq: 0,
                responses: HashMap::new(),
                stored_items: HashMap::new(),
                issued: Issued::default(),
                backend: BackendState::default(),
                transcript: Transcript::default(),
            }),
        }
    }

    /// The API key controllers must send.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The state mode.
    pub fn state(&self) -> StateMode {
        self.state
    }

    /// A copy of the transcript so far.
    pub fn transcript(&self) -> Transcript {
        self.lock().transcript.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the state half-written in a way
        // that matters more than losing the case; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Handles one request.
    pub fn handle(&self, request: EngineRequest) -> EngineReply {
        let path = request.path.trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            ["tools", "call", name] if request.method == "POST" => {
                self.tool_request(&request, Some(name))
            }
            ["tools", "approvals"] if request.method == "POST" => self.tool_request(&request, None),
            ["tools", ..] => self.model_exchange(&request, |_, _| {
                Err(ApiError::invalid_url(&request.method, &request.path))
            }),
            ["v1", rest @ ..] | rest @ [..] => {
                let rest = rest.to_vec();
                self.api_request(&request, &rest)
            }
        }
    }

    fn api_request(&self, request: &EngineRequest, route: &[&str]) -> EngineReply {
        let method = request.method.as_str();
        self.model_exchange(request, |inner, body| {
            self.check_auth(request)?;
            match (method, route) {
                ("POST", ["responses"]) => {
                    let body = body.ok_or_else(ApiError::unparsable_body)?;
                    self.create(inner, &body)
                }
                ("GET", ["responses", id]) => match inner.responses.get(*id) {
                    Some(stored) => Ok((200, stored.response.clone(), None)),
                    None => Err(ApiError::response_not_found(id)),
                },
                ("DELETE", ["responses", id]) => match inner.responses.remove(*id) {
                    Some(_) => {
                        // Items stay retrievable only while a stored response holds them.
                        inner.stored_items = inner
                            .responses
                            .values()
                            .flat_map(|stored| stored.context.iter())
                            .filter_map(|item| Some((item_id(item)?.to_owned(), item.clone())))
                            .collect();
                        Ok((
                            200,
                            json!({"id": id, "object": "response", "deleted": true}),
                            None,
                        ))
                    }
                    None => Err(ApiError::response_not_found(id)),
                },
                ("GET", ["responses", id, "input_items"]) => match inner.responses.get(*id) {
                    Some(stored) => Ok((
                        200,
                        list_page(&stored.input_items, request.query.as_deref()),
                        None,
                    )),
                    None => Err(ApiError::response_not_found(id)),
                },
                _ => Err(ApiError::invalid_url(method, &request.path)),
            }
        })
    }

    fn check_auth(&self, request: &EngineRequest) -> Result<(), ApiError> {
        let header = request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(_, value)| value.trim());
        let key = header
            .and_then(|value| {
                value
                    .strip_prefix("Bearer ")
                    .or_else(|| value.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|key| !key.is_empty());
        match key {
            None => Err(ApiError::missing_api_key()),
            Some(key) if key == self.api_key => Ok(()),
            Some(key) => Err(ApiError::invalid_api_key(key)),
        }
    }

    /// Runs `handler` under the lock and records the exchange.
    fn model_exchange(
        &self,
        request: &EngineRequest,
        handler: impl FnOnce(&mut Inner, Option<Value>) -> Result<(u16, Value, Option<usize>), ApiError>,
    ) -> EngineReply {
        let parsed: Option<Value> = serde_json::from_slice(&request.body).ok();
        let (body, body_unparsed) = match (&parsed, request.body.is_empty()) {
            (Some(value), _) => (value.clone(), false),
            (None, true) => (Value::Null, false),
            (None, false) => (
                Value::String(String::from_utf8_lossy(&request.body).into_owned()),
                true,
            ),
        };
        let mut inner = self.lock();
        let (status, response, turn, rejected_by) = match handler(&mut inner, parsed) {
            Ok((status, response, turn)) => (status, response, turn, None),
            Err(err) => (err.status, err.body(), None, Some(err.rule.to_owned())),
        };
        inner.seq += 1;
        let request_id = inner.ids.request_id();
        let exchange = ModelExchange {
            seq: inner.seq,
            at_ms: self.elapsed_ms(),
            method: request.method.clone(),
            path: match &request.query {
                Some(q) => format!("{}?{q}", request.path),
                None => request.path.clone(),
            },
            headers: redacted_headers(&request.headers),
            body,
            body_unparsed,
            status,
            response: response.clone(),
            rejected_by,
            turn,
        };
        inner.transcript.model.push(exchange);
        EngineReply {
            status,
            headers: vec![
                ("x-request-id".to_owned(), request_id),
                ("openai-version".to_owned(), "2020-10-01".to_owned()),
                ("openai-processing-ms".to_owned(), "12".to_owned()),
            ],
            body: response,
        }
    }

    fn create(
        &self,
        inner: &mut Inner,
        body: &Value,
    ) -> Result<(u16, Value, Option<usize>), ApiError> {
        let request = CreateRequest::parse(body)?;
        validate::check_model(request.model.as_deref(), &self.scenario.task.model)?;
        let chain: Vec<Value> = match &request.previous_response_id {
            None => Vec::new(),
            Some(id) => {
                validate::check_id_chars("previous_response_id", id)?;
                match inner.responses.get(id) {
                    Some(stored) => stored.context.clone(),
                    None => return Err(ApiError::previous_response_not_found(id)),
                }
            }
        };
        let input = validate::resolve_input(&request.input, &inner.stored_items, &inner.issued)?;
        validate::check_context(&chain, &input, &inner.issued)?;

        let script = &self.scenario.script;
        let index = inner.next_turn;
        let turn = match script.get(index) {
            Some(turn) => turn,
            None => match script.last() {
                Some(last) if last.endless => last,
                _ => return Err(ApiError::script_exhausted(&self.scenario.id, script.len())),
            },
        };
        inner.next_turn += 1;

        let created_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let tail = inner.ids.tail();
        let id = inner.ids.item_id("resp", created_at, &tail);
        let expanded = script::expand(turn, &mut inner.ids, created_at, &tail, &mut inner.issued);
        let output = expanded.output.clone();
        let rendered = response::render(ResponseParts {
            id: &id,
            created_at,
            status: expanded.status,
            output: expanded.output,
            request: &request,
            incomplete_reason: expanded.incomplete_reason.as_deref(),
            error: expanded.error,
        });
        if request.store {
            let input_items: Vec<Value> = input
                .iter()
                .map(|item| with_id(item, &mut inner.ids, created_at, &tail))
                .collect();
            let mut context = chain;
            context.extend(input_items.iter().cloned());
            context.extend(output);
            for item in &context {
                if let Some(item_id) = item_id(item) {
                    inner.stored_items.insert(item_id.to_owned(), item.clone());
                }
            }
            inner.responses.insert(
                id,
                StoredResponse {
                    response: rendered.clone(),
                    input_items,
                    context,
                },
            );
        }
        Ok((200, rendered, Some(index)))
    }

    fn tool_request(&self, request: &EngineRequest, name: Option<&str>) -> EngineReply {
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(body) => body,
            Err(err) => {
                json!({"__unparsed": String::from_utf8_lossy(&request.body), "__error": err.to_string()})
            }
        };
        let mut inner = self.lock();
        let inner = &mut *inner;
        let reply: BackendReply = if body.get("__unparsed").is_some() {
            BackendReply {
                status: 400,
                body: json!({"error": {"code": "invalid_json", "message": "the request body is not JSON"}}),
                effect: false,
                kind: match name {
                    Some(_) => crate::transcript::ToolRequestKind::Call,
                    None => crate::transcript::ToolRequestKind::Approval,
                },
                name: name.unwrap_or_default().to_owned(),
            }
        } else {
            match name {
                Some(name) => self.backend.call(&mut inner.backend, name, &body),
                None => self
                    .backend
                    .approval(&mut inner.backend, &mut inner.ids, &body),
            }
        };
        inner.seq += 1;
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
        inner.transcript.tools.push(ToolExchange {
            seq: inner.seq,
            at_ms: self.elapsed_ms(),
            kind: reply.kind,
            name: reply.name.clone(),
            call_id: text("call_id"),
            arguments: body.get("arguments").cloned().unwrap_or(Value::Null),
            principal: text("principal"),
            approval: text("approval"),
            status: reply.status,
            response: reply.body.clone(),
            effect: reply.effect,
        });
        EngineReply {
            status: reply.status,
            headers: Vec::new(),
            body: reply.body,
        }
    }
}

/// An input item as stored: with an id when it had none (as listings show them).
fn with_id(item: &Value, ids: &mut IdGen, created_at: u64, tail: &str) -> Value {
    if item_id(item).is_some() || !item.is_object() {
        return item.clone();
    }
    let prefix = match item_type(item) {
        "message" => "msg",
        "function_call_output" => "fco",
        "function_call" => "fc",
        _ => "item",
    };
    let mut item = item.clone();
    if let Some(object) = item.as_object_mut() {
        object.insert(
            "id".to_owned(),
            json!(ids.item_id(prefix, created_at, tail)),
        );
    }
    item
}

/// A page of `GET .../input_items` (`after`, `limit` 1..100 default 20, `order` default desc).
fn list_page(items: &[Value], query: Option<&str>) -> Value {
    let params: BTreeMap<&str, &str> = query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .collect();
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let mut ordered: Vec<&Value> = items.iter().collect();
    if params.get("order").copied() != Some("asc") {
        ordered.reverse();
    }
    let start = params
        .get("after")
        .and_then(|after| ordered.iter().position(|item| item_id(item) == Some(after)))
        .map_or(0, |pos| pos + 1);
    let page: Vec<Value> = ordered
        .iter()
        .skip(start)
        .take(limit)
        .map(|v| (*v).clone())
        .collect();
    let has_more = start + page.len() < ordered.len();
    json!({
        "object": "list",
        "data": page,
        "first_id": page.first().and_then(|v| item_id(v)),
        "last_id": page.last().and_then(|v| item_id(v)),
        "has_more": has_more,
    })
}

fn redacted_headers(headers: &[(String, String)]) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = name.to_ascii_lowercase();
            let value = if SECRET_HEADERS.contains(&name.as_str()) {
                "[redacted]".to_owned()
            } else {
                value.clone()
            };
            (name, value)
        })
        .collect()
}
