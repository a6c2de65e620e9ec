//! JSON written straight to bytes, field by field. The fake server's answers have a fixed
//! key order (the real API's) and go out as they are written: no tree of values is built
//! for them and thrown away.

use serde::Serialize;
use serde_json::Value;

/// Writes `,"key":value`: a field after the first. `key` is a plain word (no escaping).
pub fn field(out: &mut Vec<u8>, key: &str, value: &(impl Serialize + ?Sized)) {
    raw_field(out, key, b"");
    value_to(out, value);
}

/// Writes `,"key":` and then `json`, which is JSON already.
pub fn raw_field(out: &mut Vec<u8>, key: &str, json: &[u8]) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(json);
}

/// Writes `value` as compact JSON.
pub fn value_to(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    serde_json::to_writer(&mut *out, value).expect("writing JSON to memory cannot fail");
}

/// A value a field of [`object_with`] is set to.
#[derive(Debug, Clone, Copy)]
pub enum Set<'a> {
    /// A string.
    Str(&'a str),
    /// `true` or `false`.
    Bool(bool),
    /// `[]`.
    EmptyArray,
    /// `null`.
    Null,
}

impl Set<'_> {
    /// Writes the value.
    pub fn write(self, out: &mut Vec<u8>) {
        match self {
            Set::Str(text) => value_to(out, text),
            Set::Bool(flag) => value_to(out, &flag),
            Set::EmptyArray => out.extend_from_slice(b"[]"),
            Set::Null => out.extend_from_slice(b"null"),
        }
    }
}

/// Writes the object `value` with some fields set: each keeps its place when `value` has
/// it and comes last, in the order given, when it does not (as setting a key of a
/// `serde_json` map in place does). A value that is not an object is written as it is
/// (`null` as an empty object).
pub fn object_with(out: &mut Vec<u8>, value: &Value, set: &[(&str, Set<'_>)]) {
    let empty = serde_json::Map::new();
    let fields = match value {
        Value::Object(fields) => fields,
        Value::Null => &empty,
        other => return value_to(out, other),
    };
    out.push(b'{');
    let mut first = true;
    let mut separate = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    for (key, field) in fields {
        separate(out);
        value_to(out, key);
        out.push(b':');
        match set.iter().find(|(name, _)| name == key) {
            Some((_, value)) => value.write(out),
            None => value_to(out, field),
        }
    }
    for (key, value) in set {
        if !fields.contains_key(*key) {
            separate(out);
            value_to(out, key);
            out.push(b':');
            value.write(out);
        }
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What setting the same keys of a value in place and serializing it gives.
    fn set_in_place(value: &Value, set: &[(&str, Value)]) -> String {
        let mut value = value.clone();
        for (key, field) in set {
            value[*key] = field.clone();
        }
        value.to_string()
    }

    #[test]
    fn set_fields_keep_their_place_and_new_ones_come_last_as_in_place() {
        let item =
            json!({"id": "fc_1", "status": "completed", "arguments": "{\"a\":1}", "na\"me": "f"});
        let mut out = Vec::new();
        object_with(
            &mut out,
            &item,
            &[
                ("arguments", Set::Str("")),
                ("status", Set::Str("in_progress")),
                ("summary", Set::EmptyArray),
                ("usage", Set::Null),
            ],
        );
        let expected = set_in_place(
            &item,
            &[
                ("arguments", json!("")),
                ("status", json!("in_progress")),
                ("summary", json!([])),
                ("usage", Value::Null),
            ],
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn fields_follow_the_first_with_commas() {
        let mut out = b"{\"a\":1".to_vec();
        field(&mut out, "b", "x\"y");
        raw_field(&mut out, "c", b"[]");
        out.push(b'}');
        assert_eq!(out, br#"{"a":1,"b":"x\"y","c":[]}"#);
    }
}
