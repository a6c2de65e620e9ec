//! TOML settings files (`loopcheck.toml`, baselines) read with errors a person can act on:
//! `line:col: what was expected`.

use serde::de::DeserializeOwned;

/// Parses `text`; an error reads `line:col: message`.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    toml::from_str(text).map_err(|err| {
        let (line, col) = err.span().map_or((1, 1), |span| line_col(text, span.start));
        format!("{line}:{col}: {}", err.message())
    })
}

/// A file's bytes as text; an error reads `line:col: ...` at the first byte that is not
/// UTF-8, as TOML must be.
pub fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|err| {
        let valid = err.valid_up_to();
        let before = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        let (line, col) = line_col(before, valid);
        format!(
            "{line}:{col}: invalid UTF-8 (byte 0x{:02x}); expected UTF-8 text\n(hint: save the file as UTF-8)",
            bytes.get(valid).copied().unwrap_or_default()
        )
    })
}

/// The 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
