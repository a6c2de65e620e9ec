//! Drift grouped across case runs: one controller change (a new request field, say) drifts
//! every case run the same way, and a report that repeats it per run and per request buries
//! it. Changes that read the same once their request numbers are taken out
//! ([`grouping_key`]) form one group, with the case runs it drifted and one run as an
//! example. Snapshot drift and recording (cassette) drift are grouped apart.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::CaseReport;
use crate::transcript::drift::{Comparison, ComparisonStatus, grouping_key};

/// What a drifted run was compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Against {
    /// Its snapshot (`--snapshots`).
    Snapshot,
    /// Its recording (the case is a cassette).
    Recording,
}

impl Against {
    /// `its snapshot`, `its recording`: as the console words it.
    pub fn its(self) -> &'static str {
        match self {
            Self::Snapshot => "its snapshot",
            Self::Recording => "its recording",
        }
    }

    /// `their snapshots`, `their recordings`: for many runs.
    pub fn theirs(self) -> &'static str {
        match self {
            Self::Snapshot => "their snapshots",
            Self::Recording => "their recordings",
        }
    }

    /// The run's comparison of this kind.
    pub fn of(self, report: &CaseReport) -> Option<&Comparison> {
        match self {
            Self::Snapshot => report.snapshot.as_ref(),
            Self::Recording => report.recording.as_ref(),
        }
        .filter(|c| c.status == ComparisonStatus::Drifted)
    }
}

/// One distinct change, and every case run it drifted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftGroup {
    /// The change without its request numbers.
    pub change: String,
    /// Whether the runs drifted from their snapshots or from their recordings.
    pub against: Against,
    /// The case runs (`case [state]`) in plan order.
    pub runs: Vec<String>,
    /// The first of those runs, as its report has it.
    pub example: DriftExample,
}

/// The run a group shows: the change as worded at each of its requests, and the diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftExample {
    /// The case run (`case [state]`).
    pub run: String,
    /// Its snapshot or cassette file.
    pub path: PathBuf,
    /// The change at each request where this run made it.
    pub changes: Vec<String>,
    /// The unified diff of the run against its snapshot or recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The groups of these case runs' drift: the change that drifted most runs first, then in
/// order of the first run that made it (reports in plan order keep it stable).
pub fn drift_groups(reports: &[CaseReport]) -> Vec<DriftGroup> {
    let mut order: Vec<(Against, String)> = Vec::new();
    let mut groups: BTreeMap<(Against, String), DriftGroup> = BTreeMap::new();
    let mut sorted: Vec<&CaseReport> = reports.iter().collect();
    sorted.sort_by(|a, b| CaseReport::order(a, b));
    for report in sorted {
        for against in [Against::Snapshot, Against::Recording] {
            let Some(comparison) = against.of(report) else {
                continue;
            };
            let run = report.run_id();
            for change in &comparison.changes {
                let (key, _) = grouping_key(change);
                let id = (against, key);
                let group = groups.entry(id.clone()).or_insert_with(|| {
                    order.push(id.clone());
                    DriftGroup {
                        change: id.1.clone(),
                        against,
                        runs: Vec::new(),
                        example: DriftExample {
                            run: run.clone(),
                            path: comparison.path.clone(),
                            changes: Vec::new(),
                            diff: comparison.diff.clone(),
                        },
                    }
                });
                if group.runs.last() != Some(&run) {
                    group.runs.push(run.clone());
                }
                if group.example.run == run {
                    group.example.changes.push(change.clone());
                }
            }
        }
    }
    let mut out: Vec<DriftGroup> = order
        .into_iter()
        .filter_map(|id| groups.remove(&id))
        .collect();
    // Stable: equal counts keep the order of their first run.
    out.sort_by_key(|group| std::cmp::Reverse(group.runs.len()));
    out
}

/// The numbers (from 1) of the groups `run`'s comparison with `against` falls in.
pub fn groups_of(groups: &[DriftGroup], run: &str, against: Against) -> Vec<usize> {
    groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.against == against && g.runs.iter().any(|r| r == run))
        .map(|(index, _)| index + 1)
        .collect()
}

/// `a [stateless], b [stateless], ... and N more`: the first `shown` runs, then a count.
pub fn some_runs(runs: &[String], shown: usize) -> String {
    let mut text = runs
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if runs.len() > shown {
        text.push_str(&format!(", ... and {} more", runs.len() - shown));
    }
    text
}

/// `1 case run`, `N case runs`.
pub fn case_runs(n: usize) -> String {
    if n == 1 {
        "1 case run".to_owned()
    } else {
        format!("{n} case runs")
    }
}

/// One comparison's changes, each distinct change once with the requests it was made at:
/// `request (POST /v1/responses): `store` is new: true (requests 1, 2)`.
pub fn changes_once(changes: &[String]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut numbers: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for change in changes {
        let (key, first) = grouping_key(change);
        let at = numbers.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Vec::new()
        });
        at.extend(first);
    }
    order
        .into_iter()
        .map(|key| match numbers[&key].as_slice() {
            // Said once, it reads as it was worded.
            [] => key,
            [_] => changes
                .iter()
                .find(|c| grouping_key(c).0 == key)
                .cloned()
                .unwrap_or(key),
            many => {
                let list: Vec<String> = many.iter().map(u64::to_string).collect();
                let what = if key.starts_with("request") {
                    "requests"
                } else if key.starts_with("tool exchange") {
                    "tool exchanges"
                } else {
                    "at"
                };
                format!("{key} ({what} {})", list.join(", "))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::CaseVerdict;
    use crate::scenario::StateMode;

    fn drifted(id: &str, state: StateMode, changes: &[&str]) -> CaseReport {
        let mut report = CaseReport::judged(id, state, CaseVerdict::Pass, Vec::new());
        report.fold_snapshot(Comparison {
            path: PathBuf::from(format!("snaps/{id}.snap")),
            status: ComparisonStatus::Drifted,
            changes: changes.iter().map(|c| c.to_string()).collect(),
            diff: Some(format!("diff of {id}")),
        });
        report
    }

    const NEW_1: &str = "request 1 (POST /v1/responses): `max_output_tokens` is new: 256";
    const NEW_2: &str = "request 2 (POST /v1/responses): `max_output_tokens` is new: 256";
    const NEW_3: &str = "request 3 (POST /v1/responses): `max_output_tokens` is new: 256";

    #[test]
    fn one_change_over_many_runs_and_requests_is_one_group() {
        let reports = [
            drifted("b/2", StateMode::Stateless, &[NEW_1, NEW_2, NEW_3]),
            drifted("a/1", StateMode::PreviousResponseId, &[NEW_1, NEW_2]),
            drifted("a/1", StateMode::Stateless, &[NEW_1]),
            drifted(
                "c/3",
                StateMode::Stateless,
                &[
                    NEW_2,
                    "request 2 (POST /v1/responses): `store` is gone (was true)",
                ],
            ),
        ];
        let groups = drift_groups(&reports);
        assert_eq!(groups.len(), 2, "{groups:#?}");
        let new = &groups[0];
        assert_eq!(
            new.change,
            "request (POST /v1/responses): `max_output_tokens` is new: 256"
        );
        assert_eq!(new.against, Against::Snapshot);
        assert_eq!(
            new.runs,
            [
                "a/1 [previous_response_id]",
                "a/1 [stateless]",
                "b/2 [stateless]",
                "c/3 [stateless]"
            ]
        );
        assert_eq!(new.example.run, "a/1 [previous_response_id]");
        assert_eq!(new.example.changes, [NEW_1, NEW_2]);
        assert_eq!(new.example.diff.as_deref(), Some("diff of a/1"));
        assert_eq!(groups[1].runs, ["c/3 [stateless]"]);
        assert_eq!(
            groups_of(&groups, "c/3 [stateless]", Against::Snapshot),
            [1, 2]
        );
        assert!(groups_of(&groups, "c/3 [stateless]", Against::Recording).is_empty());
    }

    #[test]
    fn snapshot_and_recording_drift_are_grouped_apart_and_matches_are_left_out() {
        let mut recorded =
            CaseReport::judged("r/1", StateMode::Stateless, CaseVerdict::Pass, vec![]);
        recorded.fold_recording(Comparison {
            path: PathBuf::from("r.yaml"),
            status: ComparisonStatus::Drifted,
            changes: vec![NEW_1.to_owned()],
            diff: None,
        });
        let mut matched = drifted("m/1", StateMode::Stateless, &[NEW_1]);
        if let Some(snapshot) = &mut matched.snapshot {
            snapshot.status = ComparisonStatus::Matched;
        }
        let groups = drift_groups(&[
            drifted("s/1", StateMode::Stateless, &[NEW_1]),
            recorded,
            matched,
        ]);
        let kinds: Vec<(Against, &[String])> =
            groups.iter().map(|g| (g.against, &g.runs[..])).collect();
        assert_eq!(
            kinds,
            [
                (Against::Recording, &["r/1 [stateless]".to_owned()][..]),
                (Against::Snapshot, &["s/1 [stateless]".to_owned()][..])
            ]
        );
    }

    #[test]
    fn a_comparisons_changes_are_said_once_each() {
        let once = changes_once(&[
            NEW_1.to_owned(),
            NEW_2.to_owned(),
            "request 2 (POST /v1/responses): `store` is gone (was true)".to_owned(),
            "result: {} instead of no result".to_owned(),
        ]);
        assert_eq!(
            once,
            [
                "request (POST /v1/responses): `max_output_tokens` is new: 256 (requests 1, 2)",
                "request 2 (POST /v1/responses): `store` is gone (was true)",
                "result: {} instead of no result",
            ]
        );
        assert_eq!(
            some_runs(&["a".into(), "b".into(), "c".into()], 2),
            "a, b, ... and 1 more"
        );
    }
}
