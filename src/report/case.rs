//! What reports are made of: a judged case run, the counts of a run, and the JSON
//! report's document. These types are the report formats: they serialize as written to
//! disk, and [`REPORT_FORMAT`] versions them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::drift_groups::{DriftGroup, drift_groups};
use crate::oracle::{CaseVerdict, CheckResult};
use crate::redact::Redactor;
use crate::scenario::{Delivery, Level, StateMode};
use crate::transcript::Transcript;
use crate::transcript::drift::{Comparison, ComparisonStatus};

/// The version of the JSON report's format (`"format"` in the document).
///
/// Changelog:
/// - 1: `{"loopcheck", "format", "controller", "summary": {"cases", "passed", "failed",
///   "non_strict", "drift", "unsupported", "timeout", "crashed", "errors"}, "cases":
///   [{"id", "summary", "level", "state", "verdict", "duration_ms", "detail"?, "checks":
///   [{"id", "level", "verdict", "message", "rule", "diff"?}], "snapshot"?: {"path",
///   "status", "changes"?, "diff"?}, "recording"?: (the same)}]}`; `verdict` may be
///   `drift`. Reports written before the
///   version existed had no `"format"`, `"summary"`, `"level"`, `"detail"`, `"rule"` or
///   `"diff"` keys in cases and checks, nor `"drift"` in the summary; they read as
///   format 1.
///   Compatible additions: `"expected_fail"` and `"stale"` in the summary, the verdicts
///   `expected-fail` and `stale`, a case's `"baseline"` note (`--baseline`), a case's
///   `"startup_ms"` (persistent controllers), and `"interrupted": true` at the top of
///   the partial report of a run stopped by Ctrl-C or SIGTERM; a case's `"delivery"`
///   (`json` or `stream`); `"drift_groups"` at the top (`[{"change", "against",
///   "runs", "example": {"run", "path", "changes", "diff"?}}]`, only when a case run
///   drifted).
pub const REPORT_FORMAT: u32 = 1;

/// Everything known about one case run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseReport {
    /// Case id.
    pub id: String,
    /// The case's summary.
    #[serde(default)]
    pub summary: String,
    /// The case's level.
    #[serde(default = "must")]
    pub level: Level,
    /// State mode.
    pub state: StateMode,
    /// How the fake delivered responses: `json` or `stream` (reports written before
    /// deliveries existed read as `json`).
    #[serde(default)]
    pub delivery: Delivery,
    /// Verdict.
    pub verdict: CaseVerdict,
    /// Wall time; for a case on a persistent controller, from when the controller was
    /// ready (see `startup_ms`).
    pub duration_ms: u64,
    /// Only for the first case on a fresh persistent worker: its start-up, from its start
    /// until it read the case line (not counted in `duration_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<u64>,
    /// Why the case is `crashed`, `timeout`, `unsupported` or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Judged checks.
    pub checks: Vec<CheckResult>,
    /// The snapshot comparison, when the run compares snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Comparison>,
    /// The comparison with the recording, when the case is a cassette.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<Comparison>,
    /// What the run's baseline made of the verdict, when it names this case run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// The full record (not part of the JSON report).
    #[serde(skip)]
    pub transcript: Transcript,
    /// It failed, then passed when run again (`--retries`): its verdict is the passing
    /// run's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
    /// The tries of a flaky case run that failed before the one that passed, in order
    /// (the JUnit report's `flakyFailure`s; not part of the JSON report).
    #[serde(skip)]
    pub failed_tries: Vec<CaseReport>,
}

fn must() -> Level {
    Level::Must
}

/// Case runs built by hand, for the tests of what reads them.
#[cfg(test)]
impl CaseReport {
    /// A must-level run of case `id` in `state`, judged `verdict` on `checks`, with
    /// nothing compared and no transcript.
    pub(crate) fn judged(
        id: &str,
        state: StateMode,
        verdict: CaseVerdict,
        checks: Vec<CheckResult>,
    ) -> Self {
        Self {
            id: id.to_owned(),
            summary: String::new(),
            level: Level::Must,
            state,
            delivery: Default::default(),
            verdict,
            duration_ms: 1,
            startup_ms: None,
            detail: None,
            checks,
            snapshot: None,
            recording: None,
            baseline: None,
            transcript: Transcript::default(),
            flaky: false,
            failed_tries: Vec::new(),
        }
    }
}

impl CaseReport {
    /// Takes a snapshot comparison into the verdict: drift (or a snapshot missing under
    /// CI) makes a passing case `drift`; a file that cannot be read makes it `error`.
    pub fn fold_snapshot(&mut self, note: Comparison) {
        self.fold(&note);
        self.snapshot = Some(note);
    }

    /// Takes the comparison with the recording into the verdict.
    pub fn fold_recording(&mut self, note: Comparison) {
        self.fold(&note);
        self.recording = Some(note);
    }

    /// Drift (or a snapshot missing under CI) makes a passing case `drift`; a file that
    /// cannot be read makes it `error`. A case that already failed keeps its verdict,
    /// with the comparison beside it.
    fn fold(&mut self, note: &Comparison) {
        let passing = matches!(self.verdict, CaseVerdict::Pass | CaseVerdict::NonStrict);
        match note.status {
            ComparisonStatus::Drifted | ComparisonStatus::Missing if passing => {
                self.verdict = CaseVerdict::Drift;
            }
            ComparisonStatus::Unreadable => {
                self.verdict = CaseVerdict::Error;
                self.detail = Some(note.changes.join("; "));
            }
            _ => {}
        }
    }

    /// Redacts what the reports print of a judged run: the checks' messages and diffs
    /// (which quote what the controller sent) and the detail (its output, for a crash).
    pub fn redact(&mut self, redactor: &Redactor) {
        let text = |text: &mut String| {
            if let Cow::Owned(redacted) = redactor.text(text) {
                *text = redacted;
            }
        };
        for check in &mut self.checks {
            text(&mut check.message);
            if let Some(diff) = &mut check.diff {
                text(&mut diff.expected);
                text(&mut diff.actual);
            }
        }
        self.detail.iter_mut().for_each(text);
    }

    /// Reports in the order runs are planned: by case id, then state mode, then
    /// delivery.
    pub fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        (&a.id, a.state, a.delivery).cmp(&(&b.id, b.state, b.delivery))
    }

    /// The case run's id, `case [state]`: what `--last-failed` keeps.
    pub fn run_id(&self) -> String {
        run_id(&self.id, &self.run_label())
    }

    /// The run's name beside its case id: `stateless`, or `stateless, stream`.
    pub fn run_label(&self) -> String {
        crate::scenario::run_label(self.state, self.delivery)
    }
}

/// A case run's id: the case id and the run's label, `case [state]`.
pub fn run_id(case: &str, label: &str) -> String {
    format!("{case} [{label}]")
}

/// Counts by verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// All case runs (a case in two state modes counts twice).
    pub cases: usize,
    /// `pass`.
    pub passed: usize,
    /// `fail`.
    pub failed: usize,
    /// `non-strict`.
    pub non_strict: usize,
    /// `drift`.
    #[serde(default)]
    pub drift: usize,
    /// `unsupported`.
    pub unsupported: usize,
    /// `timeout`.
    pub timeout: usize,
    /// `crashed`.
    pub crashed: usize,
    /// `error`.
    pub errors: usize,
    /// `expected-fail`.
    #[serde(default)]
    pub expected_fail: usize,
    /// `stale`.
    #[serde(default)]
    pub stale: usize,
    /// Passed only when run again (`--retries`); counted in `passed` too.
    #[serde(default)]
    pub flaky: usize,
    /// Planned but not run: `--fail-fast` stopped the run first.
    #[serde(default)]
    pub not_run: usize,
}

impl Summary {
    /// Counts the reports.
    pub fn of<'a>(reports: impl IntoIterator<Item = &'a CaseReport>) -> Self {
        let mut s = Self::default();
        for report in reports {
            s.add(report.verdict);
            s.flaky += usize::from(report.flaky);
        }
        s
    }

    /// Counts one more case run.
    pub fn add(&mut self, verdict: CaseVerdict) {
        self.cases += 1;
        match verdict {
            CaseVerdict::Pass => self.passed += 1,
            CaseVerdict::Fail => self.failed += 1,
            CaseVerdict::NonStrict => self.non_strict += 1,
            CaseVerdict::Drift => self.drift += 1,
            CaseVerdict::Unsupported => self.unsupported += 1,
            CaseVerdict::Timeout => self.timeout += 1,
            CaseVerdict::Crashed => self.crashed += 1,
            CaseVerdict::Error => self.errors += 1,
            CaseVerdict::ExpectedFail => self.expected_fail += 1,
            CaseVerdict::Stale => self.stale += 1,
        }
    }

    /// True when the run exits 0.
    pub fn ok(&self) -> bool {
        self.failed + self.drift + self.timeout + self.crashed + self.errors + self.stale == 0
    }

    /// `N runs: N passed, N failed` and the other counts (a case in two state modes is
    /// two runs, as the header counts them; `1 run` for one).
    pub fn line(&self) -> String {
        // Verdicts only some runs can have are named only when they occur.
        let optional = |count: usize, word: &str| {
            if count > 0 {
                format!("{count} {word}, ")
            } else {
                String::new()
            }
        };
        format!(
            "{} {}: {} passed, {}{} failed, {} non-strict, {}{}{}{} unsupported, {} timeout, {} crashed, {} errors{}",
            self.cases,
            if self.cases == 1 { "run" } else { "runs" },
            self.passed,
            optional(self.flaky, "flaky"),
            self.failed,
            self.non_strict,
            optional(self.drift, "drift"),
            optional(self.expected_fail, "expected-fail"),
            optional(self.stale, "stale"),
            self.unsupported,
            self.timeout,
            self.crashed,
            self.errors,
            if self.not_run > 0 {
                format!(", {} not run", self.not_run)
            } else {
                String::new()
            }
        )
    }
}

/// The `--report-json` document: one run against one controller.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// The loopcheck version that wrote it.
    pub loopcheck: String,
    /// [`REPORT_FORMAT`].
    #[serde(default = "format_1")]
    pub format: u32,
    /// The controller's name.
    pub controller: String,
    /// Counts by verdict.
    pub summary: Summary,
    /// Every case run, in plan order.
    pub cases: Vec<CaseReport>,
    /// The run was stopped by a signal: `cases` holds only the case runs judged before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The drift of `cases`, each distinct change once with the case runs it drifted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_groups: Vec<DriftGroup>,
}

fn format_1() -> u32 {
    1
}

impl RunReport {
    /// The report of a run, its cases in plan order.
    pub fn new(controller: &str, mut cases: Vec<CaseReport>) -> Self {
        cases.sort_by(CaseReport::order);
        Self {
            loopcheck: env!("CARGO_PKG_VERSION").to_owned(),
            format: REPORT_FORMAT,
            controller: controller.to_owned(),
            summary: Summary::of(&cases),
            drift_groups: drift_groups(&cases),
            cases,
            interrupted: false,
        }
    }
}
