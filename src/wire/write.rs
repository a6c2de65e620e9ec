//! JSON written straight to bytes, field by field. The fake server's answers have a fixed
//! key order (the real API's) and go out as they are written: no tree of values is built
//! for them and thrown away.

use std::ops::Range;

use serde_json::Value;

/// A value written as compact JSON, byte for byte as `serde_json` writes it. Strings
/// without anything to escape (ids, encrypted content, most text) are copied whole
/// instead of scanned byte by byte: on a streamed answer that scan was the largest share
/// of the work.
pub trait WriteJson {
    /// Appends the JSON text of `self`.
    fn write_json(&self, out: &mut Vec<u8>);
}

impl WriteJson for str {
    fn write_json(&self, out: &mut Vec<u8>) {
        if is_plain(self.as_bytes()) {
            out.reserve(self.len() + 2);
            out.push(b'"');
            out.extend_from_slice(self.as_bytes());
            out.push(b'"');
        } else {
            serde_to(out, self);
        }
    }
}

/// Whether `text` goes into a JSON string as it is: no control character, quote or
/// backslash. A short text (most ids and words) is checked in one or two machine words;
/// a longer one sixteen bytes at a time, without branches, so it vectorizes.
fn is_plain(text: &[u8]) -> bool {
    let escaped_byte = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let escaped = |chunk: &[u8; 16]| chunk.iter().fold(false, |any, &b| any | escaped_byte(b));
    let word = |at: usize| u64::from_le_bytes(text[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_le_bytes(text[at..at + 4].try_into().expect("4 bytes"));
    match text.len() {
        0..4 => return !text.iter().any(|&b| escaped_byte(b)),
        // Two words (or half words) that overlap when the text is shorter than both.
        4..8 => return escapes(u64::from(half(0)) | u64::from(half(text.len() - 4)) << 32) == 0,
        8..=16 => return escapes(word(0)) | escapes(word(text.len() - 8)) == 0,
        _ => {}
    }
    let mut chunks = text.chunks_exact(16);
    for chunk in &mut chunks {
        if escaped(chunk.try_into().expect("sixteen bytes")) {
            return false;
        }
    }
    // The rest, within the last sixteen bytes (checking some twice changes nothing).
    chunks.remainder().is_empty()
        || !escaped(text[text.len() - 16..].try_into().expect("sixteen bytes"))
}

/// Non-zero when a byte of `word` needs escaping (below 0x20, `"` or `\\`). Each test is
/// the classic "has a byte below n": a borrow can only mark a byte above one that is
/// marked rightly, so the word as a whole is judged exactly.
fn escapes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (below(word, 0x20) | below(quote, 1) | below(backslash, 1)) & HIGH
}

impl WriteJson for String {
    fn write_json(&self, out: &mut Vec<u8>) {
        self.as_str().write_json(out);
    }
}

impl WriteJson for std::borrow::Cow<'_, str> {
    fn write_json(&self, out: &mut Vec<u8>) {
        (**self).write_json(out);
    }
}

impl WriteJson for Value {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::String(text) => text.write_json(out),
            Value::Array(items) => items.as_slice().write_json(out),
            Value::Object(fields) => {
                out.push(b'{');
                for (index, (key, field)) in fields.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    key.write_json(out);
                    out.push(b':');
                    field.write_json(out);
                }
                out.push(b'}');
            }
            scalar => serde_to(out, scalar),
        }
    }
}

impl WriteJson for [Value] {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (index, item) in self.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            item.write_json(out);
        }
        out.push(b']');
    }
}

impl<T: WriteJson + ?Sized> WriteJson for &T {
    fn write_json(&self, out: &mut Vec<u8>) {
        (**self).write_json(out);
    }
}

impl<T: WriteJson> WriteJson for Option<T> {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Some(value) => value.write_json(out),
            None => out.extend_from_slice(b"null"),
        }
    }
}

impl WriteJson for bool {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if *self { b"true" } else { b"false" });
    }
}

/// Unsigned integers, in decimal as `serde_json` writes them (with the same `itoa`),
/// without its serializer around each one: an event's sequence number and indexes.
macro_rules! unsigned {
    ($($kind:ty),*) => {$(
        impl WriteJson for $kind {
            fn write_json(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(itoa::Buffer::new().format(*self).as_bytes());
            }
        }
    )*};
}
unsigned!(u32, u64, usize);

/// The length of `value` as compact JSON, as it is written, without writing it.
fn json_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        // Numbers are rare in what is measured; they are written as serde_json writes them.
        Value::Number(number) => number.to_string().len(),
        Value::String(text) => string_len(text),
        Value::Array(items) => array_len(items),
        Value::Object(fields) => {
            let fields_len = fields
                .iter()
                .map(|(key, field)| string_len(key) + 1 + json_len(field));
            2 + fields.len().saturating_sub(1) + fields_len.sum::<usize>()
        }
    }
}

/// The length of `items` as a compact JSON array.
pub fn array_len(items: &[Value]) -> usize {
    2 + items.len().saturating_sub(1) + items.iter().map(json_len).sum::<usize>()
}

/// The length of `text` as a JSON string, quotes and escapes included.
fn string_len(text: &str) -> usize {
    if is_plain(text.as_bytes()) {
        return text.len() + 2;
    }
    let escaped_len = |byte: u8| match byte {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        0..0x20 => 6,
        _ => 1,
    };
    2 + text.bytes().map(escaped_len).sum::<usize>()
}

fn serde_to(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    serde_json::to_writer(&mut *out, value).expect("writing JSON to memory cannot fail");
}

/// Writes `,"key":value`: a field after the first. `key` is a plain word (no escaping).
#[inline]
pub fn field(out: &mut Vec<u8>, key: &str, value: &(impl WriteJson + ?Sized)) {
    raw_field(out, key, b"");
    value.write_json(out);
}

/// Writes `,"key":` and then `json`, which is JSON already. Inlined: it is called tens
/// of times per event, mostly with constant keys.
#[inline]
pub fn raw_field(out: &mut Vec<u8>, key: &str, json: &[u8]) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(json);
}

/// Writes `value` as compact JSON.
pub fn value_to(out: &mut Vec<u8>, value: &(impl WriteJson + ?Sized)) {
    value.write_json(out);
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

/// Writes an object field by field, each field `set` names written as set instead: it
/// keeps its place, and one the object lacks comes last, in the order given (as setting
/// a key of a `serde_json` map in place does).
pub struct Fields<'o, 's> {
    out: &'o mut Vec<u8>,
    set: &'s [(&'s str, Set<'s>)],
    /// Which of `set` were written in place, one bit each.
    placed: u64,
    /// Where each field's value goes, when asked.
    noted: Option<&'o mut FieldSpans>,
}

/// Where an object's fields were written: its whole text, and each field's value (up to
/// [`FieldSpans::MAX`] fields), so the object can be copied later with some values
/// replaced ([`FieldSpans::write_with`]) instead of written again.
#[derive(Debug, Clone, Default)]
pub struct FieldSpans {
    /// The whole object.
    pub whole: Range<usize>,
    fields: [(&'static str, Range<usize>); FieldSpans::MAX],
    len: usize,
}

impl FieldSpans {
    /// The fields noted; an object with more has the rest unnoted.
    pub const MAX: usize = 7;

    /// The value of field `key` as it was written in `json`, if it was noted.
    pub fn value<'j>(&self, json: &'j [u8], key: &str) -> Option<&'j [u8]> {
        let (_, span) = self.fields[..self.len]
            .iter()
            .find(|(name, _)| *name == key)?;
        json.get(span.clone())
    }

    /// Writes the object noted in `json` with the fields `set` names written as set, as
    /// [`Fields`] writes them: false (and nothing written) when a field set is not among
    /// those noted, as when the object lacks it.
    pub fn write_with(&self, json: &[u8], set: &[(&str, Set<'_>)], out: &mut Vec<u8>) -> bool {
        // The field each set value replaces, by where its value is, at most MAX of them.
        let mut replaced = [((0, 0), Set::Null); FieldSpans::MAX];
        if set.len() > FieldSpans::MAX {
            return false;
        }
        for (slot, (key, value)) in replaced.iter_mut().zip(set) {
            // Lengths first: most keys differ in length, and that is one comparison.
            let noted = self.fields[..self.len]
                .iter()
                .find(|(name, _)| name.len() == key.len() && name == key);
            match noted {
                Some((_, span)) => *slot = ((span.start, span.end), *value),
                None => return false,
            }
        }
        let replaced = &mut replaced[..set.len()];
        replaced.sort_unstable_by_key(|((start, _), _)| *start);
        let replaced = replaced
            .iter()
            .map(|(span, value)| (span.0..span.1, *value));
        splice(json, self.whole.clone(), replaced, out);
        true
    }
}

/// Copies `json[whole]` with each of the `replaced` values (spans within it, in order)
/// written as set instead.
pub fn splice<'v>(
    json: &[u8],
    whole: Range<usize>,
    replaced: impl IntoIterator<Item = (Range<usize>, Set<'v>)>,
    out: &mut Vec<u8>,
) {
    let mut from = whole.start;
    for (span, value) in replaced {
        out.extend_from_slice(&json[from..span.start]);
        value.write(out);
        from = span.end;
    }
    out.extend_from_slice(&json[from..whole.end]);
}

impl<'o, 's> Fields<'o, 's> {
    /// Opens an object.
    pub fn new(out: &'o mut Vec<u8>, set: &'s [(&'s str, Set<'s>)]) -> Self {
        assert!(set.len() <= 64, "at most 64 fields are set at once");
        out.push(b'{');
        Self {
            out,
            set,
            placed: 0,
            noted: None,
        }
    }

    /// Opens an object with plain-word keys, nothing set, noting where each field's
    /// value goes in `spans` (the object's end is noted by [`Fields::finish`]).
    pub fn noting(out: &'o mut Vec<u8>, spans: &'o mut FieldSpans) -> Self {
        *spans = FieldSpans {
            whole: out.len()..out.len(),
            ..FieldSpans::default()
        };
        Self {
            noted: Some(spans),
            ..Self::new(out, &[])
        }
    }

    /// Writes `"key":`, after a comma unless it is the first field: escaped as JSON
    /// needs, or as it is when it is a `plain` word (a typed writer's key).
    #[inline]
    fn key(&mut self, key: &str, plain: bool) {
        // Only the opening brace ends in `{`: no JSON value does.
        if self.out.last() != Some(&b'{') {
            self.out.push(b',');
        }
        if plain {
            debug_assert!(is_plain(key.as_bytes()), "{key:?} is not a plain word");
            self.out.push(b'"');
            self.out.extend_from_slice(key.as_bytes());
            self.out.push(b'"');
        } else {
            value_to(self.out, key);
        }
        self.out.push(b':');
    }

    /// Writes field `key` (a plain word) with `value`, or as set.
    pub fn put(&mut self, key: &'static str, value: &(impl WriteJson + ?Sized)) {
        self.put_with(key, |out| value_to(out, value));
    }

    /// Writes field `key` (a plain word) with what `write` writes, or as set.
    pub fn put_with(&mut self, key: &'static str, write: impl FnOnce(&mut Vec<u8>)) {
        self.key(key, true);
        let start = self.out.len();
        self.value(key, write);
        if let Some(spans) = self.noted.as_deref_mut()
            && spans.len < FieldSpans::MAX
        {
            spans.fields[spans.len] = (key, start..self.out.len());
            spans.len += 1;
        }
    }

    /// Writes field `key`, any text, with `value`, or as set.
    pub(crate) fn put_any(&mut self, key: &str, value: &Value) {
        self.key(key, false);
        self.value(key, |out| value_to(out, value));
    }

    /// Writes the value of field `key`: as set, or what `write` writes.
    fn value(&mut self, key: &str, write: impl FnOnce(&mut Vec<u8>)) {
        match self.set.iter().position(|(name, _)| *name == key) {
            Some(index) => {
                self.placed |= 1 << index;
                self.set[index].1.write(self.out);
            }
            None => write(self.out),
        }
    }

    /// Writes the set fields the object lacked, and closes it.
    pub fn finish(mut self) {
        for (index, (key, value)) in self.set.iter().enumerate() {
            if self.placed & (1 << index) == 0 {
                self.key(key, false);
                value.write(self.out);
            }
        }
        self.out.push(b'}');
        if let Some(spans) = self.noted {
            spans.whole.end = self.out.len();
        }
    }
}

/// Writes the object `value` with some fields set (see [`Fields`]). A value that is not
/// an object is written as it is (`null` as an empty object).
pub fn object_with(out: &mut Vec<u8>, value: &Value, set: &[(&str, Set<'_>)]) {
    let fields = match value {
        Value::Object(fields) => Some(fields),
        Value::Null => None,
        other => return value_to(out, other),
    };
    let mut writer = Fields::new(out, set);
    for (key, field) in fields.into_iter().flatten() {
        writer.put_any(key, field);
    }
    writer.finish();
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// What setting the same keys of a value in place and serializing it gives.
    fn set_in_place(value: &Value, set: &[(&str, Value)]) -> String {
        let mut value = value.clone();
        for (key, field) in set {
            value[*key] = field.clone();
        }
        value.to_string()
    }

    #[test]
    fn a_byte_to_escape_is_found_wherever_it_is() {
        let needs_escape = |text: &str| text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
        // Around it, characters next to the ones to escape, and bytes above 0x7f.
        for background in ['a', ' ', '!', '#', '[', ']', '\u{7f}', 'é', '"'] {
            for len in 0..50 {
                for at in 0..len {
                    for special in [
                        '"', '\\', '\n', '\r', '\t', '\u{0}', '\u{8}', '\u{c}', '\u{1f}', 'x',
                    ] {
                        let mut text: Vec<char> = vec![background; len];
                        text[at] = special;
                        let text: String = text.into_iter().collect();
                        assert_eq!(is_plain(text.as_bytes()), !needs_escape(&text), "{text:?}");
                        let mut out = Vec::new();
                        text.write_json(&mut out);
                        assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_ascii_character_is_escaped_as_serde_json_escapes_it() {
        let every: String = (0u8..=0x7f).map(char::from).collect();
        for text in [every.clone(), format!("é{every}😀"), every.repeat(3)] {
            let mut out = Vec::new();
            text.write_json(&mut out);
            assert_eq!(out, serde_json::to_vec(&text).unwrap());
        }
    }

    #[test]
    fn values_are_written_byte_for_byte_as_serde_json_writes_them() {
        let long_plain = "gAAAAABo".repeat(40);
        let escaped_late = format!("{}\"{}", "a".repeat(37), "\\");
        let values = [
            json!("plain"),
            json!(long_plain),
            json!(escaped_late),
            json!("tab\tnew\nline\u{1}\u{7f}é😀/"),
            json!({"k\"ey": [1, -2, 3.5, 1e300, null, true, false], "n": {"": ""}}),
            json!([]),
            json!({}),
            json!(0.1),
        ];
        for value in values {
            let mut out = Vec::new();
            value.write_json(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), value.to_string());
        }
        let mut out = Vec::new();
        field(&mut out, "x", &Some(7u64));
        field(&mut out, "y", &None::<String>);
        assert_eq!(out, b",\"x\":7,\"y\":null");
        fn same_as_serde(value: impl WriteJson + serde::Serialize) {
            let mut out = Vec::new();
            value.write_json(&mut out);
            assert_eq!(out, serde_json::to_vec(&value).unwrap());
        }
        same_as_serde(0u64);
        same_as_serde(u64::MAX);
        same_as_serde(1_759_064_126u64);
        same_as_serde(u32::MAX);
        same_as_serde(usize::MAX);
        same_as_serde(true);
        same_as_serde(false);
    }

    #[test]
    fn a_values_length_is_the_length_it_is_written_with() {
        let every: String = (0u8..=0x7f).map(char::from).collect();
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(""),
            json!(every),
            json!("é😀 \u{7f}"),
            json!([]),
            json!({}),
            json!([1, -2, 3.5, 1e300, 0.1, u64::MAX, i64::MIN, null]),
            json!([{"role": "user", "content": "hi"}, {"k\"ey\n": {"": [[], {}]}}]),
        ];
        for value in values {
            assert_eq!(
                json_len(&value),
                serde_json::to_vec(&value).unwrap().len(),
                "{value}"
            );
        }
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

    /// Text with what JSON escapes, at every place and around the lengths the plain-text
    /// check treats apart (4, 8, 16 bytes), beside any text at all.
    fn text() -> impl Strategy<Value = String> {
        let chars = prop::sample::select(vec![
            'a', ' ', '"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{8}', '\u{c}', '\u{1f}',
            '\u{7f}', 'é', '😀', '\u{2028}', '\u{E000}',
        ]);
        prop_oneof![
            3 => prop::collection::vec(chars, 0..40).prop_map(String::from_iter),
            1 => any::<String>(),
        ]
    }

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |x| x.is_finite())
                .prop_map(Value::from),
            (-1000i32..1000, 0u32..4)
                .prop_map(|(n, places)| { Value::from(f64::from(n) / 10f64.powi(places as i32)) }),
        ]
    }

    /// Any JSON value, nested a few levels deep.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number(),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((text(), inner), 0..6)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    /// What a generated [`Set`] is: `[]` rather than `null`, a flag, a string.
    type SetChoice = (bool, Option<bool>, Option<String>);

    fn set() -> impl Strategy<Value = SetChoice> {
        (
            any::<bool>(),
            prop::option::of(any::<bool>()),
            prop::option::of(text()),
        )
    }

    /// A [`Set`] and the value it stands for: a string, a flag, `[]` or `null`.
    fn set_value((empty_array, flag, text): &SetChoice) -> (Set<'_>, Value) {
        match (flag, text) {
            (_, Some(text)) => (Set::Str(text), Value::from(text.as_str())),
            (Some(flag), None) => (Set::Bool(*flag), Value::Bool(*flag)),
            (None, None) if *empty_array => (Set::EmptyArray, json!([])),
            (None, None) => (Set::Null, Value::Null),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// The writers' promise: any value, any text and any unsigned integer written byte
        /// for byte as `serde_json` writes it, and its length known without writing it.
        #[test]
        fn any_value_is_written_byte_for_byte_as_serde_json_writes_it(
            value in value(),
            text in text(),
            n in any::<u64>(),
        ) {
            let mut out = Vec::new();
            value.write_json(&mut out);
            let expected = serde_json::to_vec(&value).expect("serializes");
            prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
            prop_assert_eq!(json_len(&value), expected.len());
            let items = std::slice::from_ref(&value);
            let mut out = Vec::new();
            items.write_json(&mut out);
            prop_assert_eq!(array_len(items), out.len());
            for written in [
                { let mut out = Vec::new(); text.as_str().write_json(&mut out); out },
                { let mut out = Vec::new(); text.write_json(&mut out); out },
                { let mut out = Vec::new(); Some(std::borrow::Cow::from(&text)).write_json(&mut out); out },
            ] {
                prop_assert_eq!(written, serde_json::to_vec(&text).expect("serializes"));
            }
            let needs_escape = text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
            prop_assert_eq!(is_plain(text.as_bytes()), !needs_escape);
            for written in [
                { let mut out = Vec::new(); n.write_json(&mut out); out },
                { let mut out = Vec::new(); (n as usize).write_json(&mut out); out },
                { let mut out = Vec::new(); (n as u32).write_json(&mut out); out },
            ] {
                let parsed: u64 = serde_json::from_slice(&written).expect("an integer");
                prop_assert_eq!(written, serde_json::to_vec(&parsed).expect("serializes"));
            }
        }

        /// Any object with any fields set (some it has, some it lacks) is written as
        /// setting those keys in place and serializing gives; anything else as it is.
        #[test]
        fn any_object_with_fields_set_is_written_as_set_in_place(
            value in value(),
            fields in prop::collection::vec((text(), value()), 0..5),
            picks in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>(), set()), 0..6),
        ) {
            let object = match value {
                Value::Object(mut more) => {
                    more.extend(fields);
                    Value::Object(more)
                }
                other if fields.is_empty() => other,
                _ => Value::Object(fields.into_iter().collect()),
            };
            let keys: Vec<String> = object
                .as_object()
                .map(|fields| fields.keys().cloned().collect())
                .unwrap_or_default();
            // Some of the object's own keys, and new ones; each key set once.
            let mut chosen: Vec<(String, &SetChoice)> = Vec::new();
            for (index, own, set) in &picks {
                let key = match (own, keys.is_empty()) {
                    (true, false) => keys[index.index(keys.len())].clone(),
                    _ => format!("new\"{}", index.index(1000)),
                };
                if chosen.iter().all(|(k, _)| *k != key) {
                    chosen.push((key, set));
                }
            }
            let sets: Vec<(&str, Set<'_>)> =
                chosen.iter().map(|(key, set)| (key.as_str(), set_value(set).0)).collect();
            let mut out = Vec::new();
            object_with(&mut out, &object, &sets);
            let expected = match &object {
                Value::Object(_) | Value::Null => {
                    let placed: Vec<(&str, Value)> =
                        chosen.iter().map(|(key, set)| (key.as_str(), set_value(set).1)).collect();
                    let start = if object.is_null() { json!({}) } else { object.clone() };
                    set_in_place(&start, &placed)
                }
                other => other.to_string(),
            };
            prop_assert_eq!(String::from_utf8_lossy(&out), expected);
        }
    }

    /// The strings one generated output item is made of.
    #[derive(Debug, Clone)]
    struct ItemTexts {
        kind: u8,
        id: String,
        texts: Vec<String>,
        refusal: Option<String>,
        caller: Option<Value>,
    }

    fn item_texts() -> impl Strategy<Value = ItemTexts> {
        (
            0u8..6,
            text(),
            prop::collection::vec(text(), 0..3),
            prop::option::of(text()),
            prop::option::of(value()),
        )
            .prop_map(|(kind, id, texts, refusal, caller)| ItemTexts {
                kind,
                id,
                texts,
                refusal,
                caller,
            })
    }

    /// An output item of the kind chosen, its strings borrowed from `texts`.
    fn output_item(texts: &ItemTexts) -> crate::wire::item::OutputItem<'_> {
        use crate::wire::item::OutputItem;
        let text = |n: usize| texts.texts.get(n).map_or("", String::as_str);
        let id = texts.id.clone();
        match texts.kind {
            0 => OutputItem::Reasoning {
                id,
                encrypted_content: text(0).to_owned(),
                summary: &texts.texts,
                text: &[],
            },
            1 => OutputItem::Message {
                id,
                status: "completed",
                text: text(0),
                annotations: Vec::new(),
                refusal: texts.refusal.as_deref(),
                logprobs: false,
            },
            2 => OutputItem::Refusal { id, text: text(0) },
            3 => OutputItem::Call {
                id,
                status: "incomplete",
                arguments: text(0).into(),
                call_id: text(1).to_owned(),
                name: text(2),
                namespace: None,
                caller_id: texts.caller.clone(),
            },
            4 => OutputItem::Program {
                id,
                call_id: text(0).to_owned(),
                code: text(1),
                fingerprint: text(2).to_owned(),
            },
            _ => OutputItem::ProgramOutput {
                id,
                call_id: texts.caller.clone().unwrap_or_default(),
                result: text(0),
                status: "completed",
            },
        }
    }

    /// A create request's body with generated echoed fields.
    fn request_body() -> impl Strategy<Value = Value> {
        let tool = (
            text(),
            prop::option::of(any::<bool>()),
            prop::option::of(text()),
            any::<bool>(),
        )
            .prop_map(|(name, strict, description, function)| {
                let mut tool =
                    json!({"type": if function { "function" } else { "web_search" }, "name": name});
                if let Some(strict) = strict {
                    tool["strict"] = json!(strict);
                }
                if let Some(description) = description {
                    tool["description"] = json!(description);
                }
                tool
            });
        (
            prop::option::of(text()),
            prop::collection::vec(tool, 0..3),
            prop::option::of(value()),
            prop::option::of(value()),
            any::<(bool, bool, bool)>(),
            prop::option::of(text()),
        )
            .prop_map(
                |(instructions, tools, metadata, tool_choice, flags, model)| {
                    let (stream, background, store) = flags;
                    let mut body = json!({
                        "model": model.unwrap_or_else(|| "gpt-5".into()),
                        "input": [{"role": "user", "content": "hi"}],
                        "tools": tools, "stream": stream, "background": background, "store": store,
                    });
                    if let Some(instructions) = instructions {
                        body["instructions"] = json!(instructions);
                    }
                    if let Some(metadata) = metadata {
                        body["metadata"] = metadata;
                    }
                    if let Some(choice) = tool_choice {
                        body["tool_choice"] = choice;
                    }
                    body
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any response the writers put together is compact JSON as `serde_json` writes
        /// it (it reads back to the same bytes), its items are those the item writer
        /// writes, and its snapshot is the response with the outcome set in place.
        #[test]
        fn any_response_is_written_as_serde_json_writes_it(
            items in prop::collection::vec(item_texts(), 0..5),
            body in request_body(),
            outcome in (0u8..3, text(), prop::option::of(text()), prop::option::of(value())),
            created_at in any::<u32>(),
            snapshot in prop::sample::select(vec!["queued", "in_progress", "cancelled"]),
        ) {
            use crate::wire::response::{ResponseParts, ResponseStatus};
            let Ok(request) = crate::wire::CreateRequest::from_json(body.to_string().as_bytes())
            else {
                return Err(TestCaseError::reject("not a valid create"));
            };
            let output: Vec<_> = items.iter().map(output_item).collect();
            let (status, id, conversation, error) = outcome;
            let status = [ResponseStatus::Completed, ResponseStatus::Incomplete, ResponseStatus::Failed][usize::from(status)];
            let parts = ResponseParts {
                id: &id,
                created_at: u64::from(created_at),
                status,
                output: &output,
                write_output: None,
                request: &request,
                incomplete_reason: conversation.as_deref().filter(|_| status == ResponseStatus::Incomplete),
                error: error.as_ref().filter(|_| status == ResponseStatus::Failed),
                conversation: conversation.as_deref(),
            };
            let mut json = Vec::new();
            let layout = parts.write_spanned(&mut json);
            let parsed: Value = serde_json::from_slice(&json).expect("the response is JSON");
            let rewritten = serde_json::to_vec(&parsed).expect("serializes");
            prop_assert_eq!(String::from_utf8_lossy(&json), String::from_utf8_lossy(&rewritten));
            let mut written_items = Vec::new();
            crate::wire::item::write_all(&mut written_items, &output, None);
            prop_assert_eq!(
                serde_json::to_vec(&parsed["output"]).expect("serializes"),
                written_items
            );
            let mut snapshotted = Vec::new();
            layout.write_snapshot(&json, snapshot, &mut snapshotted);
            let expected = set_in_place(&parsed, &[
                ("status", json!(snapshot)),
                ("completed_at", Value::Null),
                ("error", Value::Null),
                ("incomplete_details", Value::Null),
                ("output", json!([])),
                ("usage", Value::Null),
            ]);
            prop_assert_eq!(String::from_utf8_lossy(&snapshotted), expected);
        }
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
