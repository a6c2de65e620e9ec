//! The console report: a header, a line per case as it finishes (unless a progress bar
//! shows them), then each failure with its checks and a diff where a payload differs from
//! what was expected, the drift grouped across case runs, and the summary.

use std::fmt::Write as _;
use std::io::{self, Write};

use similar::{ChangeTag, TextDiff};

use super::drift_groups::{
    Against, DriftGroup, case_runs, changes_once, drift_groups, groups_of, some_runs,
};
use super::{CaseReport, Reporter, RunEvent, Summary};
use crate::oracle::{CaseVerdict, CheckVerdict};
use crate::text::clip;
use crate::transcript::drift::{Comparison, ComparisonStatus};

/// Writes the console report to a stream: standard output, or standard error when a
/// machine-readable report goes to standard output.
pub struct ConsoleReporter {
    out: Box<dyn Write + Send>,
    /// Print the header and a line per finished case (off while a progress bar shows
    /// them).
    live: bool,
    reports: Vec<CaseReport>,
    /// The case runs the run planned.
    planned: usize,
    /// Print only the case runs that did not pass, then the details and summary.
    quiet: bool,
}

impl ConsoleReporter {
    /// A report to `out`; `live` prints the header and a line as each case finishes.
    pub fn new(out: Box<dyn Write + Send>, live: bool) -> Self {
        Self {
            out,
            live,
            reports: Vec::new(),
            planned: 0,
            quiet: false,
        }
    }

    /// With `quiet`, no header and no line for a case run that passed (`--quiet`).
    pub fn quiet(self, quiet: bool) -> Self {
        Self { quiet, ..self }
    }
}

/// The line that opens a run.
pub fn header(controller: &str, cases: usize, runs: usize, jobs: usize) -> String {
    format!(
        "loopcheck {}: {cases} case(s), {runs} run(s) against {controller} ({jobs} at a time)",
        env!("CARGO_PKG_VERSION")
    )
}

impl Reporter for ConsoleReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::RunStarted {
                controller,
                cases,
                runs,
                jobs,
            } => {
                self.planned = *runs;
                if self.live && !self.quiet {
                    writeln!(self.out, "{}", header(controller, *cases, *runs, *jobs))?;
                }
            }
            RunEvent::CaseJudged(report) => {
                // Quiet leaves out what needs no attention: passes and unsupported runs
                // (the summary counts them).
                let calm = matches!(report.verdict, CaseVerdict::Pass | CaseVerdict::Unsupported)
                    && !report.flaky;
                if self.live && !(self.quiet && calm) {
                    writeln!(self.out, "{}", case_line(report))?;
                }
                self.reports.push((**report).clone());
            }
            RunEvent::RunFinished {
                elapsed,
                interrupted,
                summary,
                ..
            } => {
                let mut reports = std::mem::take(&mut self.reports);
                reports.sort_by(CaseReport::order);
                write!(self.out, "{}", details_counted(&reports, summary))?;
                if summary.not_run > 0 && !*interrupted {
                    writeln!(
                        self.out,
                        "fail-fast: stopped after the first failure; {} of {} case run(s) not run",
                        summary.not_run, self.planned
                    )?;
                }
                if *interrupted {
                    writeln!(
                        self.out,
                        "interrupted: {} of {} case run(s) judged; the others did not run",
                        reports.len(),
                        self.planned
                    )?;
                }
                writeln!(self.out, "finished in {:.1} s", elapsed.as_secs_f64())?;
            }
            RunEvent::CaseStarted { .. } | RunEvent::ExchangeRecorded { .. } => {}
        }
        self.out.flush()
    }
}

/// The one-line status of a finished case, with a persistent worker's start-up apart and,
/// for an unsupported case, the capability words the controller lacks.
pub fn case_line(report: &CaseReport) -> String {
    let startup = report
        .startup_ms
        .map(|ms| format!(" (start-up {ms} ms)"))
        .unwrap_or_default();
    let why = match (&report.verdict, &report.detail) {
        (CaseVerdict::Unsupported, Some(detail)) => format!(" ({detail})"),
        _ => String::new(),
    };
    let verdict = if report.flaky {
        "FLAKY".to_owned()
    } else {
        report.verdict.as_str().to_uppercase()
    };
    format!(
        "{verdict:<11} {} [{}] {} ms{startup}{why}",
        report.id,
        report.run_label(),
        report.duration_ms
    )
}

/// The details of every case that did not pass, then the summary line.
pub fn details(reports: &[CaseReport]) -> String {
    details_counted(reports, &Summary::of(reports))
}

/// [`details`] with the summary the run counted (which knows the runs not run).
fn details_counted(reports: &[CaseReport], summary: &Summary) -> String {
    let mut out = String::new();
    // A failure the baseline expects is no failure of this run: it gets a line of its
    // own below, not a place among the failures.
    let groups = drift_groups(reports);
    let failing: Vec<&CaseReport> = reports
        .iter()
        .filter(|r| {
            !matches!(
                r.verdict,
                CaseVerdict::Pass | CaseVerdict::Unsupported | CaseVerdict::ExpectedFail
            )
        })
        .collect();
    if !failing.is_empty() {
        out.push_str("\nFailures:\n");
    }
    for report in failing {
        let _ = writeln!(
            out,
            "\n{} {} [{}]",
            report.verdict.as_str().to_uppercase(),
            report.id,
            report.run_label()
        );
        let _ = writeln!(out, "  {}", report.summary);
        if let Some(detail) = &report.detail {
            let _ = writeln!(out, "  {detail}");
        }
        if let Some(note) = &report.baseline {
            let _ = writeln!(out, "  baseline: {note}");
        }
        for check in report
            .checks
            .iter()
            .filter(|c| !matches!(c.verdict, CheckVerdict::Pass))
        {
            let _ = writeln!(
                out,
                "  x {} ({}, {}): {}",
                check.id,
                check.level.as_str(),
                check.verdict.as_str(),
                check.message
            );
            if let Some(d) = &check.diff {
                out.push_str(&diff(&d.expected, &d.actual));
            }
        }
        for against in [Against::Snapshot, Against::Recording] {
            let note = match against {
                Against::Snapshot => &report.snapshot,
                Against::Recording => &report.recording,
            };
            match note {
                // Its changes are told once for every run they drifted, after the runs.
                Some(note) if note.status == ComparisonStatus::Drifted => {
                    out.push_str(&drift_pointer(
                        note,
                        against,
                        &groups_of(&groups, &report.run_id(), against),
                    ))
                }
                Some(note) if note.status == ComparisonStatus::Missing => {
                    out.push_str(&missing(note))
                }
                _ => {}
            }
        }
        if let Some(process) = &report.transcript.process
            && matches!(report.verdict, CaseVerdict::Crashed | CaseVerdict::Timeout)
        {
            let _ = writeln!(
                out,
                "  exit code: {}",
                process
                    .exit_code
                    .map_or("none".to_owned(), |c| c.to_string())
            );
            for (name, text) in [("stdout", &process.stdout), ("stderr", &process.stderr)] {
                if !text.trim().is_empty() {
                    let (first_error, last) = output_lines(text);
                    if let Some(line) = first_error {
                        let _ = writeln!(out, "  {name} (first error line):");
                        let _ = writeln!(out, "    | {}", clip(line, 200));
                    }
                    let _ = writeln!(out, "  {name} (last lines):");
                    for line in last {
                        let _ = writeln!(out, "    | {}", clip(line, 200));
                    }
                }
            }
        }
    }
    let expected: Vec<&CaseReport> = reports
        .iter()
        .filter(|r| r.verdict == CaseVerdict::ExpectedFail)
        .collect();
    if !expected.is_empty() {
        let _ = writeln!(out, "\nExpected by the baseline: {}", expected.len());
        for report in expected {
            let _ = writeln!(out, "  {} [{}]", report.id, report.run_label());
        }
    }
    out.push_str(&grouped_drift(&groups));
    let count = |status: ComparisonStatus| {
        reports
            .iter()
            .filter(|r| r.snapshot.as_ref().is_some_and(|n| n.status == status))
            .count()
    };
    let (new, drifted, updated) = (
        count(ComparisonStatus::New),
        count(ComparisonStatus::Drifted),
        count(ComparisonStatus::Updated),
    );
    if new + drifted > 0 && !crate::ci::is_ci() {
        let _ = writeln!(
            out,
            "\n{new} new and {drifted} changed snapshot(s) written as .snap.new: review them with `loopcheck snapshots review` (or `cargo insta review`), or accept them all with --update-snapshots"
        );
    }
    if updated > 0 {
        let _ = writeln!(out, "\n{updated} snapshot(s) written");
    }
    let _ = writeln!(out, "\n{}", summary.line());
    out
}

/// The lines of a crashed controller's output shown: its last eight, and before them the
/// first line that looks like an error when it is not among them (the cause, such as a
/// missing package, often scrolls out behind a long traceback).
fn output_lines(text: &str) -> (Option<&str>, Vec<&str>) {
    const LAST: usize = 8;
    const ERROR_MARKS: [&str; 4] = ["Error", "error:", "Traceback", "Cannot find"];
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(LAST);
    let first_error = lines[..start]
        .iter()
        .find(|line| ERROR_MARKS.iter().any(|mark| line.contains(mark)))
        .copied();
    (first_error, lines[start..].to_vec())
}

/// Most case runs a drift group names before it counts the rest.
const RUNS_NAMED: usize = 6;

/// A drifted run's own line: how many changes, and the groups that tell them.
fn drift_pointer(note: &Comparison, against: Against, groups: &[usize]) -> String {
    let numbers: Vec<String> = groups.iter().map(usize::to_string).collect();
    let changes = match note.changes.len() {
        1 => "1 change".to_owned(),
        n => format!("{n} changes"),
    };
    let plural = if numbers.len() == 1 { "" } else { "s" };
    format!(
        "  ~ what the controller sent differs from {} {}: {changes}, in drift group{plural} {} below\n",
        against.its(),
        note.path.display(),
        numbers.join(", ")
    )
}

/// Every distinct change once, with the case runs it drifted and one run's changes and
/// diff as an example (a diff shown for an earlier group is not repeated).
fn grouped_drift(groups: &[DriftGroup]) -> String {
    if groups.is_empty() {
        return String::new();
    }
    let mut runs: Vec<&String> = groups.iter().flat_map(|g| &g.runs).collect();
    runs.sort();
    runs.dedup();
    let mut out = format!(
        "\nDrift, grouped: {} distinct change(s) over {}\n",
        groups.len(),
        case_runs(runs.len())
    );
    let mut diffs_shown: Vec<(&str, usize)> = Vec::new();
    for (index, group) in groups.iter().enumerate() {
        let number = index + 1;
        let example = &group.example;
        let _ = writeln!(
            out,
            "\n[{number}] {}, in {} (against {}): {}",
            group.change,
            case_runs(group.runs.len()),
            group.against.theirs(),
            some_runs(&group.runs, RUNS_NAMED)
        );
        let _ = writeln!(
            out,
            "    example: {} against {}:",
            example.run,
            example.path.display()
        );
        for change in changes_once(&example.changes) {
            let _ = writeln!(out, "      {change}");
        }
        match diffs_shown.iter().find(|(run, _)| *run == example.run) {
            Some((_, shown)) => {
                let _ = writeln!(out, "      (its diff is under group {shown})");
            }
            None => {
                for line in example.diff.iter().flat_map(|d| d.lines()) {
                    let _ = writeln!(out, "      {line}");
                }
                diffs_shown.push((&example.run, number));
            }
        }
    }
    out
}

/// The report of a replay, naming its cassette: matched, or each change once (with the
/// requests it was made at) and the diff.
pub fn replay_report(comparison: &Comparison) -> String {
    let cassette = comparison.path.display();
    match comparison.status {
        ComparisonStatus::Matched => {
            format!("loopcheck: the replay sent what {cassette} recorded\n")
        }
        _ => {
            let once = changes_once(&comparison.changes);
            let mut out = format!(
                "DRIFT {cassette}: what the replay sent differs from the recording in {} distinct change(s)\n",
                once.len()
            );
            for change in once {
                let _ = writeln!(out, "  {change}");
            }
            for line in comparison.diff.iter().flat_map(|d| d.lines()) {
                let _ = writeln!(out, "  {line}");
            }
            out
        }
    }
}

/// A snapshot missing under CI (drift with no change to tell).
fn missing(note: &Comparison) -> String {
    format!(
        "  ~ what the controller sent has no snapshot at {}\n",
        note.path.display()
    )
}

/// A unified line diff, expected (-) against actual (+).
pub fn diff(expected: &str, actual: &str) -> String {
    let mut out = String::from("    --- expected\n    +++ actual\n");
    for change in TextDiff::from_lines(expected, actual).iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => ' ',
        };
        let _ = writeln!(out, "    {sign}{}", change.value().trim_end_matches('\n'));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{Comparison, ComparisonStatus, output_lines, replay_report};

    #[test]
    fn a_replay_names_its_cassette_and_says_each_change_once() {
        let drifted = Comparison {
            path: PathBuf::from("cassettes/refund.yaml"),
            status: ComparisonStatus::Drifted,
            changes: vec![
                "request 1 (POST /v1/responses): `max_output_tokens` is new: 256".to_owned(),
                "request 2 (POST /v1/responses): `max_output_tokens` is new: 256".to_owned(),
                "request 2 (POST /v1/responses): `instructions` is gone (was \"Be brief.\")"
                    .to_owned(),
            ],
            diff: Some("--- expected\n+++ actual\n+x\n".to_owned()),
        };
        let text = replay_report(&drifted);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "DRIFT cassettes/refund.yaml: what the replay sent differs from the recording in 2 distinct change(s)",
                "  request (POST /v1/responses): `max_output_tokens` is new: 256 (requests 1, 2)",
                "  request 2 (POST /v1/responses): `instructions` is gone (was \"Be brief.\")",
            ]
        );
        assert_eq!(lines[3..], ["  --- expected", "  +++ actual", "  +x"]);
        let matched = Comparison {
            status: ComparisonStatus::Matched,
            changes: Vec::new(),
            diff: None,
            ..drifted
        };
        assert_eq!(
            replay_report(&matched),
            "loopcheck: the replay sent what cassettes/refund.yaml recorded\n"
        );
    }

    #[test]
    fn the_first_error_line_is_shown_when_it_scrolled_out() {
        let mut text = String::from(
            "node:internal/modules\nError [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai'\n",
        );
        for n in 0..10 {
            text.push_str(&format!("    at frame {n}\n"));
        }
        let (first, last) = output_lines(&text);
        assert_eq!(
            first,
            Some("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai'")
        );
        assert_eq!(last.len(), 8);
        assert_eq!(last[7], "    at frame 9");
    }

    #[test]
    fn an_error_line_among_the_last_is_not_repeated() {
        let text = "Traceback (most recent call last):\n  File x\nValueError: bad\n";
        let (first, last) = output_lines(text);
        assert_eq!(first, None);
        assert_eq!(last.len(), 3);
        let quiet = (0..12).map(|n| format!("line {n}\n")).collect::<String>();
        assert_eq!(output_lines(&quiet).0, None);
    }
}
