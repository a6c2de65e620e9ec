//! What a judged case run is held to besides the oracle's checks, applied in one step
//! after judging ([`review`]): its snapshot (what it sent last time it was accepted), a
//! replayed recording's drift (what it sent when recorded), and the baseline (the
//! failures a team has accepted for now).

pub mod baseline;
pub mod drift;
pub mod snapshot;

pub use baseline::Baseline;
pub use snapshot::Snapshots;

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
