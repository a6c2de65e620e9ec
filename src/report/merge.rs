//! `loopcheck merge`: the JSON reports of a partitioned run's shards, put back together
//! into one report of the whole run.

use std::collections::BTreeSet;
use std::path::Path;

use super::RunReport;

/// Reads a JSON report written by `--report-json`.
pub fn read(path: &Path) -> Result<RunReport, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read the report {}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| {
        format!(
            "{}:{}:{}: not a loopcheck JSON report: {err}",
            path.display(),
            err.line(),
            err.column()
        )
    })
}

/// One report of every shard's case runs. The shards must come from one controller and
/// hold each case run once: a case run in two shards means they were not partitions of
/// the same run.
pub fn merge(shards: Vec<RunReport>) -> Result<RunReport, String> {
    let Some(controller) = shards.first().map(|r| r.controller.clone()) else {
        return Err("nothing to merge: give the shards' JSON reports".to_owned());
    };
    if let Some(other) = shards.iter().find(|r| r.controller != controller) {
        return Err(format!(
            "the reports judge different controllers ('{controller}' and '{}'): merge the shards of one run",
            other.controller
        ));
    }
    let mut seen = BTreeSet::new();
    let mut cases = Vec::new();
    // A shard stopped by a signal leaves the merged run partial too.
    let interrupted = shards.iter().any(|r| r.interrupted);
    for shard in shards {
        for case in shard.cases {
            if !seen.insert((case.id.clone(), case.state, case.delivery)) {
                return Err(format!(
                    "{} [{}] is in more than one report: merge the shards of one partitioned run",
                    case.id,
                    case.run_label()
                ));
            }
            cases.push(case);
        }
    }
    Ok(RunReport {
        interrupted,
        ..RunReport::new(&controller, cases)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::CaseVerdict;
    use crate::report::CaseReport;
    use crate::scenario::{Level, StateMode};

    fn case(id: &str, verdict: CaseVerdict) -> CaseReport {
        CaseReport {
            id: id.to_owned(),
            summary: String::new(),
            level: Level::Must,
            state: StateMode::Stateless,
            delivery: Default::default(),
            verdict,
            duration_ms: 3,
            startup_ms: None,
            detail: None,
            checks: Vec::new(),
            snapshot: None,
            recording: None,
            baseline: None,
            transcript: Default::default(),
        }
    }

    #[test]
    fn shards_merge_in_plan_order_with_one_summary() {
        let a = RunReport::new("c", vec![case("b/2", CaseVerdict::Fail)]);
        let b = RunReport::new("c", vec![case("a/1", CaseVerdict::Pass)]);
        let merged = merge(vec![a, b]).unwrap();
        let ids: Vec<&str> = merged.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a/1", "b/2"]);
        assert_eq!((merged.summary.passed, merged.summary.failed), (1, 1));
    }

    #[test]
    fn shards_of_different_runs_do_not_merge() {
        let twice = merge(vec![
            RunReport::new("c", vec![case("a/1", CaseVerdict::Pass)]),
            RunReport::new("c", vec![case("a/1", CaseVerdict::Pass)]),
        ]);
        assert!(
            twice
                .unwrap_err()
                .contains("a/1 [stateless] is in more than one report")
        );
        let mixed = merge(vec![
            RunReport::new("c", Vec::new()),
            RunReport::new("d", Vec::new()),
        ]);
        assert!(mixed.unwrap_err().contains("different controllers"));
        assert!(merge(Vec::new()).is_err());
    }
}
