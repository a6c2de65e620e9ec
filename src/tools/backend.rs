//! The fixture tool backend (docs/contract.md): executes tool calls as the scenario
//! scripts them, grants or refuses approvals, and de-duplicates by `call_id`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};

use crate::json_compare::matches_subset;
use crate::scenario::fixtures::{self, DEFAULT_REFUSAL};
use crate::scenario::{OutputSpec, RateLimitRule, Scenario, ToolBehaviour, ToolRef};
use crate::transcript::ToolRequestKind;
use crate::wire::IdGen;
use crate::wire::call_kind::{
    self, APPLY_PATCH, CALL_KINDS, COMPUTER, CallKind, FUNCTION, LOCAL_SHELL, SHELL, TOOL_SEARCH,
    qualified_name,
};

/// Arguments that violate a tool's schema: the first violation, and where it is.
#[derive(Debug, thiserror::Error)]
#[error("{message} (at '{at}')")]
pub struct SchemaViolation {
    /// What the schema says is wrong.
    pub message: String,
    /// The JSON pointer of the value at fault.
    pub at: String,
}

/// A tool of the task's registry.
pub struct RegisteredTool {
    /// The definition sent to the model.
    pub definition: Value,
    validator: Option<jsonschema::Validator>,
    /// A custom tool's `regex` grammar, anchored to match the whole input.
    grammar: Option<regex::Regex>,
    /// The `namespace` tool it belongs to, if any: its calls must name that namespace.
    namespace: Option<String>,
}

impl RegisteredTool {
    /// Whether the tool is a `custom` tool, whose calls carry free-form text `input`.
    pub fn is_custom(&self) -> bool {
        self.definition.get("type").and_then(Value::as_str) == Some("custom")
    }

    /// The kind of call the tool's calls come as: `function` unless the tool's type is
    /// another kind's (`custom`, `shell`, `local_shell`, `apply_patch`, `computer` or
    /// `computer_use_preview`, `tool_search`).
    pub fn kind(&self) -> CallKind {
        self.definition
            .get("type")
            .and_then(Value::as_str)
            .and_then(call_kind::of_tool)
            .unwrap_or(FUNCTION)
    }

    /// Whether `input` satisfies a custom tool's format: a `regex` grammar must match the
    /// whole input; a `lark` grammar is not checked (the fake has no Lark parser), nor
    /// is a `text` format (any text).
    pub fn check_input(&self, input: &str) -> Result<(), String> {
        match &self.grammar {
            Some(grammar) if !grammar.is_match(input) => Err(format!(
                "the input does not match the whole regex grammar {}",
                self.definition["format"]["definition"]
            )),
            _ => Ok(()),
        }
    }

    /// Whether `arguments` satisfy the tool's schema; `Err` carries the first violation.
    pub fn check_arguments(&self, arguments: &Value) -> Result<(), SchemaViolation> {
        match &self.validator {
            Some(validator) => validator
                .validate(arguments)
                .map_err(|err| SchemaViolation {
                    message: err.to_string(),
                    at: err.instance_path().to_string(),
                }),
            None => Ok(()),
        }
    }
}

/// The task's tool registry: name to definition and compiled schema.
pub struct Registry {
    tools: BTreeMap<String, RegisteredTool>,
}

impl Registry {
    /// Builds the registry of a scenario's task.
    pub fn new(scenario: &Scenario) -> Self {
        let mut tools = BTreeMap::new();
        let mut add = |definition: Value, namespace: Option<&str>| {
            let Some(name) = call_kind::tool_name(&definition) else {
                return;
            };
            let key = qualified_name(namespace, name);
            let validator = definition
                .get("parameters")
                .and_then(|schema| jsonschema::validator_for(schema).ok());
            let grammar = regex_grammar(&definition);
            tools.insert(
                key,
                RegisteredTool {
                    definition,
                    validator,
                    grammar,
                    namespace: namespace.map(str::to_owned),
                },
            );
        };
        for tool in &scenario.task.tools {
            let definition = match tool {
                ToolRef::Fixture(name) => fixtures::definition(name).unwrap_or(Value::Null),
                ToolRef::Inline(def) => def.clone(),
            };
            // A namespace groups function and custom tools, each called with its name
            // and the namespace's.
            if definition["type"] == "namespace" {
                let namespace = definition["name"].as_str().unwrap_or_default();
                for member in definition["tools"].as_array().into_iter().flatten() {
                    add(member.clone(), Some(namespace));
                }
                continue;
            }
            add(definition, None);
        }
        Self { tools }
    }

    /// The tool a call names: `name` alone for a tool outside any namespace, `name` in
    /// `namespace` for one inside a namespace tool. A namespaced tool called without its
    /// namespace, or under another, is none.
    pub fn get_in(&self, namespace: Option<&str>, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .get(&qualified_name(namespace, name))
            .filter(|tool| tool.namespace.as_deref() == namespace)
    }

    /// The deferred tools (`defer_loading: true`) outside any namespace: the catalogue a
    /// client tool search looks through.
    pub fn deferred(&self) -> Vec<&Value> {
        self.tools
            .values()
            .filter(|tool| tool.namespace.is_none() && tool.definition["defer_loading"] == true)
            .map(|tool| &tool.definition)
            .collect()
    }

    /// The tool named `name`, outside any namespace.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.get_in(None, name)
    }
}

/// A custom tool's `{"type": "grammar", "syntax": "regex", "definition"}` format,
/// compiled to match whole inputs; `None` for any other format or a regex that does not
/// compile (the scenario linter reports that).
fn regex_grammar(definition: &Value) -> Option<regex::Regex> {
    let format = definition.get("format")?;
    if format["type"] != "grammar" || format["syntax"] != "regex" {
        return None;
    }
    let pattern = format["definition"].as_str()?;
    regex::Regex::new(&format!("^(?:{pattern})$")).ok()
}

/// How a model-issued call should be treated by a correct controller, judged from the
/// registry alone (before any backend decision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallValidity {
    /// Registered, parseable, schema-valid.
    Valid,
    /// Not in the registry.
    UnknownTool,
    /// `arguments` is not a JSON object.
    MalformedArguments(String),
    /// Parses but violates the schema.
    SchemaViolation(String),
    /// Made by a caller the tool's `allowed_callers` excludes (a program calling a
    /// direct-only tool, or the model directly calling a program-only tool); says which.
    CallerNotAllowed(String),
    /// A custom tool call whose input breaks the tool's `regex` grammar; says how.
    GrammarViolation(String),
}

impl Registry {
    /// Judges a custom tool call the model issued: a call naming no custom tool is to
    /// an unknown tool, as the API would have no such tool to offer.
    pub fn judge_custom_call(
        &self,
        namespace: Option<&str>,
        name: &str,
        input: &str,
    ) -> CallValidity {
        match self.get_in(namespace, name) {
            Some(tool) if tool.is_custom() => match tool.check_input(input) {
                Ok(()) => CallValidity::Valid,
                Err(why) => CallValidity::GrammarViolation(why),
            },
            _ => CallValidity::UnknownTool,
        }
    }

    /// Judges a call of a kind whose tool is known by its type (a `shell_call`, a
    /// `local_shell_call`, an `apply_patch_call`, a `computer_call`, a client
    /// `tool_search_call`): valid when the task offers that tool (a tool search tool
    /// executed by the client) and its `allowed_callers` allow the call's caller; a call
    /// to an unknown tool when it does not.
    pub fn judge_typed_call(
        &self,
        kind: CallKind,
        name: &str,
        caller: Option<&Value>,
    ) -> CallValidity {
        match self.get(name) {
            Some(tool)
                if tool.kind() == kind
                    && (kind != TOOL_SEARCH || tool.definition["execution"] == "client") =>
            {
                caller_excluded(tool, caller).unwrap_or(CallValidity::Valid)
            }
            _ => CallValidity::UnknownTool,
        }
    }

    /// Judges a function call the model issued under `namespace` (its `namespace` field,
    /// `None` outside a namespace); `caller` is the call's `caller` field.
    pub fn judge_call_in(
        &self,
        namespace: Option<&str>,
        name: &str,
        arguments: &str,
        caller: Option<&Value>,
    ) -> CallValidity {
        let Some(tool) = self
            .get_in(namespace, name)
            .filter(|tool| tool.kind() != COMPUTER)
        else {
            return CallValidity::UnknownTool;
        };
        if let Some(excluded) = caller_excluded(tool, caller) {
            return excluded;
        }
        let parsed: Value = match serde_json::from_str(arguments) {
            Ok(value @ Value::Object(_)) => value,
            Ok(other) => {
                let kind = match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                };
                return CallValidity::MalformedArguments(format!("the JSON is {kind}"));
            }
            Err(err) => return CallValidity::MalformedArguments(err.to_string()),
        };
        match tool.check_arguments(&parsed) {
            Ok(()) => CallValidity::Valid,
            Err(violation) => CallValidity::SchemaViolation(violation.to_string()),
        }
    }
}

fn when_matches(when: Option<&Value>, arguments: &Value) -> bool {
    when.is_none_or(|pattern| matches_subset(pattern, arguments))
}

/// `CallerNotAllowed` when the tool's `allowed_callers` exclude the call's `caller`.
fn caller_excluded(tool: &RegisteredTool, caller: Option<&Value>) -> Option<CallValidity> {
    // without `allowed_callers` only direct calls are allowed.
    let kind = match caller.and_then(|c| c.get("type")).and_then(Value::as_str) {
        Some("program") => "programmatic",
        _ => "direct",
    };
    let callers = tool.definition.get("allowed_callers");
    let allowed = match callers.and_then(Value::as_array) {
        Some(callers) => callers.iter().any(|c| c == kind),
        None => kind == "direct",
    };
    if !allowed {
        let bound = match callers {
            Some(callers) => format!("allowed_callers is {callers}"),
            None => "the tool has no allowed_callers, so only direct calls".to_owned(),
        };
        let who = if kind == "direct" {
            "a direct call from the model"
        } else {
            "a call from a program"
        };
        return Some(CallValidity::CallerNotAllowed(format!(
            "{who}, and {bound}"
        )));
    }
    None
}

/// What a call or approval request for the tool `name` asks to run with: a computer
/// call's `{"action": ...}` / `{"actions": [...]}`, else the field of the call's input of
/// the first kind that has one (`arguments`, a custom tool call's `input` text, a shell
/// call's `action`, a patch's `operation`).
pub fn call_input(name: &str, body: &Value) -> Value {
    if name == COMPUTER.tool_type
        && let Some(actions) = computer_actions(body)
    {
        return actions;
    }
    CALL_KINDS
        .into_iter()
        .find_map(|kind| body.get(kind.input_field))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A computer call request's `action` and `actions`, as an object of those fields alone;
/// `None` when it has neither.
fn computer_actions(body: &Value) -> Option<Value> {
    Some(COMPUTER.input(body)).filter(|input| input.as_object().is_some_and(|o| !o.is_empty()))
}

/// The screenshot a computer action returns when the case scripts none: a 1x1 PNG.
pub const SCREENSHOT: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// The default result of a client tool search: `{"tools": [names]}`, the deferred tools
/// (`defer_loading: true`) whose name or description holds a word of the search's
/// `query` (a word of three letters or more, in any case; `_` separates words).
pub fn search_catalogue(catalogue: &[&Value], arguments: &Value) -> Value {
    let query = arguments["query"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.len() >= 3)
        .collect();
    let found: Vec<&str> = catalogue
        .iter()
        .filter(|tool| {
            let text = format!(
                "{} {}",
                tool["name"].as_str().unwrap_or_default(),
                tool["description"].as_str().unwrap_or_default()
            )
            .to_lowercase();
            let tool_words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).collect();
            words.iter().any(|word| tool_words.contains(word))
        })
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    json!({"tools": found})
}

/// What a tool of a client-executed kind returns when the case scripts nothing: its
/// result in the shape its answer item carries, so that a controller copies it over.
/// A shell call's output chunks, one per command; a local shell call's stdout, stderr
/// and exit code; a patch's status and log line; a computer action's screenshot; a
/// client tool search's finds in the task's deferred tools (`catalogue`).
fn kind_result(kind: CallKind, input: &Value, catalogue: &[&Value]) -> Option<Value> {
    if kind == COMPUTER {
        return Some(json!({"image_url": SCREENSHOT}));
    }
    if kind == TOOL_SEARCH {
        return Some(search_catalogue(catalogue, input));
    }
    let exited = json!({"type": "exit", "exit_code": 0});
    if kind == SHELL {
        let commands = input["commands"].as_array().cloned().unwrap_or_default();
        return Some(Value::Array(
            commands
                .iter()
                .map(|command| {
                    let command = command.as_str().unwrap_or_default();
                    json!({"stdout": format!("ran: {command}\n"), "stderr": "", "outcome": exited})
                })
                .collect(),
        ));
    }
    if kind == LOCAL_SHELL {
        let command: Vec<&str> = input["command"]
            .as_array()
            .map(|parts| parts.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        return Some(
            json!({"stdout": format!("ran: {}\n", command.join(" ")), "stderr": "", "exit_code": 0}),
        );
    }
    if kind == APPLY_PATCH {
        let what = input["type"].as_str().unwrap_or_default().replace('_', " ");
        let path = input["path"].as_str().unwrap_or_default();
        return Some(json!({"status": "completed", "output": format!("{what}: {path}")}));
    }
    None
}

/// The result a fixture tool of this kind returns for these arguments; `catalogue` holds
/// the task's deferred tools, which a client tool search looks through.
pub fn scripted_result(
    behaviour: Option<&ToolBehaviour>,
    kind: CallKind,
    name: &str,
    arguments: &Value,
    catalogue: &[&Value],
) -> Value {
    let rule = behaviour.and_then(|b| {
        b.results
            .iter()
            .find(|rule| when_matches(rule.when.as_ref(), arguments))
    });
    match (rule, behaviour.and_then(|b| b.default.as_ref())) {
        (Some(rule), _) => rule.result.clone(),
        (None, Some(default)) => default.clone(),
        // Echo the arguments so that results of different calls differ: a controller that
        // pairs results with the wrong call is then visible.
        (None, None) => kind_result(kind, arguments, catalogue).unwrap_or_else(|| {
            if arguments.is_string() {
                json!({"tool": name, "input": arguments, "ok": true})
            } else {
                json!({"tool": name, "arguments": arguments, "ok": true})
            }
        }),
    }
}

/// The rate limit that applies to a call of a tool with these arguments, if any.
pub fn rate_limit_rule<'b>(
    behaviour: Option<&'b ToolBehaviour>,
    arguments: &Value,
) -> Option<&'b RateLimitRule> {
    behaviour?
        .rate_limited
        .iter()
        .find(|rule| when_matches(rule.when.as_ref(), arguments))
}

/// The 429 answer of a rate-limited call.
fn rate_limited(name: &str, rule: &RateLimitRule) -> (u16, Value) {
    let wait = match rule.delay_ms() {
        Some(ms) => format!("retry with the same call_id after {ms} ms"),
        None => "retry with the same call_id later".to_owned(),
    };
    error(
        429,
        "rate_limited",
        format!("too many requests to '{name}'; {wait}"),
    )
}

/// The headers of a 503: `retry-after-ms` when the matching `unavailable` rule gives it.
fn unavailable_headers(
    behaviour: Option<&ToolBehaviour>,
    arguments: &Value,
) -> Vec<(&'static str, String)> {
    behaviour
        .and_then(|b| {
            b.unavailable
                .iter()
                .find(|rule| when_matches(rule.when.as_ref(), arguments))
        })
        .and_then(|rule| rule.retry_after_ms)
        .map(|ms| vec![("retry-after-ms", ms.to_string())])
        .unwrap_or_default()
}

/// The headers of a 429: `retry-after` (seconds) and/or `retry-after-ms`, as the rule
/// gives them.
fn retry_headers(rule: &RateLimitRule) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let Some(seconds) = rule.retry_after {
        headers.push(("retry-after", seconds.to_string()));
    }
    if let Some(ms) = rule.retry_after_ms {
        headers.push(("retry-after-ms", ms.to_string()));
    }
    headers
}

/// The backend's per-case state.
#[derive(Debug, Default)]
pub struct BackendState {
    /// Results of executed calls, by call_id (de-duplication).
    executed: HashMap<String, Value>,
    /// Granted approval tokens, to the call_id they were granted for.
    approvals: HashMap<String, String>,
    /// Attempts seen per call_id (for scripted transient failures).
    attempts: HashMap<String, u32>,
    /// Approval requests seen per call_id (each grant gets its own token).
    asked: HashMap<String, u32>,
    /// Calls executed per tool (for denials that start after some calls).
    runs: HashMap<String, u32>,
}

/// One backend answer, before it is written to the transcript.
#[derive(Debug, Clone)]
pub struct BackendReply {
    /// HTTP status.
    pub status: u16,
    /// Body.
    pub body: Value,
    /// True on the first successful execution of a call_id.
    pub effect: bool,
    /// What the request was.
    pub kind: ToolRequestKind,
    /// Tool name.
    pub name: String,
    /// How long the answer is held before it is sent (a scripted slow tool).
    pub delay_ms: u64,
    /// Extra answer headers (a rate limit's `retry-after` / `retry-after-ms`).
    pub headers: Vec<(&'static str, String)>,
}

fn error(status: u16, code: &str, message: String) -> (u16, Value) {
    (status, json!({"error": {"code": code, "message": message}}))
}

/// The fixture backend of one case.
pub struct ToolBackend {
    registry: Registry,
    approval_required: BTreeSet<String>,
    behaviours: BTreeMap<String, ToolBehaviour>,
    /// The actions of the script's computer calls with pending safety checks: performing
    /// one needs an approval for that call.
    guarded_actions: Vec<Value>,
}

impl ToolBackend {
    /// The backend for a scenario.
    pub fn new(scenario: &Scenario) -> Self {
        Self {
            registry: Registry::new(scenario),
            approval_required: scenario.task.approval_required.iter().cloned().collect(),
            behaviours: scenario.tools.clone(),
            guarded_actions: scenario
                .script
                .iter()
                .flat_map(|turn| &turn.output)
                .filter_map(|item| match item {
                    OutputSpec::ComputerCall(call) if !call.pending_safety_checks.is_empty() => {
                        Some(call.input())
                    }
                    _ => None,
                })
                .collect(),
        }
    }

    /// `POST /call/{name}`.
    pub fn call(&self, state: &mut BackendState, name: &str, body: &Value) -> BackendReply {
        let mut delay_ms = 0;
        let arguments = call_input(name, body);
        // A namespaced tool is run with its namespace in the body; the ledger, the rules
        // and `approval_required` name it `namespace.name`.
        let namespace = body.get("namespace").and_then(Value::as_str);
        let name = &qualified_name(namespace, name);
        let (status, body, effect) = self.call_inner(state, namespace, name, body, &mut delay_ms);
        let headers = match status {
            429 => rate_limit_rule(self.behaviours.get(name), &arguments)
                .map(retry_headers)
                .unwrap_or_default(),
            503 => unavailable_headers(self.behaviours.get(name), &arguments),
            _ => Vec::new(),
        };
        BackendReply {
            status,
            body,
            effect,
            kind: ToolRequestKind::Call,
            name: name.to_owned(),
            delay_ms,
            headers,
        }
    }

    /// Decides (and executes) a call at once; `delay_ms` is set when its answer is to be
    /// held, which only the front end's delivery waits for.
    fn call_inner(
        &self,
        state: &mut BackendState,
        namespace: Option<&str>,
        name: &str,
        body: &Value,
        delay_ms: &mut u64,
    ) -> (u16, Value, bool) {
        let bare = namespace.map_or(name, |ns| &name[ns.len() + 1..]);
        let Some(tool) = self.registry.get_in(namespace, bare) else {
            let (s, b) = error(
                404,
                "unknown_tool",
                format!("no tool named '{name}' in this task's registry"),
            );
            return (s, b, false);
        };
        let Some(call_id) = body.get("call_id").and_then(Value::as_str) else {
            let (s, b) = error(
                422,
                "invalid_arguments",
                "the request has no `call_id` string".to_owned(),
            );
            return (s, b, false);
        };
        // A custom tool's call carries its text as `input`; rules match it as a string.
        // A computer call carries its `action` or `actions`; rules match that object.
        let arguments = if tool.kind() == COMPUTER {
            let Some(actions) = computer_actions(body) else {
                let (s, b) = error(
                    422,
                    "invalid_arguments",
                    "a computer call request carries the call's `action` or `actions`".to_owned(),
                );
                return (s, b, false);
            };
            actions
        } else if tool.is_custom() {
            let Some(input) = body.get("input").and_then(Value::as_str) else {
                let (s, b) = error(
                    422,
                    "invalid_input",
                    format!("'{name}' is a custom tool: send the call's `input` text as a string"),
                );
                return (s, b, false);
            };
            if let Err(why) = tool.check_input(input) {
                let (s, b) = error(
                    422,
                    "invalid_input",
                    format!("input breaks the grammar of '{name}': {why}"),
                );
                return (s, b, false);
            }
            Value::String(input.to_owned())
        } else if tool.kind() != FUNCTION && tool.kind() != TOOL_SEARCH {
            // A shell call's `action`, a patch's `operation`: a JSON object. A tool
            // search's `arguments` are read as a function's.
            let field = tool.kind().input_field;
            let Some(input) = body.get(field).filter(|input| input.is_object()) else {
                let (s, b) = error(
                    422,
                    "invalid_input",
                    format!(
                        "'{name}' runs {} items: send the call's `{field}` as a JSON object",
                        tool.kind().call
                    ),
                );
                return (s, b, false);
            };
            input.clone()
        } else {
            body.get("arguments").cloned().unwrap_or(Value::Null)
        };
        if !arguments.is_object() && !tool.is_custom() {
            let got = match &arguments {
                Value::Null => "nothing (null or missing)",
                Value::String(_) => "a string (send the parsed object, not the JSON text)",
                Value::Array(_) => "an array",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::Object(_) => unreachable!("checked above"),
            };
            let (s, b) = error(
                422,
                "invalid_arguments",
                format!(
                    "`arguments` must be the call's parsed arguments, a JSON object; this request sent {got}"
                ),
            );
            return (s, b, false);
        }
        if let Err(message) = tool.check_arguments(&arguments) {
            let (s, b) = error(
                422,
                "invalid_arguments",
                format!("arguments violate the schema of '{name}': {message}"),
            );
            return (s, b, false);
        }
        if self.approval_required.contains(name)
            || (tool.kind() == COMPUTER && self.guarded_actions.contains(&arguments))
        {
            let token = body.get("approval").and_then(Value::as_str);
            let granted_for = token.and_then(|t| state.approvals.get(t));
            if granted_for.map(String::as_str) != Some(call_id) {
                let why = match (token, granted_for) {
                    (None, _) => "carries no approval".to_owned(),
                    (Some(t), None) => format!("carries approval '{t}', which was never granted"),
                    (Some(t), Some(other)) => {
                        format!("carries approval '{t}', which was granted for call {other}")
                    }
                };
                let (s, b) = error(
                    409,
                    "approval_required",
                    format!("'{name}' needs an approval for call {call_id}; this request {why}"),
                );
                return (s, b, false);
            }
        }
        let behaviour = self.behaviours.get(name);
        let principal = body.get("principal").and_then(Value::as_str);
        let runs = state.runs.get(name).copied().unwrap_or(0);
        if let Some(rule) = behaviour.and_then(|b| {
            b.deny.iter().find(|rule| {
                rule.principal
                    .as_deref()
                    .is_none_or(|p| Some(p) == principal)
                    && when_matches(rule.when.as_ref(), &arguments)
                    && runs >= rule.after
            })
        }) {
            let (s, b) = error(403, "forbidden", rule.message.clone());
            return (s, b, false);
        }
        let attempt = state.attempts.entry(call_id.to_owned()).or_insert(0);
        *attempt += 1;
        if let Some(rule) = behaviour.and_then(|b| {
            b.slow
                .iter()
                .find(|rule| when_matches(rule.when.as_ref(), &arguments))
        }) && *attempt <= rule.attempts
        {
            *delay_ms = rule.delay_ms;
        }
        let failing = behaviour
            .and_then(|b| {
                b.unavailable
                    .iter()
                    .find(|rule| when_matches(rule.when.as_ref(), &arguments))
            })
            .is_some_and(|rule| rule.attempts.is_none_or(|n| *attempt <= n));
        if let Some(rule) = rate_limit_rule(behaviour, &arguments)
            && rule.attempts.is_none_or(|n| *attempt <= n)
        {
            let (s, b) = rate_limited(name, rule);
            return (s, b, false);
        }
        if failing {
            let (s, b) = error(
                503,
                "unavailable",
                format!("'{name}' is temporarily unavailable; retry with the same call_id"),
            );
            return (s, b, false);
        }
        if let Some(result) = state.executed.get(call_id) {
            return (200, json!({"result": result}), false);
        }
        let mut result = scripted_result(
            behaviour,
            tool.kind(),
            name,
            &arguments,
            &self.registry.deferred(),
        );
        let runs = state.runs.entry(name.to_owned()).or_insert(0);
        *runs += 1;
        if let (Some(field), Value::Object(fields)) =
            (behaviour.and_then(|b| b.numbered.as_ref()), &mut result)
        {
            fields.insert(field.clone(), json!(*runs));
        }
        state.executed.insert(call_id.to_owned(), result.clone());
        (200, json!({"result": result}), true)
    }

    /// `POST /approvals`. A granted token is derived from `key` (the session's), the
    /// call_id and how often that call asked, so it does not depend on the order in which
    /// parallel approval requests arrive.
    pub fn approval(&self, state: &mut BackendState, key: &str, body: &Value) -> BackendReply {
        let name = qualified_name(
            body.get("namespace").and_then(Value::as_str),
            body.get("name").and_then(Value::as_str).unwrap_or_default(),
        );
        let call_id = body.get("call_id").and_then(Value::as_str);
        let arguments = call_input(&name, body);
        let (status, reply) = match call_id {
            None => error(
                422,
                "invalid_arguments",
                "the approval request has no `call_id` string".to_owned(),
            ),
            Some(call_id) => {
                let rule = self.behaviours.get(&name).and_then(|b| {
                    b.approvals
                        .iter()
                        .find(|rule| when_matches(rule.when.as_ref(), &arguments))
                });
                match rule {
                    Some(rule) if !rule.approved => (
                        200,
                        json!({"approved": false, "reason": rule.reason.as_deref().unwrap_or(DEFAULT_REFUSAL)}),
                    ),
                    _ => {
                        let asked = state.asked.entry(call_id.to_owned()).or_insert(0);
                        *asked += 1;
                        let mut ids = IdGen::from_key(&format!("{key}:approval:{call_id}:{asked}"));
                        let token = format!("apr_{}", ids.hex(24));
                        state.approvals.insert(token.clone(), call_id.to_owned());
                        (200, json!({"approved": true, "approval": token}))
                    }
                }
            }
        };
        BackendReply {
            status,
            body: reply,
            effect: false,
            kind: ToolRequestKind::Approval,
            name,
            delay_ms: 0,
            headers: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend under test, with its state; every call goes to one tool.
    struct Bench {
        backend: ToolBackend,
        state: BackendState,
        tool: &'static str,
    }

    impl Bench {
        /// The backend of a scenario whose task offers `tool`, scripted by `rules` (its
        /// lines under `tools.<tool>`).
        fn scripted(tool: &'static str, rules: &[&str]) -> Self {
            let rules: String = rules.iter().map(|r| format!("    {r}\n")).collect();
            let yaml = format!(
                r#"
format: 1
id: demo/{tool}
summary: One scripted tool.
level: must
task: {{input: "Hi", tools: [{tool}]}}
tools:
  {tool}:
{rules}script:
  - output: [{{message: "Hello."}}]
expect: {{outcome: completed}}
"#
            );
            let scenario = crate::scenario::parse(std::path::Path::new("tool.yaml"), &yaml)
                .unwrap_or_else(|err| panic!("{err}"));
            Self::of(&scenario, tool)
        }

        fn of(scenario: &Scenario, tool: &'static str) -> Self {
            Self {
                backend: ToolBackend::new(scenario),
                state: BackendState::default(),
                tool,
            }
        }

        /// Calls the tool under `call_id` with `arguments`.
        fn call(&mut self, call_id: &str, arguments: Value) -> BackendReply {
            self.call_with(&json!({"call_id": call_id, "arguments": arguments}))
        }

        /// Calls the tool with a whole request body.
        fn call_with(&mut self, body: &Value) -> BackendReply {
            self.backend.call(&mut self.state, self.tool, body)
        }
    }

    #[test]
    fn a_slow_call_is_executed_at_once_and_only_its_first_attempts_are_held() {
        let mut bench = Bench::scripted(
            "get_weather",
            &["slow: [{when: {city: Oslo}, delay_ms: 800, attempts: 1}]"],
        );
        let held = bench.call("call_1", json!({"city": "Oslo"}));
        assert_eq!((held.status, held.effect, held.delay_ms), (200, true, 800));
        let retry = bench.call("call_1", json!({"city": "Oslo"}));
        assert_eq!(
            (retry.status, retry.effect, retry.delay_ms),
            (200, false, 0)
        );
        assert_eq!(retry.body, held.body);
        assert_eq!(bench.call("call_2", json!({"city": "Ghent"})).delay_ms, 0);
        assert_eq!(bench.call("call_3", json!({"city": "Oslo"})).delay_ms, 800);
    }

    #[test]
    fn a_rate_limit_answers_429_with_its_wait_and_an_unavailable_rule_without_attempts_never_ends()
    {
        let mut bench = Bench::scripted(
            "get_stock",
            &[
                "rate_limited: [{when: {sku: A7}, attempts: 1, retry_after: 2, retry_after_ms: 150}]",
                "unavailable: [{when: {sku: B2}}]",
            ],
        );
        let limited = bench.call("call_1", json!({"sku": "A7"}));
        assert_eq!(limited.status, 429);
        assert_eq!(
            limited.headers,
            vec![
                ("retry-after", "2".to_owned()),
                ("retry-after-ms", "150".to_owned())
            ]
        );
        assert!(!limited.effect);
        let served = bench.call("call_1", json!({"sku": "A7"}));
        assert_eq!((served.status, served.effect), (200, true));
        assert!(served.headers.is_empty());
        for _ in 0..20 {
            assert_eq!(bench.call("call_2", json!({"sku": "B2"})).status, 503);
        }
    }

    #[test]
    fn a_numbered_tool_gives_each_execution_its_own_number_and_a_retry_its_first() {
        let mut bench = Bench::scripted(
            "get_weather",
            &["default: {forecast: sun}", "numbered: booking"],
        );
        let mut booking = |call_id: &str| bench.call(call_id, json!({"city": "Oslo"})).body;
        assert_eq!(
            booking("call_1"),
            json!({"result": {"forecast": "sun", "booking": 1}})
        );
        assert_eq!(
            booking("call_2"),
            json!({"result": {"forecast": "sun", "booking": 2}})
        );
        assert_eq!(
            booking("call_1"),
            json!({"result": {"forecast": "sun", "booking": 1}})
        );
    }

    #[test]
    fn a_denial_with_after_starts_once_that_many_calls_ran() {
        let scenario = crate::scenario::catalogue()
            .expect("the catalogue loads")
            .into_iter()
            .find(|c| c.scenario.id == "authz/08-permission-revoked")
            .expect("in the catalogue")
            .scenario;
        let mut bench = Bench::of(&scenario, "get_invoice");
        let mut status = |call_id: &str| {
            let body = json!({"call_id": call_id, "arguments": {"invoice_id": "INV-3107"}, "principal": "user-1"});
            bench.call_with(&body).status
        };
        assert_eq!(status("call_1"), 200);
        assert_eq!(status("call_2"), 403);
    }

    /// A backend whose task offers one custom tool, `stock_of`, with a regex grammar.
    fn custom_bench() -> Bench {
        let yaml = r#"
format: 1
id: demo/custom
summary: One custom tool.
level: must
task:
  input: "Hi"
  tools:
    - {type: custom, name: stock_of, format: {type: grammar, syntax: regex, definition: "[A-Z][0-9]+"}}
tools:
  stock_of:
    results: [{when: "A7", result: {available_units: 8}}]
script:
  - output: [{message: "Hello."}]
expect: {outcome: completed}
"#;
        let scenario = crate::scenario::parse(std::path::Path::new("tool.yaml"), yaml)
            .unwrap_or_else(|err| panic!("{err}"));
        Bench::of(&scenario, "stock_of")
    }

    #[test]
    fn a_custom_call_runs_with_its_input_text_matched_whole() {
        let mut bench = custom_bench();
        let ran = bench.call_with(&json!({"call_id": "call_1", "input": "A7"}));
        assert_eq!((ran.status, ran.effect), (200, true));
        assert_eq!(ran.body, json!({"result": {"available_units": 8}}));
        let echoed = bench.call_with(&json!({"call_id": "call_2", "input": "B2"}));
        assert_eq!(
            echoed.body,
            json!({"result": {"tool": "stock_of", "input": "B2", "ok": true}})
        );
    }

    #[test]
    fn a_custom_call_breaking_its_grammar_or_without_input_is_refused_with_422() {
        let mut bench = custom_bench();
        for body in [
            json!({"call_id": "call_1", "input": "A7 and more"}),
            json!({"call_id": "call_1", "input": "a7"}),
            json!({"call_id": "call_1", "arguments": {"sku": "A7"}}),
        ] {
            let refused = bench.call_with(&body);
            assert_eq!((refused.status, refused.effect), (422, false), "{body}");
            assert_eq!(refused.body["error"]["code"], "invalid_input", "{body}");
        }
    }

    /// A backend whose task offers the three tools known by their type; `shell` needs an
    /// approval and refuses `rm`, a patch under `.github/` is denied.
    fn typed_bench(tool: &'static str) -> Bench {
        let yaml = r#"
format: 1
id: demo/typed
summary: The shell, local shell and patch tools.
level: must
task:
  input: "Hi"
  tools: [{type: shell}, {type: local_shell}, {type: apply_patch}]
  approval_required: [shell]
tools:
  shell:
    approvals: [{when: {commands: [rm -rf build]}, approved: false, reason: No deleting.}]
  apply_patch:
    deny: [{when: {path: .github/ci.yml}, message: Not under .github.}]
script:
  - output: [{message: "Hello."}]
expect: {outcome: completed}
"#;
        let scenario = crate::scenario::parse(std::path::Path::new("tool.yaml"), yaml)
            .unwrap_or_else(|err| panic!("{err}"));
        Bench::of(&scenario, tool)
    }

    #[test]
    fn the_tools_known_by_their_type_run_their_action_or_operation_with_results_of_their_kind() {
        let mut local = typed_bench("local_shell");
        let ran = local.call_with(&json!({"call_id": "call_1", "action": {"type": "exec", "command": ["git", "status"], "env": {}}}));
        assert_eq!((ran.status, ran.effect), (200, true));
        assert_eq!(
            ran.body,
            json!({"result": {"stdout": "ran: git status\n", "stderr": "", "exit_code": 0}})
        );
        let mut patch = typed_bench("apply_patch");
        let ran = patch.call_with(&json!({"call_id": "call_2", "operation": {"type": "create_file", "path": "a.md", "diff": "+a"}}));
        assert_eq!(
            ran.body,
            json!({"result": {"status": "completed", "output": "create file: a.md"}})
        );
        let denied = patch.call_with(&json!({"call_id": "call_3", "operation": {"type": "delete_file", "path": ".github/ci.yml"}}));
        assert_eq!((denied.status, denied.effect), (403, false));
        // Without its `action` (or with the function's `arguments`), a call is refused.
        for body in [
            json!({"call_id": "call_4"}),
            json!({"call_id": "call_4", "arguments": {"commands": ["ls"]}}),
            json!({"call_id": "call_4", "action": "ls"}),
        ] {
            let refused = local.call_with(&body);
            assert_eq!((refused.status, refused.effect), (422, false), "{body}");
            assert_eq!(refused.body["error"]["code"], "invalid_input", "{body}");
        }
    }

    #[test]
    fn a_shell_call_is_approved_on_its_action_and_runs_only_with_its_grant() {
        let mut shell = typed_bench("shell");
        let ask = |shell: &mut Bench, call_id: &str, commands: Value| {
            shell.backend.approval(
                &mut shell.state,
                "key",
                &json!({"call_id": call_id, "name": "shell", "action": {"commands": commands}}),
            )
        };
        let refused = ask(&mut shell, "call_1", json!(["rm -rf build"]));
        assert_eq!(
            refused.body,
            json!({"approved": false, "reason": "No deleting."})
        );
        let without = shell
            .call_with(&json!({"call_id": "call_1", "action": {"commands": ["rm -rf build"]}}));
        assert_eq!((without.status, without.effect), (409, false));
        let granted = ask(&mut shell, "call_2", json!(["ls", "pwd"]));
        let token = granted.body["approval"]
            .as_str()
            .expect("granted")
            .to_owned();
        let ran = shell.call_with(
            &json!({"call_id": "call_2", "action": {"commands": ["ls", "pwd"]}, "approval": token}),
        );
        assert_eq!((ran.status, ran.effect), (200, true));
        let exited = json!({"type": "exit", "exit_code": 0});
        assert_eq!(
            ran.body,
            json!({"result": [
                {"stdout": "ran: ls\n", "stderr": "", "outcome": exited},
                {"stdout": "ran: pwd\n", "stderr": "", "outcome": exited},
            ]})
        );
    }

    #[test]
    fn a_typed_call_is_judged_by_its_tools_kind_and_allowed_callers() {
        let yaml = r#"
format: 1
id: demo/callers
summary: A shell tool for programs only.
level: must
task:
  input: "Hi"
  tools: [{type: shell, allowed_callers: [programmatic]}, {type: programmatic_tool_calling}]
script:
  - output: [{message: "Hello."}]
expect: {outcome: completed}
"#;
        let scenario = crate::scenario::parse(std::path::Path::new("tool.yaml"), yaml)
            .unwrap_or_else(|err| panic!("{err}"));
        let registry = Registry::new(&scenario);
        let program = json!({"type": "program", "caller_id": "call_p"});
        assert_eq!(
            registry.judge_typed_call(SHELL, "shell", Some(&program)),
            CallValidity::Valid
        );
        assert!(matches!(
            registry.judge_typed_call(SHELL, "shell", None),
            CallValidity::CallerNotAllowed(why) if why.starts_with("a direct call from the model")
        ));
        assert_eq!(
            registry.judge_typed_call(APPLY_PATCH, "apply_patch", Some(&program)),
            CallValidity::UnknownTool
        );
    }
    fn catalogue_bench(id: &str, tool: &'static str) -> Bench {
        Bench::of(&crate::scenario::catalogue_scenario(id), tool)
    }

    #[test]
    fn a_namespaced_tool_runs_under_its_namespace_only_and_is_named_with_it() {
        let mut bench = catalogue_bench("tools/02-wrong-namespace", "lookup_customer");
        let arguments = json!({"email": "ada@example.com"});
        let ran = bench
            .call_with(&json!({"call_id": "call_1", "namespace": "crm", "arguments": arguments}));
        assert_eq!(
            (ran.status, ran.name.as_str()),
            (200, "crm.lookup_customer")
        );
        assert_eq!(ran.body["result"]["plan"], "team");
        for (call_id, namespace) in [("call_2", json!(null)), ("call_3", json!("billing"))] {
            let mut body = json!({"call_id": call_id, "arguments": arguments});
            if !namespace.is_null() {
                body["namespace"] = namespace;
            }
            let refused = bench.call_with(&body);
            assert_eq!(refused.status, 404, "{body}");
            assert_eq!(refused.body["error"]["code"], "unknown_tool");
        }
        let registry = Registry::new(&crate::scenario::catalogue_scenario(
            "tools/02-wrong-namespace",
        ));
        let valid =
            registry.judge_call_in(Some("crm"), "lookup_customer", r#"{"email":"a"}"#, None);
        assert_eq!(valid, CallValidity::Valid);
        for namespace in [None, Some("billing")] {
            let judged = registry.judge_call_in(namespace, "lookup_customer", "{}", None);
            assert_eq!(judged, CallValidity::UnknownTool, "{namespace:?}");
        }
        assert_eq!(
            registry.judge_call_in(None, "crm.lookup_customer", "{}", None),
            CallValidity::UnknownTool
        );
    }

    #[test]
    fn a_computer_call_returns_a_screenshot_and_a_guarded_one_needs_its_approval() {
        let mut plain = catalogue_bench("computer/01-screenshot-answered", "computer");
        let action = json!({"type": "click", "button": "left", "x": 412, "y": 88});
        let ran = plain.call_with(&json!({"call_id": "call_1", "action": action}));
        assert_eq!(ran.status, 200);
        assert_eq!(ran.body, json!({"result": {"image_url": SCREENSHOT}}));
        let bare = plain.call_with(&json!({"call_id": "call_2", "arguments": {}}));
        assert_eq!(bare.status, 422, "{}", bare.body);
        let mut guarded = catalogue_bench("computer/03-safety-check-approved", "computer");
        let action = json!({"action": {"type": "click", "button": "left", "x": 140, "y": 320}});
        let mut body = json!({"call_id": "call_1", "principal": "user-1"});
        body["action"] = action["action"].clone();
        let unapproved = guarded.call_with(&body);
        assert_eq!(unapproved.status, 409, "{}", unapproved.body);
        let mut asked = body.clone();
        asked["name"] = json!("computer");
        let approval = guarded.backend.approval(&mut guarded.state, "key", &asked);
        assert_eq!(approval.body["approved"], true);
        body["approval"] = approval.body["approval"].clone();
        assert_eq!(guarded.call_with(&body).status, 200);
    }
}
