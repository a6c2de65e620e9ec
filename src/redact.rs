//! The one redactor: what loopcheck writes or prints (cassettes, transcripts, snapshots,
//! every report, its own error messages) passes through it, so a secret a controller or
//! an upstream handled never reaches a file or a terminal.
//!
//! It knows secret header names (`Authorization`, `OpenAI-Organization`, cookies,
//! API-key headers, plus those configured), secret query parameters (`api-key`, `key`,
//! `token`, `sig`, ... plus those configured), the user:password part of a URL, and value
//! patterns (`sk-...` keys, GitHub tokens, JWTs, bearer tokens, plus user patterns). A
//! value it found under a secret name is remembered for the rest of the process and
//! redacted wherever else it turns up (an upstream's error body echoing the key). It
//! depends on nothing else in loopcheck: recording, transcripts and reports use it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::{Arc, LazyLock, OnceLock, RwLock};

use regex::Regex;
use serde::Deserialize;
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

/// Query parameter names whose value is a secret, lowercase.
const SECRET_QUERY: &[&str] = &[
    "api-key",
    "api_key",
    "apikey",
    "key",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "auth",
    "sig",
    "signature",
    "password",
    "secret",
    "client_secret",
];

/// Keys, tokens and JWTs, wherever they appear in a string.
const SECRET_VALUES: &[&str] = &[
    r"sk-[A-Za-z0-9_\-]{8,}",
    r"whsec_[A-Za-z0-9+/]{8,}={0,2}",
    r"gh[pousr]_[A-Za-z0-9]{16,}",
    r"github_pat_[A-Za-z0-9_]{16,}",
    r"(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{8,}",
    r"eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
];

/// A remembered value shorter than this would redact ordinary words.
const SHORTEST_LEARNED: usize = 8;

/// The rules a `[redact]` table of `loopcheck.toml` adds to the built-in ones.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// More header names whose value is a secret.
    #[serde(default)]
    pub headers: Vec<String>,
    /// More query parameter names whose value is a secret.
    #[serde(default)]
    pub query: Vec<String>,
    /// More regular expressions whose matches are secrets.
    #[serde(default)]
    pub patterns: Vec<String>,
}

/// A rule that is not valid.
#[derive(Debug, thiserror::Error)]
#[error("invalid {what} {value:?}: {why}")]
pub struct RuleError {
    what: &'static str,
    value: String,
    why: String,
}

/// The redaction rules in force, and the secret values seen so far.
#[derive(Debug, Clone)]
pub struct Redactor {
    headers: Vec<String>,
    query: Vec<String>,
    /// The user's patterns, as given (kept to extend them).
    patterns: Vec<String>,
    /// JSON pointers redacted in every body (`record --redact-json`).
    pointers: Vec<String>,
    /// Every pattern, secret query value and URL userinfo in one expression.
    matcher: Regex,
    /// Values seen under a secret name, shared by every redactor derived from one.
    learned: Arc<RwLock<BTreeSet<String>>>,
}

static BUILT_IN: LazyLock<Redactor> = LazyLock::new(|| {
    Redactor::build(Vec::new(), Vec::new(), Vec::new(), Vec::new())
        .expect("the built-in patterns compile")
});

static INSTALLED: OnceLock<Redactor> = OnceLock::new();

/// Makes `redactor` the process's redactor (from `loopcheck.toml`); the first call wins,
/// as the settings of one command are read once.
pub fn install(redactor: Redactor) {
    let _ = INSTALLED.set(redactor);
}

/// The process's redactor: the installed one, else the built-in rules.
pub fn installed() -> &'static Redactor {
    INSTALLED.get().unwrap_or(&BUILT_IN)
}

impl Default for Redactor {
    fn default() -> Self {
        BUILT_IN.clone()
    }
}

fn lowercase(names: &[String]) -> impl Iterator<Item = String> + '_ {
    names.iter().map(|n| n.trim().to_ascii_lowercase())
}

impl Redactor {
    /// The built-in rules plus a `[redact]` table's.
    pub fn new(rules: &Rules) -> Result<Self, RuleError> {
        validate_patterns(&rules.patterns, "[redact] pattern")?;
        Self::build(
            lowercase(&rules.headers).collect(),
            lowercase(&rules.query).collect(),
            rules.patterns.clone(),
            Vec::new(),
        )
        .map_err(|err| RuleError {
            what: "[redact] query name",
            value: rules.query.join(", "),
            why: err.to_string(),
        })
    }

    /// These rules plus a recording's JSON pointers and regular expressions
    /// (`--redact-json`, `--redact-regex`), remembering what this one remembers.
    pub fn with(&self, pointers: &[String], patterns: &[String]) -> Result<Self, RuleError> {
        if pointers.is_empty() && patterns.is_empty() {
            return Ok(self.clone());
        }
        for pointer in pointers {
            if !pointer.is_empty() && !pointer.starts_with('/') {
                return Err(RuleError {
                    what: "--redact-json pointer",
                    value: pointer.clone(),
                    why: "a JSON pointer starts with `/` (e.g. /metadata/user)".to_owned(),
                });
            }
        }
        validate_patterns(patterns, "--redact-regex")?;
        let mut built = Self::build(
            self.headers.clone(),
            self.query.clone(),
            self.patterns.iter().chain(patterns).cloned().collect(),
            self.pointers.iter().chain(pointers).cloned().collect(),
        )
        .map_err(|err| RuleError {
            what: "--redact-regex",
            value: patterns.join(", "),
            why: err.to_string(),
        })?;
        built.learned = self.learned.clone();
        Ok(built)
    }

    fn build(
        headers: Vec<String>,
        query: Vec<String>,
        patterns: Vec<String>,
        pointers: Vec<String>,
    ) -> Result<Self, regex::Error> {
        let names: Vec<String> = SECRET_QUERY
            .iter()
            .map(|n| n.to_string())
            .chain(query.iter().cloned())
            .map(|n| regex::escape(&n))
            .collect();
        let values = SECRET_VALUES
            .iter()
            .map(|p| p.to_string())
            .chain(patterns.iter().cloned())
            .map(|p| format!("(?:{p})"))
            .collect::<Vec<_>>()
            .join("|");
        // Leftmost-first: a query value or a userinfo is taken whole before a pattern
        // could match only part of it. A query value ends where a message goes on
        // ("at URL: why").
        let matcher = format!(
            r#"[?&;](?i:{})=(?P<lcq>[^&#\s"'<>:;,()\[\]]+)|(?i:\b[a-z][a-z0-9+.\-]*://)(?P<lcu>[^/?#\s@"'<>]+)@|{values}"#,
            names.join("|")
        );
        Ok(Self {
            headers,
            query,
            patterns,
            pointers,
            matcher: Regex::new(&matcher)?,
            learned: Arc::default(),
        })
    }

    /// Whether a header's (or a JSON field's) value must never be kept.
    pub fn secret_header(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        SECRET_HEADERS.contains(&name.as_str()) || self.headers.contains(&name)
    }

    /// A header's value as it may be kept: [`REDACTED`] for a secret name (whose value is
    /// remembered), else the value with any secret in it redacted.
    pub fn header<'a>(&self, name: &str, value: &'a str) -> Cow<'a, str> {
        if self.secret_header(name) {
            self.learn(value);
            // `Bearer KEY`, `Basic TOKEN`: the credential alone may be echoed too.
            if let Some((_, last)) = value.trim().rsplit_once(char::is_whitespace) {
                self.learn(last);
            }
            return Cow::Borrowed(REDACTED);
        }
        self.text(value)
    }

    /// Remembers a secret value, unless a pattern already finds it or it is too short to
    /// be told from ordinary text.
    fn learn(&self, value: &str) {
        let value = value.trim();
        if value.len() < SHORTEST_LEARNED || value == REDACTED || self.matcher.is_match(value) {
            return;
        }
        if let Ok(mut learned) = self.learned.write() {
            learned.insert(value.to_owned());
        }
    }

    /// Where the secrets in `text` lie: sorted, not overlapping.
    fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut spans = Vec::new();
        for caps in self.matcher.captures_iter(text) {
            let named = caps.name("lcq").or_else(|| caps.name("lcu"));
            match named {
                Some(value) => {
                    let secret = value.as_str();
                    // A userinfo's password, a query's key: redacted wherever else seen.
                    self.learn(secret.rsplit(':').next().unwrap_or(secret));
                    spans.push(value.range());
                }
                None => spans.extend(caps.get(0).map(|m| m.range())),
            }
        }
        if let Ok(learned) = self.learned.read() {
            for secret in learned.iter() {
                spans.extend(text.match_indices(secret).map(|(at, s)| at..at + s.len()));
            }
        }
        spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
        for span in spans {
            match merged.last_mut() {
                Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
                _ => merged.push(span),
            }
        }
        merged
    }

    /// `text` with every secret in it replaced by [`REDACTED`].
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(resplit(text, &[0, text.len()], &spans).concat())
    }

    /// Applies the JSON pointers to a body (a request's, a response's, an event's), then
    /// redacts every string in it.
    pub fn body(&self, body: &mut Value) {
        for pointer in &self.pointers {
            if let Some(target) = body.pointer_mut(pointer) {
                *target = Value::String(REDACTED.to_owned());
            }
        }
        self.value(body);
    }

    /// Redacts every string in `value`, and the whole value of any field named like a
    /// secret header, at any depth.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.text(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(fields) => {
                for (key, field) in fields.iter_mut() {
                    if self.secret_header(key) {
                        *field = Value::String(REDACTED.to_owned());
                    } else {
                        self.value(field);
                    }
                }
            }
            _ => {}
        }
    }

    /// Redacts what a stream's deltas spell together: a key split over several
    /// `*.delta` events matches no pattern piece by piece. The deltas of each part (same
    /// type, item and index) are joined, redacted whole, and split again at the same
    /// places, so the stream keeps its events; a redaction lands in the delta where the
    /// secret began.
    pub fn stream(&self, events: &mut [&mut Value]) {
        let mut parts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (index, event) in events.iter().enumerate() {
            let kind = event["type"].as_str().unwrap_or_default();
            if kind.ends_with(".delta") && event["delta"].is_string() {
                let part = format!(
                    "{kind} {} {} {}",
                    event["item_id"], event["output_index"], event["content_index"]
                );
                parts.entry(part).or_default().push(index);
            }
        }
        for indices in parts.values() {
            let pieces: Vec<&str> = indices
                .iter()
                .map(|&i| events[i]["delta"].as_str().unwrap_or_default())
                .collect();
            let whole = pieces.concat();
            let spans = self.spans(&whole);
            if spans.is_empty() {
                continue;
            }
            let mut bounds = vec![0];
            for piece in &pieces {
                bounds.push(bounds.last().copied().unwrap_or(0) + piece.len());
            }
            let split = resplit(&whole, &bounds, &spans);
            for (&i, piece) in indices.iter().zip(split) {
                events[i]["delta"] = Value::String(piece);
            }
        }
    }
}

fn validate_patterns(patterns: &[String], what: &'static str) -> Result<(), RuleError> {
    for pattern in patterns {
        Regex::new(pattern).map_err(|err| RuleError {
            what,
            value: pattern.clone(),
            why: err.to_string(),
        })?;
    }
    Ok(())
}

/// The pieces of `whole` between `bounds` (byte offsets, first 0, last its length) with
/// each span replaced by [`REDACTED`], which goes to the piece the span starts in.
fn resplit(whole: &str, bounds: &[usize], spans: &[Range<usize>]) -> Vec<String> {
    bounds
        .windows(2)
        .map(|piece| {
            let (start, end) = (piece[0], piece[1]);
            let mut out = String::new();
            let mut at = start;
            for span in spans {
                if span.end <= start || span.start >= end {
                    continue;
                }
                if span.start > at {
                    out.push_str(&whole[at..span.start]);
                }
                if span.start >= start {
                    out.push_str(REDACTED);
                }
                at = at.max(span.end.min(end));
            }
            if at < end {
                out.push_str(&whole[at..end]);
            }
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_tokens_and_jwts_are_redacted_anywhere() {
        let r = Redactor::default();
        assert_eq!(r.text("x=sk-proj-abcdEFGH1234 y=1"), "x=[redacted] y=1");
        assert_eq!(
            r.text(r#""signing_secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La+/Sw""#),
            r#""signing_secret":"[redacted]""#
        );
        assert_eq!(r.text("Bearer abc.def-ghi_jkl"), "[redacted]");
        assert_eq!(
            r.text("token eyJhbGciOiJI.eyJzdWIiOiIx.sig-nature here"),
            "token [redacted] here"
        );
        assert_eq!(
            r.text("ghp_abcdefghijklmnopqrstuvwxyz0123 and github_pat_11ABCDEFG0123456789_xyz"),
            "[redacted] and [redacted]"
        );
        assert_eq!(r.text("call_AbCdEfGh is fine"), "call_AbCdEfGh is fine");
    }

    #[test]
    fn query_secrets_and_userinfo_are_redacted_and_remembered() {
        let r = Redactor::default();
        assert_eq!(
            r.text("at https://me:hunter2pass@api.example.com/v1/responses?api-version=1&api-key=azq7Hf3kLm9P: refused"),
            "at https://[redacted]@api.example.com/v1/responses?api-version=1&api-key=[redacted]: refused"
        );
        assert_eq!(
            r.text("/v1/responses?stream=true"),
            "/v1/responses?stream=true"
        );
        // Seen once under a secret name, the values are secrets wherever they turn up.
        assert_eq!(
            r.text("quota exceeded for azq7Hf3kLm9P (hunter2pass)"),
            "quota exceeded for [redacted] ([redacted])"
        );
    }

    #[test]
    fn configured_headers_and_query_names_are_secret() {
        let rules = Rules {
            headers: vec!["X-Tenant-Secret".to_owned()],
            query: vec!["sas".to_owned()],
            patterns: vec!["acct-[0-9]+".to_owned()],
        };
        let r = Redactor::new(&rules).unwrap();
        assert_eq!(r.header("x-tenant-secret", "tenantvalue42"), REDACTED);
        assert_eq!(r.header("OpenAI-Project", "proj_abc"), REDACTED);
        assert_eq!(r.header("accept", "application/json"), "application/json");
        assert_eq!(r.text("echo tenantvalue42"), "echo [redacted]");
        assert_eq!(
            r.text("/x?sas=abc&b=1 acct-7"),
            "/x?sas=[redacted]&b=1 [redacted]"
        );
        assert!(
            Redactor::new(&Rules {
                patterns: vec!["(".to_owned()],
                ..Rules::default()
            })
            .is_err()
        );
    }

    #[test]
    fn secret_fields_are_redacted_at_any_depth() {
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
    fn recording_rules_extend_the_installed_ones() {
        let r = Redactor::default()
            .with(&["/metadata/user".to_owned()], &["acct-[0-9]+".to_owned()])
            .unwrap();
        let mut body = json!({"metadata": {"user": "alice"}, "input": "account acct-42"});
        r.body(&mut body);
        assert_eq!(
            body,
            json!({"metadata": {"user": "[redacted]"}, "input": "account [redacted]"})
        );
        assert!(
            Redactor::default()
                .with(&["metadata".to_owned()], &[])
                .is_err()
        );
        assert!(Redactor::default().with(&[], &["(".to_owned()]).is_err());
    }

    #[test]
    fn a_key_split_over_deltas_is_redacted_and_the_events_kept() {
        let r = Redactor::default();
        let delta = |text: &str| {
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "delta": text})
        };
        let mut events = [
            delta("Your key: sk-pr"),
            delta("oj-abcd"),
            delta("EFGH1234"),
            delta(". Done"),
            json!({"type": "response.completed"}),
        ];
        let mut refs: Vec<&mut Value> = events.iter_mut().collect();
        r.stream(&mut refs);
        let deltas: Vec<&str> = events[..4]
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, ["Your key: [redacted]", "", "", ". Done"]);
        assert_eq!(events[4], json!({"type": "response.completed"}));
    }
}
