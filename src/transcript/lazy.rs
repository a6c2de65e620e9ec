//! An answer body as the transcript keeps it: the bytes that went out, parsed into a
//! [`Value`] the first time something reads it. The fake server writes its answers
//! straight to bytes; only the oracle and the reports, after the run, need values, so a
//! request costs no tree of values while it is being served.

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// JSON kept as text until read, then as a [`Value`] (it reads and compares as one).
#[derive(Default)]
pub struct LazyJson {
    text: Text,
    value: OnceLock<Value>,
}

/// Where the value is parsed from.
#[derive(Debug, Clone, Default)]
enum Text {
    /// Nothing: the value is set.
    #[default]
    None,
    /// One JSON document.
    Json(Bytes),
    /// Server-sent events (`event: ...\ndata: <json>\n\n`): an array of their data.
    Events(Bytes),
}

impl LazyJson {
    /// A JSON document's text, parsed when read (`null` if it is not JSON).
    pub fn json(text: Bytes) -> Self {
        Self {
            text: Text::Json(text),
            value: OnceLock::new(),
        }
    }

    /// Server-sent events' text, read as the array of their `data` documents.
    pub fn events(text: Bytes) -> Self {
        Self {
            text: Text::Events(text),
            value: OnceLock::new(),
        }
    }

    /// The JSON text of a document: as kept, or rendered from the value.
    pub fn to_bytes(&self) -> Bytes {
        match &self.text {
            Text::Json(text) => text.clone(),
            _ => Bytes::from(serde_json::to_vec(self.deref()).expect("a Value serializes")),
        }
    }

    /// The value, parsed now if it was not yet.
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| match &self.text {
            Text::None => Value::Null,
            Text::Json(text) => serde_json::from_slice(text).unwrap_or(Value::Null),
            Text::Events(text) => Value::Array(event_data(text)),
        })
    }
}

/// Every `data:` line of an event stream, parsed (`null` where one is not JSON).
pub(crate) fn event_data(text: &[u8]) -> Vec<Value> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data: "))
        .map(|data| serde_json::from_slice(data).unwrap_or(Value::Null))
        .collect()
}

impl From<Value> for LazyJson {
    fn from(value: Value) -> Self {
        Self {
            text: Text::None,
            value: OnceLock::from(value),
        }
    }
}

impl Deref for LazyJson {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl DerefMut for LazyJson {
    /// A value changed in place no longer matches its text, which is dropped.
    fn deref_mut(&mut self) -> &mut Value {
        self.value();
        self.text = Text::None;
        self.value.get_mut().expect("parsed above")
    }
}

impl Clone for LazyJson {
    fn clone(&self) -> Self {
        Self {
            text: self.text.clone(),
            value: self.value.clone(),
        }
    }
}

impl std::fmt::Debug for LazyJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl std::fmt::Display for LazyJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl PartialEq for LazyJson {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for LazyJson {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl PartialEq<LazyJson> for Value {
    fn eq(&self, other: &LazyJson) -> bool {
        self == other.value()
    }
}

impl Serialize for LazyJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LazyJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_reads_as_the_value_it_holds() {
        let lazy = LazyJson::json(Bytes::from_static(br#"{"b":1,"a":[true,null]}"#));
        assert_eq!(lazy["a"][0], true);
        assert_eq!(
            serde_json::to_string(&lazy).unwrap(),
            r#"{"b":1,"a":[true,null]}"#
        );
        assert_eq!(
            lazy.to_bytes(),
            Bytes::from_static(br#"{"b":1,"a":[true,null]}"#)
        );
    }

    #[test]
    fn events_read_as_the_array_of_their_data() {
        let text = "event: a\ndata: {\"type\":\"a\"}\n\nevent: b\ndata: {\"type\":\"b\"}\n\n";
        let lazy = LazyJson::events(Bytes::from(text));
        assert_eq!(*lazy, json!([{"type": "a"}, {"type": "b"}]));
    }

    #[test]
    fn a_change_in_place_drops_the_text() {
        let mut lazy = LazyJson::json(Bytes::from_static(br#"{"a":1}"#));
        lazy["a"] = json!(2);
        assert_eq!(lazy.to_bytes(), Bytes::from_static(br#"{"a":2}"#));
        assert_eq!(
            LazyJson::from(json!(3)).to_bytes(),
            Bytes::from_static(b"3")
        );
    }
}
