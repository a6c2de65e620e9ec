//! The result line: the last line a controller prints, saying how the task ended.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::clip;

/// The failure reasons a result line's `reason` may name (docs/contract.md).
pub const REASON_WORDS: &[&str] = &[
    "max_rounds",
    "incomplete",
    "refusal",
    "api_error",
    "response_failed",
    "timeout",
    "cancelled",
    "max_tool_calls",
    "invalid_output",
];

/// The controller's result line (docs/contract.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControllerResult {
    /// `completed` or `failed`.
    pub status: String,
    /// The final answer, for `completed`.
    #[serde(default)]
    pub output_text: Option<String>,
    /// Why it failed.
    #[serde(default)]
    pub reason: Option<String>,
    /// More about the failure.
    #[serde(default)]
    pub detail: Option<String>,
}

/// Why a controller gave no result: the reason a case run without one is `crashed`.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// Standard output is empty.
    #[error("the controller printed nothing on standard output")]
    Nothing,
    /// The last line is not JSON.
    #[error("the last line of standard output is not JSON ({source}): {line}")]
    NotJson {
        /// What the JSON reader says.
        source: serde_json::Error,
        /// The line, clipped.
        line: String,
    },
    /// The JSON is not a result object.
    #[error("the result line is not a result object ({source}): {value}")]
    NotAResult {
        /// What the JSON reader says.
        source: serde_json::Error,
        /// The JSON, clipped.
        value: String,
    },
    /// `completed` without its text.
    #[error("the result says `completed` but has no `output_text` string")]
    NoOutputText,
    /// A status that is neither `completed` nor `failed`.
    #[error("the result's `status` is '{0}': expected 'completed' or 'failed'")]
    Status(String),
}

impl ControllerResult {
    /// Parses the last non-empty line of a controller's stdout; `Err` says why not.
    pub fn from_stdout(stdout: &str) -> Result<Self, ResultError> {
        let Some(line) = stdout.lines().rev().find(|line| !line.trim().is_empty()) else {
            return Err(ResultError::Nothing);
        };
        let value: Value =
            serde_json::from_str(line.trim()).map_err(|source| ResultError::NotJson {
                source,
                line: clip(line, 200),
            })?;
        Self::from_value(&value)
    }

    /// Validates a result object.
    pub fn from_value(value: &Value) -> Result<Self, ResultError> {
        let result: Self =
            serde_json::from_value(value.clone()).map_err(|source| ResultError::NotAResult {
                source,
                value: clip(&value.to_string(), 200),
            })?;
        match result.status.as_str() {
            "completed" if result.output_text.is_none() => Err(ResultError::NoOutputText),
            "completed" | "failed" => Ok(result),
            other => Err(ResultError::Status(other.to_owned())),
        }
    }
}
