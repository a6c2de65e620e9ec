//! Rendering the Response object with the full key set of the real API's, so that every
//! official SDK parses it (strict pydantic, async-openai's serde, the Node types).

use serde_json::{Value, json};

use super::request::CreateRequest;

/// `Response.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseStatus {
    /// The model finished (a tool-call turn also ends `completed`).
    Completed,
    /// Cut short (`incomplete_details.reason` says why).
    Incomplete,
    /// Failed (`error` says why).
    Failed,
}

impl ResponseStatus {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
        }
    }
}

/// What a rendered response is made of.
pub struct ResponseParts<'a> {
    /// `resp_...`.
    pub id: &'a str,
    /// Integer seconds.
    pub created_at: u64,
    /// The terminal status.
    pub status: ResponseStatus,
    /// Full output items.
    pub output: Vec<Value>,
    /// The request it answers (echoed config).
    pub request: &'a CreateRequest,
    /// `incomplete_details.reason` for an incomplete response.
    pub incomplete_reason: Option<&'a str>,
    /// `error` for a failed response (`{"code","message"}`).
    pub error: Option<Value>,
}

/// The served model name for a requested alias (the real API answers with a dated
/// snapshot name).
pub fn served_model(requested: &str) -> String {
    match requested {
        "gpt-5" => "gpt-5-2025-08-07".to_owned(),
        other => other.to_owned(),
    }
}

/// Echoed tools: as sent, with `strict` defaulted to true as the API normalizes it.
fn echo_tools(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            if let Some(object) = tool.as_object_mut()
                && object.get("type").and_then(Value::as_str) == Some("function")
            {
                object.entry("strict").or_insert(json!(true));
                object.entry("description").or_insert(Value::Null);
            }
            tool
        })
        .collect()
}

/// The length of `value` as compact JSON, without building the text.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// A token count that looks plausible for the items and stays deterministic.
fn usage(request: &CreateRequest, output: &[Value]) -> Value {
    let input_tokens = 20 + json_len(&request.input) / 4;
    let reasoning = output
        .iter()
        .filter(|item| item["type"] == "reasoning")
        .count()
        * 64;
    let output_tokens = reasoning + json_len(&output) / 8;
    json!({
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    })
}

/// The full Response object.
pub fn render(parts: ResponseParts<'_>) -> Value {
    let request = parts.request;
    let model = served_model(request.model.as_deref().unwrap_or("gpt-5"));
    let completed = parts.status == ResponseStatus::Completed;
    let usage = usage(request, &parts.output);
    json!({
        "id": parts.id,
        "object": "response",
        "created_at": parts.created_at,
        "status": parts.status.as_str(),
        "completed_at": if completed { json!(parts.created_at + 1) } else { Value::Null },
        "background": request.background,
        "conversation": Value::Null,
        "error": parts.error.unwrap_or(Value::Null),
        "incomplete_details": parts
            .incomplete_reason
            .map_or(Value::Null, |reason| json!({"reason": reason})),
        "instructions": request.instructions,
        "max_output_tokens": request.extra.get("max_output_tokens").cloned().unwrap_or(Value::Null),
        "max_tool_calls": request.extra.get("max_tool_calls").cloned().unwrap_or(Value::Null),
        "model": model,
        "output": parts.output,
        "parallel_tool_calls": request.parallel_tool_calls,
        "previous_response_id": request.previous_response_id,
        "prompt_cache_key": Value::Null,
        "reasoning": {"effort": "medium", "summary": Value::Null},
        "safety_identifier": Value::Null,
        "service_tier": "default",
        "store": request.store,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": request.tool_choice,
        "tools": echo_tools(&request.tools),
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": Value::Null,
        "metadata": request.extra.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}
