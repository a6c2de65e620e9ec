//! The task file of contract v1 (docs/contract.md).

use serde::Deserialize;
use serde_json::{Value, json};

/// One case's task. Unknown fields are ignored, so backward-compatible extensions of the
/// contract still load.
#[derive(Debug, Clone, Deserialize)]
pub struct Task {
    #[serde(default)]
    pub contract: u32,
    #[serde(default)]
    pub case: String,
    pub model: String,
    /// The first request's `input`: a string or an array of input items.
    pub input: Value,
    #[serde(default)]
    pub instructions: Option<String>,
    /// Sent verbatim on every request; also the whole tool registry.
    #[serde(default)]
    pub tools: Vec<Value>,
    #[serde(default)]
    pub approval_required: Vec<String>,
    /// `previous_response_id`, `stateless` or `conversation`.
    pub state: String,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub background: bool,
    /// Every create goes over one WebSocket connection (the API's WebSocket mode); always
    /// with `stream`, never with `background`.
    #[serde(default)]
    pub websocket: bool,
    /// The most `POST /responses` requests this case may make.
    pub max_rounds: u32,
    #[serde(default)]
    pub principal: String,
    /// Optional budgets (capability `budgets`): total wall time for the case, counted
    /// from the controller's start;
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// the most tool executions (distinct call_ids) for the case;
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
    /// and how long one tool request may take.
    #[serde(default)]
    pub tool_timeout_ms: Option<u64>,
    /// Compaction (capability `compaction`): in stateless mode, compact the context with
    /// `POST /responses/compact` once this many responses were answered;
    #[serde(default)]
    pub compact_after_rounds: Option<u32>,
    /// and the `context_management` to send with every request (server-side compaction).
    #[serde(default)]
    pub context_management: Option<Value>,
    /// Structured output (capability `text_format`): the `text.format` to send with every
    /// request, whose schema the final message must satisfy.
    #[serde(default)]
    pub text_format: Option<Value>,
    /// Extra `include` values to send with every request.
    #[serde(default)]
    pub include: Vec<String>,
}

impl Task {
    pub fn load(path: &str) -> Result<Task, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("reading task file {path}: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("parsing task file {path}: {e}"))
    }

    /// The original input as a list of items, the head of every stateless request.
    pub fn input_items(&self) -> Vec<Value> {
        match &self.input {
            Value::Array(items) => items.clone(),
            Value::String(text) => vec![json!({"role": "user", "content": text})],
            other => vec![other.clone()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(input: Value) -> Task {
        serde_json::from_value(json!({
            "contract": 1, "case": "c", "model": "gpt-5", "input": input,
            "tools": [], "state": "stateless", "max_rounds": 2, "principal": "user-1",
            "some_future_field": {"ignored": true}
        }))
        .unwrap()
    }

    #[test]
    fn string_input_becomes_a_user_message() {
        assert_eq!(
            task(json!("hi")).input_items(),
            vec![json!({"role": "user", "content": "hi"})]
        );
    }

    #[test]
    fn array_input_is_kept_as_given() {
        let items = json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]);
        assert_eq!(Value::Array(task(items.clone()).input_items()), items);
    }
}
