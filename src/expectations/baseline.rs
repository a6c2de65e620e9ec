//! Baselines: expected failures, so that a team can adopt the suite before its controller
//! passes everything. A case run the baseline expects to fail is `expected-fail` and does
//! not fail the run; one that now passes is `stale` and does, so baselines only shrink.
//!
//! ```toml
//! [[expected]]
//! case = "dispatch/06-near-miss-name"
//! state = "stateless"                       # optional: every state mode
//! delivery = "stream"                       # optional: every delivery alike
//! checks = ["dispatch/registered-only"]     # optional: any failure at all
//! reason = "names are normalised upstream"  # optional
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::oracle::{CaseVerdict, CheckVerdict};
use crate::report::CaseReport;
use crate::scenario::{Delivery, StateMode};
use crate::toml_text::TextError;

/// Why a baseline cannot be used; each names the file, and the line and column of a
/// mistake in it.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file cannot be read.
    #[error("cannot read the baseline {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The file is not a baseline.
    #[error("{path}:{source}")]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Where and what.
        source: TextError,
    },
}

/// One expected failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The case id.
    pub case: String,
    /// Only in this state mode (every mode when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateMode>,
    /// Only in this delivery (`json`, `stream` or `websocket`; every one when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Only these checks may fail (any failure, a crash included, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<String>>,
    /// Why the failure is accepted for now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A baseline file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The expected failures.
    #[serde(default)]
    pub expected: Vec<Entry>,
}

impl Baseline {
    /// Reads a baseline; errors name the file, line and column.
    pub fn load(path: &Path) -> Result<Self, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|source| BaselineError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses a baseline's text; an error reads `line:col: what was expected`.
    pub fn parse(text: &str) -> Result<Self, TextError> {
        crate::toml_text::parse(text)
    }

    /// The entries for a case run.
    fn entries_for(&self, run: &CaseReport) -> Vec<&Entry> {
        self.expected.iter().filter(|e| applies(e, run)).collect()
    }

    /// The cases named by entries that are not among `ids` (a typo, or a case filtered
    /// out), each once however many entries name it.
    pub fn unmatched<'a>(&'a self, ids: &BTreeSet<&str>) -> BTreeSet<&'a str> {
        self.expected
            .iter()
            .map(|e| e.case.as_str())
            .filter(|case| !ids.contains(case))
            .collect()
    }

    /// Applies the baseline to a judged case run: an expected failure becomes
    /// `expected-fail`, an expected failure that did not happen becomes `stale`, and a
    /// failure beyond what the baseline lists stays what it is, with a note saying so.
    pub fn apply(&self, report: &mut CaseReport) {
        let entries = self.entries_for(report);
        if entries.is_empty() || report.verdict == CaseVerdict::Unsupported {
            return;
        }
        let failing: BTreeSet<&str> = report
            .checks
            .iter()
            .filter(|c| c.verdict == CheckVerdict::Fail)
            .map(|c| c.id.as_str())
            .collect();
        let whole_case = entries.iter().any(|e| e.checks.is_none());
        let listed: BTreeSet<&str> = entries
            .iter()
            .flat_map(|e| e.checks.iter().flatten())
            .map(String::as_str)
            .collect();
        if !report.verdict.is_failure() {
            report.verdict = CaseVerdict::Stale;
            report.baseline = Some(
                "the baseline expects this case run to fail, and it passed: remove its entry (baselines only shrink)".to_owned(),
            );
            return;
        }
        if whole_case {
            report.verdict = CaseVerdict::ExpectedFail;
            report.baseline = Some("expected by the baseline".to_owned());
            return;
        }
        let unexpected: Vec<&str> = failing.difference(&listed).copied().collect();
        let fixed: Vec<&str> = listed.difference(&failing).copied().collect();
        if report.verdict != CaseVerdict::Fail || !unexpected.is_empty() {
            let beyond = if unexpected.is_empty() {
                format!("it ended {}", report.verdict.as_str())
            } else {
                format!("{} failed too", unexpected.join(", "))
            };
            report.baseline = Some(format!(
                "the baseline expects only {} to fail, but {beyond}",
                listed.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        } else if !fixed.is_empty() {
            report.verdict = CaseVerdict::Stale;
            report.baseline = Some(format!(
                "{} no longer fail(s): remove it from the baseline entry (baselines only shrink)",
                fixed.join(", ")
            ));
        } else {
            report.verdict = CaseVerdict::ExpectedFail;
            report.baseline = Some(format!(
                "expected by the baseline: {}",
                failing.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }

    /// The baseline that expects exactly the failures of these case runs: their failing
    /// checks, or the whole case run when it did not finish (crashed, timeout, error) or
    /// drifted. Expected failures stay as they are.
    pub fn of_failures<'a>(reports: impl IntoIterator<Item = &'a CaseReport>) -> Self {
        let expected = reports
            .into_iter()
            .filter_map(|r| {
                let failing: Vec<String> = r
                    .checks
                    .iter()
                    .filter(|c| c.verdict == CheckVerdict::Fail)
                    .map(|c| c.id.clone())
                    .collect();
                let by_checks = match r.verdict {
                    CaseVerdict::Pass | CaseVerdict::NonStrict | CaseVerdict::Unsupported => {
                        return None;
                    }
                    // A stale entry's case run that fails no check any more needs none.
                    CaseVerdict::Stale if failing.is_empty() => return None,
                    CaseVerdict::Fail | CaseVerdict::ExpectedFail | CaseVerdict::Stale => {
                        !failing.is_empty()
                    }
                    CaseVerdict::Drift
                    | CaseVerdict::Timeout
                    | CaseVerdict::Crashed
                    | CaseVerdict::Error => false,
                };
                Some(Entry {
                    case: r.id.clone(),
                    state: Some(r.state),
                    delivery: Some(r.delivery),
                    checks: by_checks.then_some(failing),
                    reason: (!by_checks).then(|| r.verdict.as_str().to_owned()),
                })
            })
            .collect();
        Self { expected }
    }

    /// The baseline this run's failures call for: [`Self::of_failures`], each entry
    /// keeping the reason of the entry it replaces (same case, a state and delivery the
    /// old entry covered).
    pub fn updated<'a>(&self, reports: impl IntoIterator<Item = &'a CaseReport>) -> Self {
        let mut updated = Self::of_failures(reports);
        for entry in &mut updated.expected {
            let before = self.expected.iter().find(|old| {
                old.case == entry.case
                    && old.reason.is_some()
                    && (old.state.is_none() || old.state == entry.state)
                    && (old.delivery.is_none() || old.delivery == entry.delivery)
            });
            if let Some(before) = before {
                entry.reason.clone_from(&before.reason);
            }
        }
        updated
    }

    /// The baseline without what this run shows it no longer needs: entries whose case
    /// runs pass now, or that apply to no case run of this run (filtered out, renamed,
    /// unsupported); an entry listing checks keeps only those that still fail.
    pub fn prune(&self, reports: &[CaseReport]) -> Pruned {
        let mut pruned = Pruned::default();
        for entry in &self.expected {
            let runs: Vec<&CaseReport> = reports
                .iter()
                .filter(|r| r.verdict != CaseVerdict::Unsupported && applies(entry, r))
                .collect();
            if runs.is_empty() {
                pruned
                    .dropped
                    .push((entry.clone(), "matches no case run of this run".to_owned()));
                continue;
            }
            let outcomes: Vec<Outcome> = runs.iter().map(|r| Outcome::of(r)).collect();
            if outcomes.contains(&Outcome::Whole) {
                pruned.baseline.expected.push(entry.clone());
                continue;
            }
            let failing: BTreeSet<&str> = outcomes
                .iter()
                .flat_map(|o| match o {
                    Outcome::Checks(ids) => ids.clone(),
                    Outcome::Passed | Outcome::Whole => Vec::new(),
                })
                .collect();
            let Some(listed) = &entry.checks else {
                if failing.is_empty() {
                    pruned
                        .dropped
                        .push((entry.clone(), "passes now".to_owned()));
                } else {
                    pruned.baseline.expected.push(entry.clone());
                }
                continue;
            };
            let (still, fixed): (Vec<&String>, Vec<&String>) =
                listed.iter().partition(|id| failing.contains(id.as_str()));
            if still.is_empty() {
                pruned
                    .dropped
                    .push((entry.clone(), "its checks pass now".to_owned()));
                continue;
            }
            if !fixed.is_empty() {
                let fixed: Vec<&str> = fixed.into_iter().map(String::as_str).collect();
                pruned.narrowed.push((
                    entry.clone(),
                    format!("{} no longer fail(s)", fixed.join(", ")),
                ));
            }
            pruned.baseline.expected.push(Entry {
                checks: Some(still.into_iter().cloned().collect()),
                ..entry.clone()
            });
        }
        pruned
    }

    /// The baseline as TOML, with a header saying what it is.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).unwrap_or_default();
        format!(
            "# loopcheck baseline: expected failures (`loopcheck run --baseline FILE`).\n# An entry whose case run now passes fails the run as stale: `loopcheck baseline prune` drops it.\n\n{body}"
        )
    }
}

/// Whether an entry applies to a case run.
fn applies(entry: &Entry, run: &CaseReport) -> bool {
    entry.case == run.id
        && entry.state.is_none_or(|s| s == run.state)
        && entry.delivery.is_none_or(|d| d == run.delivery)
}

/// What [`Baseline::prune`] did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// The baseline kept.
    pub baseline: Baseline,
    /// Each entry dropped, with why.
    pub dropped: Vec<(Entry, String)>,
    /// Each entry kept with fewer checks, as it was, with which checks went.
    pub narrowed: Vec<(Entry, String)>,
}

/// How a case run ended, as far as a baseline entry is concerned, whatever the baseline
/// made of its verdict.
#[derive(Debug, PartialEq, Eq)]
enum Outcome<'a> {
    /// It passed.
    Passed,
    /// These checks failed.
    Checks(Vec<&'a str>),
    /// It failed as a whole: crashed, timed out, drifted, an error.
    Whole,
}

impl<'a> Outcome<'a> {
    fn of(report: &'a CaseReport) -> Self {
        let failing: Vec<&str> = report
            .checks
            .iter()
            .filter(|c| c.verdict == CheckVerdict::Fail)
            .map(|c| c.id.as_str())
            .collect();
        match report.verdict {
            CaseVerdict::Pass | CaseVerdict::NonStrict | CaseVerdict::Unsupported => Self::Passed,
            // A stale entry's run passed, or failed fewer checks than the entry lists.
            CaseVerdict::Stale if failing.is_empty() => Self::Passed,
            CaseVerdict::Stale | CaseVerdict::Fail => Self::Checks(failing),
            // Expected as a whole (a crash, say) when no check failed.
            CaseVerdict::ExpectedFail if failing.is_empty() => Self::Whole,
            CaseVerdict::ExpectedFail => Self::Checks(failing),
            CaseVerdict::Drift
            | CaseVerdict::Timeout
            | CaseVerdict::Crashed
            | CaseVerdict::Error => Self::Whole,
        }
    }
}

/// An entry as one line: `case [state, delivery] (checks)`.
pub fn describe(entry: &Entry) -> String {
    let mut scope: Vec<&str> = Vec::new();
    if let Some(state) = entry.state {
        scope.push(state.as_str());
    }
    if let Some(delivery) = entry.delivery {
        scope.push(delivery.as_str());
    }
    let scope = if scope.is_empty() {
        String::new()
    } else {
        format!(" [{}]", scope.join(", "))
    };
    let checks = entry
        .checks
        .as_ref()
        .map(|c| format!(" ({})", c.join(", ")))
        .unwrap_or_default();
    format!("{}{scope}{checks}", entry.case)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::CheckResult;
    use crate::scenario::Level;

    fn report(verdict: CaseVerdict, failing: &[&str]) -> CaseReport {
        let checks = failing
            .iter()
            .map(|id| CheckResult::judge(id, Level::Must, vec!["wrong".to_owned()], ""))
            .chain([CheckResult::judge(
                "call-id/answered",
                Level::Must,
                Vec::new(),
                "ok",
            )])
            .collect();
        CaseReport::judged(
            "dispatch/06-near-miss-name",
            StateMode::Stateless,
            verdict,
            checks,
        )
    }

    fn baseline(text: &str) -> Baseline {
        Baseline::parse(text).unwrap()
    }

    const BY_CHECK: &str = r#"
[[expected]]
case = "dispatch/06-near-miss-name"
checks = ["dispatch/registered-only", "dispatch/rejection-answered"]
"#;

    #[test]
    fn a_failure_of_listed_checks_is_expected() {
        let mut r = report(
            CaseVerdict::Fail,
            &["dispatch/registered-only", "dispatch/rejection-answered"],
        );
        baseline(BY_CHECK).apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::ExpectedFail);
    }

    #[test]
    fn a_check_beyond_the_list_still_fails() {
        let mut r = report(
            CaseVerdict::Fail,
            &[
                "dispatch/registered-only",
                "dispatch/rejection-answered",
                "call-id/own-id",
            ],
        );
        baseline(BY_CHECK).apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::Fail);
        assert!(
            r.baseline
                .unwrap()
                .contains("but call-id/own-id failed too")
        );
    }

    #[test]
    fn a_listed_check_that_passes_now_makes_the_entry_stale() {
        let mut r = report(CaseVerdict::Fail, &["dispatch/registered-only"]);
        baseline(BY_CHECK).apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::Stale);
        assert!(r.verdict.is_failure());
        assert!(
            r.baseline
                .unwrap()
                .starts_with("dispatch/rejection-answered no longer fail")
        );
    }

    #[test]
    fn a_passing_case_makes_its_entry_stale_and_a_crash_needs_a_whole_case_entry() {
        let mut r = report(CaseVerdict::Pass, &[]);
        baseline(BY_CHECK).apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::Stale);

        let mut r = report(CaseVerdict::Crashed, &[]);
        baseline(BY_CHECK).apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::Crashed);
        let mut r = report(CaseVerdict::Crashed, &[]);
        baseline("[[expected]]\ncase = \"dispatch/06-near-miss-name\"\n").apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::ExpectedFail);
    }

    #[test]
    fn entries_of_another_state_or_case_do_not_apply() {
        let mut r = report(CaseVerdict::Fail, &["dispatch/registered-only"]);
        baseline("[[expected]]\ncase = \"dispatch/06-near-miss-name\"\nstate = \"previous_response_id\"\n")
            .apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::Fail);
        baseline("[[expected]]\ncase = \"dispatch/07-near-miss-trailing-space\"\n").apply(&mut r);
        assert_eq!(r.verdict, CaseVerdict::Fail);
    }

    #[test]
    fn a_written_baseline_expects_what_failed_and_reads_back() {
        let failed = report(CaseVerdict::Fail, &["dispatch/registered-only"]);
        let crashed = report(CaseVerdict::Crashed, &[]);
        let passed = report(CaseVerdict::Pass, &[]);
        let mut stale = report(CaseVerdict::Stale, &[]);
        stale.baseline = Some("passed".to_owned());
        let written = Baseline::of_failures([&failed, &crashed, &passed, &stale]);
        assert_eq!(written.expected.len(), 2, "{written:?}");
        let read = Baseline::parse(&written.to_toml()).unwrap();
        assert_eq!(read, written);
        let mut again = failed.clone();
        read.apply(&mut again);
        assert_eq!(again.verdict, CaseVerdict::ExpectedFail);
    }

    #[test]
    fn pruning_drops_what_passes_and_matches_nothing_and_narrows_the_checks() {
        let text = format!(
            "{BY_CHECK}\n[[expected]]\ncase = \"dispatch/06-near-miss-name\"\nstate = \"conversation\"\n\n[[expected]]\ncase = \"gone/01-renamed\"\n"
        );
        let base = baseline(&text);
        let mut still = report(CaseVerdict::Fail, &["dispatch/registered-only"]);
        base.apply(&mut still);
        let pruned = base.prune(&[still]);
        let kept: Vec<String> = pruned.baseline.expected.iter().map(describe).collect();
        assert_eq!(
            kept,
            vec!["dispatch/06-near-miss-name (dispatch/registered-only)"]
        );
        let dropped: Vec<String> = pruned
            .dropped
            .iter()
            .map(|(e, why)| format!("{}: {why}", describe(e)))
            .collect();
        assert_eq!(
            dropped,
            vec![
                "dispatch/06-near-miss-name [conversation]: matches no case run of this run",
                "gone/01-renamed: matches no case run of this run",
            ]
        );
        assert_eq!(pruned.narrowed.len(), 1);

        let mut passed = report(CaseVerdict::Pass, &[]);
        base.apply(&mut passed);
        assert!(base.prune(&[passed]).baseline.expected.is_empty());
        let mut crashed = report(CaseVerdict::Crashed, &[]);
        base.apply(&mut crashed);
        assert_eq!(
            base.prune(&[crashed]).baseline.expected.len(),
            1,
            "kept as it was"
        );
    }

    #[test]
    fn an_update_keeps_the_reason_of_the_entry_it_replaces() {
        let base = baseline(
            "[[expected]]\ncase = \"dispatch/06-near-miss-name\"\nreason = \"upstream normalises names\"\n",
        );
        let mut failed = report(CaseVerdict::Fail, &["dispatch/registered-only"]);
        base.apply(&mut failed);
        let updated = base.updated([&failed]);
        assert_eq!(updated.expected.len(), 1);
        assert_eq!(
            updated.expected[0].reason.as_deref(),
            Some("upstream normalises names")
        );
        assert_eq!(
            updated.expected[0].checks,
            Some(vec!["dispatch/registered-only".to_owned()])
        );
    }

    #[test]
    fn a_malformed_baseline_names_line_and_column() {
        let err = Baseline::parse("[[expected]]\ncase = \"x\"\nstate = \"sometimes\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("3:9: "), "{err}");
        let err = Baseline::parse("[[expected]]\ncase = \"x\"\nwhy = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("3:1: ") && err.contains("unknown field `why`"),
            "{err}"
        );
    }
}
