//! `loopcheck merge`: the JSON reports of a partitioned run's shards, put back together
//! into one report of the whole run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::RunReport;

/// Why shard reports cannot be merged: a report that cannot be read, or reports that are
/// not the shards of one run.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The file cannot be read.
    #[error("cannot read the report {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The file is not a JSON report: `file:L:C: ...`.
    #[error("{}:{}:{}: not a loopcheck JSON report: {source}", .path.display(), .source.line(), .source.column())]
    NotAReport {
        /// The file.
        path: PathBuf,
        /// Where and what.
        source: serde_json::Error,
    },
    /// No report given.
    #[error("nothing to merge: give the shards' JSON reports")]
    Nothing,
    /// Reports of two controllers.
    #[error(
        "the reports judge different controllers ('{first}' and '{other}'): merge the shards of one run"
    )]
    Controllers {
        /// The first report's controller.
        first: String,
        /// Another one.
        other: String,
    },
    /// A case run in two reports.
    #[error("{case} [{run}] is in more than one report: merge the shards of one partitioned run")]
    Twice {
        /// The case id.
        case: String,
        /// Its state mode (and delivery).
        run: String,
    },
}

/// Reads a JSON report written by `--report-json`.
pub fn read(path: &Path) -> Result<RunReport, MergeError> {
    let text = std::fs::read_to_string(path).map_err(|source| MergeError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| MergeError::NotAReport {
        path: path.to_owned(),
        source,
    })
}

/// One report of every shard's case runs. The shards must come from one controller and
/// hold each case run once: a case run in two shards means they were not partitions of
/// the same run.
pub fn merge(shards: Vec<RunReport>) -> Result<RunReport, MergeError> {
    let Some(controller) = shards.first().map(|r| r.controller.clone()) else {
        return Err(MergeError::Nothing);
    };
    if let Some(other) = shards.iter().find(|r| r.controller != controller) {
        return Err(MergeError::Controllers {
            first: controller,
            other: other.controller.clone(),
        });
    }
    let mut seen = BTreeSet::new();
    let mut cases = Vec::new();
    // A shard stopped by a signal leaves the merged run partial too.
    let interrupted = shards.iter().any(|r| r.interrupted);
    for shard in shards {
        for case in shard.cases {
            if !seen.insert((case.id.clone(), case.state, case.delivery)) {
                return Err(MergeError::Twice {
                    run: case.run_label(),
                    case: case.id,
                });
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
            flaky: false,
            failed_tries: Vec::new(),
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
                .to_string()
                .contains("a/1 [stateless] is in more than one report")
        );
        let mixed = merge(vec![
            RunReport::new("c", Vec::new()),
            RunReport::new("d", Vec::new()),
        ]);
        assert!(
            mixed
                .unwrap_err()
                .to_string()
                .contains("different controllers")
        );
        assert!(merge(Vec::new()).is_err());
    }
}
