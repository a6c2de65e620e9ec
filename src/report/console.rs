//! The console report: a line per case as it finishes, then each failure with its checks
//! and a diff where a payload differs from what was expected.

use std::fmt::Write as _;

use similar::{ChangeTag, TextDiff};

use super::Summary;
use crate::oracle::{CaseVerdict, CheckVerdict};
use crate::runner::CaseReport;
use crate::transcript::clip;

/// The one-line status of a finished case.
pub fn case_line(report: &CaseReport) -> String {
    format!(
        "{:<11} {} [{}] {} ms",
        report.verdict.as_str().to_uppercase(),
        report.id,
        report.state,
        report.duration_ms
    )
}

/// The details of every case that did not pass, then the summary line.
pub fn details(reports: &[CaseReport]) -> String {
    let mut out = String::new();
    let failing: Vec<&CaseReport> = reports
        .iter()
        .filter(|r| !matches!(r.verdict, CaseVerdict::Pass | CaseVerdict::Unsupported))
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
            report.state
        );
        let _ = writeln!(out, "  {}", report.summary);
        if let Some(detail) = &report.detail {
            let _ = writeln!(out, "  {detail}");
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
            if let Some((expected, actual)) = &check.diff {
                out.push_str(&diff(expected, actual));
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
                    let _ = writeln!(out, "  {name} (last lines):");
                    for line in text
                        .lines()
                        .rev()
                        .take(8)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                    {
                        let _ = writeln!(out, "    | {}", clip(line, 200));
                    }
                }
            }
        }
    }
    let _ = writeln!(out, "\n{}", Summary::of(reports).line());
    out
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
