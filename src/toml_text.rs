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

/// The 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
