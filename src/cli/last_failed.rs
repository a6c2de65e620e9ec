//! `--last-failed`: the ids of the case runs that failed the last run, kept in
//! `target/loopcheck/last-failed.json` under the working directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::oracle::CaseVerdict;
use crate::report::CaseReport;

use super::error::CliError;

/// Where the last run's failures are kept, under the working directory.
pub(super) fn default_path() -> PathBuf {
    Path::new("target")
        .join("loopcheck")
        .join("last-failed.json")
}

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
struct LastFailed {
    /// Each failing case run's id, `case [state]`.
    runs: BTreeSet<String>,
}

/// True for a verdict that fails a run (what `--last-failed` reruns).
fn failed(report: &CaseReport) -> bool {
    matches!(
        report.verdict,
        CaseVerdict::Fail
            | CaseVerdict::Drift
            | CaseVerdict::Timeout
            | CaseVerdict::Crashed
            | CaseVerdict::Error
            | CaseVerdict::Stale
    )
}

/// Writes the ids of the run's failing case runs to `path`, atomically.
pub(super) fn save(path: &Path, reports: &[CaseReport]) -> std::io::Result<()> {
    let last = LastFailed {
        runs: reports
            .iter()
            .filter(|r| failed(r))
            .map(CaseReport::run_id)
            .collect(),
    };
    let text = serde_json::to_vec_pretty(&last).map_err(std::io::Error::other)?;
    crate::report::write_file("last run's failures", path, &text)
}

/// The ids kept at `path`; a missing file is a usage error (no run to rerun).
pub(super) fn load(path: &Path) -> Result<BTreeSet<String>, CliError> {
    let unreadable = |why: String| CliError::LastFailed {
        path: path.to_owned(),
        why,
    };
    let text = std::fs::read(path).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            unreadable(
                "no run has been recorded there yet: run without --last-failed first".to_owned(),
            )
        } else {
            unreadable(err.to_string())
        }
    })?;
    let last: LastFailed =
        serde_json::from_slice(&text).map_err(|err| unreadable(err.to_string()))?;
    Ok(last.runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::StateMode;

    #[test]
    fn keeps_the_failing_runs_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("last-failed.json");
        let reports = [
            CaseReport::judged("a/01", StateMode::Stateless, CaseVerdict::Fail, Vec::new()),
            CaseReport::judged("a/02", StateMode::Stateless, CaseVerdict::Pass, Vec::new()),
            CaseReport::judged(
                "a/03",
                StateMode::Stateless,
                CaseVerdict::Unsupported,
                Vec::new(),
            ),
            CaseReport::judged(
                "a/04",
                StateMode::Stateless,
                CaseVerdict::Crashed,
                Vec::new(),
            ),
        ];
        save(&path, &reports).unwrap();
        let runs = load(&path).unwrap();
        assert_eq!(
            runs.into_iter().collect::<Vec<_>>(),
            [reports[0].run_id(), reports[3].run_id()]
        );
        assert!(matches!(
            load(&dir.path().join("none.json")),
            Err(CliError::LastFailed { .. })
        ));
    }
}
