//! Text cut to a length for messages and reports.

/// At most `max` characters of `text`, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}...")
    }
}

/// `text` as one of the `known` strings when it is one (no copy), else copied: for types
/// the server itself generates, kept for a session's life.
pub(crate) fn known_or_owned(text: &str, known: &[&'static str]) -> std::borrow::Cow<'static, str> {
    match known.iter().find(|candidate| **candidate == text) {
        Some(known) => std::borrow::Cow::Borrowed(known),
        None => std::borrow::Cow::Owned(text.to_owned()),
    }
}
