//! A request's headers as a transcript keeps them: names lowercase, secrets redacted.
//! Recording writes them as one block of text; they become a sorted map the first time
//! something reads them, as bodies are parsed only when read ([`super::LazyJson`]).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use hyper::HeaderMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::redact::Redactor;

/// Request headers, read as a map from lowercase name to value (a name sent twice keeps
/// its last value).
#[derive(Clone, Default)]
pub struct RecordedHeaders {
    /// `name:value` lines, as recorded: bytes, made text (invalid UTF-8 replaced) only
    /// when read.
    text: Vec<u8>,
    map: OnceLock<BTreeMap<String, String>>,
}

impl RecordedHeaders {
    /// Records `headers` as `redactor` keeps them: a secret header's value redacted, and
    /// any secret in another's. Values are read as text (invalid UTF-8 replaced). A header
    /// map's names are lowercase and its values have no line break, so each header takes
    /// one line.
    pub fn record(headers: &HeaderMap, redactor: &Redactor) -> Self {
        let mut text = Vec::with_capacity(256);
        for (name, value) in headers {
            text.extend_from_slice(name.as_str().as_bytes());
            text.push(b':');
            let value = String::from_utf8_lossy(value.as_bytes());
            text.extend_from_slice(redactor.header(name.as_str(), &value).as_bytes());
            text.push(b'\n');
        }
        Self {
            text,
            map: OnceLock::new(),
        }
    }

    fn map(&self) -> &BTreeMap<String, String> {
        self.map.get_or_init(|| {
            let text = |bytes| String::from_utf8_lossy(bytes).into_owned();
            self.text
                .split(|&byte| byte == b'\n')
                .filter_map(|line| {
                    let colon = line.iter().position(|&byte| byte == b':')?;
                    Some((text(&line[..colon]), text(&line[colon + 1..])))
                })
                .collect()
        })
    }
}

impl std::ops::Deref for RecordedHeaders {
    type Target = BTreeMap<String, String>;

    fn deref(&self) -> &Self::Target {
        self.map()
    }
}

impl<'a> IntoIterator for &'a RecordedHeaders {
    type Item = (&'a String, &'a String);
    type IntoIter = std::collections::btree_map::Iter<'a, String, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.map().iter()
    }
}

impl From<BTreeMap<String, String>> for RecordedHeaders {
    fn from(map: BTreeMap<String, String>) -> Self {
        Self {
            text: Vec::new(),
            map: OnceLock::from(map),
        }
    }
}

impl std::fmt::Debug for RecordedHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.map().fmt(f)
    }
}

impl Serialize for RecordedHeaders {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.map().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RecordedHeaders {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::REDACTED;
    use hyper::header::HeaderValue;

    #[test]
    fn recorded_headers_read_as_a_sorted_map_with_secrets_redacted() {
        let mut sent = HeaderMap::new();
        sent.append("x-b", "two".parse().unwrap());
        sent.append("authorization", "Bearer sk-secret".parse().unwrap());
        sent.append("x-a", "one: with a colon".parse().unwrap());
        sent.append("x-b", "last wins".parse().unwrap());
        sent.append("x-odd", HeaderValue::from_bytes(b"bytes \xff").unwrap());
        sent.append("openai-organization", "org-secretorgid".parse().unwrap());
        sent.append("x-echo", "key sk-secret-0123456789".parse().unwrap());
        let headers = RecordedHeaders::record(&sent, &Redactor::default());
        let expected: BTreeMap<String, String> = [
            ("authorization", REDACTED),
            ("openai-organization", REDACTED),
            ("x-echo", "key [redacted]"),
            ("x-a", "one: with a colon"),
            ("x-b", "last wins"),
            ("x-odd", "bytes \u{fffd}"),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(*headers, expected);
        assert!(!format!("{headers:?}").contains("sk-secret"));
        assert!(!format!("{headers:?}").contains("secretorgid"));
        let json = serde_json::to_string(&headers).unwrap();
        assert_eq!(json, serde_json::to_string(&expected).unwrap());
        let back: RecordedHeaders = serde_json::from_str(&json).unwrap();
        assert_eq!(*back, expected);
    }
}
