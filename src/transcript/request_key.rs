//! Matching a request to a recorded one by key, as vcrpy's `match_on` does: a cassette
//! that names its keys (`match_on: [method, path, body]`) serves each request the first
//! unused recorded turn whose request has the same key, wherever it came in the run. The
//! body is compared after redaction, with its ids numbered within the request alone, so
//! the same request matches whichever requests came before it.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::normalize::renumbered_alone;
use crate::redact::Redactor;

/// One part of a request its key is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchKey {
    /// The HTTP method.
    Method,
    /// The path (its ids numbered within it).
    Path,
    /// The whole body.
    Body,
    /// One top-level field of the body (`body.model`, `body.input`).
    BodyField(String),
}

impl FromStr for MatchKey {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "method" => Ok(Self::Method),
            "path" => Ok(Self::Path),
            "body" => Ok(Self::Body),
            field => match field.strip_prefix("body.") {
                Some(name) if !name.is_empty() => Ok(Self::BodyField(name.to_owned())),
                _ => Err(format!(
                    "unknown match key `{field}`: expected method, path, body or body.<field> (e.g. body.input)"
                )),
            },
        }
    }
}

impl fmt::Display for MatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Method => f.write_str("method"),
            Self::Path => f.write_str("path"),
            Self::Body => f.write_str("body"),
            Self::BodyField(name) => write!(f, "body.{name}"),
        }
    }
}

impl Serialize for MatchKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MatchKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a request's key is made of; a cassette without it matches by order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MatchOn(pub Vec<MatchKey>);

impl Default for MatchOn {
    /// `method, path, body`: what a new recording is matched on.
    fn default() -> Self {
        Self(vec![MatchKey::Method, MatchKey::Path, MatchKey::Body])
    }
}

impl FromStr for MatchOn {
    type Err = String;

    /// A comma-separated list: `method,path,body` or `method,body.model,body.input`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let keys = text
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err("--match-on needs at least one key (method, path, body)".to_owned());
        }
        Ok(Self(keys))
    }
}

impl fmt::Display for MatchOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&keys.join(","))
    }
}

impl MatchOn {
    /// The key of a request as a recording holds it: its body already redacted and
    /// normalized (across the whole recording; renumbered here within the request), and
    /// the turn whose response it continued, if any.
    pub fn recorded_key(
        &self,
        method: &str,
        path: &str,
        body: &Value,
        continues: Option<usize>,
    ) -> String {
        self.key_of(method, path, body, continues)
    }

    /// The key of a live request, redacted by `redactor` as its recording was;
    /// `continues` is the recorded turn whose response its `previous_response_id` names.
    pub fn live_key(
        &self,
        method: &str,
        path: &str,
        body: &Value,
        redactor: &Redactor,
        continues: Option<usize>,
    ) -> String {
        let mut body = body.clone();
        redactor.body(&mut body);
        redactor.value(&mut body);
        let path = redactor.text(path);
        self.key_of(method, &path, &body, continues)
    }

    /// Two conversations can send the same continuation (the same tool output after a
    /// response of their own): the turn they continue tells them apart, where the
    /// response id, numbered within the request, would not.
    fn key_of(&self, method: &str, path: &str, body: &Value, continues: Option<usize>) -> String {
        let mut body = Cow::Borrowed(body);
        if let Some(turn) = continues
            && body.get("previous_response_id").is_some()
        {
            body.to_mut()["previous_response_id"] = Value::from(format!("[turn {turn}]"));
        }
        let body = &*body;
        let mut parts = Map::new();
        let mut fields = Map::new();
        for key in &self.0 {
            match key {
                MatchKey::Method => {
                    parts.insert("method".into(), Value::from(method.to_ascii_uppercase()));
                }
                MatchKey::Path => {
                    let path = path.split('?').next().unwrap_or(path);
                    parts.insert("path".into(), renumbered_alone(&Value::from(path)));
                }
                MatchKey::Body => {
                    parts.insert("body".into(), renumbered_alone(body));
                }
                MatchKey::BodyField(name) => {
                    let field = body.get(name).cloned().unwrap_or(Value::Null);
                    fields.insert(name.clone(), field);
                }
            }
        }
        if !fields.is_empty() {
            parts.insert("fields".into(), renumbered_alone(&Value::Object(fields)));
        }
        Value::Object(parts).to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_live_request_and_its_recording_share_a_key_whatever_came_before() {
        let on = MatchOn::default();
        let live = json!({"input": [{"type": "function_call_output",
            "call_id": "call_AbCdEfGhIjKlMnOpQrStUvWx", "output": "42"}],
            "previous_response_id": format!("resp_{}", "ab".repeat(24))});
        // The recording numbered the same ids across the whole run.
        let recorded = json!({"input": [{"type": "function_call_output",
            "call_id": "call_3", "output": "42"}], "previous_response_id": "resp_5"});
        let redactor = Redactor::default();
        assert_eq!(
            on.live_key("POST", "/v1/responses", &live, &redactor, Some(2)),
            on.recorded_key("POST", "/v1/responses", &recorded, Some(2))
        );
        // The same continuation of another conversation is another request.
        assert_ne!(
            on.live_key("POST", "/v1/responses", &live, &redactor, Some(4)),
            on.recorded_key("POST", "/v1/responses", &recorded, Some(2))
        );
        let other = json!({"input": [{"type": "function_call_output",
            "call_id": "call_3", "output": "43"}], "previous_response_id": "resp_5"});
        assert_ne!(
            on.recorded_key("POST", "/v1/responses", &other, None),
            on.recorded_key("POST", "/v1/responses", &recorded, None)
        );
    }

    #[test]
    fn named_body_fields_leave_the_rest_out() {
        let on: MatchOn = "method,body.model".parse().expect("valid keys");
        let a = on.recorded_key(
            "POST",
            "/v1/responses",
            &json!({"model": "m", "input": "a"}),
            None,
        );
        let b = on.recorded_key(
            "POST",
            "/v1/responses",
            &json!({"model": "m", "input": "b"}),
            None,
        );
        assert_eq!(a, b);
        assert_eq!(on.to_string(), "method,body.model");
        assert!("method,headers".parse::<MatchOn>().is_err());
    }
}
