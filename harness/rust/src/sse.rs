//! Streamed responses (`stream: true`): server-sent events read to their terminal event
//!.

use futures_util::StreamExt;
use serde_json::Value;

use crate::Outcome;
use crate::client::describe;

/// Splits a byte stream into events. Bytes are buffered until a line is complete, so a
/// chunk may end anywhere, even inside a multi-byte UTF-8 character (a `\n` byte never
/// occurs inside one); an event is complete at the blank line that ends it.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    /// The `data` of the event being read: its `data:` lines joined with `\n`.
    data: Option<String>,
}

impl SseDecoder {
    /// Feeds the next chunk; returns the `data` of every event it completes, in order.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut consumed = 0;
        while let Some(len) = self.buffer[consumed..].iter().position(|&b| b == b'\n') {
            let line = &self.buffer[consumed..consumed + len];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            consumed += len + 1;
            if line.is_empty() {
                events.extend(self.data.take());
            } else if let Some(value) = line.strip_prefix(b"data:") {
                let value = String::from_utf8_lossy(value.strip_prefix(b" ").unwrap_or(value));
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&value);
                    }
                    None => self.data = Some(value.into_owned()),
                }
            }
            // `event:` (the type is repeated in the JSON), `id:`, `retry:` and `:` comments
            // are ignored.
        }
        self.buffer.drain(..consumed);
        events
    }
}

/// What one event's `data` means: `Some` terminal response, `None` to read on, or a failure.
pub(crate) fn terminal_response(data: &str) -> Result<Option<Value>, Outcome> {
    // The real API sends no `[DONE]`; the SDKs stop on it, and so does the missing terminal.
    if data.starts_with("[DONE]") {
        return Ok(None);
    }
    let mut event: Value = serde_json::from_str(data)
        .map_err(|e| Outcome::failed("api_error", format!("stream event is not JSON: {e}")))?;
    match event["type"].as_str() {
        Some("response.completed" | "response.incomplete" | "response.failed") => {
            match event["response"].take() {
                response @ Value::Object(_) => Ok(Some(response)),
                _ => Err(Outcome::failed(
                    "api_error",
                    "terminal event without a response",
                )),
            }
        }
        Some("error") => {
            // Documented flat `{"type":"error","code","message"}`, or the nested form
            // actually sent, `{"type":"error","error":{"code","message",...}}`.
            let error = event
                .get("error")
                .filter(|e| e.is_object())
                .unwrap_or(&event);
            Err(Outcome::failed(
                "api_error",
                format!(
                    "stream error {}: {}",
                    error["code"].as_str().unwrap_or("without a code"),
                    error["message"].as_str().unwrap_or("no message")
                ),
            ))
        }
        // Deltas and item events: the terminal event carries the whole response.
        _ => Ok(None),
    }
}

/// Reads a 200 event stream to its terminal event and returns that event's response.
/// Once the stream has started nothing is retried: a break is a failure.
pub(crate) async fn read_response(answer: reqwest::Response) -> Result<Value, Outcome> {
    let mut decoder = SseDecoder::default();
    let mut chunks = answer.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                eprintln!("the event stream broke: {}", describe(&e));
                break;
            }
        };
        for data in decoder.push(&chunk) {
            if let Some(response) = terminal_response(&data)? {
                return Ok(response);
            }
        }
    }
    Err(Outcome::failed(
        "api_error",
        "stream ended before a terminal event",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decode_in_chunks(bytes: &[u8], chunk_len: usize) -> Vec<String> {
        let mut decoder = SseDecoder::default();
        bytes
            .chunks(chunk_len)
            .flat_map(|chunk| decoder.push(chunk))
            .collect()
    }

    #[test]
    fn events_survive_any_chunk_boundary() {
        // "é" is 2 bytes and "€" 3 in UTF-8; CRLF and LF line ends, a comment, an `event:`
        // line and an `id:` line that are all ignored.
        let stream = "event: response.output_text.delta\r\n\
                      data: {\"type\":\"response.output_text.delta\",\"delta\":\"caf\u{e9} 5\u{20ac}\"}\r\n\r\n\
                      : keep-alive\n\n\
                      id: 7\n\
                      data: {\"type\":\"response.completed\",\n\
                      data: \"response\":{\"status\":\"completed\"}}\n\n\
                      data: {\"type\":\"never finished\"}\n";
        let expected = vec![
            "{\"type\":\"response.output_text.delta\",\"delta\":\"caf\u{e9} 5\u{20ac}\"}"
                .to_string(),
            "{\"type\":\"response.completed\",\n\"response\":{\"status\":\"completed\"}}"
                .to_string(),
        ];
        for chunk_len in [1, 2, 3, 5, 7, stream.len()] {
            assert_eq!(
                decode_in_chunks(stream.as_bytes(), chunk_len),
                expected,
                "{chunk_len}"
            );
        }
    }

    #[test]
    fn a_split_inside_a_three_byte_character_is_decoded_whole() {
        let event = "data: {\"delta\":\"\u{20ac}\"}\n\n".as_bytes();
        let euro = event.iter().position(|&b| b == 0xE2).unwrap();
        let mut decoder = SseDecoder::default();
        assert!(decoder.push(&event[..euro + 1]).is_empty());
        assert!(decoder.push(&event[euro + 1..euro + 2]).is_empty());
        assert_eq!(
            decoder.push(&event[euro + 2..]),
            ["{\"delta\":\"\u{20ac}\"}"]
        );
    }

    #[test]
    fn terminal_events_carry_the_response() {
        for kind in [
            "response.completed",
            "response.incomplete",
            "response.failed",
        ] {
            let data = json!({"type": kind, "sequence_number": 9, "response": {"id": "resp_1"}});
            assert_eq!(
                terminal_response(&data.to_string()),
                Ok(Some(json!({"id": "resp_1"})))
            );
        }
        let created = json!({"type": "response.created", "response": {"id": "resp_1"}});
        assert_eq!(terminal_response(&created.to_string()), Ok(None));
        let done = json!({"type": "response.output_item.done", "item": {"type": "function_call"}});
        assert_eq!(terminal_response(&done.to_string()), Ok(None));
        assert_eq!(terminal_response("[DONE]"), Ok(None));
    }

    #[test]
    fn both_error_event_shapes_fail_the_case() {
        let flat = json!({"type": "error", "code": "ERR_SOMETHING", "message": "Something went wrong",
                          "param": null, "sequence_number": 1});
        assert_eq!(
            terminal_response(&flat.to_string()),
            Err(Outcome::failed(
                "api_error",
                "stream error ERR_SOMETHING: Something went wrong"
            ))
        );
        let nested = json!({"type": "error", "sequence_number": 2, "error": {"type": "too_many_requests",
                            "code": "too_many_requests", "message": "Too Many Requests", "param": null}});
        assert_eq!(
            terminal_response(&nested.to_string()),
            Err(Outcome::failed(
                "api_error",
                "stream error too_many_requests: Too Many Requests"
            ))
        );
    }

    #[test]
    fn malformed_events_fail_the_case() {
        for data in ["{not json", r#"{"type":"response.completed"}"#] {
            assert!(
                matches!(terminal_response(data), Err(Outcome::Failed { reason, .. }) if reason == "api_error"),
                "{data}"
            );
        }
    }
}
