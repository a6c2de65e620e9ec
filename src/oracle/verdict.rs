//! Check results and verdicts.

use serde::{Deserialize, Serialize};

use super::checks::Check;
use crate::scenario::Level;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckVerdict {
    /// Held.
    Pass,
    /// A MUST that did not hold.
    Fail,
    /// A SHOULD that did not hold.
    NonStrict,
    /// A MAY that did not hold, or a note.
    Info,
    /// Not judged: the controller does not support what the check needs.
    Unsupported,
}

impl CheckVerdict {
    /// The report word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::NonStrict => "non-strict",
            Self::Info => "info",
            Self::Unsupported => "unsupported",
        }
    }
}

/// One judged check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Stable id, `family/name`.
    pub id: String,
    /// Its level in this case.
    pub level: Level,
    /// The verdict.
    pub verdict: CheckVerdict,
    /// What was seen; for a failure, what was wrong and what was expected instead.
    pub message: String,
    /// The check's rule, as declared (what the controller must do).
    #[serde(default)]
    pub rule: String,
    /// For a payload that differs from what was expected, both sides, rendered as a
    /// diff by the console report.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub diff: Option<Diff>,
}

/// What was expected and what the controller sent or reported instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// The expected text.
    pub expected: String,
    /// What was there instead.
    pub actual: String,
}

/// Most problems listed in one message before the rest are counted.
const MAX_LISTED: usize = 4;

impl Check {
    /// The verdict from a list of problems: pass when there are none.
    pub fn judge(&self, problems: Vec<String>, pass_message: impl Into<String>) -> CheckResult {
        CheckResult::judge(self.id, self.level, problems, pass_message)
    }
}

impl CheckResult {
    /// A verdict from a list of problems: pass when empty, otherwise by level.
    pub fn judge(
        id: &str,
        level: Level,
        problems: Vec<String>,
        pass_message: impl Into<String>,
    ) -> Self {
        let rule = super::checks::find(id).map_or("", |c| c.rule).to_owned();
        if problems.is_empty() {
            return Self {
                id: id.to_owned(),
                level,
                verdict: CheckVerdict::Pass,
                message: pass_message.into(),
                rule,
                diff: None,
            };
        }
        let verdict = match level {
            Level::Must => CheckVerdict::Fail,
            Level::Should => CheckVerdict::NonStrict,
            Level::May => CheckVerdict::Info,
        };
        let mut message = problems
            .iter()
            .take(MAX_LISTED)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        if problems.len() > MAX_LISTED {
            message.push_str(&format!("; and {} more", problems.len() - MAX_LISTED));
        }
        Self {
            id: id.to_owned(),
            level,
            verdict,
            message,
            rule,
            diff: None,
        }
    }

    /// Attaches an expected/actual pair for a diff.
    pub fn with_diff(mut self, diff: Option<Diff>) -> Self {
        if self.verdict != CheckVerdict::Pass {
            self.diff = diff;
        }
        self
    }
}

/// A case's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaseVerdict {
    /// Every check held.
    Pass,
    /// A MUST check failed.
    Fail,
    /// Only SHOULD checks failed.
    NonStrict,
    /// Every check held, but what the controller sent differs from its snapshot.
    Drift,
    /// The controller does not support this case's mode or features.
    Unsupported,
    /// Killed at the case timeout.
    Timeout,
    /// No valid result line.
    Crashed,
    /// The harness itself could not run the case.
    Error,
    /// Failed as the run's baseline expects: does not fail the run.
    ExpectedFail,
    /// The baseline expects a failure that did not happen: its entry is out of date.
    Stale,
}

impl CaseVerdict {
    /// The report word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::NonStrict => "non-strict",
            Self::Drift => "drift",
            Self::Unsupported => "unsupported",
            Self::Timeout => "timeout",
            Self::Crashed => "crashed",
            Self::Error => "error",
            Self::ExpectedFail => "expected-fail",
            Self::Stale => "stale",
        }
    }

    /// Whether this verdict makes the run exit 1.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Self::Fail | Self::Drift | Self::Timeout | Self::Crashed | Self::Error | Self::Stale
        )
    }

    /// The verdict of a case whose controller ran to completion, from its checks.
    pub fn from_checks(checks: &[CheckResult]) -> Self {
        if checks.iter().any(|c| c.verdict == CheckVerdict::Fail) {
            Self::Fail
        } else if checks.iter().any(|c| c.verdict == CheckVerdict::NonStrict) {
            Self::NonStrict
        } else {
            Self::Pass
        }
    }
}
