//! `--report-json`: the machine-readable report, in the shape of DESIGN.md "Interfaces".

use serde_json::{Value, json};

use super::Summary;
use crate::runner::CaseReport;

/// The report document.
pub fn render(controller: &str, reports: &[CaseReport]) -> Value {
    let summary = Summary::of(reports);
    json!({
        "loopcheck": env!("CARGO_PKG_VERSION"),
        "controller": controller,
        "summary": summary.to_json(),
        "cases": reports.iter().map(case).collect::<Vec<_>>(),
    })
}

fn case(report: &CaseReport) -> Value {
    json!({
        "id": report.id,
        "state": report.state.as_str(),
        "verdict": report.verdict.as_str(),
        "duration_ms": report.duration_ms,
        "checks": report.checks.iter().map(|check| json!({
            "id": check.id,
            "level": check.level.as_str(),
            "verdict": check.verdict.as_str(),
            "message": check.message,
        })).collect::<Vec<_>>(),
    })
}
