//! Redaction of a recording before anything is written: secrets never reach disk.
//!
//! By default: the values of secret-bearing headers (`Authorization`,
//! `OpenAI-Organization`, `OpenAI-Project`, cookies, API-key headers) wherever they
//! appear, and any string anywhere (headers, queries, request and response bodies, SSE
//! payloads, tool arguments and results) that looks like an API key (`sk-...`), a bearer
//! token or a JWT. Users add JSON pointers (`--redact-json /metadata/user`, applied to
//! every request and response body) and regular expressions (`--redact-regex RE`,
//! applied to every string).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What replaces a redacted value.
pub const REDACTED: &str = "[redacted]";

/// Header names whose value is a secret, lowercase.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "openai-organization",
    "openai-project",
    "cookie",
    "set-cookie",
    "api-key",
    "x-api-key",
    "openai-api-key",
];

/// Keys, bearer tokens and JWTs, wherever they appear in a string.
static SECRETS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"sk-[A-Za-z0-9_\-]{8,}",
        r"|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{8,}",
        r"|eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
    ))
    .expect("the secret patterns compile")
});

/// The redaction rules of one recording.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    pointers: Vec<String>,
    patterns: Vec<Regex>,
}

/// A user rule that is not valid.
#[derive(Debug, thiserror::Error)]
#[error("invalid {what} {value:?}: {why}")]
pub struct RuleError {
    what: &'static str,
    value: String,
    why: String,
}

impl Redactor {
    /// The default rules plus the user's JSON pointers and regular expressions.
    pub fn new(pointers: &[String], patterns: &[String]) -> Result<Self, RuleError> {
        for pointer in pointers {
            if !pointer.is_empty() && !pointer.starts_with('/') {
                return Err(RuleError {
                    what: "--redact-json pointer",
                    value: pointer.clone(),
                    why: "a JSON pointer starts with `/` (e.g. /metadata/user)".to_owned(),
                });
            }
        }
        let patterns = patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|err| RuleError {
                    what: "--redact-regex",
                    value: p.clone(),
                    why: err.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            pointers: pointers.to_vec(),
            patterns,
        })
    }

    /// A string with every secret in it replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = SECRETS.replace_all(text, REDACTED).into_owned();
        for pattern in &self.patterns {
            out = pattern.replace_all(&out, REDACTED).into_owned();
        }
        out
    }

    /// Applies the user's JSON pointers to a body (a request's, a response's, an
    /// event's), then redacts every string in it.
    pub fn body(&self, body: &mut Value) {
        for pointer in &self.pointers {
            if let Some(target) = body.pointer_mut(pointer) {
                *target = Value::String(REDACTED.to_owned());
            }
        }
        self.value(body);
    }

    /// Redacts every string in `value`, and the whole value of any field named like a
    /// secret header, at any depth: what is written holds no secret anywhere.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                let redacted = self.text(text);
                if redacted != *text {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(fields) => {
                for (key, field) in fields.iter_mut() {
                    if SECRET_HEADERS.contains(&key.to_ascii_lowercase().as_str()) {
                        *field = Value::String(REDACTED.to_owned());
                    } else {
                        self.value(field);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether a header's value must never be kept.
    pub fn secret_header(name: &str) -> bool {
        SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_tokens_and_jwts_are_redacted_anywhere() {
        let r = Redactor::default();
        assert_eq!(r.text("key=sk-proj-abcdEFGH1234&x=1"), "key=[redacted]&x=1");
        assert_eq!(r.text("Bearer abc.def-ghi_jkl"), "[redacted]");
        assert_eq!(
            r.text("token eyJhbGciOiJI.eyJzdWIiOiIx.sig-nature here"),
            "token [redacted] here"
        );
        assert_eq!(r.text("call_AbCdEfGh is fine"), "call_AbCdEfGh is fine");
    }

    #[test]
    fn secret_header_fields_are_redacted_at_any_depth() {
        let r = Redactor::default();
        let mut value = json!({"headers": {"Authorization": "Basic xyz", "content-type": "application/json"},
                               "nested": [{"cookie": "session=1"}]});
        r.value(&mut value);
        assert_eq!(
            value,
            json!({"headers": {"Authorization": "[redacted]", "content-type": "application/json"},
                   "nested": [{"cookie": "[redacted]"}]})
        );
    }

    #[test]
    fn user_rules_apply() {
        let r = Redactor::new(&["/metadata/user".to_owned()], &["acct-[0-9]+".to_owned()]).unwrap();
        let mut body = json!({"metadata": {"user": "alice"}, "input": "account acct-42"});
        r.body(&mut body);
        assert_eq!(
            body,
            json!({"metadata": {"user": "[redacted]"}, "input": "account [redacted]"})
        );
        assert!(Redactor::new(&["metadata".to_owned()], &[]).is_err());
        assert!(Redactor::new(&[], &["(".to_owned()]).is_err());
    }
}
