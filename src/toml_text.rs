//! TOML settings files (`loopcheck.toml`, baselines) read with errors a person can act on:
//! `line:col: what was expected`.

use serde::de::DeserializeOwned;

/// Why a settings file's text cannot be read; the file's name is the caller's to put
/// before it (`loopcheck.toml:` + this).
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// Not TOML, or not the shape expected.
    #[error("{line}:{col}: {message}")]
    Toml {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What the TOML reader says.
        message: String,
    },
    /// A byte that is not UTF-8.
    #[error(
        "{line}:{col}: invalid UTF-8 (byte 0x{byte:02x}); expected UTF-8 text\n(hint: save the file as UTF-8)"
    )]
    NotUtf8 {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// The first byte that is not UTF-8.
        byte: u8,
    },
}

/// Parses `text`; an error reads `line:col: message`.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, TextError> {
    toml::from_str(text).map_err(|err| {
        let (line, col) = err.span().map_or((1, 1), |span| line_col(text, span.start));
        TextError::Toml {
            line,
            col,
            message: err.message().to_owned(),
        }
    })
}

/// A file's bytes as text; an error reads `line:col: ...` at the first byte that is not
/// UTF-8, as TOML must be.
pub fn utf8(bytes: &[u8]) -> Result<&str, TextError> {
    std::str::from_utf8(bytes).map_err(|err| {
        let valid = err.valid_up_to();
        let before = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        let (line, col) = line_col(before, valid);
        TextError::NotUtf8 {
            line,
            col,
            byte: bytes.get(valid).copied().unwrap_or_default(),
        }
    })
}

/// The 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
