//! `--junit FILE`: the run as JUnit XML, the format CI systems show in their test tabs.
//! One test suite per area, one test case per case and state mode; a failure carries the
//! failing checks' messages and the drift diff, a drifted case names its drift group, and
//! a suite lists the groups of its drifted cases. Written atomically when the run finishes.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{
    NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

use super::console::diff;
use super::drift_groups::{
    Against, DriftGroup, case_runs, changes_once, drift_groups, groups_of, some_runs,
};
use super::{CaseReport, Reporter, RunEvent};
use crate::oracle::{CaseVerdict, CheckResult, CheckVerdict};
use crate::transcript::drift::Comparison;

/// Most bytes of the controller's stdout or stderr kept per case (the tail: where a
/// crash's traceback ends up).
const OUTPUT_TAIL: usize = 16 * 1024;

/// Most case runs a suite's drift group names before it counts the rest.
const RUNS_NAMED: usize = 6;

/// Collects the judged cases and writes the XML at the end of the run.
pub struct JunitReporter {
    path: PathBuf,
    cases: Vec<CaseReport>,
}

impl JunitReporter {
    /// Writes to `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            cases: Vec::new(),
        }
    }
}

impl Reporter for JunitReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::CaseJudged(report) => self.cases.push((**report).clone()),
            RunEvent::RunFinished {
                controller,
                elapsed,
                ..
            } => {
                let cases = &mut std::mem::take(&mut self.cases);
                write(&self.path, controller, cases, Some(*elapsed))?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Writes the JUnit document of these case runs to `path`, atomically; `wall` as in
/// [`render`].
pub fn write(
    path: &Path,
    controller: &str,
    cases: &mut [CaseReport],
    wall: Option<Duration>,
) -> io::Result<()> {
    let xml = render(controller, cases, wall).map_err(io::Error::other)?;
    super::write_file("JUnit report", path, xml.as_bytes())
}

/// The JUnit document of one run against `controller`. The root's `time` is the run's
/// wall time `wall` (case runs overlap under `--jobs`, so their sum overstates it); the
/// sum of the suites' times when there is none (merged shards).
pub fn render(
    controller: &str,
    cases: &mut [CaseReport],
    wall: Option<Duration>,
) -> Result<String, quick_junit::SerializeError> {
    cases.sort_by(CaseReport::order);
    let mut areas: BTreeMap<&str, Vec<&CaseReport>> = BTreeMap::new();
    for case in cases.iter() {
        let area = case.id.split('/').next().unwrap_or(&case.id);
        areas.entry(area).or_default().push(case);
    }
    let groups = drift_groups(cases);
    let mut report = Report::new(format!("loopcheck: {controller}"));
    let mut total = Duration::ZERO;
    for (area, cases) in areas {
        let mut suite = TestSuite::new(area);
        suite.add_property(Property::new("controller", controller));
        let mut time = Duration::ZERO;
        let runs: Vec<String> = cases.iter().map(|c| c.run_id()).collect();
        for case in cases {
            time += Duration::from_millis(case.duration_ms);
            suite.add_test_case(test_case(area, case, &groups));
        }
        if let Some(listed) = suite_drift(&groups, &runs) {
            suite.set_system_out(listed);
        }
        suite.set_time(time);
        total += time;
        report.add_test_suite(suite);
    }
    report.set_time(wall.unwrap_or(total));
    report.to_string()
}

/// The drift groups that drifted some of a suite's `runs`, each with every run it
/// drifted: what one change did across the run, seen from the suite.
fn suite_drift(groups: &[DriftGroup], runs: &[String]) -> Option<String> {
    let mut text = String::new();
    for (index, group) in groups.iter().enumerate() {
        let here = group.runs.iter().filter(|r| runs.contains(r)).count();
        if here == 0 {
            continue;
        }
        text.push_str(&format!(
            "drift group {}: {}, in {} against {} ({here} in this suite): {}\n",
            index + 1,
            group.change,
            case_runs(group.runs.len()),
            group.against.theirs(),
            some_runs(&group.runs, RUNS_NAMED)
        ));
    }
    (!text.is_empty()).then_some(text)
}

fn test_case(area: &str, case: &CaseReport, groups: &[DriftGroup]) -> TestCase {
    let mut status = status(case, groups);
    // A flaky run passes with a `flakyFailure` per try that failed first, as nextest
    // writes it.
    status.add_reruns(case.failed_tries.iter().filter_map(flaky_failure));
    let mut test = TestCase::new(format!("{} [{}]", case.id, case.run_label()), status);
    test.set_classname(area);
    test.set_time(Duration::from_millis(case.duration_ms));
    if let Some(ms) = case.startup_ms {
        // A persistent worker's start-up, kept out of `time` as out of the case clock.
        test.add_property(Property::new("startup_ms", ms.to_string()));
    }
    if case.verdict == CaseVerdict::NonStrict {
        // JUnit has no "passed with warnings": a pass whose output names the SHOULD
        // checks it missed.
        test.set_system_out(format!("non-strict: {}", findings(case)));
    } else if case.verdict != CaseVerdict::Pass
        && let Some(process) = &case.transcript.process
    {
        test.set_system_out(tail(&process.stdout));
        test.set_system_err(tail(&process.stderr));
    }
    test
}

/// A try that failed before a retry passed, as JUnit records it: what its own failure
/// would have said, its time and the controller's output.
fn flaky_failure(try_: &CaseReport) -> Option<TestRerun> {
    let TestCaseStatus::NonSuccess {
        kind,
        message,
        ty,
        description,
        ..
    } = status(try_, &[])
    else {
        return None;
    };
    let mut rerun = TestRerun::new(kind);
    rerun.message = message;
    rerun.ty = ty;
    rerun.description = description;
    rerun.set_time(Duration::from_millis(try_.duration_ms));
    if let Some(process) = &try_.transcript.process {
        rerun.set_system_out(tail(&process.stdout));
        rerun.set_system_err(tail(&process.stderr));
    }
    Some(rerun)
}

/// The checks that did not pass.
fn failing(case: &CaseReport) -> Vec<&CheckResult> {
    case.checks
        .iter()
        .filter(|c| matches!(c.verdict, CheckVerdict::Fail | CheckVerdict::NonStrict))
        .collect()
}

/// Every finding of a case: the failing checks with their rules and diffs, then the
/// snapshot or recording drift.
fn findings(case: &CaseReport) -> String {
    let mut text = String::new();
    for check in failing(case) {
        text.push_str(&format!(
            "{} ({}, {}): {}\n  rule: {}\n",
            check.id,
            check.level.as_str(),
            check.verdict.as_str(),
            check.message,
            check.rule
        ));
        if let Some(d) = &check.diff {
            text.push_str(&diff(&d.expected, &d.actual));
            text.push('\n');
        }
    }
    for comparison in [&case.snapshot, &case.recording].into_iter().flatten() {
        text.push_str(&comparison_text(comparison));
    }
    text
}

/// A verdict as JUnit sees it: `fail` and `drift` are failures, the harness's verdicts
/// on the process (crashed, timeout, error) are errors, `unsupported` is skipped, and
/// `pass` and `non-strict` (a SHOULD missed) pass.
fn status(case: &CaseReport, groups: &[DriftGroup]) -> TestCaseStatus {
    let failing = failing(case);
    match case.verdict {
        CaseVerdict::Pass | CaseVerdict::NonStrict => TestCaseStatus::success(),
        CaseVerdict::ExpectedFail => {
            // An accepted failure: skipped, so the test tab neither hides nor fails it.
            let mut status = TestCaseStatus::skipped();
            status
                .set_type("expected-fail")
                .set_message(case.baseline.clone().unwrap_or_default())
                .set_description(findings(case));
            status
        }
        CaseVerdict::Stale => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type("stale")
                .set_message(case.baseline.clone().unwrap_or_default());
            status
        }
        CaseVerdict::Fail => {
            let ids: Vec<&str> = failing.iter().map(|c| c.id.as_str()).collect();
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type(ids.first().copied().unwrap_or("fail"))
                .set_message(format!("{} failed: {}", plural(ids.len()), ids.join(", ")))
                .set_description(findings(case));
            status
        }
        CaseVerdict::Drift => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type("drift")
                .set_message(drift_message(case, groups))
                .set_description(findings(case));
            status
        }
        CaseVerdict::Unsupported => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(case.detail.clone().unwrap_or_else(|| "unsupported".into()));
            status
        }
        CaseVerdict::Timeout | CaseVerdict::Crashed | CaseVerdict::Error => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            let detail = case.detail.as_deref().unwrap_or(case.verdict.as_str());
            status
                .set_type(case.verdict.as_str())
                .set_message(detail)
                .set_description(findings(case));
            status
        }
    }
}

/// A drifted run's failure message: its most common change, the group that holds it and
/// how many case runs that group drifted, and how many other changes it made.
fn drift_message(case: &CaseReport, groups: &[DriftGroup]) -> String {
    let run = case.run_id();
    let mut parts = Vec::new();
    for against in [Against::Snapshot, Against::Recording] {
        let Some(comparison) = against.of(case) else {
            continue;
        };
        let mine = groups_of(groups, &run, against);
        let Some(&first) = mine.first() else {
            continue;
        };
        let group = &groups[first - 1];
        let more = match mine.len() - 1 {
            0 => String::new(),
            1 => "; and 1 more distinct change".to_owned(),
            n => format!("; and {n} more distinct changes"),
        };
        parts.push(format!(
            "what the controller sent differs from {} {}: {} (drift group {first}, in {}){more}",
            against.its(),
            comparison.path.display(),
            group.change,
            case_runs(group.runs.len())
        ));
    }
    if parts.is_empty() {
        // Drift without a drifted comparison: a snapshot missing under CI.
        return "what the controller sent has no snapshot to compare with".to_owned();
    }
    parts.join("; ")
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 check".to_owned()
    } else {
        format!("{n} checks")
    }
}

fn comparison_text(comparison: &Comparison) -> String {
    let mut text = format!("{} ({:?}):\n", comparison.path.display(), comparison.status);
    for change in changes_once(&comparison.changes) {
        text.push_str(&format!("  {change}\n"));
    }
    if let Some(d) = &comparison.diff {
        text.push_str(d);
        text.push('\n');
    }
    text
}

/// The end of a process's output, as much as a CI's test tab shows.
fn tail(text: &str) -> String {
    super::output_tail(text, usize::MAX, OUTPUT_TAIL)
}
