//! What the error output of a call that did not run must carry. The contract (section 5
//! of docs/contract.md) asks for the reason, not only for some text: a backend's refusal
//! is relayed with its message or code, an approver's refusal with its reason, so that
//! the model can tell a denial from an outage and the user why. "Error: Function failed."
//! for a 403 tells the model nothing it can act on.

use serde_json::Value;

use crate::transcript::ToolExchange;

/// What the backend or the approver said about a call that did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said<'a> {
    /// Nothing: a call the controller rejected itself, or one that timed out.
    Nothing,
    /// The tool backend's error answer: its `error.message` and `error.code`, and the
    /// HTTP status it came with.
    Backend {
        message: Option<&'a str>,
        code: Option<&'a str>,
        status: u16,
    },
    /// The approver's refusal, with its `reason` when it gave one.
    Approver(Option<&'a str>),
}

impl<'a> Said<'a> {
    /// What the backend said in its error answer to `exchange`.
    pub fn backend(exchange: &'a ToolExchange) -> Self {
        let text = |pointer: &str| {
            exchange
                .response
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|text| !text.trim().is_empty())
        };
        Said::Backend {
            message: text("/error/message"),
            code: text("/error/code"),
            status: exchange.status,
        }
    }

    /// The message or reason, which an output carries whatever its form.
    pub fn message(&self) -> Option<&'a str> {
        match *self {
            Said::Nothing => None,
            Said::Backend { message, .. } => message,
            Said::Approver(reason) => reason,
        }
    }

    /// The texts any one of which the output must contain; none when nothing was said.
    fn marks(&self) -> Vec<String> {
        match *self {
            Said::Nothing => Vec::new(),
            Said::Backend {
                message,
                code,
                status,
            } => message
                .into_iter()
                .chain(code)
                .map(str::to_owned)
                .chain([status.to_string()])
                .collect(),
            Said::Approver(reason) => reason
                .filter(|reason| !reason.trim().is_empty())
                .map(str::to_owned)
                .into_iter()
                .collect(),
        }
    }

    /// What was expected, for a message: `the backend's message "..." or code "..."`.
    fn expected(&self) -> String {
        match *self {
            Said::Nothing => String::new(),
            Said::Backend {
                message,
                code,
                status,
            } => {
                let mut parts: Vec<String> = Vec::new();
                if let Some(message) = message {
                    parts.push(format!("its message {message:?}"));
                }
                if let Some(code) = code {
                    parts.push(format!("its code {code:?}"));
                }
                parts.push(format!("its status {status}"));
                format!("the backend's error ({})", parts.join(", or "))
            }
            Said::Approver(reason) => {
                format!("the approver's reason {:?}", reason.unwrap_or_default())
            }
        }
    }

    /// What is missing from `output` (an answer item) when it does not carry what was
    /// said: `None` when it does, or when nothing was said.
    pub fn missing_from(&self, output: &Value, text: &str) -> Option<String> {
        let marks = self.marks();
        if marks.is_empty() || marks.iter().any(|mark| carries(output, text, mark)) {
            return None;
        }
        Some(self.expected())
    }
}

/// Whether an answer carries `mark`, in any wording that contains it: a case-insensitive
/// substring of its text, of any string inside it (a JSON output's values, decoded, so
/// that escaped quotes and `\u00e9` count), or of the mark JSON-escaped. A mark that is a
/// number (an HTTP status) counts only as a whole number, not inside a longer one.
fn carries(output: &Value, text: &str, mark: &str) -> bool {
    let mark = mark.trim().trim_end_matches(['.', '!']).to_lowercase();
    if mark.is_empty() {
        return false;
    }
    let mut haystacks = vec![text.to_lowercase()];
    let mut strings = Vec::new();
    strings_in(&output["output"], &mut strings);
    haystacks.extend(strings.iter().map(|s| s.to_lowercase()));
    let escaped = serde_json::to_string(&mark).unwrap_or_default();
    let escaped = escaped.trim_matches('"').to_owned();
    let ascii = ascii_escaped(&mark);
    let forms = [mark.as_str(), escaped.as_str(), ascii.as_str()];
    let numeric = mark.chars().all(|c| c.is_ascii_digit());
    haystacks.iter().any(|haystack| {
        forms.iter().any(|form| {
            if numeric {
                contains_number(haystack, form)
            } else {
                haystack.contains(form)
            }
        })
    })
}

/// Every string in `value`, and every string inside a string that is itself JSON.
fn strings_in(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            if let Ok(inner @ (Value::Object(_) | Value::Array(_) | Value::String(_))) =
                serde_json::from_str::<Value>(text)
            {
                strings_in(&inner, out);
            }
            out.push(text.clone());
        }
        Value::Array(items) => items.iter().for_each(|item| strings_in(item, out)),
        Value::Object(fields) => fields.values().for_each(|field| strings_in(field, out)),
        _ => {}
    }
}

/// `text` as Python's `json.dumps` writes it by default: every non-ASCII character as a
/// `\uXXXX` escape (surrogate pairs beyond the basic plane).
fn ascii_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Whether `number` occurs in `haystack` with no digit right before or after it.
fn contains_number(haystack: &str, number: &str) -> bool {
    haystack.match_indices(number).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DENIED: Said<'static> = Said::Backend {
        message: Some("Warehouse W2 belongs to another tenant."),
        code: Some("forbidden"),
        status: 403,
    };

    fn answer(output: &str) -> Value {
        json!({"type": "function_call_output", "call_id": "call_1", "output": output})
    }

    fn missing(said: Said<'_>, output: &str) -> Option<String> {
        said.missing_from(&answer(output), output)
    }

    #[test]
    fn an_output_with_the_message_the_code_or_the_status_carries_the_backend_error() {
        for output in [
            r#"{"error": "forbidden: Warehouse W2 belongs to another tenant."}"#,
            "warehouse w2 BELONGS to another tenant",
            "Error: FORBIDDEN",
            "Tool failed with HTTP 403",
            r#"{"status": 403}"#,
        ] {
            assert_eq!(missing(DENIED, output), None, "{output}");
        }
    }

    #[test]
    fn a_generic_error_does_not_carry_the_backend_error() {
        for output in [
            "Error: Function failed.",
            "tool failed (code 14030)",
            r#"{"error": true}"#,
        ] {
            let problem = missing(DENIED, output).expect(output);
            assert_eq!(
                problem,
                r#"the backend's error (its message "Warehouse W2 belongs to another tenant.", or its code "forbidden", or its status 403)"#
            );
        }
    }

    #[test]
    fn json_escaped_forms_count() {
        let said = Said::Approver(Some("Le \"remboursement\" dépasse 100 €"));
        for output in [
            // Python's json.dumps: non-ASCII escaped, quotes escaped.
            r#"{"error": "approval denied: Le \"remboursement\" d\u00e9passe 100 \u20ac"}"#,
            // Encoded twice: the output is a JSON string holding JSON.
            r#""{\"error\": \"Le \\\"remboursement\\\" dépasse 100 €\"}""#,
        ] {
            assert_eq!(missing(said, output), None, "{output}");
        }
        assert_eq!(
            missing(said, "rejected by user"),
            Some(r#"the approver's reason "Le \"remboursement\" dépasse 100 €""#.to_owned())
        );
    }

    #[test]
    fn parts_and_shell_chunks_are_read_as_their_strings() {
        let said = Said::Approver(Some("Deleting a repository needs an owner"));
        let chunks = json!({"type": "shell_call_output", "call_id": "call_1", "output": [
            {"stdout": "", "stderr": "approval denied: deleting a repository needs an owner", "outcome": {"type": "exit", "exit_code": 1}}
        ]});
        assert_eq!(
            said.missing_from(&chunks, &chunks["output"].to_string()),
            None
        );
        let parts = json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Denied: Deleting a repository needs an owner."}
        ]});
        assert_eq!(
            said.missing_from(&parts, "Denied: Deleting a repository needs an owner."),
            None
        );
    }

    #[test]
    fn nothing_said_asks_for_nothing() {
        assert_eq!(missing(Said::Nothing, "Error: Function failed."), None);
        assert_eq!(missing(Said::Approver(None), "rejected by user"), None);
    }
}
