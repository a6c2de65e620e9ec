//! `--summary-markdown FILE`: the run in a few lines of Markdown, for a CI's job summary
//! (GitHub Actions shows `$GITHUB_STEP_SUMMARY` on the run's page): the counts, then each
//! case run that fails the run with the checks that failed in it. Written atomically when
//! the run finishes.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::drift_groups::{Against, DriftGroup, case_runs, drift_groups, groups_of};
use super::{CaseReport, Reporter, RunEvent, Summary};
use crate::oracle::CheckVerdict;

/// Longest check message kept in a table cell; the HTML and JUnit reports have the rest.
const MESSAGE_CHARS: usize = 300;

/// Collects the judged cases and writes the Markdown at the end of the run.
pub struct SummaryReporter {
    path: PathBuf,
    cases: Vec<CaseReport>,
}

impl SummaryReporter {
    /// Writes to `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            cases: Vec::new(),
        }
    }
}

impl Reporter for SummaryReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::CaseJudged(report) => self.cases.push((**report).clone()),
            RunEvent::RunFinished { controller, .. } => {
                let mut cases = std::mem::take(&mut self.cases);
                cases.sort_by(CaseReport::order);
                write(&self.path, controller, &cases)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Writes the Markdown summary of these case runs to `path`, atomically.
pub fn write(path: &Path, controller: &str, cases: &[CaseReport]) -> io::Result<()> {
    super::write_file(
        "Markdown summary",
        path,
        render(controller, cases).as_bytes(),
    )
}

/// The Markdown summary of one run against `controller`.
pub fn render(controller: &str, cases: &[CaseReport]) -> String {
    let summary = Summary::of(cases);
    let mut out = format!(
        "### loopcheck: {}\n\n",
        if summary.ok() { "passed" } else { "failed" }
    );
    let _ = writeln!(out, "Controller: `{}`\n", controller.replace('`', "'"));
    out.push_str(
        "| cases | passed | failed | non-strict | drift | expected-fail | stale | unsupported | timeout | crashed | errors |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        summary.cases,
        summary.passed,
        summary.failed,
        summary.non_strict,
        summary.drift,
        summary.expected_fail,
        summary.stale,
        summary.unsupported,
        summary.timeout,
        summary.crashed,
        summary.errors
    );
    let failing: Vec<&CaseReport> = cases.iter().filter(|c| c.verdict.is_failure()).collect();
    if failing.is_empty() {
        return out;
    }
    let groups = drift_groups(cases);
    out.push_str(
        "\n#### Failing case runs\n\n| case | run | verdict | check | level | what was wrong |\n|---|---|---|---|---|---|\n",
    );
    for case in failing {
        let run = case.run_label();
        let verdict = case.verdict.as_str();
        let checks: Vec<_> = case
            .checks
            .iter()
            .filter(|c| c.verdict == CheckVerdict::Fail)
            .collect();
        if checks.is_empty() {
            // A crash, a timeout, drift or a stale baseline entry: no check failed, the
            // case's detail says what happened; for drift, the groups it falls in.
            let drift = drift_cell(case, &groups);
            let detail = case.detail.as_deref().unwrap_or(&drift);
            let _ = writeln!(
                out,
                "| `{}` | {run} | {verdict} | | | {} |",
                case.id,
                cell(detail)
            );
        }
        for check in checks {
            let _ = writeln!(
                out,
                "| `{}` | {run} | {verdict} | `{}` | {} | {} |",
                case.id,
                check.id,
                check.level.as_str(),
                cell(&check.message)
            );
        }
    }
    out
}

/// The drift groups a run falls in: `drift group 1 (in 136 case runs): <change>`.
fn drift_cell(case: &CaseReport, groups: &[DriftGroup]) -> String {
    let run = case.run_id();
    [Against::Snapshot, Against::Recording]
        .into_iter()
        .flat_map(|against| groups_of(groups, &run, against))
        .map(|number| {
            let group = &groups[number - 1];
            format!(
                "drift group {number} (in {}): {}",
                case_runs(group.runs.len()),
                group.change
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Text made safe for one table cell: one line, no column breaks, bounded.
fn cell(text: &str) -> String {
    let mut one_line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|");
    if let Some((cut, _)) = one_line.char_indices().nth(MESSAGE_CHARS) {
        one_line.truncate(cut);
        one_line.push('…');
    }
    one_line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{CaseVerdict, CheckResult};
    use crate::scenario::{Level, StateMode};

    fn check(id: &str, verdict: CheckVerdict, message: &str) -> CheckResult {
        CheckResult {
            id: id.to_owned(),
            level: Level::Must,
            verdict,
            message: message.to_owned(),
            rule: String::new(),
            diff: None,
        }
    }

    #[test]
    fn the_counts_and_each_failing_check_are_listed() {
        let cases = vec![
            CaseReport::judged(
                "dispatch/01-unknown-tool",
                StateMode::PreviousResponseId,
                CaseVerdict::Fail,
                vec![
                    check(
                        "dispatch/known-tool",
                        CheckVerdict::Fail,
                        "ran a | b\nnot offered",
                    ),
                    check("call-id/own-id", CheckVerdict::Pass, "fine"),
                ],
            ),
            CaseReport::judged(
                "correlation/01-single-call",
                StateMode::Stateless,
                CaseVerdict::Pass,
                vec![check("call-id/own-id", CheckVerdict::Pass, "fine")],
            ),
        ];
        let text = render("python3 loop.py", &cases);
        assert!(text.starts_with("### loopcheck: failed\n"), "{text}");
        assert!(text.contains("| 2 | 1 | 1 | 0 |"), "{text}");
        assert!(
            text.contains("| `dispatch/01-unknown-tool` | previous_response_id | fail | `dispatch/known-tool` | must | ran a \\| b not offered |"),
            "{text}"
        );
        assert!(
            !text.contains("call-id/own-id"),
            "passing checks are left out:\n{text}"
        );
    }

    #[test]
    fn a_drifted_run_names_its_drift_group() {
        let drifted = |id: &str| {
            let mut case = CaseReport::judged(id, StateMode::Stateless, CaseVerdict::Pass, vec![]);
            case.fold_snapshot(crate::transcript::drift::Comparison {
                path: format!("snaps/{id}.snap").into(),
                status: crate::transcript::drift::ComparisonStatus::Drifted,
                changes: vec!["request 2 (POST /v1/responses): `store` is new: true".to_owned()],
                diff: None,
            });
            case
        };
        let text = render("python3 loop.py", &[drifted("a/1"), drifted("b/1")]);
        assert!(
            text.contains("| `b/1` | stateless | drift | | | drift group 1 (in 2 case runs): request (POST /v1/responses): `store` is new: true |"),
            "{text}"
        );
    }

    #[test]
    fn a_passing_run_has_no_failure_table() {
        let cases = vec![CaseReport::judged(
            "correlation/01-single-call",
            StateMode::Stateless,
            CaseVerdict::Pass,
            vec![],
        )];
        let text = render("node loop.mjs", &cases);
        assert!(text.starts_with("### loopcheck: passed\n"), "{text}");
        assert!(!text.contains("Failing"), "{text}");
    }
}
