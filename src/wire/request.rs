//! The `POST /v1/responses` request body.

use serde::de::{
    Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

use super::error::ApiError;

/// A parsed create-response request. Fields loopcheck reads are typed; everything else is
/// kept in `extra`, so nothing a controller sends is lost from the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRequest {
    /// `model` (required by the API).
    pub model: Option<String>,
    /// `input`, normalized to an array of items (a string becomes one user message).
    pub input: Vec<Value>,
    /// True when `input` was sent as a plain string.
    pub input_was_string: bool,
    /// `instructions`.
    pub instructions: Option<String>,
    /// `tools`.
    pub tools: Vec<Value>,
    /// `tool_choice`, when sent (the API's default is `"auto"`).
    pub tool_choice: Option<Value>,
    /// `parallel_tool_calls` (default true).
    pub parallel_tool_calls: bool,
    /// `previous_response_id`.
    pub previous_response_id: Option<String>,
    /// `store` (default true).
    pub store: bool,
    /// `stream` (default false).
    pub stream: bool,
    /// `background` (default false).
    pub background: bool,
    /// `include`.
    pub include: Vec<String>,
    /// Every other top-level key, preserved.
    pub extra: Map<String, Value>,
}

impl CreateRequest {
    /// Parses a JSON body, with the real API's errors for the wrong shapes. The body is
    /// read in one pass: the known keys go straight to their fields and only the others
    /// into `extra`, without a map of the whole body built first and taken apart.
    pub fn from_json(body: &[u8]) -> Result<Self, ApiError> {
        let mut known = KnownSlots::default();
        // Text checked as UTF-8 once is not checked again string by string; a body that is
        // not UTF-8 is read as bytes, to fail where its first bad string is.
        let top = match std::str::from_utf8(body) {
            Ok(text) => read_top_level(serde_json::Deserializer::from_str(text), &mut known),
            Err(_) => read_top_level(serde_json::Deserializer::from_slice(body), &mut known),
        };
        match top {
            Err(_) => Err(ApiError::unparsable_body()),
            Ok(TopLevel::NotAnObject) => Err(ApiError::invalid_type("body", "an object")),
            Ok(TopLevel::Object { extra }) => Self::from_fields(known, extra),
        }
    }

    /// The request from its known keys' values (by [`Known`] slot) and the rest.
    fn from_fields(mut known: KnownSlots, extra: Map<String, Value>) -> Result<Self, ApiError> {
        let mut take = |key: Known| known[key as usize].take().filter(|v| !v.is_null());

        let model = match take(Known::Model) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(ApiError::invalid_type("model", "a string")),
        };
        let (input, input_was_string) = match take(Known::Input) {
            None => (Vec::new(), false),
            Some(Value::String(text)) => (vec![user_message(text)], true),
            Some(Value::Array(items)) => (items, false),
            Some(_) => return Err(ApiError::invalid_type("input", "a string or an array")),
        };
        let instructions = match take(Known::Instructions) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(ApiError::invalid_type("instructions", "a string")),
        };
        let tools = match take(Known::Tools) {
            None => Vec::new(),
            Some(Value::Array(tools)) => tools,
            Some(_) => return Err(ApiError::invalid_type("tools", "an array")),
        };
        let tool_choice = take(Known::ToolChoice);
        let parallel_tool_calls =
            bool_field(take(Known::ParallelToolCalls), "parallel_tool_calls", true)?;
        let previous_response_id = match take(Known::PreviousResponseId) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(ApiError::invalid_type("previous_response_id", "a string")),
        };
        let store = bool_field(take(Known::Store), "store", true)?;
        let stream = bool_field(take(Known::Stream), "stream", false)?;
        let background = bool_field(take(Known::Background), "background", false)?;
        let include = match take(Known::Include) {
            None => Vec::new(),
            Some(Value::Array(values)) => values
                .into_iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ApiError::invalid_type("include", "an array of strings"))?,
            Some(_) => return Err(ApiError::invalid_type("include", "an array of strings")),
        };
        Ok(Self {
            model,
            input,
            input_was_string,
            instructions,
            tools,
            tool_choice,
            parallel_tool_calls,
            previous_response_id,
            store,
            stream,
            background,
            include,
            extra,
        })
    }
}

/// Reads a whole body: its known keys into `known`, the rest returned.
fn read_top_level<'de, R: serde_json::de::Read<'de>>(
    mut reader: serde_json::Deserializer<R>,
    known: &mut KnownSlots,
) -> serde_json::Result<TopLevel> {
    let top = TopLevelSeed { known }.deserialize(&mut reader)?;
    reader.end()?;
    Ok(top)
}

/// A string `input` as the user message it stands for. The message is cloned from one
/// built once: building it inserts each key into `serde_json`'s ordered map, which
/// hashes it with SipHash, on every request.
fn user_message(text: String) -> Value {
    static MESSAGE: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(|| {
        let mut message = Map::with_capacity(2);
        message.insert("role".to_owned(), Value::String("user".to_owned()));
        message.insert("content".to_owned(), Value::String(String::new()));
        message
    });
    let mut message = MESSAGE.clone();
    if let Some(content) = message.values_mut().last() {
        *content = Value::String(text);
    }
    Value::Object(message)
}

/// The top-level keys [`CreateRequest`] reads into typed fields; each is the slot its
/// value is read into.
#[derive(Clone, Copy)]
enum Known {
    Model,
    Input,
    Instructions,
    Tools,
    ToolChoice,
    ParallelToolCalls,
    PreviousResponseId,
    Store,
    Stream,
    Background,
    Include,
}

/// A value slot for each [`Known`] key.
type KnownSlots = [Option<Value>; Known::COUNT];

impl Known {
    const COUNT: usize = Known::Include as usize + 1;

    /// The known key `key` is, if any: one match on the text, nothing allocated.
    fn of(key: &str) -> Option<Known> {
        Some(match key {
            "model" => Known::Model,
            "input" => Known::Input,
            "instructions" => Known::Instructions,
            "tools" => Known::Tools,
            "tool_choice" => Known::ToolChoice,
            "parallel_tool_calls" => Known::ParallelToolCalls,
            "previous_response_id" => Known::PreviousResponseId,
            "store" => Known::Store,
            "stream" => Known::Stream,
            "background" => Known::Background,
            "include" => Known::Include,
            _ => return None,
        })
    }
}

/// A create body's top level, as [`CreateRequest::from_json`] reads it. The known keys'
/// values go straight into the caller's slots, so the eleven of them are not moved
/// through the parser's return values.
enum TopLevel {
    /// An object: the keys that are not [`Known`] (theirs are in the slots).
    Object { extra: Map<String, Value> },
    /// Valid JSON, but not an object.
    NotAnObject,
}

/// Reads a [`TopLevel`], putting the known keys' values into `known`.
struct TopLevelSeed<'k> {
    known: &'k mut KnownSlots,
}

impl<'de> DeserializeSeed<'de> for TopLevelSeed<'_> {
    type Value = TopLevel;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<TopLevel, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevelSeed<'_> {
    type Value = TopLevel;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
        let mut extra = Map::new();
        // A key sent twice counts once, with its last value, as in a parsed map.
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Known(slot) => self.known[slot as usize] = Some(map.next_value()?),
                Key::Other(name) => {
                    extra.insert(name, map.next_value()?);
                }
            }
        }
        Ok(TopLevel::Object { extra })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(TopLevel::NotAnObject)
    }

    fn visit_bool<E>(self, _: bool) -> Result<TopLevel, E> {
        Ok(TopLevel::NotAnObject)
    }

    fn visit_i64<E>(self, _: i64) -> Result<TopLevel, E> {
        Ok(TopLevel::NotAnObject)
    }

    fn visit_u64<E>(self, _: u64) -> Result<TopLevel, E> {
        Ok(TopLevel::NotAnObject)
    }

    fn visit_f64<E>(self, _: f64) -> Result<TopLevel, E> {
        Ok(TopLevel::NotAnObject)
    }

    fn visit_str<E>(self, _: &str) -> Result<TopLevel, E> {
        Ok(TopLevel::NotAnObject)
    }

    fn visit_unit<E>(self) -> Result<TopLevel, E> {
        Ok(TopLevel::NotAnObject)
    }
}

/// A top-level key: a known one (nothing allocated), or another.
enum Key {
    Known(Known),
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }

            fn visit_str<E>(self, key: &str) -> Result<Key, E> {
                Ok(match Known::of(key) {
                    Some(known) => Key::Known(known),
                    None => Key::Other(key.to_owned()),
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

fn bool_field(value: Option<Value>, name: &str, default: bool) -> Result<bool, ApiError> {
    match value {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(ApiError::invalid_type(name, "a boolean")),
    }
}

/// An item's `type` (as [`item_type`] reads it), `id` and `call_id`, read in one pass over
/// its keys: the context checks read them many times over, and a lookup by name hashes
/// the name each time.
#[derive(Debug, Clone, Copy)]
pub struct ItemKeys<'a> {
    /// The item.
    pub item: &'a Value,
    /// [`item_type`].
    pub kind: &'a str,
    /// [`item_id`].
    pub id: Option<&'a str>,
    /// [`call_id`]: the field that pairs a call with its answer, which is `call_id` for
    /// most kinds and another field for some (`call_kind::pairing_field`).
    pub call_id: Option<&'a str>,
}

impl<'a> ItemKeys<'a> {
    /// Reads `item`'s keys.
    pub fn of(item: &'a Value) -> Self {
        let (mut kind, mut role, mut id, mut call_id) = (None, false, None, None);
        for (key, value) in item.as_object().into_iter().flatten() {
            match key.as_str() {
                "type" => kind = value.as_str(),
                "role" => role = true,
                "id" => id = value.as_str(),
                "call_id" => call_id = value.as_str(),
                _ => {}
            }
        }
        let kind = match kind {
            Some(kind) => kind,
            None if role => "message",
            None => "",
        };
        if let Some(field) = super::call_kind::pairing_field(kind) {
            call_id = item.get(field).and_then(Value::as_str);
        }
        Self {
            item,
            kind,
            id,
            call_id,
        }
    }
}

/// The `type` of an input item; a message in the easy form (`role` + `content`) has none.
pub fn item_type(item: &Value) -> &str {
    match item.get("type").and_then(Value::as_str) {
        Some(kind) => kind,
        None if item.get("role").is_some() => "message",
        None => "",
    }
}

/// The item's `id`, if it has a non-null one.
pub fn item_id(item: &Value) -> Option<&str> {
    item.get("id").and_then(Value::as_str)
}

/// The item's `call_id`, or the field that pairs it with its call or answer where its
/// kind uses another ([`super::call_kind::pairing_field`]).
pub fn call_id(item: &Value) -> Option<&str> {
    let field = super::call_kind::pairing_field(item_type(item)).unwrap_or("call_id");
    item.get(field).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_is_read_in_one_pass_with_the_apis_errors() {
        let request = CreateRequest::from_json(
            br#"{"zeta": 1, "model": "gpt-5", "input": "hi", "metadata": {"a": "b"}, "store": null, "alpha": [2], "model": "o3"}"#,
        )
        .unwrap();
        assert_eq!(request.model.as_deref(), Some("o3"));
        assert!(request.input_was_string);
        assert_eq!(request.input, [json!({"role": "user", "content": "hi"})]);
        assert!(request.store, "null is the default");
        let extra: Vec<&str> = request.extra.keys().map(String::as_str).collect();
        assert_eq!(extra, ["zeta", "metadata", "alpha"]);

        let rule = |body: &[u8]| CreateRequest::from_json(body).unwrap_err().message;
        assert_eq!(rule(b"{\"model\": "), ApiError::unparsable_body().message);
        assert_eq!(rule(b""), ApiError::unparsable_body().message);
        for not_an_object in [&b"[1, {}]"[..], b"\"text\"", b"7", b"null", b"true"] {
            assert_eq!(
                rule(not_an_object),
                ApiError::invalid_type("body", "an object").message
            );
        }
        assert_eq!(
            rule(br#"{"model": 5, "input": 7}"#),
            ApiError::invalid_type("model", "a string").message
        );
        assert_eq!(
            rule(br#"{"model": "gpt-5", "stream": "yes"}"#),
            ApiError::invalid_type("stream", "a boolean").message
        );
    }

    #[test]
    fn item_keys_read_what_the_lookups_by_name_read() {
        let items = [
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}),
            json!({"role": "user", "content": "hi"}),
            json!({"role": null, "type": null, "id": 7}),
            json!({"type": 3, "call_id": null}),
            json!("not an object"),
            json!({}),
        ];
        for item in &items {
            let keys = ItemKeys::of(item);
            assert_eq!(keys.kind, item_type(item), "{item}");
            assert_eq!(keys.id, item_id(item), "{item}");
            assert_eq!(keys.call_id, call_id(item), "{item}");
        }
    }
}
