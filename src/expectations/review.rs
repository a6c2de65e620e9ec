//! Holding a judged case run to its snapshot, its recording and the baseline, in one step.

use super::drift;
use super::{Baseline, Snapshots};
use crate::oracle::CaseVerdict;
use crate::report::CaseReport;
use crate::scenario::Case;

/// Holds a judged report to its snapshot, its recording and the baseline, in that order:
/// the baseline decides last, on the verdict the other two leave.
pub fn review(
    report: &mut CaseReport,
    case: &Case,
    snapshots: Option<&Snapshots>,
    baseline: Option<&Baseline>,
) {
    if let Some(snapshots) = snapshots {
        let cut_by_clock = case.scenario.task.deadline_ms.is_some();
        snapshots.check(report, cut_by_clock);
    }
    if let Some(recorded) = &case.scenario.recorded
        && report.verdict != CaseVerdict::Unsupported
    {
        report.fold_recording(drift::compare(recorded, &report.transcript, &case.source));
    }
    if let Some(baseline) = baseline {
        baseline.apply(report);
    }
}
