//! The catalogue: well-formed, ids matching paths, and every case passing with the Rust
//! reference controller in every state mode it runs in.

use std::collections::BTreeSet;
use std::process::Command;

use loopcheck::oracle::CheckVerdict;
use serde_json::Value;

use crate::support::{catalogue, loopcheck_bin, root};

#[test]
fn catalogue_ids_match_their_paths_and_cover_every_area() {
    let cases = catalogue();
    assert!(cases.len() >= 14, "the catalogue has {} cases", cases.len());
    for case in &cases {
        let expected = format!("scenarios/{}.yaml", case.scenario.id);
        assert_eq!(
            case.source.to_string_lossy(),
            expected,
            "case id and file path disagree"
        );
        assert!(
            !case.scenario.summary.trim().is_empty(),
            "{} has no summary",
            case.scenario.id
        );
        let name = case
            .scenario
            .id
            .split_once('/')
            .map_or("", |(_, name)| name);
        let numbered =
            name.len() > 3 && name[..2].bytes().all(|b| b.is_ascii_digit()) && &name[2..3] == "-";
        assert!(
            numbered,
            "{}: catalogue ids are numbered within their area (`area/NN-name`)",
            case.scenario.id
        );
        let origin = case.scenario.origin.as_deref().unwrap_or_default();
        assert!(
            origin.starts_with("guide: ") || origin.starts_with("report: "),
            "{}: every catalogue case names its origin (`guide: <rule>` or `report: owner/repo#N`), not {origin:?}",
            case.scenario.id
        );
        if case.scenario.area() == "regressions" {
            let report = origin.trim_start_matches("report: ");
            let report = report.split(';').next().unwrap_or_default();
            assert!(
                origin.starts_with("report: ") && case.scenario.summary.contains(report),
                "{}: a regression case names its report in its origin and its summary",
                case.scenario.id
            );
        }
    }
    let areas: BTreeSet<&str> = cases.iter().map(|c| c.scenario.area()).collect();
    for area in [
        "correlation",
        "reasoning",
        "state",
        "dispatch",
        "authz",
        "budget",
        "terminal",
        "websocket",
    ] {
        assert!(areas.contains(area), "no case in area {area}");
    }
}

/// Every case passes, and what the reference sends matches its committed snapshots
/// (`snapshots/reference`; under `CI` a missing snapshot fails and nothing is written).
#[test]
fn reference_controller_passes_every_case_and_matches_its_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let output = Command::new(loopcheck_bin())
        .args(["run", "--jobs", "2", "--snapshots", "snapshots/reference"])
        .arg("--report-json")
        .arg(&report_path)
        .env("CI", "1")
        .current_dir(root())
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "loopcheck run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(
        report["summary"]["cases"].as_u64(),
        Some(cases.len() as u64)
    );
    let mut states = BTreeSet::new();
    for case in cases {
        assert_eq!(case["verdict"], "pass", "{case:#}");
        states.insert(case["state"].as_str().unwrap().to_owned());
        for check in case["checks"].as_array().unwrap() {
            assert_eq!(
                check["verdict"],
                CheckVerdict::Pass.as_str(),
                "{}: {check:#}",
                case["id"]
            );
        }
    }
    for state in ["previous_response_id", "stateless", "conversation"] {
        assert!(states.contains(state), "no case ran in {state}: {states:?}");
    }
    assert_eq!(
        report["summary"]["passed"].as_u64(),
        Some(cases.len() as u64)
    );
}

/// The reference runs persistent by default; given capabilities without `persistent`, it
/// runs a process per case, from the contract's variables, and passes the same.
#[test]
fn reference_controller_passes_as_a_process_per_case() {
    assert_two_cases_pass(&["--supports", "previous_response_id,stateless"], &[], 4);
}

/// Runs the built-in reference on `correlation/01` and `02` with `options` and `env`
/// added, and expects all `runs` case runs to pass.
fn assert_two_cases_pass(options: &[&str], env: &[(&str, &str)], runs: usize) {
    let output = Command::new(loopcheck_bin())
        .args(["run", "--filter", "correlation/0[12]*"])
        .args(options)
        .envs(env.iter().copied())
        .current_dir(root())
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("{runs} runs: {runs} passed")),
        "{stdout}"
    );
}

/// A persistent worker starts without the contract's `LOOPCHECK_` variables, whatever
/// the shell that ran loopcheck exported: a stale `LOOPCHECK_TASK` would otherwise send
/// the built-in reference into its one-case mode, to run a task that is not the case's.
#[test]
fn a_persistent_worker_does_not_inherit_the_shells_contract_variables() {
    let stale = [
        ("LOOPCHECK_TASK", "/nonexistent/task.json"),
        ("LOOPCHECK_CASE", "stale/case"),
        ("LOOPCHECK_TOOLS_URL", "http://127.0.0.1:9/tools"),
    ];
    // Two state modes, with JSON and streamed responses.
    assert_two_cases_pass(&[], &stale, 8);
}

#[test]
fn list_prints_the_catalogue_as_json() {
    let output = Command::new(loopcheck_bin())
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(rows.len(), catalogue().len());
    for row in &rows {
        for key in ["id", "level", "area", "origin", "summary"] {
            assert!(row[key].is_string(), "{row:#} lacks {key}");
        }
        assert!(
            row["id"]
                .as_str()
                .unwrap()
                .starts_with(row["area"].as_str().unwrap())
        );
    }
}

/// The check table of docs/checks.md is the declaration in `oracle::checks`, row for row.
#[test]
fn the_documented_check_table_is_the_declaration() {
    let page = std::fs::read_to_string(root().join("docs/checks.md")).unwrap();
    let rows: Vec<String> = page
        .lines()
        .filter(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            cells
                .get(1)
                .is_some_and(|c| c.starts_with('`') && c.contains('/'))
                && cells
                    .get(2)
                    .is_some_and(|level| ["MUST", "SHOULD", "MAY"].contains(level))
        })
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> = loopcheck::oracle::checks::ALL
        .iter()
        .map(|check| {
            format!(
                "| `{}` | {} | {} |",
                check.id,
                check.level.as_str().to_uppercase(),
                check.rule
            )
        })
        .collect();
    assert_eq!(
        rows.join("\n"),
        expected.join("\n"),
        "docs/checks.md's check table differs from oracle::checks (`loopcheck list --checks --markdown` prints it)"
    );
}

/// The area table of docs/scenarios.md is `loopcheck list --areas --markdown`.
#[test]
fn the_documented_area_table_counts_the_catalogue() {
    let page = std::fs::read_to_string(root().join("docs/scenarios.md")).unwrap();
    let output = Command::new(loopcheck_bin())
        .args(["list", "--areas", "--markdown"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        page.contains(&table),
        "docs/scenarios.md's area table differs from `loopcheck list --areas --markdown`:\n{table}"
    );
    let listed: usize = loopcheck::scenario::area_counts(&catalogue())
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(listed, catalogue().len());
}
