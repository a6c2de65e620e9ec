//! Rendering the Response object with the full key set of the real API's, so that every
//! official SDK parses it (strict pydantic, async-openai's serde, the Node types).

use std::ops::Range;

use serde_json::Value;

use super::item::{self, OutputItem};
use super::request::CreateRequest;
use super::write::{FieldSpans, Set, array_len, field, object_with, raw_field, splice, value_to};

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

/// Writes a response's output array (a compiled turn fills its items in).
pub type WriteOutput<'a> = &'a dyn Fn(&mut Vec<u8>);

/// What a rendered response is made of.
pub struct ResponseParts<'a> {
    /// `resp_...`.
    pub id: &'a str,
    /// Integer seconds.
    pub created_at: u64,
    /// The terminal status.
    pub status: ResponseStatus,
    /// Full output items.
    pub output: &'a [OutputItem<'a>],
    /// Writes the output array in place of the item writer (a compiled turn fills it
    /// in); no item's fields are noted in the layout then.
    pub write_output: Option<WriteOutput<'a>>,
    /// The request it answers (echoed config).
    pub request: &'a CreateRequest,
    /// `incomplete_details.reason` for an incomplete response.
    pub incomplete_reason: Option<&'a str>,
    /// `error` for a failed response (`{"code","message"}`).
    pub error: Option<&'a Value>,
    /// The conversation it belongs to, if any.
    pub conversation: Option<&'a str>,
}

/// The served model name for a requested alias (the real API answers with a dated
/// snapshot name).
pub fn served_model(requested: &str) -> &str {
    match requested {
        "gpt-5" => "gpt-5-2025-08-07",
        other => other,
    }
}

/// Echoed tools: as sent, with `strict` defaulted to true (and a missing `description`
/// to null) as the API normalizes function tools, and a custom tool's missing `format`
/// to `{"type": "text"}` (SDKs that type the echo, such as async-openai, require it).
fn write_tools(out: &mut Vec<u8>, tools: &[Value]) {
    out.push(b'[');
    for (index, tool) in tools.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match tool {
            Value::Object(fields)
                if fields.get("type").and_then(Value::as_str) == Some("function") =>
            {
                let defaults: Vec<(&str, Set<'_>)> =
                    [("strict", Set::Bool(true)), ("description", Set::Null)]
                        .into_iter()
                        .filter(|(key, _)| !fields.contains_key(*key))
                        .collect();
                object_with(out, tool, &defaults);
            }
            Value::Object(fields)
                if fields.get("type").and_then(Value::as_str) == Some("custom")
                    && !fields.contains_key("format") =>
            {
                let mut tool = fields.clone();
                tool.insert("format".to_owned(), serde_json::json!({"type": "text"}));
                value_to(out, &Value::Object(tool));
            }
            _ => value_to(out, tool),
        }
    }
    out.push(b']');
}

impl ResponseParts<'_> {
    /// Writes the Response object; with `snapshot`, as it looks while it has that status
    /// (before it ends, or once cancelled): no output, no usage, no outcome.
    pub fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        match snapshot {
            None => {
                self.write_spanned(out);
            }
            Some(status) => {
                let mut json = Vec::with_capacity(2048);
                let layout = self.write_spanned(&mut json);
                layout.write_snapshot(&json, status, out);
            }
        }
    }

    /// Writes the full Response object; returns where its parts were written (a snapshot
    /// is made from it by [`Layout::write_snapshot`], the one place that knows what a
    /// snapshot changes).
    pub fn write_spanned(&self, out: &mut Vec<u8>) -> Layout {
        let mut layout = Layout {
            items: Vec::new(),
            outcome: Default::default(),
        };
        let outcome = &mut layout.outcome;
        let request = self.request;
        let extra = |key: &str| request.extra.get(key).unwrap_or(&Value::Null);
        out.extend_from_slice(b"{\"id\":");
        value_to(out, self.id);
        raw_field(out, "object", b"\"response\"");
        field(out, "created_at", &self.created_at);
        raw_field(out, "status", b"");
        noted(out, &mut outcome[Outcome::Status as usize], |out| {
            value_to(out, self.status.as_str());
        });
        let completed = self.status == ResponseStatus::Completed;
        raw_field(out, "completed_at", b"");
        noted(out, &mut outcome[Outcome::CompletedAt as usize], |out| {
            value_to(out, &completed.then_some(self.created_at + 1));
        });
        field(out, "background", &request.background);
        match self.conversation {
            Some(id) => {
                raw_field(out, "conversation", b"{\"id\":");
                value_to(out, id);
                out.push(b'}');
            }
            None => raw_field(out, "conversation", b"null"),
        }
        raw_field(out, "error", b"");
        noted(out, &mut outcome[Outcome::Error as usize], |out| {
            value_to(out, &self.error);
        });
        raw_field(out, "incomplete_details", b"");
        noted(
            out,
            &mut outcome[Outcome::IncompleteDetails as usize],
            |out| match self.incomplete_reason {
                Some(reason) => {
                    out.extend_from_slice(b"{\"reason\":");
                    value_to(out, reason);
                    out.push(b'}');
                }
                None => out.extend_from_slice(b"null"),
            },
        );
        field(out, "instructions", &request.instructions);
        field(out, "max_output_tokens", extra("max_output_tokens"));
        field(out, "max_tool_calls", extra("max_tool_calls"));
        field(
            out,
            "model",
            served_model(request.model.as_deref().unwrap_or("gpt-5")),
        );
        raw_field(out, "output", b"");
        let output_start = out.len();
        // Where each item's fields are, for a stream to copy them from.
        match self.write_output {
            Some(write) => write(out),
            None => {
                let note_items = request.stream || request.background;
                if note_items {
                    layout.items.reserve_exact(self.output.len());
                }
                item::write_all(out, self.output, note_items.then_some(&mut layout.items));
            }
        }
        let output_len = out.len() - output_start;
        let outcome = &mut layout.outcome;
        outcome[Outcome::Output as usize] = output_start..out.len();
        field(out, "parallel_tool_calls", &request.parallel_tool_calls);
        field(out, "previous_response_id", &request.previous_response_id);
        raw_field(out, "prompt_cache_key", b"null");
        raw_field(out, "reasoning", br#"{"effort":"medium","summary":null}"#);
        raw_field(out, "safety_identifier", b"null");
        raw_field(out, "service_tier", b"\"default\"");
        field(out, "store", &request.store);
        raw_field(out, "temperature", b"1.0");
        // The text config as the request set it (a structured output's format).
        match request.extra.get("text").filter(|text| text.is_object()) {
            Some(text) => {
                let mut text = text.clone();
                if let Some(config) = text.as_object_mut() {
                    config
                        .entry("format")
                        .or_insert_with(|| serde_json::json!({"type": "text"}));
                    config
                        .entry("verbosity")
                        .or_insert_with(|| serde_json::json!("medium"));
                }
                field(out, "text", &text);
            }
            None => raw_field(
                out,
                "text",
                br#"{"format":{"type":"text"},"verbosity":"medium"}"#,
            ),
        }
        match &request.tool_choice {
            Some(choice) => field(out, "tool_choice", choice),
            None => raw_field(out, "tool_choice", b"\"auto\""),
        }
        raw_field(out, "tools", b"");
        write_tools(out, &request.tools);
        match request.extra.get("top_logprobs").filter(|n| n.is_u64()) {
            Some(n) => field(out, "top_logprobs", n),
            None => raw_field(out, "top_logprobs", b"0"),
        }
        raw_field(out, "top_p", b"1.0");
        raw_field(out, "truncation", b"\"disabled\"");
        raw_field(out, "usage", b"");
        noted(out, &mut outcome[Outcome::Usage as usize], |out| {
            self.write_usage(out, output_len);
        });
        raw_field(out, "user", b"null");
        match request.extra.get("metadata") {
            Some(metadata) => field(out, "metadata", metadata),
            None => raw_field(out, "metadata", b"{}"),
        }
        out.push(b'}');
        layout
    }

    /// A token count that looks plausible for the items and stays deterministic (from
    /// the length of the input and of the output as written): the `usage` value.
    fn write_usage(&self, out: &mut Vec<u8>, output_len: usize) {
        let input_tokens = 20 + array_len(&self.request.input) / 4;
        let reasoning = self
            .output
            .iter()
            .filter(|item| item.kind() == "reasoning")
            .count()
            * 64;
        let output_tokens = reasoning + output_len / 8;
        let total_tokens = input_tokens + output_tokens;
        out.extend_from_slice(b"{\"input_tokens\":");
        value_to(out, &input_tokens);
        raw_field(
            out,
            "input_tokens_details",
            br#"{"cached_tokens":0,"cache_write_tokens":0}"#,
        );
        field(out, "output_tokens", &output_tokens);
        raw_field(out, "output_tokens_details", br#"{"reasoning_tokens":"#);
        value_to(out, &reasoning);
        out.push(b'}');
        field(out, "total_tokens", &total_tokens);
        out.push(b'}');
    }
}

/// Runs `write` and notes where what it wrote is.
fn noted(out: &mut Vec<u8>, span: &mut Range<usize>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    write(out);
    *span = start..out.len();
}

/// The fields whose values a snapshot of a response changes, in the order they are
/// written.
#[derive(Clone, Copy)]
enum Outcome {
    Status,
    CompletedAt,
    Error,
    IncompleteDetails,
    Output,
    Usage,
}

impl Outcome {
    const ALL: [Outcome; 6] = [
        Outcome::Status,
        Outcome::CompletedAt,
        Outcome::Error,
        Outcome::IncompleteDetails,
        Outcome::Output,
        Outcome::Usage,
    ];
}

/// Where the parts of a written response are: each output item, and the values a
/// snapshot of it replaces.
#[derive(Debug, Default)]
pub struct Layout {
    /// Each output item, and its fields' values.
    pub items: Vec<FieldSpans>,
    /// The values of the [`Outcome`] fields, in order.
    outcome: [Range<usize>; 6],
}

impl Layout {
    /// Writes the snapshot with `status` of the response written as `json` (the response
    /// this layout is of): as the API shows it while it has that status, with no output,
    /// no usage and no outcome. Only those values change.
    pub fn write_snapshot(&self, json: &[u8], status: &str, out: &mut Vec<u8>) {
        let replaced = Outcome::ALL
            .into_iter()
            .zip(&self.outcome)
            .map(|(field, span)| {
                let value = match field {
                    Outcome::Status => Set::Str(status),
                    Outcome::Output => Set::EmptyArray,
                    _ => Set::Null,
                };
                (span.clone(), value)
            });
        splice(json, 0..json.len(), replaced, out);
    }
}
