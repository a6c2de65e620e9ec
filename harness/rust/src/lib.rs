//! The loopcheck reference controller: a correct contract-v1 tool loop over the OpenAI
//! Responses API, in the `previous_response_id` and `stateless` state modes.
//!
//! One round is one `POST /responses`. A completed response with `function_call` items
//! gets exactly one `function_call_output` per call in the next request; a response
//! without calls is the final answer.

mod client;
mod response;
mod task;
mod tools;

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

pub use task::Task;

use client::ResponsesClient;
use task::StateMode;
use tools::Tools;

const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the controller sends its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerEnv {
    /// `OPENAI_BASE_URL`, e.g. `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    pub api_key: String,
    /// `LOOPCHECK_TOOLS_URL`, the fixture tool backend.
    pub tools_url: String,
}

/// The result of a case (CONTRACT.md section 4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    Completed { output_text: String },
    Failed { reason: String, detail: String },
}

impl Outcome {
    pub fn failed(reason: &str, detail: impl Into<String>) -> Outcome {
        Outcome::Failed {
            reason: reason.to_string(),
            detail: detail.into(),
        }
    }
}

/// The JSON line to print last on standard output.
pub fn result_line(outcome: &Outcome) -> String {
    // Serializing plain strings cannot fail; the fallback only keeps this total.
    serde_json::to_string(outcome).unwrap_or_else(|_| {
        r#"{"status":"failed","reason":"api_error","detail":"unprintable outcome"}"#.to_string()
    })
}

/// Runs the case described by the environment loopcheck sets (CONTRACT.md section 1).
pub async fn run_from_env() -> Outcome {
    match load_env() {
        Ok((env, task)) => run(&env, &task).await,
        Err(detail) => Outcome::failed("api_error", detail),
    }
}

fn load_env() -> Result<(ControllerEnv, Task), String> {
    let var = |name: &str| {
        std::env::var(name).map_err(|_| format!("environment variable {name} is not set"))
    };
    let env = ControllerEnv {
        base_url: var("OPENAI_BASE_URL")?,
        api_key: var("OPENAI_API_KEY")?,
        tools_url: var("LOOPCHECK_TOOLS_URL")?,
    };
    let task = Task::load(&var("LOOPCHECK_TASK")?)?;
    Ok((env, task))
}

/// Runs one case to its outcome.
pub async fn run(env: &ControllerEnv, task: &Task) -> Outcome {
    match tool_loop(env, task).await {
        Ok(output_text) => Outcome::Completed { output_text },
        Err(failure) => failure,
    }
}

async fn tool_loop(env: &ControllerEnv, task: &Task) -> Result<String, Outcome> {
    let mode = StateMode::parse(&task.state).ok_or_else(|| {
        Outcome::failed(
            "unsupported",
            format!("state mode {:?} is not supported", task.state),
        )
    })?;
    if task.stream || task.background {
        return Err(Outcome::failed(
            "unsupported",
            "stream and background are not supported",
        ));
    }
    let http = reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .build()
        .map_err(|e| Outcome::failed("api_error", format!("building the HTTP client: {e}")))?;
    let tools = Tools::new(task, http.clone(), &env.tools_url)
        .map_err(|detail| Outcome::failed("api_error", detail))?;
    let client = ResponsesClient::new(http, &env.base_url, &env.api_key);

    // Stateless: everything sent so far. Chained: the outputs of the last round only.
    let mut context = task.input_items();
    let mut pending_outputs = Vec::new();
    let mut previous_response_id: Option<String> = None;

    for round in 1..=task.max_rounds {
        let input = match (mode, round) {
            (StateMode::Chained, 1) => task.input.clone(),
            (StateMode::Chained, _) => Value::Array(std::mem::take(&mut pending_outputs)),
            (StateMode::Stateless, _) => Value::Array(context.clone()),
        };
        let body = request_body(task, mode, input, previous_response_id.as_deref());
        let response = client
            .create(&body)
            .await
            .map_err(|detail| Outcome::failed("api_error", detail))?;
        response::check_status(&response)?;
        let output = response::output_items(&response)?;
        let calls = response::function_calls(output)?;
        eprintln!(
            "round {round}/{}: {} function call(s)",
            task.max_rounds,
            calls.len()
        );
        if calls.is_empty() {
            return response::final_answer(output);
        }
        // The outputs of these calls could never be sent back.
        if round == task.max_rounds {
            return Err(Outcome::failed("max_rounds", "model kept calling tools"));
        }

        let mut outputs = Vec::with_capacity(calls.len());
        for call in &calls {
            let output = tools.handle(call).await;
            eprintln!("  {} {} -> {output}", call.call_id, call.name);
            outputs.push(response::function_call_output(call, output));
        }
        match mode {
            StateMode::Chained => {
                let id = response["id"]
                    .as_str()
                    .ok_or_else(|| Outcome::failed("api_error", "response has no id"))?;
                previous_response_id = Some(id.to_string());
                pending_outputs = outputs;
            }
            StateMode::Stateless => {
                context.extend(response::replay_items(output));
                context.extend(outputs);
            }
        }
    }
    Err(Outcome::failed(
        "max_rounds",
        "max_rounds allows no model request",
    ))
}

/// The body of one `POST /responses`; instructions and tools are resent every time
/// because `previous_response_id` does not carry them.
fn request_body(
    task: &Task,
    mode: StateMode,
    input: Value,
    previous_response_id: Option<&str>,
) -> Value {
    let mut body = json!({
        "model": task.model,
        "input": input,
        "tools": task.tools,
        "parallel_tool_calls": true,
    });
    if let Some(instructions) = &task.instructions {
        body["instructions"] = json!(instructions);
    }
    match mode {
        StateMode::Chained => {
            if let Some(id) = previous_response_id {
                body["previous_response_id"] = json!(id);
            }
        }
        StateMode::Stateless => {
            body["store"] = json!(false);
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str) -> Task {
        serde_json::from_value(json!({
            "contract": 1, "case": "c", "model": "gpt-5",
            "input": [{"role": "user", "content": "hi"}],
            "instructions": "Be brief.",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            "approval_required": [], "state": state, "stream": false, "background": false,
            "max_rounds": 3, "principal": "user-1"
        }))
        .unwrap()
    }

    #[test]
    fn result_lines() {
        assert_eq!(
            result_line(&Outcome::Completed {
                output_text: "A7: 8".into()
            }),
            r#"{"status":"completed","output_text":"A7: 8"}"#
        );
        assert_eq!(
            result_line(&Outcome::failed("max_rounds", "model kept calling tools")),
            r#"{"status":"failed","reason":"max_rounds","detail":"model kept calling tools"}"#
        );
    }

    #[test]
    fn chained_follow_up_request() {
        let task = task("previous_response_id");
        let outputs = json!([{"type": "function_call_output", "call_id": "call_1", "output": "1"}]);
        assert_eq!(
            request_body(&task, StateMode::Chained, outputs.clone(), Some("resp_1")),
            json!({
                "model": "gpt-5", "input": outputs, "tools": task.tools,
                "parallel_tool_calls": true, "instructions": "Be brief.",
                "previous_response_id": "resp_1"
            })
        );
    }

    #[test]
    fn stateless_request() {
        let task = task("stateless");
        let body = request_body(&task, StateMode::Stateless, json!([]), None);
        assert_eq!(body["store"], json!(false));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["instructions"], "Be brief.");
        assert!(body.get("previous_response_id").is_none());
    }

    #[tokio::test]
    async fn unsupported_state_makes_no_request() {
        let env = ControllerEnv {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: "sk-test".into(),
            tools_url: "http://127.0.0.1:9".into(),
        };
        assert_eq!(
            run(&env, &task("conversation")).await,
            Outcome::failed(
                "unsupported",
                "state mode \"conversation\" is not supported"
            )
        );
    }
}
