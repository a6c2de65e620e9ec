//! Snapshot redactions: fields a team knows vary from run to run (a request's
//! `metadata.trace_id`, a `user`, a date in the instructions), replaced by a placeholder
//! in what a snapshot compares and in what it writes, after normalization.
//!
//! A selector is a JSON pointer into the snapshot's content (the normalized transcript as
//! the `.snap` file shows it), where a segment `*` is any key of an object or any index of
//! a list: `/steps/*/model/body/metadata/trace_id` is that field in every model request.
//! `~0` and `~1` stand for `~` and `/` in a key, as in RFC 6901.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// Why a selector cannot be used: what is wrong, for the settings file to place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// It does not start with `/`.
    #[error("selector '{0}' does not start with `/`")]
    NoRoot(String),
    /// An empty segment (`//`, or a trailing `/`).
    #[error("selector '{0}' has an empty segment")]
    EmptySegment(String),
    /// A `~` not followed by `0` or `1`.
    #[error("selector '{0}' has a `~` not followed by 0 or 1")]
    BadEscape(String),
}

/// One segment of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Any key of an object, any index of a list.
    Any,
    /// This key, or this index when the value is a list.
    Key(String),
}

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    written: String,
    segments: Vec<Segment>,
}

impl Selector {
    /// Parses `/a/*/b`.
    pub fn parse(written: &str) -> Result<Self, SelectorError> {
        let Some(rest) = written.strip_prefix('/') else {
            return Err(SelectorError::NoRoot(written.to_owned()));
        };
        let segments = rest
            .split('/')
            .map(|segment| match segment {
                "" => Err(SelectorError::EmptySegment(written.to_owned())),
                "*" => Ok(Segment::Any),
                key => unescape(key)
                    .map(Segment::Key)
                    .ok_or_else(|| SelectorError::BadEscape(written.to_owned())),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            written: written.to_owned(),
            segments,
        })
    }

    /// The selector as written.
    pub fn as_str(&self) -> &str {
        &self.written
    }

    /// Replaces every value it selects in `value` with `placeholder`; how many it replaced.
    fn replace(&self, value: &mut Value, placeholder: &Value) -> usize {
        replace_at(value, &self.segments, placeholder)
    }
}

/// `~1` is `/` and `~0` is `~`; `None` for any other `~`.
fn unescape(key: &str) -> Option<String> {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '~' => match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

fn replace_at(value: &mut Value, segments: &[Segment], placeholder: &Value) -> usize {
    let Some((first, rest)) = segments.split_first() else {
        *value = placeholder.clone();
        return 1;
    };
    match (first, value) {
        (Segment::Any, Value::Object(map)) => map
            .values_mut()
            .map(|v| replace_at(v, rest, placeholder))
            .sum(),
        (Segment::Any, Value::Array(items)) => items
            .iter_mut()
            .map(|v| replace_at(v, rest, placeholder))
            .sum(),
        (Segment::Key(key), Value::Object(map)) => map
            .get_mut(key)
            .map_or(0, |v| replace_at(v, rest, placeholder)),
        (Segment::Key(key), Value::Array(items)) => key
            .parse::<usize>()
            .ok()
            .and_then(|index| items.get_mut(index))
            .map_or(0, |v| replace_at(v, rest, placeholder)),
        _ => 0,
    }
}

/// The redactions of a run, each with how many values it replaced so far (shared by
/// every clone, so a run can name the selectors that matched nothing at its end).
#[derive(Debug, Clone, Default)]
pub struct Redactions {
    rules: Arc<[(Selector, Value)]>,
    hits: Arc<[AtomicUsize]>,
}

impl Redactions {
    /// Redactions replacing what each selector selects with its placeholder.
    pub fn new(rules: Vec<(Selector, String)>) -> Self {
        let hits = rules.iter().map(|_| AtomicUsize::new(0)).collect();
        let rules = rules
            .into_iter()
            .map(|(selector, placeholder)| (selector, Value::String(placeholder)))
            .collect();
        Self { rules, hits }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Applies every redaction to `value`; `count` says whether its hits count toward
    /// [`Self::unmatched`] (what the controller sent now does, a stored snapshot does not).
    pub fn apply(&self, value: &mut Value, count: bool) {
        for ((selector, placeholder), hits) in self.rules.iter().zip(self.hits.iter()) {
            let replaced = selector.replace(value, placeholder);
            if count {
                hits.fetch_add(replaced, Ordering::Relaxed);
            }
        }
    }

    /// The selectors that have replaced nothing yet.
    pub fn unmatched(&self) -> Vec<&str> {
        self.rules
            .iter()
            .zip(self.hits.iter())
            .filter(|(_, hits)| hits.load(Ordering::Relaxed) == 0)
            .map(|((selector, _), _)| selector.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactions(rules: &[(&str, &str)]) -> Redactions {
        Redactions::new(
            rules
                .iter()
                .map(|(s, p)| (Selector::parse(s).unwrap(), (*p).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn a_star_selects_every_key_and_index_and_a_missing_field_is_left_alone() {
        let mut value = json!({"steps": [
            {"model": {"body": {"metadata": {"trace_id": "a1"}}}},
            {"tool": {"arguments": {}}},
            {"model": {"body": {"metadata": {"trace_id": "b2"}}}},
        ]});
        let r = redactions(&[
            ("/steps/*/model/body/metadata/trace_id", "[trace id]"),
            ("/steps/0/model/body/user", "[user]"),
        ]);
        r.apply(&mut value, true);
        assert_eq!(
            value["steps"][0]["model"]["body"]["metadata"]["trace_id"],
            "[trace id]"
        );
        assert_eq!(
            value["steps"][2]["model"]["body"]["metadata"]["trace_id"],
            "[trace id]"
        );
        assert_eq!(value["steps"][1], json!({"tool": {"arguments": {}}}));
        assert_eq!(r.unmatched(), vec!["/steps/0/model/body/user"]);
    }

    #[test]
    fn a_stored_snapshot_does_not_count_as_a_match() {
        let mut value = json!({"a": 1});
        let r = redactions(&[("/a", "x")]);
        r.apply(&mut value, false);
        assert_eq!(value, json!({"a": "x"}));
        assert_eq!(r.unmatched(), vec!["/a"]);
    }

    #[test]
    fn escapes_and_malformed_selectors() {
        let mut value = json!({"a/b": {"~c": 1}});
        redactions(&[("/a~1b/~0c", "x")]).apply(&mut value, true);
        assert_eq!(value, json!({"a/b": {"~c": "x"}}));
        assert_eq!(
            Selector::parse("steps/*").unwrap_err(),
            SelectorError::NoRoot("steps/*".to_owned())
        );
        assert!(matches!(
            Selector::parse("/steps//body"),
            Err(SelectorError::EmptySegment(_))
        ));
        assert!(matches!(
            Selector::parse("/a~2"),
            Err(SelectorError::BadEscape(_))
        ));
    }
}
