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

impl ControllerResult {
    /// Parses the last non-empty line of a controller's stdout; `Err` says why not.
    pub fn from_stdout(stdout: &str) -> Result<Self, String> {
        let Some(line) = stdout.lines().rev().find(|line| !line.trim().is_empty()) else {
            return Err("the controller printed nothing on standard output".to_owned());
        };
        let value: Value = serde_json::from_str(line.trim()).map_err(|err| {
            format!(
                "the last line of standard output is not JSON ({err}): {}",
                clip(line, 200)
            )
        })?;
        Self::from_value(&value)
    }

    /// Validates a result object.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let result: Self = serde_json::from_value(value.clone()).map_err(|err| {
            format!(
                "the result line is not a result object ({err}): {}",
                clip(&value.to_string(), 200)
            )
        })?;
        match result.status.as_str() {
            "completed" if result.output_text.is_none() => {
                Err("the result says `completed` but has no `output_text` string".to_owned())
            }
            "completed" | "failed" => Ok(result),
            other => Err(format!(
                "the result's `status` is '{other}': expected 'completed' or 'failed'"
            )),
        }
    }
}
