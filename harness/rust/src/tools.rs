//! The tool side: validation against the task's registry, approvals, and execution on
//! the fixture tool backend (CONTRACT.md section 3).
//!
//! Every `Err(String)` and every returned `String` here is a ready-to-send
//! `function_call_output` payload, so a failure never stops the loop.

use std::collections::HashMap;
use std::fmt::Display;
use std::time::Duration;

use jsonschema::Validator;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::Task;
use crate::client::describe;
use crate::response::FunctionCall;

/// Retries of a call the backend answered with 5xx; safe because it de-duplicates by call_id.
const CALL_RETRIES: u32 = 2;
const RETRY_DELAY: Duration = Duration::from_millis(50);

pub(crate) fn error_output(message: impl Display) -> String {
    json!({"error": message.to_string()}).to_string()
}

/// The task's function tools with their compiled parameter schemas.
pub(crate) struct Registry {
    /// `None`: the tool declares no schema, so any object is accepted.
    schemas: HashMap<String, Option<Validator>>,
}

impl Registry {
    pub(crate) fn new(tools: &[Value]) -> Result<Registry, String> {
        let mut schemas = HashMap::new();
        for tool in tools.iter().filter(|tool| tool["type"] == "function") {
            let Some(name) = tool["name"].as_str() else {
                continue;
            };
            let validator =
                match &tool["parameters"] {
                    Value::Null => None,
                    schema => Some(jsonschema::validator_for(schema).map_err(|e| {
                        format!("tool {name} has an invalid parameters schema: {e}")
                    })?),
                };
            schemas.insert(name.to_string(), validator);
        }
        Ok(Registry { schemas })
    }

    /// Parses and validates a call's arguments before anything is dispatched.
    pub(crate) fn check(&self, name: &str, arguments: &str) -> Result<Value, String> {
        let Some(schema) = self.schemas.get(name) else {
            return Err(error_output(format!("unknown tool: {name}")));
        };
        let args: Value = serde_json::from_str(arguments)
            .map_err(|e| error_output(format!("invalid JSON arguments: {e}")))?;
        if !args.is_object() {
            return Err(error_output(
                "invalid JSON arguments: expected a JSON object",
            ));
        }
        if let Some(validator) = schema {
            if let Err(e) = validator.validate(&args) {
                return Err(error_output(format!(
                    "arguments do not match the schema: {e}"
                )));
            }
        }
        Ok(args)
    }
}

/// Runs calls: validation, then approval when required, then the backend.
pub(crate) struct Tools {
    registry: Registry,
    approval_required: Vec<String>,
    http: reqwest::Client,
    base_url: String,
    principal: String,
}

impl Tools {
    pub(crate) fn new(task: &Task, http: reqwest::Client, base_url: &str) -> Result<Tools, String> {
        Ok(Tools {
            registry: Registry::new(&task.tools)?,
            approval_required: task.approval_required.clone(),
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            principal: task.principal.clone(),
        })
    }

    /// The output to send back for `call`.
    pub(crate) async fn handle(&self, call: &FunctionCall) -> String {
        let args = match self.registry.check(&call.name, &call.arguments) {
            Ok(args) => args,
            Err(rejection) => return rejection,
        };
        let approval = if self.approval_required.contains(&call.name) {
            match self.approve(call, &args).await {
                Ok(approval) => Some(approval),
                Err(denial) => return denial,
            }
        } else {
            None
        };
        self.execute(call, &args, approval.as_deref()).await
    }

    /// Asks for an approval; anything but an explicit grant means the call is not run.
    async fn approve(&self, call: &FunctionCall, args: &Value) -> Result<String, String> {
        let body = json!({
            "call_id": call.call_id,
            "name": call.name,
            "arguments": args,
            "principal": self.principal,
        });
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
            "arguments": args,
            "principal": self.principal,
        });
        if let Some(approval) = approval {
            body["approval"] = json!(approval);
        }
        for attempt in 0..=CALL_RETRIES {
            if attempt > 0 {
                tokio::time::sleep(RETRY_DELAY).await;
            }
            let answer = match self.http.post(&url).json(&body).send().await {
                Ok(answer) => answer,
                Err(e) => {
                    return error_output(format!("tool backend unreachable: {}", describe(&e)));
                }
            };
            let status = answer.status();
            if status.is_server_error() {
                eprintln!(
                    "tool {} ({}): HTTP {} on attempt {}",
                    call.name,
                    call.call_id,
                    status.as_u16(),
                    attempt + 1
                );
                continue;
            }
            let text = answer.text().await.unwrap_or_default();
            return backend_answer(status, &text);
        }
        error_output("tool unavailable")
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

    fn error_of(output: &str) -> String {
        let value: Value = serde_json::from_str(output).unwrap();
        value["error"].as_str().unwrap().to_string()
    }

    #[test]
    fn valid_arguments_are_dispatched_parsed() {
        assert_eq!(
            registry().check("get_stock", r#"{"sku":"A7"}"#),
            Ok(json!({"sku": "A7"}))
        );
        assert_eq!(registry().check("ping", "{}"), Ok(json!({})));
    }

    #[test]
    fn unknown_tools_are_rejected() {
        let rejection = registry().check("delete_all", "{}").unwrap_err();
        assert_eq!(error_of(&rejection), "unknown tool: delete_all");
        // A hosted tool is not a function in the registry.
        let rejection = registry()
            .check("programmatic_tool_calling", "{}")
            .unwrap_err();
        assert!(error_of(&rejection).starts_with("unknown tool: "));
    }

    #[test]
    fn malformed_arguments_are_rejected() {
        for arguments in [r#"{"sku":"A7""#, "", "[]", r#""A7""#] {
            let rejection = registry().check("get_stock", arguments).unwrap_err();
            assert!(
                error_of(&rejection).starts_with("invalid JSON arguments: "),
                "{arguments:?} -> {rejection}"
            );
        }
    }

    #[test]
    fn schema_violations_are_rejected() {
        for arguments in [r#"{"sku":7}"#, "{}", r#"{"sku":"A7","extra":1}"#] {
            let rejection = registry().check("get_stock", arguments).unwrap_err();
            assert!(
                error_of(&rejection).starts_with("arguments do not match the schema: "),
                "{arguments:?} -> {rejection}"
            );
        }
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
}
