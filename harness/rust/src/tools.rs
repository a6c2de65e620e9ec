//! The tool side: validation against the task's registry (the tool, its allowed callers,
//! its arguments), approvals, and execution on the fixture tool backend
//! (docs/contract.md).
//!
//! Every `Err(String)` and every returned `String` here is a ready-to-send
//! `function_call_output` payload, so a failure never stops the loop.

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use jsonschema::Validator;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::client::describe;
use crate::response::{CallKind, FunctionCall};
use crate::retry;
use crate::{Outcome, Task, before_deadline};

/// Retries of a call the backend answered with 429 or 5xx; safe because it de-duplicates by
/// call_id.
const CALL_RETRIES: u32 = 2;
/// The pause before a retry when the answer asked for no particular wait.
const RETRY_DELAY: Duration = Duration::from_millis(50);

pub(crate) fn error_output(message: impl Display) -> String {
    json!({"error": message.to_string()}).to_string()
}

/// The task's function tools: parameter schemas and the callers each one allows.
pub(crate) struct Registry {
    tools: HashMap<String, Tool>,
    /// The deferred tools (`defer_loading: true`) a client tool search loads from.
    catalogue: Vec<Value>,
}

struct Tool {
    /// `None`: the tool declares no schema, so any object is accepted.
    schema: Option<Validator>,
    /// For a custom tool, `Some`: its `regex` grammar, anchored to the whole input, or
    /// `None` inside when any text goes (a `text` format, or a `lark` grammar, which is
    /// not checked here).
    custom: Option<Option<regex::Regex>>,
    /// The `namespace` tool it belongs to: its calls must name that namespace.
    namespace: Option<String>,
    /// `allowed_callers`: `direct` and/or `programmatic`; only `direct` when omitted.
    allowed_callers: Vec<String>,
    /// For a tool known by its type (`shell`, `local_shell`, `apply_patch`, `computer`,
    /// a client `tool_search`): the kind of call that runs it.
    typed: Option<CallKind>,
}

impl Registry {
    /// Hosted tools (`programmatic_tool_calling`, ...) are sent but are no functions to run.
    pub(crate) fn new(tools: &[Value]) -> Result<Registry, String> {
        // A namespace's function and custom tools are registered as `namespace.name`,
        // each remembering its namespace.
        let flat: Vec<(Option<&str>, &Value)> = tools
            .iter()
            .flat_map(|tool| match tool["type"].as_str() {
                Some("namespace") => {
                    let namespace = tool["name"].as_str();
                    tool["tools"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|member| (namespace, member))
                        .collect::<Vec<_>>()
                }
                _ => vec![(None, tool)],
            })
            .collect();
        let key = |namespace: Option<&str>, name: &str| match namespace {
            Some(namespace) => format!("{namespace}.{name}"),
            None => name.to_string(),
        };
        let mut registry = HashMap::new();
        for (namespace, tool) in flat.iter().filter(|(_, tool)| tool["type"] == "custom") {
            let Some(name) = tool["name"].as_str() else {
                continue;
            };
            let format = &tool["format"];
            let grammar = if format["type"] == "grammar" && format["syntax"] == "regex" {
                let pattern = format["definition"].as_str().unwrap_or_default();
                Some(
                    regex::Regex::new(&format!("^(?:{pattern})$"))
                        .map_err(|e| format!("tool {name} has an invalid regex grammar: {e}"))?,
                )
            } else {
                None
            };
            registry.insert(
                key(*namespace, name),
                Tool {
                    schema: None,
                    custom: Some(grammar),
                    namespace: namespace.map(str::to_string),
                    allowed_callers: vec!["direct".to_string()],
                    typed: None,
                },
            );
        }
        // Shell, patch and computer tools have no name: each is known by its kind's
        // tool type (`computer` for `computer_use_preview` too). A tool search is the
        // loop's to run only when executed by the client.
        for (tool, kind) in tools.iter().filter_map(|tool| {
            let kind = CallKind::of_tool(tool["type"].as_str()?)?;
            (kind != CallKind::ToolSearch || tool["execution"] == "client").then_some((tool, kind))
        }) {
            registry.insert(
                kind.typed_tool().unwrap_or_default().to_string(),
                Tool {
                    schema: None,
                    custom: None,
                    namespace: None,
                    allowed_callers: allowed_callers(tool),
                    typed: Some(kind),
                },
            );
        }
        for (namespace, tool) in flat.iter().filter(|(_, tool)| tool["type"] == "function") {
            let Some(name) = tool["name"].as_str() else {
                continue;
            };
            let schema =
                match &tool["parameters"] {
                    Value::Null => None,
                    schema => Some(jsonschema::validator_for(schema).map_err(|e| {
                        format!("tool {name} has an invalid parameters schema: {e}")
                    })?),
                };
            let allowed_callers = allowed_callers(tool);
            registry.insert(
                key(*namespace, name),
                Tool {
                    schema,
                    custom: None,
                    namespace: namespace.map(str::to_string),
                    allowed_callers,
                    typed: None,
                },
            );
        }
        let catalogue = tools
            .iter()
            .filter(|tool| tool["defer_loading"] == true)
            .cloned()
            .collect();
        Ok(Registry {
            tools: registry,
            catalogue,
        })
    }

    /// Checks a call before anything is dispatched: a known tool, a caller it allows, and
    /// arguments that parse and match its schema. Returns the parsed arguments (a custom
    /// tool call's input text, once it matches the tool's grammar, as a JSON string).
    pub(crate) fn check(&self, call: &FunctionCall) -> Result<Value, String> {
        // A namespaced tool is found under its own namespace only, never by its bare name.
        let Some(tool) = self
            .tools
            .get(&call.qualified_name())
            .filter(|tool| tool.namespace == call.namespace)
        else {
            return Err(error_output(format!(
                "unknown tool: {}",
                call.qualified_name()
            )));
        };
        // A call of one kind names a tool of the same kind.
        if (call.kind == CallKind::Custom) != tool.custom.is_some()
            || call.kind.typed_tool().is_some() != tool.typed.is_some()
            || tool.typed.is_some_and(|kind| kind != call.kind)
        {
            return Err(error_output(format!("unknown tool: {}", call.name)));
        }
        // A shell call's action, a patch's operation, a computer call's actions: run as
        // the model wrote them. A tool search's arguments are checked as a function's.
        if let Some(kind) = tool.typed.filter(|kind| *kind != CallKind::ToolSearch) {
            if !tool.allowed_callers.iter().any(|c| c == call.caller_kind()) {
                return Err(error_output("Tool caller is excluded by allowed_callers."));
            }
            return serde_json::from_str(&call.arguments).map_err(|e| {
                error_output(if kind == CallKind::Computer {
                    format!("unreadable computer actions: {e}")
                } else {
                    format!("invalid {}: {e}", kind.input_field())
                })
            });
        }
        if let Some(grammar) = &tool.custom {
            if grammar
                .as_ref()
                .is_some_and(|g| !g.is_match(&call.arguments))
            {
                return Err(error_output(format!(
                    "input does not match the grammar of {}",
                    call.name
                )));
            }
            return Ok(Value::String(call.arguments.clone()));
        }
        if !tool.allowed_callers.iter().any(|c| c == call.caller_kind()) {
            return Err(error_output(
                "Function caller is excluded by allowed_callers.",
            ));
        }
        let args: Value = serde_json::from_str(&call.arguments)
            .map_err(|e| error_output(format!("invalid JSON arguments: {e}")))?;
        if !args.is_object() {
            return Err(error_output(
                "invalid JSON arguments: expected a JSON object",
            ));
        }
        if let Some(validator) = &tool.schema
            && let Err(e) = validator.validate(&args)
        {
            return Err(error_output(format!(
                "arguments do not match the schema: {e}"
            )));
        }
        Ok(args)
    }
}

/// A tool's `allowed_callers`: `direct` and/or `programmatic`; only `direct` when omitted.
fn allowed_callers(tool: &Value) -> Vec<String> {
    match tool["allowed_callers"].as_array() {
        Some(callers) => callers
            .iter()
            .filter_map(|caller| caller.as_str().map(str::to_string))
            .collect(),
        None => vec!["direct".to_string()],
    }
}

/// Puts what a call runs with into a backend request: its `arguments`, a custom tool
/// call's `input`, a shell call's `action`, a patch's `operation`, or a computer call's
/// `action` / `actions` as they came.
fn put_payload(body: &mut Value, call: &FunctionCall, args: &Value) {
    match (call.kind, args) {
        (CallKind::Computer, Value::Object(actions)) => {
            for (key, value) in actions {
                body[key] = value.clone();
            }
        }
        (CallKind::Computer, _) => {}
        (kind, _) => body[kind.input_field()] = args.clone(),
    }
}

/// Runs calls: validation, then approval when required, then the backend.
pub(crate) struct Tools {
    registry: Registry,
    approval_required: Vec<String>,
    http: reqwest::Client,
    base_url: String,
    principal: String,
    max_tool_calls: Option<u32>,
    /// Calls sent to the backend so far (each call is handled once, so each is a distinct
    /// call_id; its retries are not counted again).
    executed: AtomicU32,
    tool_timeout: Option<Duration>,
    /// The computer calls whose safety checks the approver approved: their answers
    /// acknowledge them.
    approved_checks: Mutex<HashSet<String>>,
}

impl Tools {
    pub(crate) fn new(task: &Task, http: reqwest::Client, base_url: &str) -> Result<Tools, String> {
        Ok(Tools {
            registry: Registry::new(&task.tools)?,
            approval_required: task.approval_required.clone(),
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            principal: task.principal.clone(),
            max_tool_calls: task.max_tool_calls,
            executed: AtomicU32::new(0),
            tool_timeout: task.tool_timeout_ms.map(Duration::from_millis),
            approved_checks: Mutex::new(HashSet::new()),
        })
    }

    /// The output to send back for `call`; `Err` ends the loop (a budget is spent).
    pub(crate) async fn handle(
        &self,
        call: &FunctionCall,
        deadline: Option<Instant>,
    ) -> Result<String, Outcome> {
        let args = match self.registry.check(call) {
            Ok(args) => args,
            Err(rejection) => return Ok(rejection),
        };
        let guarded = call.kind == CallKind::Computer && !call.pending_safety_checks.is_empty();
        let approval = if self.approval_required.contains(&call.qualified_name()) || guarded {
            match before_deadline(deadline, async { Ok(self.approve(call, &args).await) }).await? {
                Ok(approval) => {
                    if guarded {
                        self.approved_checks
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .insert(call.call_id.clone());
                    }
                    Some(approval)
                }
                Err(denial) => return Ok(denial),
            }
        } else {
            None
        };
        if let Some(cap) = self.max_tool_calls
            && self.executed.load(Ordering::Relaxed) >= cap
        {
            return Err(Outcome::failed(
                "max_tool_calls",
                format!(
                    "{} ({}) would be tool execution {}: max_tool_calls is {cap}",
                    call.name,
                    call.call_id,
                    cap + 1
                ),
            ));
        }
        // Past the deadline nothing is executed, and a request in flight is dropped.
        let output = before_deadline(deadline, async {
            self.executed.fetch_add(1, Ordering::Relaxed);
            Ok(self.execute(call, &args, approval.as_deref()).await)
        });
        output.await
    }

    /// Decides an MCP approval request with the approver: the `mcp_approval_response` to
    /// send, approving only on an explicit grant and giving the reason of a refusal.
    pub(crate) async fn decide(&self, request: &Value) -> Value {
        let id = request["id"].as_str().unwrap_or_default();
        let text = request["arguments"].as_str().unwrap_or_default();
        let body = json!({
            "call_id": id,
            "name": request["name"],
            "arguments": serde_json::from_str::<Value>(text).unwrap_or_else(|_| json!(text)),
            "server_label": request["server_label"],
            "principal": self.principal,
        });
        let asked = async {
            let answer = self
                .http
                .post(format!("{}/approvals", self.base_url))
                .json(&body)
                .send()
                .await
                .map_err(|e| format!("approval request failed: {}", describe(&e)))?;
            let status = answer.status();
            if !status.is_success() {
                return Err(format!("approval request failed: HTTP {}", status.as_u16()));
            }
            answer
                .json::<Value>()
                .await
                .map_err(|e| format!("approval request failed: {}", describe(&e)))
        };
        let (approve, reason) = match asked.await {
            Ok(answer) if answer["approved"] == true => (true, None),
            Ok(answer) if answer["approved"] == false => (
                false,
                Some(
                    answer["reason"]
                        .as_str()
                        .unwrap_or("no reason given")
                        .to_string(),
                ),
            ),
            Ok(_) => (
                false,
                Some("approval request failed: malformed answer".to_string()),
            ),
            Err(why) => (false, Some(why)),
        };
        let mut response = json!({
            "type": "mcp_approval_response",
            "approval_request_id": id,
            "approve": approve,
        });
        if let Some(reason) = reason {
            response["reason"] = json!(reason);
        }
        response
    }

    /// The deferred tools a client tool search loads from.
    pub(crate) fn catalogue(&self) -> &[Value] {
        &self.registry.catalogue
    }

    /// Whether the approver approved this computer call's safety checks.
    pub(crate) fn checks_approved(&self, call_id: &str) -> bool {
        self.approved_checks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(call_id)
    }

    /// Asks for an approval; anything but an explicit grant means the call is not run.
    async fn approve(&self, call: &FunctionCall, args: &Value) -> Result<String, String> {
        let mut body = json!({
            "call_id": call.call_id,
            "name": call.name,
            "principal": self.principal,
        });
        put_payload(&mut body, call, args);
        if let Some(namespace) = &call.namespace {
            body["namespace"] = json!(namespace);
        }
        if !call.pending_safety_checks.is_empty() {
            body["pending_safety_checks"] = Value::Array(call.pending_safety_checks.clone());
        }
        let answer = self
            .http
            .post(format!("{}/approvals", self.base_url))
            .json(&body)
            .send()
            .await
            .map_err(|e| error_output(format!("approval request failed: {}", describe(&e))))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(error_output(format!(
                "approval request failed: HTTP {}",
                status.as_u16()
            )));
        }
        let answer: Value = answer
            .json()
            .await
            .map_err(|e| error_output(format!("approval request failed: {}", describe(&e))))?;
        match (answer["approved"].as_bool(), answer["approval"].as_str()) {
            (Some(true), Some(approval)) => Ok(approval.to_string()),
            (Some(false), _) => Err(error_output(format!(
                "approval denied: {}",
                answer["reason"].as_str().unwrap_or("no reason given")
            ))),
            _ => Err(error_output("approval request failed: malformed answer")),
        }
    }

    async fn execute(&self, call: &FunctionCall, args: &Value, approval: Option<&str>) -> String {
        let url = format!("{}/call/{}", self.base_url, call.name);
        let mut body = json!({
            "call_id": call.call_id,
            "principal": self.principal,
        });
        put_payload(&mut body, call, args);
        if let Some(namespace) = &call.namespace {
            body["namespace"] = json!(namespace);
        }
        if let Some(approval) = approval {
            body["approval"] = json!(approval);
        }
        let mut timed_out = false;
        let mut wait = RETRY_DELAY;
        for attempt in 0..=CALL_RETRIES {
            // A pause after a 429 or 5xx (as long as it asked); an attempt that timed out
            // has waited long enough.
            if attempt > 0 && !timed_out {
                tokio::time::sleep(wait).await;
            }
            let request = async {
                let answer = self.http.post(&url).json(&body).send().await?;
                let status = answer.status();
                let asked = retry::requested(answer.headers());
                let text = answer.text().await.unwrap_or_default();
                Ok::<_, reqwest::Error>((status, asked, text))
            };
            let answered = match self.tool_timeout {
                Some(limit) => match tokio::time::timeout(limit, request).await {
                    Ok(answered) => answered,
                    Err(_) => {
                        // Retried under the same call_id: the backend de-duplicates, so
                        // a call that ran but answered late runs only once.
                        eprintln!(
                            "tool {} ({}): no answer within {limit:?} on attempt {}",
                            call.name,
                            call.call_id,
                            attempt + 1
                        );
                        timed_out = true;
                        continue;
                    }
                },
                None => request.await,
            };
            let (status, asked, text) = match answered {
                Ok(answered) => answered,
                Err(e) => {
                    return error_output(format!("tool backend unreachable: {}", describe(&e)));
                }
            };
            if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                // A wait longer than any retry is worth: the call is answered as failed.
                if asked.is_some_and(|secs| secs > retry::max_retry_after_secs()) {
                    return error_output(format!(
                        "tool unavailable: HTTP {} asking to retry after more than {} s",
                        status.as_u16(),
                        retry::max_retry_after_secs()
                    ));
                }
                wait = asked.map_or(RETRY_DELAY, Duration::from_secs_f64);
                eprintln!(
                    "tool {} ({}): HTTP {} on attempt {}",
                    call.name,
                    call.call_id,
                    status.as_u16(),
                    attempt + 1
                );
                timed_out = false;
                continue;
            }
            return backend_answer(status, &text);
        }
        match (timed_out, self.tool_timeout) {
            (true, Some(limit)) => error_output(format!(
                "tool timed out: no answer within {} ms",
                limit.as_millis()
            )),
            _ => error_output("tool unavailable"),
        }
    }
}

/// The output for a non-5xx backend answer.
fn backend_answer(status: StatusCode, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    if status.is_success() {
        return match parsed.as_ref().and_then(|answer| answer.get("result")) {
            Some(result) => result.to_string(),
            None => error_output("tool backend answered without a result"),
        };
    }
    let error = parsed.as_ref().map(|answer| &answer["error"]);
    let code = match (status, error.and_then(|e| e["code"].as_str())) {
        (StatusCode::FORBIDDEN, _) => "forbidden".to_string(),
        (_, Some(code)) => code.to_string(),
        (status, None) => format!("HTTP {}", status.as_u16()),
    };
    let message = error
        .and_then(|e| e["message"].as_str())
        .or(status.canonical_reason())
        .unwrap_or("no message");
    error_output(format!("{code}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry {
        Registry::new(&[
            json!({"type": "function", "name": "get_stock", "strict": true,
                   "parameters": {"type": "object", "properties": {"sku": {"type": "string"}},
                                  "required": ["sku"], "additionalProperties": false}}),
            json!({"type": "function", "name": "ping", "parameters": null}),
            json!({"type": "programmatic_tool_calling"}),
        ])
        .unwrap()
    }

    fn call(name: &str, arguments: &str, caller: Option<Value>) -> FunctionCall {
        FunctionCall {
            kind: CallKind::Function,
            call_id: "call_1".to_string(),
            name: name.to_string(),
            arguments: arguments.to_string(),
            caller,
            pending_safety_checks: Vec::new(),
            namespace: None,
        }
    }

    /// Checks a direct call.
    fn check(name: &str, arguments: &str) -> Result<Value, String> {
        registry().check(&call(name, arguments, None))
    }

    fn error_of(output: &str) -> String {
        let value: Value = serde_json::from_str(output).unwrap();
        value["error"].as_str().unwrap().to_string()
    }

    #[test]
    fn valid_arguments_are_dispatched_parsed() {
        assert_eq!(
            check("get_stock", r#"{"sku":"A7"}"#),
            Ok(json!({"sku": "A7"}))
        );
        assert_eq!(check("ping", "{}"), Ok(json!({})));
    }

    #[test]
    fn unknown_tools_are_rejected() {
        let rejection = check("delete_all", "{}").unwrap_err();
        assert_eq!(error_of(&rejection), "unknown tool: delete_all");
        // A hosted tool is not a function in the registry.
        let rejection = check("programmatic_tool_calling", "{}").unwrap_err();
        assert!(error_of(&rejection).starts_with("unknown tool: "));
    }

    #[test]
    fn malformed_arguments_are_rejected() {
        for arguments in [r#"{"sku":"A7""#, "", "[]", r#""A7""#] {
            let rejection = check("get_stock", arguments).unwrap_err();
            assert!(
                error_of(&rejection).starts_with("invalid JSON arguments: "),
                "{arguments:?} -> {rejection}"
            );
        }
    }

    #[test]
    fn schema_violations_are_rejected() {
        for arguments in [r#"{"sku":7}"#, "{}", r#"{"sku":"A7","extra":1}"#] {
            let rejection = check("get_stock", arguments).unwrap_err();
            assert!(
                error_of(&rejection).starts_with("arguments do not match the schema: "),
                "{arguments:?} -> {rejection}"
            );
        }
    }

    #[test]
    fn callers_excluded_by_allowed_callers_are_rejected() {
        let registry = Registry::new(&[
            json!({"type": "function", "name": "both", "parameters": null,
                   "allowed_callers": ["direct", "programmatic"]}),
            json!({"type": "function", "name": "program_only", "parameters": null,
                   "allowed_callers": ["programmatic"]}),
            json!({"type": "function", "name": "direct_only", "parameters": null,
                   "allowed_callers": ["direct"]}),
            json!({"type": "function", "name": "unspecified", "parameters": null}),
            json!({"type": "programmatic_tool_calling"}),
        ])
        .unwrap();
        let program = Some(json!({"type": "program", "caller_id": "call_p"}));
        let direct = Some(json!({"type": "direct"}));
        let allowed = |name: &str, caller: &Option<Value>| match registry.check(&call(
            name,
            "{}",
            caller.clone(),
        )) {
            Ok(_) => true,
            Err(rejection) => {
                assert_eq!(
                    rejection,
                    r#"{"error":"Function caller is excluded by allowed_callers."}"#
                );
                false
            }
        };
        assert!(allowed("both", &program) && allowed("both", &direct) && allowed("both", &None));
        assert!(allowed("program_only", &program));
        assert!(!allowed("program_only", &direct) && !allowed("program_only", &None));
        assert!(!allowed("direct_only", &program) && allowed("direct_only", &None));
        // Without allowed_callers only direct calls are allowed.
        assert!(!allowed("unspecified", &program) && allowed("unspecified", &direct));
    }

    #[test]
    fn invalid_schema_is_reported() {
        let tools = [json!({"type": "function", "name": "bad", "parameters": {"type": 12}})];
        assert!(Registry::new(&tools).is_err());
    }

    #[test]
    fn backend_answers_become_outputs() {
        assert_eq!(
            backend_answer(StatusCode::OK, r#"{"result":{"sku":"A7","units":8}}"#),
            r#"{"sku":"A7","units":8}"#
        );
        assert_eq!(
            backend_answer(StatusCode::OK, r#"{"result":"ok"}"#),
            r#""ok""#
        );
        assert_eq!(
            error_of(&backend_answer(
                StatusCode::FORBIDDEN,
                r#"{"error":{"code":"forbidden","message":"not your order"}}"#
            )),
            "forbidden: not your order"
        );
        assert_eq!(
            error_of(&backend_answer(
                StatusCode::CONFLICT,
                r#"{"error":{"code":"approval_required","message":"needs approval"}}"#
            )),
            "approval_required: needs approval"
        );
        assert_eq!(
            error_of(&backend_answer(StatusCode::UNPROCESSABLE_ENTITY, "oops")),
            "HTTP 422: Unprocessable Entity"
        );
    }

    #[test]
    fn custom_calls_run_their_input_once_it_matches_the_whole_regex_grammar() {
        let registry = Registry::new(&[
            json!({"type": "custom", "name": "stock_of",
                   "format": {"type": "grammar", "syntax": "regex", "definition": "[A-Z][0-9]+"}}),
            json!({"type": "custom", "name": "free", "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}),
            json!({"type": "function", "name": "ping", "parameters": null}),
        ])
        .unwrap();
        let custom = |name: &str, input: &str| FunctionCall {
            kind: CallKind::Custom,
            ..call(name, input, None)
        };
        assert_eq!(registry.check(&custom("stock_of", "A7")), Ok(json!("A7")));
        for input in ["a7", "A7 and more", ""] {
            let rejection = registry.check(&custom("stock_of", input)).unwrap_err();
            assert!(
                error_of(&rejection).starts_with("input does not match the grammar"),
                "{input:?}"
            );
        }
        // A lark grammar is not checked.
        assert_eq!(registry.check(&custom("free", "")), Ok(json!("")));
        // A call of one kind never runs a tool of the other.
        assert!(registry.check(&custom("ping", "{}")).is_err());
        assert!(registry.check(&call("stock_of", "{}", None)).is_err());
    }

    #[test]
    fn a_namespaced_function_is_found_under_its_namespace_only() {
        let registry = Registry::new(&[
            json!({"type": "namespace", "name": "crm", "description": "CRM",
                   "tools": [{"type": "function", "name": "lookup", "parameters": null}]}),
            json!({"type": "function", "name": "ping", "parameters": null}),
        ])
        .unwrap();
        let under = |namespace: Option<&str>, name: &str| FunctionCall {
            namespace: namespace.map(str::to_string),
            ..call(name, "{}", None)
        };
        assert_eq!(registry.check(&under(Some("crm"), "lookup")), Ok(json!({})));
        assert_eq!(registry.check(&under(None, "ping")), Ok(json!({})));
        for (namespace, name) in [
            (None, "lookup"),
            (Some("billing"), "lookup"),
            (None, "crm.lookup"),
            (Some("crm"), "ping"),
        ] {
            let rejection = registry.check(&under(namespace, name)).unwrap_err();
            assert!(
                error_of(&rejection).starts_with("unknown tool"),
                "{namespace:?} {name}"
            );
        }
    }

    #[test]
    fn a_computer_call_runs_its_actions_only_when_the_task_offers_the_computer() {
        let computer = FunctionCall {
            kind: CallKind::Computer,
            ..call("computer", r#"{"action":{"type":"screenshot"}}"#, None)
        };
        let offered = Registry::new(&[json!({"type": "computer"})]).unwrap();
        assert_eq!(
            offered.check(&computer),
            Ok(json!({"action": {"type": "screenshot"}}))
        );
        let without = Registry::new(&[json!({"type": "function", "name": "computer"})]).unwrap();
        assert!(without.check(&computer).is_err());
    }
}
