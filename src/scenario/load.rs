//! Loading scenario files (YAML or JSON) with `file:line:col` errors, and the semantic
//! checks `loopcheck lint` runs.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{
    Annotation, ComputerCallSpec, FORMAT_VERSION, Outcome, OutputSpec, Scenario, ToolRef,
};
use crate::contract::{Delivery, StateMode};
use crate::scenario::fixtures;
use crate::wire::call_kind::{self, COMPUTER, COMPUTER_TOOL_TYPES, TOOL_SEARCH};

/// A scenario file that could not be loaded, with where and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: u64,
    /// 1-based column, when known.
    pub column: u64,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

impl std::error::Error for ScenarioError {}

/// Reads and parses a scenario file from disk.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    parse(path, &read_text(path)?)
}

/// A file's text, or the error that names it.
pub fn read_text(path: &Path) -> Result<String, ScenarioError> {
    std::fs::read_to_string(path).map_err(|err| ScenarioError {
        path: path.to_owned(),
        line: 0,
        column: 0,
        message: format!("failed to read the file: {err}"),
    })
}

/// Parses scenario text; JSON when the path ends in `.json`, YAML otherwise.
pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let scenario: Scenario = deserialize(path, text)?;
    validate(&scenario).map_err(|(needle, message)| {
        let (line, column) = locate(text, &needle);
        ScenarioError {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    })?;
    Ok(scenario)
}

/// Reads the text of file `path` as a `T`: JSON when the path ends in `.json`, YAML
/// otherwise; an error carries the line and column it is at.
pub fn deserialize<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<T, ScenarioError> {
    if path.extension().is_some_and(|ext| ext == "json") {
        serde_json::from_str(text).map_err(|err| ScenarioError {
            path: path.to_owned(),
            line: err.line() as u64,
            column: err.column() as u64,
            message: err.to_string(),
        })
    } else {
        serde_saphyr::from_str(text).map_err(|err| {
            let (line, column) = err
                .location()
                .map_or((0, 0), |loc| (loc.line(), loc.column()));
            ScenarioError {
                path: path.to_owned(),
                line,
                column,
                message: strip_location(&err.without_snippet().to_string()),
            }
        })
    }
}

/// serde-saphyr appends " at line L column C"; we print the location up front instead.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// The line and column of the first occurrence of `needle` (1, 1 when absent).
fn locate(text: &str, needle: &str) -> (u64, u64) {
    if needle.is_empty() {
        return (1, 1);
    }
    for (index, line) in text.lines().enumerate() {
        if let Some(col) = line.find(needle) {
            return (index as u64 + 1, col as u64 + 1);
        }
    }
    (1, 1)
}

/// Hosted (server-side) tool types a task may list beside its functions; they are not
/// part of the controller's registry.
pub const HOSTED_TOOLS: &[&str] = &[
    "programmatic_tool_calling",
    "web_search",
    "web_search_preview",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
];

/// The names of a task's tools (`namespace.name` for the tools of a namespace).
pub fn tool_names(scenario: &Scenario) -> Vec<String> {
    scenario
        .task
        .tools
        .iter()
        .flat_map(|tool| match tool {
            ToolRef::Fixture(name) => vec![name.clone()],
            ToolRef::Inline(def) if def["type"] == "namespace" => {
                let namespace = def["name"].as_str();
                def["tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|member| member["name"].as_str())
                    .map(|name| call_kind::qualified_name(namespace, name))
                    .collect()
            }
            ToolRef::Inline(def) => call_kind::tool_name(def)
                .map(str::to_owned)
                .into_iter()
                .collect(),
        })
        .collect()
}

/// An inline `custom` tool: a `name`, and a `format` of `text` or a `grammar` whose
/// `syntax` is `lark` or `regex` (a regex that compiles). Returns its name; an error is
/// (text to locate, message).
fn check_custom_tool(def: &Value) -> Result<String, (String, String)> {
    let err = |needle: &str, message: String| Err((needle.to_owned(), message));
    let Some(name) = def.get("name").and_then(Value::as_str) else {
        return err("custom", "inline custom tool without a `name`".to_owned());
    };
    let Some(format) = def.get("format") else {
        return Ok(name.to_owned());
    };
    match (format["type"].as_str(), format["syntax"].as_str()) {
        (Some("text"), _) | (Some("grammar"), Some("lark")) => {}
        (Some("grammar"), Some("regex")) => {
            let pattern = format["definition"].as_str().unwrap_or_default();
            if regex::Regex::new(pattern).is_err() {
                return err(
                    name,
                    format!("custom tool '{name}': its regex grammar {pattern:?} does not compile"),
                );
            }
        }
        _ => {
            return err(
                name,
                format!(
                    "custom tool '{name}': expected `format` of `{{type: text}}` or `{{type: grammar, syntax: lark|regex, definition}}`"
                ),
            );
        }
    }
    Ok(name.to_owned())
}

/// MCP and hosted items: each `mcp` tool has a `server_label`, each approval request
/// names the label of one of them, and each hosted item is of a known kind. An error is
/// (text to locate, message).
fn check_mcp_and_hosted(scenario: &Scenario) -> Result<(), (String, String)> {
    let err = |needle: &str, message: String| Err((needle.to_owned(), message));
    let mut labels = BTreeSet::new();
    for tool in &scenario.task.tools {
        if let ToolRef::Inline(def) = tool
            && def["type"] == "mcp"
        {
            let Some(label) = def.get("server_label").and_then(Value::as_str) else {
                return err("mcp", "inline mcp tool without a `server_label`".to_owned());
            };
            labels.insert(label);
        }
    }
    for (number, turn) in scenario.script.iter().enumerate() {
        for item in &turn.output {
            match item {
                OutputSpec::McpApproval(request)
                    if !labels.contains(request.server_label.as_str()) =>
                {
                    return err(
                        "mcp_approval",
                        format!(
                            "turn {}: an mcp_approval for server '{}', which no `mcp` tool of the task names: expected one of [{}]",
                            number + 1,
                            request.server_label,
                            labels.iter().copied().collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
                OutputSpec::Hosted(fields) => {
                    let kind = fields.get("type").and_then(Value::as_str);
                    if kind.and_then(crate::wire::hosted::of_item).is_none() {
                        let kinds: Vec<&str> = crate::wire::hosted::HOSTED_KINDS
                            .iter()
                            .map(|kind| kind.item)
                            .collect();
                        return err(
                            "hosted",
                            format!(
                                "turn {}: a hosted item of type {}: expected one of {}",
                                number + 1,
                                kind.map_or("(none)".to_owned(), |k| format!("'{k}'")),
                                kinds.join(", ")
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// An inline function tool: `type: function`, a `name`, and `parameters` that are a
/// valid JSON Schema when given. Returns its name.
fn check_function_tool(def: &Value) -> Result<String, (String, String)> {
    let err = |needle: &str, message: String| Err((needle.to_owned(), message));
    let Some(name) = def.get("name").and_then(Value::as_str) else {
        return err("tools", "inline tool without a `name`: expected a function definition with `type`, `name` and `parameters`".to_owned());
    };
    if def.get("type").and_then(Value::as_str) != Some("function") {
        return err(
            name,
            format!("inline tool '{name}': expected `type: function`"),
        );
    }
    if let Some(params) = def.get("parameters")
        && jsonschema::validator_for(params).is_err()
    {
        return err(
            name,
            format!("inline tool '{name}': `parameters` is not a valid JSON Schema"),
        );
    }
    Ok(name.to_owned())
}

/// An inline `namespace` tool (the SDK's `NamespaceTool`): a `name`, a `description`, and
/// `tools`, a non-empty list of function and custom tools. Returns its tools' names as
/// `namespace.name`, the names `tools:` and `approval_required` give them.
fn check_namespace_tool(def: &Value) -> Result<Vec<String>, (String, String)> {
    let err = |needle: &str, message: String| Err((needle.to_owned(), message));
    let Some(namespace) = def.get("name").and_then(Value::as_str) else {
        return err("namespace", "namespace tool without a `name`".to_owned());
    };
    if def.get("description").and_then(Value::as_str).is_none() {
        return err(
            namespace,
            format!("namespace '{namespace}': expected a `description`, which the SDK requires"),
        );
    }
    let members = def.get("tools").and_then(Value::as_array);
    let Some(members) = members.filter(|members| !members.is_empty()) else {
        return err(
            namespace,
            format!(
                "namespace '{namespace}': expected `tools`, a non-empty list of function and custom tools"
            ),
        );
    };
    members
        .iter()
        .map(|member| {
            let name = if member["type"] == "custom" {
                check_custom_tool(member)?
            } else {
                check_function_tool(member)?
            };
            Ok(call_kind::qualified_name(Some(namespace), &name))
        })
        .collect()
}

/// An inline computer tool: `{type: computer}`, or `{type: computer_use_preview}` with
/// the `display_width`, `display_height` and `environment` the SDK requires of it.
fn check_computer_tool(def: &Value) -> Result<(), (String, String)> {
    if def["type"] != "computer_use_preview" {
        return Ok(());
    }
    let sized = ["display_width", "display_height"]
        .iter()
        .all(|key| def.get(key).and_then(Value::as_u64).is_some());
    let environment = def["environment"]
        .as_str()
        .is_some_and(|env| ["windows", "mac", "linux", "ubuntu", "browser"].contains(&env));
    if sized && environment {
        return Ok(());
    }
    Err((
        "computer_use_preview".to_owned(),
        "computer_use_preview tool: expected whole `display_width` and `display_height` and an `environment` of windows, mac, linux, ubuntu or browser".to_owned(),
    ))
}

/// The action types of the SDK's computer `Action` union.
const COMPUTER_ACTIONS: [&str; 9] = [
    "click",
    "double_click",
    "drag",
    "keypress",
    "move",
    "screenshot",
    "scroll",
    "type",
    "wait",
];

/// A scripted computer call: one `action` or a batch of `actions`, never both, each an
/// object whose `type` is one of the SDK's actions.
fn check_computer_call(call: &ComputerCallSpec) -> Result<(), (String, String)> {
    let actions: Vec<&Value> = match (&call.action, &call.actions) {
        (Some(action), None) => vec![action],
        (None, Some(actions)) if !actions.is_empty() => actions.iter().collect(),
        _ => {
            return Err((
                "computer_call".to_owned(),
                "a computer_call has one `action` or a non-empty list of `actions`, not both"
                    .to_owned(),
            ));
        }
    };
    for action in actions {
        let kind = action["type"].as_str().unwrap_or_default();
        if !COMPUTER_ACTIONS.contains(&kind) {
            return Err((
                "computer_call".to_owned(),
                format!(
                    "a computer action of type {kind:?}: expected one of {}",
                    COMPUTER_ACTIONS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Semantic checks beyond the schema. An error is (text to locate, message).
fn validate(scenario: &Scenario) -> Result<(), (String, String)> {
    let err = |needle: &str, message: String| Err((needle.to_owned(), message));
    if !(1..=FORMAT_VERSION).contains(&scenario.format) {
        return err(
            "format",
            format!(
                "unsupported format version {}: expected 1 to {FORMAT_VERSION}",
                scenario.format
            ),
        );
    }
    // A scripted compaction item is server-side compaction: the task must ask for it.
    let compacts = scenario.script.iter().any(|turn| {
        turn.output
            .iter()
            .any(|item| matches!(item, OutputSpec::Compaction(_)))
    });
    if compacts && scenario.task.context_management.is_none() {
        return err(
            "compaction",
            "a `compaction` item without `task.context_management`: the server compacts only when the request asks for it".to_owned(),
        );
    }
    if let Some(format) = &scenario.task.text_format {
        let compiles = jsonschema::validator_for(&format["schema"]).is_ok();
        if format["type"] != "json_schema" || !format["name"].is_string() || !compiles {
            return err(
                "text_format",
                "`text_format` must be a json_schema config: `type: json_schema`, a `name` and a `schema` that is a valid JSON Schema".to_owned(),
            );
        }
    }
    let recorded_features =
        scenario.recorded.is_some() || scenario.script.iter().any(|turn| turn.recorded.is_some());
    if recorded_features && scenario.format < 2 {
        return err("recorded", "`recorded` needs `format: 2`".to_owned());
    }
    if let Some(index) = scenario
        .script
        .iter()
        .position(|turn| turn.recorded.is_some() && !turn.output.is_empty())
    {
        return err(
            "recorded",
            format!(
                "turn {} has both `recorded` and `output`: a recorded turn is served as recorded",
                index + 1
            ),
        );
    }
    let id_ok = scenario.id.contains('/')
        && scenario
            .id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_/.".contains(&b));
    if !id_ok {
        return err(
            "id",
            format!(
                "invalid id '{}': expected 'area/name' in lowercase letters, digits, '-', '_' and '.'",
                scenario.id
            ),
        );
    }
    if scenario.states.is_empty() {
        return err(
            "states",
            "empty `states`: expected at least one state mode".to_owned(),
        );
    }
    if scenario.deliveries.as_ref().is_some_and(Vec::is_empty) {
        return err(
            "deliveries",
            "empty `deliveries`: expected one or more of `json`, `stream` and `websocket`"
                .to_owned(),
        );
    }
    if !(scenario.task.input.is_string() || scenario.task.input.is_array()) {
        return err(
            "input",
            "invalid `task.input`: expected a string or an array of input items".to_owned(),
        );
    }
    if scenario.task.max_rounds == 0 {
        return err(
            "max_rounds",
            "invalid `task.max_rounds`: expected at least 1".to_owned(),
        );
    }
    // A budget of 0 would fail every controller before it starts: surely a typo.
    let budgets = [
        ("deadline_ms", scenario.task.deadline_ms),
        (
            "max_tool_calls",
            scenario.task.max_tool_calls.map(u64::from),
        ),
        ("tool_timeout_ms", scenario.task.tool_timeout_ms),
    ];
    if let Some((field, _)) = budgets.iter().find(|(_, value)| *value == Some(0)) {
        return err(
            field,
            format!("invalid `task.{field}`: expected at least 1 (leave it out for no budget)"),
        );
    }
    for (name, behaviour) in &scenario.tools {
        if let Some(rule) = behaviour
            .slow
            .iter()
            .find(|rule| rule.delay_ms == 0 || rule.attempts == 0)
        {
            let what = if rule.delay_ms == 0 {
                "`delay_ms: 0` holds nothing"
            } else {
                "`attempts: 0` holds no attempt"
            };
            return err(
                "slow",
                format!("tool '{name}': a `slow` rule with {what}: expected at least 1"),
            );
        }
        // `attempts: 0` refuses nothing; leaving it out refuses every attempt.
        let refusals = [
            (
                "unavailable",
                behaviour
                    .unavailable
                    .iter()
                    .map(|r| r.attempts)
                    .collect::<Vec<_>>(),
            ),
            (
                "rate_limited",
                behaviour.rate_limited.iter().map(|r| r.attempts).collect(),
            ),
        ];
        if let Some((field, _)) = refusals
            .iter()
            .find(|(_, attempts)| attempts.contains(&Some(0)))
        {
            return err(
                field,
                format!(
                    "tool '{name}': `{field}`: a rule with `attempts: 0` refuses no attempt: expected at least 1, or no `attempts` for every attempt"
                ),
            );
        }
    }
    check_mcp_and_hosted(scenario)?;
    let mut names = BTreeSet::new();
    for tool in &scenario.task.tools {
        match tool {
            ToolRef::Fixture(name) => {
                if fixtures::definition(name).is_none() {
                    return err(
                        name,
                        format!(
                            "unknown fixture tool '{name}': expected one of {}, or an inline function definition",
                            fixtures::names().join(", ")
                        ),
                    );
                }
                names.insert(name.clone());
            }
            // A client-executed tool known by its type (`shell`, `local_shell`,
            // `apply_patch`): the name `approval_required` and `tools:` give it. The
            // computer and tool search tools are checked by their own arms below.
            ToolRef::Inline(def)
                if def.get("name").is_none()
                    && def
                        .get("type")
                        .and_then(Value::as_str)
                        .and_then(call_kind::of_tool)
                        .is_some_and(|kind| kind != COMPUTER && kind != TOOL_SEARCH) =>
            {
                if let Some(name) = call_kind::tool_name(def) {
                    names.insert(name.to_owned());
                }
            }
            ToolRef::Inline(def) if def.get("type").and_then(Value::as_str) == Some("custom") => {
                let name = check_custom_tool(def)?;
                names.insert(name);
            }
            ToolRef::Inline(def)
                if def.get("type").and_then(Value::as_str) == Some("tool_search") =>
            {
                if !matches!(def["execution"].as_str(), None | Some("client" | "server")) {
                    return err(
                        "tool_search",
                        "tool_search tool: `execution` is `client` or `server`".to_owned(),
                    );
                }
                names.insert(TOOL_SEARCH.tool_type.to_owned());
            }
            ToolRef::Inline(def)
                if def.get("type").and_then(Value::as_str) == Some("namespace") =>
            {
                names.extend(check_namespace_tool(def)?);
            }
            ToolRef::Inline(def)
                if def
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|kind| COMPUTER_TOOL_TYPES.contains(&kind)) =>
            {
                check_computer_tool(def)?;
                names.insert(COMPUTER.tool_type.to_owned());
            }
            ToolRef::Inline(def) if def.get("type").and_then(Value::as_str) != Some("function") => {
                let kind = def.get("type").and_then(Value::as_str).unwrap_or_default();
                if !HOSTED_TOOLS.contains(&kind) {
                    return err(
                        "tools",
                        format!(
                            "inline tool of type '{kind}': expected `type: function` or a hosted tool ({})",
                            HOSTED_TOOLS.join(", ")
                        ),
                    );
                }
            }
            ToolRef::Inline(def) => {
                let name = check_function_tool(def)?;
                names.insert(name);
            }
        }
    }
    for name in &scenario.task.approval_required {
        if !names.contains(name) {
            return err(
                name,
                format!("`approval_required` names '{name}', which is not one of the task's tools"),
            );
        }
    }
    // The approver decides on the MCP tools the script asks approval for, by name.
    let mcp_tools: BTreeSet<&str> = scenario
        .script
        .iter()
        .flat_map(|turn| &turn.output)
        .filter_map(|item| match item {
            OutputSpec::McpApproval(request) => Some(request.name.as_str()),
            _ => None,
        })
        .collect();
    for name in scenario.tools.keys() {
        if !names.contains(name) && !mcp_tools.contains(name.as_str()) {
            return err(
                name,
                format!("behaviour given for tool '{name}', which is not one of the task's tools"),
            );
        }
    }
    if scenario.script.is_empty() {
        return err(
            "script",
            "empty `script`: expected at least one model turn".to_owned(),
        );
    }
    // The API runs no background response over its WebSocket mode.
    let listed = scenario
        .deliveries
        .as_ref()
        .is_some_and(|deliveries| deliveries.contains(&Delivery::WebSocket));
    // A case runs over the socket only when its file says so where every delivery is
    // chosen: `task.websocket` alone is what a run over the socket is given.
    if scenario.task.websocket && !listed {
        return err("websocket", "`task.websocket` is set by the `websocket` delivery: list `deliveries: [websocket]` instead".to_owned());
    }
    if !listed && scenario.script.iter().any(|turn| turn.close_connection) {
        return err(
            "close_connection",
            "`close_connection` closes a WebSocket connection: list `websocket` in `deliveries`"
                .to_owned(),
        );
    }
    if scenario.task.background && listed {
        return err("deliveries", "a `background` task cannot run over `websocket`: the API's WebSocket mode runs no background response; drop `websocket` from `deliveries`".to_owned());
    }
    if scenario.task.background && scenario.states.contains(&StateMode::Stateless) {
        return err("background", "a `background` task cannot run in the `stateless` state mode: background responses must be stored; list the other `states`".to_owned());
    }
    // An annotation points into its message's text (indices count characters, as the
    // API counts them); one past the end cites nothing a controller could show.
    for item in scenario.script.iter().flat_map(|turn| &turn.output) {
        let OutputSpec::Message(message) = item else {
            continue;
        };
        let length = message.text().chars().count();
        for annotation in message.annotations() {
            let (start, end) = match annotation {
                Annotation::UrlCitation {
                    start_index,
                    end_index,
                    ..
                } => (*start_index, *end_index),
                Annotation::FileCitation { index, .. } => (*index, *index),
            };
            if start > end || end as usize > length {
                return err(
                    "annotations:",
                    format!(
                        "an annotation spans {start}..{end} of a message whose text has {length} characters: expected indices within the text, the start not after the end"
                    ),
                );
            }
        }
    }
    for item in scenario.script.iter().flat_map(|turn| &turn.output) {
        match item {
            OutputSpec::ComputerCall(call) => check_computer_call(call)?,
            OutputSpec::ToolSearchCall(search)
                if !matches!(search.execution(), "client" | "server")
                    || !search.arguments.is_object() =>
            {
                return err(
                    "tool_search_call",
                    "a tool_search_call has `arguments`, an object, and an `execution` of `client` or `server`".to_owned(),
                );
            }
            OutputSpec::ToolSearchOutput(output) => {
                if let Some(tool) = output
                    .tools
                    .iter()
                    .find(|tool| tool["name"].as_str().is_none())
                {
                    return err(
                        "tool_search_output",
                        format!("a tool_search_output loads {tool}, which has no `name`"),
                    );
                }
            }
            _ => {}
        }
    }
    let mut programs = BTreeSet::new();
    for item in scenario.script.iter().flat_map(|turn| &turn.output) {
        let (label, what) = match item {
            OutputSpec::Program(program) => {
                programs.insert(program.label.clone());
                continue;
            }
            OutputSpec::Call(call) => match &call.caller {
                Some(label) => (label, "a call's `caller`"),
                None => continue,
            },
            OutputSpec::ProgramOutput(output) => (&output.program, "a `program_output`"),
            _ => continue,
        };
        if !programs.contains(label) {
            return err(
                label,
                format!("{what} names program '{label}', which no earlier `program` item defines"),
            );
        }
    }
    let last = scenario.script.len() - 1;
    for (index, turn) in scenario.script.iter().enumerate() {
        if turn.endless && index != last {
            return err(
                "endless",
                format!(
                    "turn {} is `endless` but not the last turn: only the last turn can repeat",
                    index + 1
                ),
            );
        }
        // Endless calls exhaust the budget; an endless empty turn is a model that keeps
        // answering with nothing. An endless message would make asking again harmless.
        let has = |kind: fn(&OutputSpec) -> bool| turn.output.iter().any(kind);
        if turn.endless
            && !has(|item| matches!(item, OutputSpec::Call(_)))
            && has(|item| matches!(item, OutputSpec::Message(_) | OutputSpec::Refusal(_)))
        {
            return err(
                "endless",
                "an `endless` turn must contain a call, or no message at all".to_owned(),
            );
        }
    }
    if scenario.expect.outcome == Outcome::Completed
        && scenario.expect.output_text.is_none()
        && final_message_text(scenario).is_none()
    {
        return err(
            "expect",
            "`expect.outcome: completed` needs `output_text`, or a last turn with a message"
                .to_owned(),
        );
    }
    Ok(())
}

/// The concatenated text of the last turn's messages, if it has any.
pub fn final_message_text(scenario: &Scenario) -> Option<String> {
    let turn = scenario.script.last()?;
    let texts: Vec<&str> = turn
        .output
        .iter()
        .filter_map(|item| match item {
            OutputSpec::Message(message) => Some(message.text()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}
