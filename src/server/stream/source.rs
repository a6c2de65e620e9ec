//! What a stream is planned from: the Response object its lifecycle events carry, and the
//! output items its item events announce, whether generated from the script (typed, and
//! written straight to bytes) or recorded (values, written as they were).

use std::borrow::Cow;

use serde_json::Value;

use crate::wire::item::{
    OutputItem, write_annotated_text, write_refusal, write_text_with_logprobs,
};
use crate::wire::response::{Layout, ResponseParts};
use crate::wire::write::{Set, object_with, value_to};

/// The Response object a stream carries in its lifecycle events.
pub trait StreamedResponse {
    /// Its output items, as values.
    fn output(&self) -> Cow<'_, [Value]>;
    /// Its output items, as the planner reads them.
    fn items(&self) -> Items<'_>;
    /// Its terminal `status`.
    fn status(&self) -> &str;
    /// Whether it runs in the background.
    fn background(&self) -> bool;
    /// Writes it as JSON; with `snapshot`, as it looks while it has that status (before it
    /// ends, or once cancelled): no output, no usage, no outcome.
    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>);
    /// Output item `index` as written already, if it was.
    fn item_json(&self, _index: usize) -> Option<&[u8]> {
        None
    }
    /// Writes output item `index` with some fields set, copied from where it was
    /// written already; false (and nothing written) when it cannot be.
    fn write_item_with(&self, _index: usize, _set: &[(&str, Set<'_>)], _out: &mut Vec<u8>) -> bool {
        false
    }
    /// The value of field `key` of output item `index`, as written already, if it was.
    fn item_field_json(&self, _index: usize, _key: &str) -> Option<&[u8]> {
        None
    }
}

/// A response's output items: recorded values or generated items.
pub enum Items<'a> {
    /// Values (a recorded response).
    Values(&'a [Value]),
    /// Generated items (a scripted turn).
    Generated(&'a [OutputItem<'a>]),
}

impl StreamedResponse for Value {
    fn output(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self["output"].as_array().map_or(&[][..], Vec::as_slice))
    }

    fn items(&self) -> Items<'_> {
        Items::Values(self["output"].as_array().map_or(&[][..], Vec::as_slice))
    }

    fn status(&self) -> &str {
        self["status"].as_str().unwrap_or_default()
    }

    fn background(&self) -> bool {
        self["background"] == true
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        match snapshot {
            None => value_to(out, self),
            Some(status) => object_with(
                out,
                self,
                &[
                    ("status", Set::Str(status)),
                    ("output", Set::EmptyArray),
                    ("usage", Set::Null),
                    ("completed_at", Set::Null),
                    ("error", Set::Null),
                    ("incomplete_details", Set::Null),
                ],
            ),
        }
    }
}

impl StreamedResponse for ResponseParts<'_> {
    fn output(&self) -> Cow<'_, [Value]> {
        Cow::Owned(self.output.iter().map(OutputItem::to_value).collect())
    }

    fn items(&self) -> Items<'_> {
        Items::Generated(self.output)
    }

    fn status(&self) -> &str {
        self.status.as_str()
    }

    fn background(&self) -> bool {
        self.request.background
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        ResponseParts::write(self, out, snapshot);
    }
}

/// A response whose final JSON is rendered already: the terminal event copies it, each
/// item's `output_item.done` copies the item, and a snapshot is the final JSON with its
/// outcome replaced.
pub struct Prerendered<'a> {
    /// The response.
    pub response: &'a dyn StreamedResponse,
    /// Its final JSON.
    pub json: &'a [u8],
    /// Where its parts are in `json`, when known.
    pub layout: Option<&'a Layout>,
}

impl StreamedResponse for Prerendered<'_> {
    fn output(&self) -> Cow<'_, [Value]> {
        self.response.output()
    }

    fn items(&self) -> Items<'_> {
        self.response.items()
    }

    fn status(&self) -> &str {
        self.response.status()
    }

    fn background(&self) -> bool {
        self.response.background()
    }

    fn write(&self, out: &mut Vec<u8>, snapshot: Option<&str>) {
        match (snapshot, self.layout) {
            (None, _) => out.extend_from_slice(self.json),
            (Some(status), Some(layout)) => layout.write_snapshot(self.json, status, out),
            (Some(_), None) => self.response.write(out, snapshot),
        }
    }

    fn item_json(&self, index: usize) -> Option<&[u8]> {
        self.json.get(self.layout?.items.get(index)?.whole.clone())
    }

    fn write_item_with(&self, index: usize, set: &[(&str, Set<'_>)], out: &mut Vec<u8>) -> bool {
        self.layout
            .and_then(|layout| layout.items.get(index))
            .is_some_and(|item| item.write_with(self.json, set, out))
    }

    fn item_field_json(&self, index: usize, key: &str) -> Option<&[u8]> {
        self.layout?.items.get(index)?.value(self.json, key)
    }
}

/// A content part of a message, as the planner streams it.
pub struct ContentPart<'a> {
    /// A `refusal` part (else `output_text`).
    pub refusal: bool,
    /// Its text.
    pub text: &'a str,
    /// An `output_text` part's annotations, each announced by its own event.
    pub annotations: &'a [Value],
    /// Whether its text events carry the tokens' `logprobs` (else an empty list).
    pub logprobs: bool,
    /// The whole part, for `content_part.done`.
    pub whole: Whole<'a>,
}

/// A content part written whole.
pub enum Whole<'a> {
    /// As recorded.
    Value(&'a Value),
    /// A generated `output_text` part, with its annotations, and its tokens'
    /// `logprobs` when asked for.
    OutputText(&'a str, &'a [Value], bool),
    /// A generated `refusal` part.
    Refusal(&'a str),
}

impl Whole<'_> {
    /// Writes the part.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Whole::Value(part) => value_to(out, part),
            Whole::OutputText(text, annotations, false) => {
                write_annotated_text(out, text, annotations)
            }
            Whole::OutputText(text, annotations, true) => {
                write_text_with_logprobs(out, text, annotations)
            }
            Whole::Refusal(text) => write_refusal(out, text),
        }
    }
}

/// What the planner reads of an output item.
pub trait StreamedItem {
    /// `type` (empty when it has none).
    fn item_type(&self) -> &str;
    /// Writes `id` as it is.
    fn write_id(&self, out: &mut Vec<u8>);
    /// `call_id` (empty when it has none).
    fn call_id(&self) -> &str;
    /// A reasoning item's `encrypted_content`.
    fn encrypted_content(&self) -> Option<&str>;
    /// A reasoning item's summary texts.
    fn summary(&self) -> Vec<&str>;
    /// A reasoning item's `reasoning_text` parts' texts.
    fn reasoning_text(&self) -> Vec<&str>;
    /// A message's content parts.
    fn content(&self) -> Vec<ContentPart<'_>>;
    /// A call's `arguments` (empty when not a string).
    fn arguments(&self) -> &str;
    /// Writes a call's `arguments` as they are.
    fn write_arguments(&self, out: &mut Vec<u8>);
    /// A custom tool call's `input` (empty when not a string).
    fn input(&self) -> &str;
    /// Whether a hosted tool's item carries an `error` (its tool failed).
    fn has_error(&self) -> bool;
    /// A hosted tool's item's text field (empty when it is none or not a string).
    fn hosted_text(&self, field: &str) -> &str;
    /// Writes the item with some fields set (see `object_with`).
    fn write_with(&self, out: &mut Vec<u8>, set: &[(&str, Set<'_>)]);
}

impl StreamedItem for Value {
    fn item_type(&self) -> &str {
        self["type"].as_str().unwrap_or_default()
    }

    fn write_id(&self, out: &mut Vec<u8>) {
        value_to(out, &self["id"]);
    }

    fn call_id(&self) -> &str {
        self["call_id"].as_str().unwrap_or_default()
    }

    fn encrypted_content(&self) -> Option<&str> {
        self["encrypted_content"].as_str()
    }

    fn summary(&self) -> Vec<&str> {
        self["summary"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|part| part["text"].as_str().unwrap_or_default())
            .collect()
    }

    fn reasoning_text(&self) -> Vec<&str> {
        if self["type"] != "reasoning" {
            return Vec::new();
        }
        self["content"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|part| part["type"] == "reasoning_text")
            .map(|part| part["text"].as_str().unwrap_or_default())
            .collect()
    }

    fn content(&self) -> Vec<ContentPart<'_>> {
        self["content"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|part| {
                let refusal = part["type"] == "refusal";
                let text = part[if refusal { "refusal" } else { "text" }].as_str();
                ContentPart {
                    refusal,
                    text: text.unwrap_or_default(),
                    annotations: part["annotations"]
                        .as_array()
                        .map_or(&[][..], Vec::as_slice),
                    // A recorded part's events were recorded with their own logprobs.
                    logprobs: false,
                    whole: Whole::Value(part),
                }
            })
            .collect()
    }

    fn arguments(&self) -> &str {
        self["arguments"].as_str().unwrap_or_default()
    }

    fn write_arguments(&self, out: &mut Vec<u8>) {
        value_to(out, &self["arguments"]);
    }

    fn input(&self) -> &str {
        self["input"].as_str().unwrap_or_default()
    }

    fn has_error(&self) -> bool {
        !self["error"].is_null()
    }

    fn hosted_text(&self, field: &str) -> &str {
        self[field].as_str().unwrap_or_default()
    }

    fn write_with(&self, out: &mut Vec<u8>, set: &[(&str, Set<'_>)]) {
        object_with(out, self, set);
    }
}

impl StreamedItem for OutputItem<'_> {
    fn item_type(&self) -> &str {
        self.kind()
    }

    fn write_id(&self, out: &mut Vec<u8>) {
        value_to(out, self.id());
    }

    fn call_id(&self) -> &str {
        OutputItem::call_id(self).unwrap_or_default()
    }

    fn encrypted_content(&self) -> Option<&str> {
        OutputItem::encrypted_content(self)
    }

    fn summary(&self) -> Vec<&str> {
        match self {
            OutputItem::Reasoning { summary, .. } => summary.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }

    fn reasoning_text(&self) -> Vec<&str> {
        match self {
            OutputItem::Reasoning { text, .. } => text.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }

    fn content(&self) -> Vec<ContentPart<'_>> {
        match *self {
            OutputItem::Message {
                text,
                ref annotations,
                refusal,
                logprobs,
                ..
            } => {
                let mut parts = vec![ContentPart {
                    refusal: false,
                    text,
                    annotations,
                    logprobs,
                    whole: Whole::OutputText(text, annotations, logprobs),
                }];
                if let Some(refusal) = refusal {
                    parts.push(ContentPart {
                        refusal: true,
                        text: refusal,
                        annotations: &[],
                        logprobs: false,
                        whole: Whole::Refusal(refusal),
                    });
                }
                parts
            }
            OutputItem::Refusal { text, .. } => vec![ContentPart {
                refusal: true,
                text,
                annotations: &[],
                logprobs: false,
                whole: Whole::Refusal(text),
            }],
            _ => Vec::new(),
        }
    }

    fn arguments(&self) -> &str {
        match self {
            OutputItem::Call { arguments, .. } => arguments,
            _ => "",
        }
    }

    fn write_arguments(&self, out: &mut Vec<u8>) {
        match self {
            OutputItem::Call { arguments, .. } => value_to(out, arguments),
            _ => out.extend_from_slice(b"null"),
        }
    }

    fn input(&self) -> &str {
        match self {
            OutputItem::CustomCall { input, .. } => input,
            _ => "",
        }
    }

    fn has_error(&self) -> bool {
        match self {
            OutputItem::Hosted { fields, .. } => fields
                .iter()
                .any(|(key, value)| *key == "error" && !value.is_null()),
            _ => false,
        }
    }

    fn hosted_text(&self, field: &str) -> &str {
        match self {
            OutputItem::Hosted { fields, .. } => fields
                .iter()
                .find(|(key, _)| *key == field)
                .and_then(|(_, value)| value.as_str())
                .unwrap_or_default(),
            _ => "",
        }
    }

    fn write_with(&self, out: &mut Vec<u8>, set: &[(&str, Set<'_>)]) {
        OutputItem::write_with(self, out, set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::response::ResponseStatus;
    use crate::wire::{CreateRequest, IdGen};
    use serde_json::json;

    /// A generated response's snapshot (spliced from its final bytes) is byte for byte
    /// what a recorded response's snapshot rule makes of the same response as a value.
    #[test]
    fn a_spliced_snapshot_is_the_snapshot_of_the_response_as_a_value() {
        let request = CreateRequest::from_json(
            br#"{"model":"gpt-5","input":"hi","stream":true,"tools":[{"type":"function","name":"f"}],"metadata":{"k":"v"}}"#,
        )
        .expect("a valid create");
        let summary = ["Thinking.".to_owned()];
        let output = [
            OutputItem::Reasoning {
                id: "rs_1".into(),
                encrypted_content: "gAAAA".into(),
                summary: &summary,
                text: &summary,
            },
            OutputItem::Message {
                id: "msg_1".into(),
                status: "completed",
                text: "Zürich \"quoted\"",
                annotations: vec![
                    serde_json::json!({"type": "file_citation", "file_id": "file-1", "filename": "a.md", "index": 6}),
                ],
                refusal: None,
                logprobs: false,
            },
            OutputItem::Call {
                id: "fc_1".into(),
                status: "completed",
                arguments: "{\"city\":\"Zürich\"}".into(),
                call_id: "call_1".into(),
                name: "f",
                namespace: None,
                caller_id: None,
            },
            OutputItem::Call {
                id: "fc_2".into(),
                status: "completed",
                arguments: "{\"city\":\"Genève\"}".into(),
                call_id: "call_2".into(),
                name: "f",
                namespace: None,
                caller_id: None,
            },
        ];
        let error = json!({"code": "server_error", "message": "boom"});
        let outcomes = [
            (ResponseStatus::Completed, None, None),
            (ResponseStatus::Incomplete, Some("max_output_tokens"), None),
            (ResponseStatus::Failed, None, Some(&error)),
        ];
        for (status, incomplete_reason, error) in outcomes {
            let parts = ResponseParts {
                id: "resp_1",
                created_at: 1_759_064_126,
                status,
                output: &output,
                write_output: None,
                request: &request,
                incomplete_reason,
                error,
                conversation: Some("conv_1"),
            };
            let mut json = Vec::new();
            let layout = parts.write_spanned(&mut json);
            let value: Value = serde_json::from_slice(&json).expect("JSON");
            let prerendered = Prerendered {
                response: &parts,
                json: &json,
                layout: Some(&layout),
            };
            for snapshot in ["queued", "in_progress", "cancelled"] {
                let (mut spliced, mut expected) = (Vec::new(), Vec::new());
                prerendered.write(&mut spliced, Some(snapshot));
                value.write(&mut expected, Some(snapshot));
                assert_eq!(
                    String::from_utf8(spliced).unwrap(),
                    String::from_utf8(expected).unwrap(),
                    "{status:?} as {snapshot}"
                );
            }
            // Its stream, which copies parts of the final bytes, is the recorded one's,
            // with its calls one after the other or side by side.
            for interleave in [false, true] {
                let spec = crate::scenario::StreamSpec {
                    interleave,
                    ..Default::default()
                };
                let generated = super::super::plan(&prerendered, &spec, &mut IdGen::new(1), true);
                let recorded = super::super::plan(&value, &spec, &mut IdGen::new(1), true);
                assert_eq!(
                    String::from_utf8_lossy(&generated.bytes),
                    String::from_utf8_lossy(&recorded.bytes),
                    "{status:?}, interleaved: {interleave}"
                );
            }
        }
    }
}
