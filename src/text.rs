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
