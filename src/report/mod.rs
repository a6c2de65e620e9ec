//! Reports: the console report and the JSON report.

pub mod console;
pub mod json;
pub mod matrix;

use crate::oracle::CaseVerdict;
use crate::runner::CaseReport;

/// Counts by verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// All case runs (a case in two state modes counts twice).
    pub cases: usize,
    /// `pass`.
    pub passed: usize,
    /// `fail`.
    pub failed: usize,
    /// `non-strict`.
    pub non_strict: usize,
    /// `unsupported`.
    pub unsupported: usize,
    /// `timeout`.
    pub timeout: usize,
    /// `crashed`.
    pub crashed: usize,
    /// `error`.
    pub errors: usize,
}

impl Summary {
    /// Counts the reports.
    pub fn of(reports: &[CaseReport]) -> Self {
        let mut s = Self {
            cases: reports.len(),
            ..Self::default()
        };
        for report in reports {
            match report.verdict {
                CaseVerdict::Pass => s.passed += 1,
                CaseVerdict::Fail => s.failed += 1,
                CaseVerdict::NonStrict => s.non_strict += 1,
                CaseVerdict::Unsupported => s.unsupported += 1,
                CaseVerdict::Timeout => s.timeout += 1,
                CaseVerdict::Crashed => s.crashed += 1,
                CaseVerdict::Error => s.errors += 1,
            }
        }
        s
    }

    /// True when the run exits 0.
    pub fn ok(&self) -> bool {
        self.failed + self.timeout + self.crashed + self.errors == 0
    }

    /// The counts as the JSON reports write them.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "non_strict": self.non_strict,
            "unsupported": self.unsupported,
            "timeout": self.timeout,
            "crashed": self.crashed,
            "errors": self.errors,
        })
    }

    /// `N passed, N failed` plus the other counts.
    pub fn line(&self) -> String {
        format!(
            "{} cases: {} passed, {} failed, {} non-strict, {} unsupported, {} timeout, {} crashed, {} errors",
            self.cases,
            self.passed,
            self.failed,
            self.non_strict,
            self.unsupported,
            self.timeout,
            self.crashed,
            self.errors
        )
    }
}
