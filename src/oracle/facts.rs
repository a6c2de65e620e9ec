//! What the oracle reads off a transcript: the model requests in order, the responses
//! served, the calls the model issued and how a correct controller must treat each.

use serde_json::Value;

use super::error_output::Said;
use crate::scenario::{Scenario, StateMode};
use crate::tools::{CallValidity, Registry};
use crate::transcript::{
    ControllerResult, ModelExchange, SocketEvent, ToolExchange, ToolRequestKind, Transcript,
    Unfinished, WebhookDelivery,
};
use crate::wire::call_kind::{
    self, APPLY_PATCH, COMPUTER, CUSTOM, CallKind, FUNCTION, LOCAL_SHELL, SHELL, TOOL_SEARCH,
    qualified_name,
};
use crate::wire::replay::is_replay_of;
use crate::wire::request::{call_id, item_type};

/// A call the model issued.
#[derive(Debug, Clone)]
pub struct IssuedCall {
    /// Its kind: which item it came as and which item must answer it.
    pub kind: CallKind,
    /// `call_...`.
    pub call_id: String,
    /// `fc_...` (`ctc_...` for a custom tool call).
    pub item_id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The raw arguments string, or a custom tool call's input text.
    pub arguments: String,
    /// Parsed arguments, when they parse; a custom tool call's input as a JSON string,
    /// as the backend records what it was asked to run with.
    pub parsed: Option<Value>,
    /// How a correct controller treats it.
    pub validity: CallValidity,
    /// Index of the served response that issued it.
    pub response: usize,
    /// For a call a program made (a child call): the program's `caller_id`.
    pub program: Option<String>,
    /// A computer call's `pending_safety_checks` (empty for other kinds).
    pub pending_safety_checks: Vec<Value>,
}

impl IssuedCall {
    /// `call_... (get_stock {"sku":"A7"})` for messages; a child call also names its
    /// program, whose caller its output must carry.
    pub fn describe(&self) -> String {
        let program = match &self.program {
            Some(id) => format!(", called by program {id}"),
            None => String::new(),
        };
        // The shell and patch kinds name their tool by the call's type alone.
        if [SHELL, LOCAL_SHELL, APPLY_PATCH].contains(&self.kind) {
            return format!(
                "{} ({} {}{program})",
                self.call_id,
                self.kind.call,
                crate::text::clip(&self.arguments, 80)
            );
        }
        if self.kind != FUNCTION {
            return format!(
                "{} ({} {} {:?}{program})",
                self.call_id,
                self.kind.call,
                self.name,
                crate::text::clip(&self.arguments, 80)
            );
        }
        format!(
            "{} ({} {}{program})",
            self.call_id,
            self.name,
            crate::text::clip(&self.arguments, 80)
        )
    }
}

/// A response the server served (an accepted model request).
#[derive(Debug)]
pub struct Served<'a> {
    /// Index among all model requests.
    pub request: usize,
    /// The exchange.
    pub exchange: &'a ModelExchange,
    /// `resp_...`.
    pub id: String,
    /// `completed`, `incomplete`, `failed`, or `broken` for a stream that was cut or
    /// ended in an `error` event.
    pub status: String,
    /// Output items.
    pub output: Vec<Value>,
    /// Indices into [`Facts::calls`] of this response's calls.
    pub calls: Vec<usize>,
    /// Whether it has an assistant message with text.
    pub has_message: bool,
}

/// The oracle's view of one case run.
pub struct Facts<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The state mode.
    pub state: StateMode,
    /// Model requests in order: the first attempt of each round (retries folded in).
    pub requests: Vec<&'a ModelExchange>,
    /// Every attempt of each round, in order; `rounds[i][0] == requests[i]`.
    pub rounds: Vec<Vec<&'a ModelExchange>>,
    /// WebSocket warm-ups (`generate: false`): creates that are no model request.
    pub warm_ups: Vec<&'a ModelExchange>,
    /// Every create, attempts and warm-ups, in order.
    pub creates: Vec<&'a ModelExchange>,
    /// Every API exchange (creates, polls, conversations), in order.
    pub exchanges: &'a [ModelExchange],
    /// Served responses in order.
    pub served: Vec<Served<'a>>,
    /// Every call the model issued, in order.
    pub calls: Vec<IssuedCall>,
    /// Tool backend exchanges.
    pub tools: &'a [ToolExchange],
    /// Webhook deliveries to the controller's endpoint, one per attempt.
    pub webhooks: &'a [WebhookDelivery],
    /// What happened on WebSocket connections beside their creates.
    pub sockets: &'a [SocketEvent],
    /// The controller's result.
    pub result: Option<&'a ControllerResult>,
    /// How it ended without one, if it did.
    pub unfinished: Option<&'a Unfinished>,
}

impl<'a> Facts<'a> {
    /// Derives the facts.
    pub fn new(scenario: &'a Scenario, state: StateMode, transcript: &'a Transcript) -> Self {
        let registry = Registry::new(scenario);
        let creates: Vec<&ModelExchange> =
            transcript.model.iter().filter(|m| m.is_create()).collect();
        let (warm_ups, attempts): (Vec<&ModelExchange>, Vec<&ModelExchange>) =
            creates.iter().partition(|m| m.warm_up);
        let rounds = group_retries(&attempts, &creates);
        let requests: Vec<&ModelExchange> = rounds.iter().map(|round| round[0]).collect();
        let mut served = Vec::new();
        let mut calls = Vec::new();
        for (index, round) in rounds.iter().enumerate() {
            let Some(exchange) = round.iter().rev().find(|a| a.turn.is_some()) else {
                continue;
            };
            let Some(response) = exchange.served() else {
                continue;
            };
            let output = response["output"].as_array().cloned().unwrap_or_default();
            let mut call_indices = Vec::new();
            // A server-executed tool search is hosted: the controller replays it and
            // answers nothing.
            for (item, kind) in output
                .iter()
                .filter_map(|item| Some((item, call_kind::of_call(item_type(item))?)))
                // An MCP approval request is decided, not run: the `mcp` family judges it.
                .filter(|(item, kind)| kind.answered_by_client(item))
            {
                let bare = kind.tool_name(item);
                // A namespaced call is named `namespace.name`, as the backend's ledger
                // names the tool it ran.
                let namespace = item["namespace"].as_str();
                let name = qualified_name(namespace, bare);
                // A kind's input is a JSON text (a function's arguments, a custom tool
                // call's input) or a JSON object (a shell call's action, a patch's
                // operation, a tool search's arguments, a computer call's action or
                // actions), kept as the compact JSON text of the object.
                let input = kind.input(item);
                let arguments = match &input {
                    Value::String(text) => text.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                let (validity, parsed) = if kind == FUNCTION {
                    (
                        registry.judge_call_in(
                            namespace,
                            bare,
                            &arguments,
                            item.get("caller").filter(|c| !c.is_null()),
                        ),
                        serde_json::from_str(&arguments).ok(),
                    )
                } else if kind == CUSTOM {
                    (
                        registry.judge_custom_call(namespace, bare, &arguments),
                        Some(Value::String(arguments.clone())),
                    )
                } else {
                    (
                        registry.judge_typed_call(
                            kind,
                            &name,
                            item.get("caller").filter(|c| !c.is_null()),
                        ),
                        Some(input),
                    )
                };
                call_indices.push(calls.len());
                calls.push(IssuedCall {
                    kind,
                    call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                    item_id: item["id"].as_str().unwrap_or_default().to_owned(),
                    validity,
                    parsed,
                    name,
                    arguments,
                    response: served.len(),
                    program: item
                        .get("caller")
                        .filter(|c| c["type"] == "program")
                        .and_then(|c| c["caller_id"].as_str())
                        .map(str::to_owned),
                    pending_safety_checks: item["pending_safety_checks"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                });
            }
            let has_message = output.iter().any(|item| {
                item["type"] == "message"
                    && item["content"]
                        .as_array()
                        .is_some_and(|parts| parts.iter().any(|p| p["type"] == "output_text"))
            });
            let broken = exchange
                .stream
                .as_ref()
                .is_some_and(|s| s.cut || s.last_type.as_deref() == Some("error"));
            served.push(Served {
                request: index,
                exchange,
                id: response["id"].as_str().unwrap_or_default().to_owned(),
                status: if broken {
                    "broken".to_owned()
                } else {
                    response["status"].as_str().unwrap_or_default().to_owned()
                },
                output,
                calls: call_indices,
                has_message,
            });
        }
        Self {
            scenario,
            state,
            requests,
            rounds,
            warm_ups,
            creates,
            served,
            calls,
            tools: &transcript.tools,
            webhooks: &transcript.webhooks,
            sockets: &transcript.sockets,
            exchanges: &transcript.model,
            result: transcript.result.as_ref(),
            unfinished: transcript.unfinished.as_ref(),
        }
    }

    /// Whether a call came in a completed response, the only kind a controller may act
    /// on; calls of an incomplete, failed or broken response are judged by
    /// `terminal/unfinished-not-executed` alone.
    pub fn is_actionable(&self, call: &IssuedCall) -> bool {
        self.served[call.response].status == "completed"
    }

    /// The calls a controller may act on (see [`Facts::is_actionable`]).
    pub fn actionable_calls(&self) -> impl Iterator<Item = &IssuedCall> {
        self.calls.iter().filter(|c| self.is_actionable(c))
    }

    /// The first model request after served response `index`, with its position.
    pub fn request_after(&self, served: usize) -> Option<(usize, &'a ModelExchange)> {
        let position = self.served[served].request + 1;
        self.requests.get(position).map(|r| (position, *r))
    }

    /// The served response that a model request (by position) continues: the latest one
    /// served before it.
    pub fn latest_served_before(&self, request: usize) -> Option<&Served<'a>> {
        self.served.iter().rev().find(|s| s.request < request)
    }

    /// The input items of a model request.
    pub fn input_of(request: &ModelExchange) -> Vec<Value> {
        match request.body.get("input") {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::String(text)) => vec![serde_json::json!({"role": "user", "content": text})],
            _ => Vec::new(),
        }
    }

    /// The items the model sees for request `position`: what its `previous_response_id`
    /// chain or its conversation carries, followed by its own input. Instructions and
    /// tools are request parameters, never part of it.
    pub fn context_of(&self, position: usize) -> Vec<Value> {
        let mut context = self.inherited_by(position);
        context.extend(Self::input_of(self.requests[position]));
        context
    }

    /// The items request `position` gives the model as its history, judged in the
    /// modes where the controller keeps it: its input, after what a WebSocket
    /// connection's cache holds when it continues a `store: false` response made on the
    /// same connection (the socket's own way to run a stateless loop).
    pub fn history_sent(&self, position: usize) -> Vec<Value> {
        let request = self.requests[position];
        let cached = request.connection.is_some()
            && request.body.get("store") == Some(&Value::Bool(false))
            && request.body.get("previous_response_id").is_some();
        if cached {
            self.context_of(position)
        } else {
            Self::input_of(request)
        }
    }

    /// What request `position` inherits: the context of the response it chains to
    /// plus that response's output, or the items of the conversation it names.
    fn inherited_by(&self, position: usize) -> Vec<Value> {
        let request = self.requests[position];
        if request.body.get("previous_response_id").is_some() {
            return chained_context(&self.creates, request);
        }
        let body = &request.body;
        let Some(conversation) = conversation_of(body) else {
            return Vec::new();
        };
        // Items given when the conversation was created or added to it, then every
        // earlier request in it with its response's output.
        let mut context: Vec<Value> = self
            .exchanges
            .iter()
            .filter(|m| m.method == "POST" && m.status == 200)
            .filter(|m| {
                let path = m.path.split('?').next().unwrap_or_default();
                (path.ends_with("/conversations") && m.response["id"] == conversation)
                    || path.ends_with(&format!("/conversations/{conversation}/items"))
            })
            .flat_map(|m| m.body["items"].as_array().cloned().unwrap_or_default())
            .collect();
        for earlier in 0..position {
            if conversation_of(&self.requests[earlier].body).as_deref()
                == Some(conversation.as_str())
            {
                context.extend(Self::input_of(self.requests[earlier]));
                if let Some(served) = self.served.iter().find(|s| s.request == earlier) {
                    context.extend(served.output.iter().cloned());
                }
            }
        }
        context
    }

    /// The answer items (`function_call_output`, `custom_tool_call_output`, of any
    /// kind: `call-id/answer-kind` judges the kind) in a request's input with this call_id.
    pub fn outputs_for(request: &ModelExchange, call: &str) -> Vec<Value> {
        Self::input_of(request)
            .into_iter()
            .filter(|item| {
                call_kind::of_answer(item_type(item)).is_some_and(|kind| kind.runs_on_client())
                    && call_id(item) == Some(call)
            })
            .collect()
    }

    /// The issued call with this call_id.
    pub fn call_by_id(&self, id: &str) -> Option<&IssuedCall> {
        self.calls.iter().find(|c| c.call_id == id)
    }

    /// The issued call whose `fc_` item id this is.
    pub fn call_by_item_id(&self, id: &str) -> Option<&IssuedCall> {
        self.calls.iter().find(|c| c.item_id == id)
    }

    /// Tool `call` exchanges for a call_id.
    pub fn executions_of(&self, call: &str) -> Vec<&'a ToolExchange> {
        self.tools
            .iter()
            .filter(|t| t.kind == ToolRequestKind::Call && t.call_id.as_deref() == Some(call))
            .collect()
    }

    /// Approval exchanges for a call_id.
    pub fn approvals_of(&self, call: &str) -> Vec<&'a ToolExchange> {
        self.tools
            .iter()
            .filter(|t| t.kind == ToolRequestKind::Approval && t.call_id.as_deref() == Some(call))
            .collect()
    }

    /// True when the run hit its round budget (as many model requests as allowed).
    pub fn budget_reached(&self) -> bool {
        self.requests.len() >= self.scenario.task.max_rounds as usize
    }

    /// True when `served` is the response to the last request the budget allows.
    pub fn is_last_round(&self, served: usize) -> bool {
        self.served[served].request + 1 >= self.scenario.task.max_rounds as usize
    }

    /// True when a correct controller may end the loop after served response `served`
    /// without answering it: the round budget allows no further request, its calls take
    /// the valid calls issued so far past `max_tool_calls`, or it is the last response
    /// served and the controller reported a timeout under a `deadline_ms`.
    pub fn may_stop_after(&self, served: usize) -> bool {
        self.is_last_round(served)
            || self.tool_budget_spent_by(served)
            || self.stopped_at_deadline(served)
    }

    /// Whether the valid calls of the responses up to and including `served` are more
    /// than `max_tool_calls` (so at least one of them may not run).
    fn tool_budget_spent_by(&self, served: usize) -> bool {
        let Some(cap) = self.scenario.task.max_tool_calls else {
            return false;
        };
        let issued = self
            .actionable_calls()
            .filter(|c| c.response <= served && c.validity == CallValidity::Valid)
            .count();
        issued > cap as usize
    }

    /// Whether the controller stopped at `served`, the last response served, reporting
    /// the deadline as the reason (`budget/deadline` judges when it went on working).
    fn stopped_at_deadline(&self, served: usize) -> bool {
        self.scenario.task.deadline_ms.is_some()
            && served + 1 == self.served.len()
            && self.result.is_some_and(|r| {
                r.status == "failed"
                    && r.reason
                        .as_deref()
                        .unwrap_or_default()
                        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                        .any(|word| word == "timeout")
            })
    }

    /// Whether a tool exchange's answer was held longer than `tool_timeout_ms`, so that a
    /// correct controller stopped waiting for it.
    pub fn held_past_tool_timeout(&self, exchange: &ToolExchange) -> bool {
        self.scenario
            .task
            .tool_timeout_ms
            .is_some_and(|limit| exchange.delay_ms > limit)
    }

    /// The first response served as plain JSON although its scripted turn ends its stream
    /// early (a cut connection or an `error` event): a controller that did not ask for the
    /// stream never met that ending, so how its loop ended follows from not streaming.
    pub fn stream_ending_missed(&self) -> Option<usize> {
        self.served.iter().position(|served| {
            served.exchange.stream.is_none()
                && served
                    .exchange
                    .turn
                    .and_then(|turn| self.scenario.script.get(turn))
                    .is_some_and(|turn| {
                        turn.stream.cut_after.is_some() || turn.stream.error.is_some()
                    })
        })
    }

    /// Whether the tool needs an approval.
    pub fn needs_approval(&self, name: &str) -> bool {
        self.scenario
            .task
            .approval_required
            .iter()
            .any(|n| n == name)
    }

    /// What is wrong with how a call that did not run (rejected, denied, refused) was
    /// answered: the loop must go on with an error output for it in the next request,
    /// one that carries what the backend or approver `said` (its message, code or
    /// reason). `what` names the situation (e.g. "the denied").
    pub fn error_answer_problem(
        &self,
        call: &IssuedCall,
        what: &str,
        said: Said<'_>,
    ) -> Option<String> {
        let message = said.message();
        let Some((position, request)) = self.request_after(call.response) else {
            return (!self.may_stop_after(call.response)).then(|| {
                format!(
                    "the controller stopped after {what} call {} instead of answering it with an error output and going on",
                    call.describe()
                )
            });
        };
        let label = self.request_label(position);
        match Self::outputs_for(request, &call.call_id).first() {
            None => Some(format!(
                "{label} sends no error output for {what} call {}",
                call.describe()
            )),
            Some(output) if answer_reports_failure(output) == Some(false) => Some(format!(
                "{label}: the {} for {what} call {} reports success ({}): expected it to report the failure{}",
                item_type(output),
                call.describe(),
                failure_field(output),
                message
                    .map(|m| format!(", with the reason {m:?}"))
                    .unwrap_or_default()
            )),
            Some(output) if !looks_like_error(&output_text(output), message) => Some(format!(
                "{label}: the output for {what} call {} is {}, which is not an error: expected it to say the call did not run{}",
                call.describe(),
                crate::text::clip(&output_text(output), 120),
                message
                    .map(|m| format!(" (e.g. {m:?})"))
                    .unwrap_or_default()
            )),
            Some(output) => {
                let text = output_text(output);
                said.missing_from(output, &text).map(|expected| {
                    format!(
                        "{label}: the output for {what} call {} is {}, which does not carry {expected}: the model cannot tell why the call did not run",
                        call.describe(),
                        crate::text::clip(&text, 120),
                    )
                })
            }
        }
    }

    /// One problem per model request whose body lacks what `holds` asks for: `why` is
    /// appended to "request N ".
    pub fn requests_lacking(&self, holds: impl Fn(&Value) -> bool, why: &str) -> Vec<String> {
        self.requests
            .iter()
            .enumerate()
            .filter(|(_, r)| !holds(&r.body))
            .map(|(position, _)| format!("{} {why}", self.request_label(position)))
            .collect()
    }

    /// The 1-based request number used in messages.
    pub fn request_label(&self, position: usize) -> String {
        match self.requests.get(position).and_then(|r| r.connection) {
            Some(connection) => format!("request {} (connection {connection})", position + 1),
            None => format!("request {}", position + 1),
        }
    }

    /// The served response's label, `response 2 (resp_...)`, with its WebSocket
    /// connection when it came on one.
    pub fn response_label(&self, served: usize) -> String {
        let response = &self.served[served];
        match response.exchange.connection {
            Some(connection) => format!(
                "response {} ({}, on connection {connection})",
                served + 1,
                response.id
            ),
            None => format!("response {} ({})", served + 1, response.id),
        }
    }
}

/// The conversation a request body names, if any (`"conv_..."` or `{"id": "conv_..."}`).
pub fn conversation_of(body: &Value) -> Option<String> {
    match body.get("conversation")? {
        Value::String(id) => Some(id.clone()),
        other => other.get("id").and_then(Value::as_str).map(str::to_owned),
    }
}

/// The text of a `function_call_output`'s `output` (a string, or text parts joined).
pub fn output_text(item: &Value) -> String {
    // A shell call's output is its chunks: stdout, stderr and outcome of each command.
    if item_type(item) == SHELL.answer {
        return item.get("output").map(Value::to_string).unwrap_or_default();
    }
    match item.get("output") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .concat(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The result an answer item carries, as a value to compare with the backend's: a
/// patch's `status` and `output` (as the backend gives them), a tool search's loaded
/// tools by name (the backend's result names them), a `computer_call_output`'s
/// screenshot without its `type` (the backend's result is `{"image_url": ...}` or
/// `{"file_id": ...}`), the parsed output text of other kinds (`None` when it is not
/// JSON).
pub fn answer_result(item: &Value) -> Option<Value> {
    let kind = item_type(item);
    if kind == APPLY_PATCH.answer {
        return Some(serde_json::json!({"status": item["status"], "output": item["output"]}));
    }
    if kind == TOOL_SEARCH.answer {
        let names: Vec<Value> = item
            .get("tools")?
            .as_array()?
            .iter()
            .map(|tool| tool["name"].clone())
            .collect();
        return Some(serde_json::json!({"tools": names}));
    }
    if kind == COMPUTER.answer {
        let mut screenshot = item.get("output")?.as_object()?.clone();
        screenshot.remove("type");
        return Some(Value::Object(screenshot));
    }
    serde_json::from_str(&output_text(item)).ok()
}

/// Whether an answer says its call failed, for the kinds that say so in a field of their
/// own: an `apply_patch_call_output`'s `status` of `failed`, a `shell_call_output` with a
/// command that exited non-zero or timed out. `None` for the kinds that say it in their
/// text alone.
pub fn answer_reports_failure(item: &Value) -> Option<bool> {
    match item_type(item) {
        kind if kind == APPLY_PATCH.answer => Some(item["status"] == "failed"),
        kind if kind == SHELL.answer => Some(item["output"].as_array().is_some_and(|chunks| {
            chunks.iter().any(|chunk| {
                let outcome = &chunk["outcome"];
                outcome["type"] == "timeout"
                    || outcome["exit_code"].as_i64().is_some_and(|code| code != 0)
            })
        })),
        _ => None,
    }
}

/// Where an answer of a kind that reports failure in a field of its own said success.
fn failure_field(item: &Value) -> String {
    if item_type(item) == APPLY_PATCH.answer {
        format!("status {}", item["status"])
    } else {
        "every command exited 0".to_owned()
    }
}

/// Whether an output can tell the model its call did not run: anything with content.
/// Blank outputs and bare JSON values (`null`, `{}`, `[]`, `""`, `true`) say nothing, and
/// an object that claims success (`"ok": true`, `"success": true`) says the opposite.
/// `said` (the backend's or approver's message) is accepted whatever its form.
pub fn looks_like_error(output: &str, said: Option<&str>) -> bool {
    if said.is_some_and(|m| !m.is_empty() && output.contains(m)) {
        return true;
    }
    match serde_json::from_str::<Value>(output.trim()) {
        Ok(Value::Null | Value::Bool(_)) => false,
        Ok(Value::String(text)) => !text.trim().is_empty(),
        Ok(Value::Array(items)) => !items.is_empty(),
        Ok(Value::Object(fields)) => {
            let claims_success = ["ok", "success"]
                .iter()
                .any(|key| fields.get(*key) == Some(&Value::Bool(true)));
            !fields.is_empty() && !claims_success
        }
        Ok(Value::Number(_)) => false,
        Err(_) => !output.trim().is_empty(),
    }
}

/// Whether the response `made` created is there for `later` to continue: stored, or
/// (`store: false`) held in the cache of the WebSocket connection both came on.
fn kept_for(made: &ModelExchange, later: &ModelExchange) -> bool {
    made.body.get("store") != Some(&Value::Bool(false))
        || (made.connection.is_some() && made.connection == later.connection)
}

/// The response a create got that a later one may continue: its served turn's, or a
/// warm-up's.
pub fn response_made(create: &ModelExchange) -> Option<&Value> {
    create.served().or_else(|| {
        create
            .warm_up
            .then_some(create.final_response.as_deref())
            .flatten()
    })
}

/// The items a create inherits through `previous_response_id` (`creates`: every create
/// of the run): the context of the response it continues and that response's output,
/// when that response is kept for it (stored, or cached on the connection both came
/// on); none otherwise.
pub fn chained_context(creates: &[&ModelExchange], later: &ModelExchange) -> Vec<Value> {
    let Some(previous) = later
        .body
        .get("previous_response_id")
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let made = creates
        .iter()
        .filter(|m| m.seq < later.seq)
        .find(|m| response_made(m).is_some_and(|r| r["id"] == previous));
    let Some(made) = made.filter(|made| kept_for(made, later)) else {
        return Vec::new();
    };
    let mut context = chained_context(creates, made);
    context.extend(Facts::input_of(made));
    let output = response_made(made).and_then(|r| r["output"].as_array());
    context.extend(output.into_iter().flatten().cloned());
    context
}

/// Whether `attempt` is `previous` sent again on a new connection with the whole
/// context in place of the `store: false` chain the old connection cached: the only
/// retry there is once that connection is lost.
fn resent_whole(
    creates: &[&ModelExchange],
    previous: &ModelExchange,
    attempt: &ModelExchange,
) -> bool {
    let moved = matches!(
        (previous.connection, attempt.connection),
        (Some(old), Some(new)) if old != new
    );
    if !moved || attempt.body.get("previous_response_id").is_some() {
        return false;
    }
    let mut whole = chained_context(creates, previous);
    if whole.is_empty() {
        return false;
    }
    whole.extend(Facts::input_of(previous));
    let sent = Facts::input_of(attempt);
    let same_items = sent.len() == whole.len()
        && sent
            .iter()
            .zip(&whole)
            .all(|(sent, item)| sent == item || is_replay_of(sent, item));
    let settings = |body: &Value| -> Vec<(String, Value)> {
        let mut fields: Vec<(String, Value)> = body
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| !matches!(key.as_str(), "input" | "previous_response_id"))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        fields
    };
    same_items && settings(&previous.body) == settings(&attempt.body)
}

/// Groups create attempts into rounds: an attempt that resends the previous attempt's
/// body (or, on a new WebSocket connection, its whole context in place of a chain the
/// lost connection cached) is a retry of it when that attempt got no turn or a failed
/// response (whose message invites a retry), or when it says it is a retry
/// (`x-stainless-retry-count` > 0). `creates` is every create of the run.
pub fn group_retries<'a>(
    attempts: &[&'a ModelExchange],
    creates: &[&ModelExchange],
) -> Vec<Vec<&'a ModelExchange>> {
    let mut rounds: Vec<Vec<&ModelExchange>> = Vec::new();
    for attempt in attempts {
        let retry = rounds
            .last()
            .and_then(|round| round.last())
            .is_some_and(|previous| {
                (previous.body == attempt.body || resent_whole(creates, previous, attempt))
                    && (previous.turn.is_none()
                        || previous.served_failed()
                        || attempt.retry_count().is_some_and(|n| n > 0))
            });
        match rounds.last_mut() {
            Some(round) if retry => round.push(attempt),
            _ => rounds.push(vec![attempt]),
        }
    }
    rounds
}
