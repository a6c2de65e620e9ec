//! `loopcheck run --snapshots`: drift reported item by item, new snapshots written for
//! review outside CI and failing under CI, updates refused under CI, and bad snapshot
//! files or folders reported, never a panic.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::cli::{self, assert_success};

const CASE: &str = "correlation/01-single-call";

/// `loopcheck run` of CASE in stateless mode with the Rust reference; `ci` sets `CI`.
fn run(snapshots: &Path, ci: bool, extra: &[&str]) -> (Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mut command = cli::command(&[
        "run",
        "--filter",
        CASE,
        "--supports",
        "stateless",
        "--jobs",
        "1",
    ]);
    command
        .arg("--snapshots")
        .arg(snapshots)
        .arg("--report-json")
        .arg(&report)
        .args(extra)
        .env_remove("CI");
    if ci {
        command.env("CI", "true");
    }
    let output = command.output().expect("loopcheck runs");
    let value = cli::read_report(&report);
    (output, value)
}

fn snap(dir: &Path) -> std::path::PathBuf {
    dir.join(format!("{CASE}.stateless.snap"))
}

/// The stateless run's entry in the report (the other mode is unsupported).
fn stateless(report: &Value) -> &Value {
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["state"] == "stateless"))
        .unwrap_or(&Value::Null)
}

fn verdict(report: &Value) -> &str {
    stateless(report)["verdict"].as_str().unwrap_or("none")
}

#[test]
fn a_changed_request_is_drift_naming_the_request_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = run(dir.path(), false, &["--update-snapshots"]);
    assert_success(&output);
    // The recorded run without `parallel_tool_calls` in its second request: as though
    // the controller had just started sending it.
    let text = std::fs::read_to_string(snap(dir.path())).unwrap();
    let second = text
        .match_indices("\"parallel_tool_calls\": true,")
        .nth(1)
        .unwrap()
        .0;
    let line_end = text[second..].find('\n').unwrap() + 1;
    let edited = format!("{}{}", &text[..second], &text[second + line_end..]);
    let edited = edited.replacen("\n          \n", "\n", 1);
    std::fs::write(snap(dir.path()), edited).unwrap();

    let (output, report) = run(dir.path(), true, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(verdict(&report), "drift", "{report:#}");
    let changes = &stateless(&report)["snapshot"]["changes"];
    assert_eq!(
        changes,
        &serde_json::json!(["request 2 (POST /v1/responses): `parallel_tool_calls` is new: true"]),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("DRIFT"), "{stdout}");
    assert!(
        stdout.contains("+          \"parallel_tool_calls\": true,"),
        "{stdout}"
    );
    assert!(
        !snap(dir.path()).with_extension("snap.new").exists(),
        "nothing is written under CI"
    );
}

#[test]
fn a_missing_snapshot_is_written_for_review_and_fails_under_ci() {
    let dir = tempfile::tempdir().unwrap();
    let (output, report) = run(dir.path(), false, &[]);
    assert!(output.status.success());
    assert_eq!(verdict(&report), "pass");
    assert_eq!(stateless(&report)["snapshot"]["status"], "new");
    let new = snap(dir.path()).with_extension("snap.new");
    assert!(new.exists());
    assert!(
        std::fs::read_to_string(&new)
            .unwrap()
            .starts_with("---\nsource: loopcheck\n")
    );

    let (output, report) = run(dir.path(), true, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(verdict(&report), "drift");
    assert_eq!(stateless(&report)["snapshot"]["status"], "missing");
}

#[test]
fn updating_snapshots_is_refused_under_ci() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = run(dir.path(), true, &["--update-snapshots"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to update snapshots because CI is set"),
        "{stderr}"
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_corrupt_snapshot_is_an_error_naming_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = snap(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        "---\nsource: loopcheck\n---\n{\"format\": 1, \"case\": ",
    )
    .unwrap();
    let (output, report) = run(dir.path(), true, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(verdict(&report), "error");
    let detail = stateless(&report)["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "{}:4: expected a loopcheck normalized transcript",
            path.display()
        )),
        "{detail}"
    );
}

#[test]
fn an_unusable_snapshot_folder_is_a_usage_error_before_any_case_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let (output, report) = run(&file.join("snapshots"), false, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(report, Value::Null, "no case ran");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("failed to use the snapshot folder"),
        "{stderr}"
    );
}

/// Removes every `"parallel_tool_calls": true,` line from the snapshots under `dir`: as
/// though the controller had just started sending the field in every request.
fn without_parallel_tool_calls(dir: &Path) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files += without_parallel_tool_calls(&path);
        } else if path.extension().is_some_and(|e| e == "snap") {
            let text = std::fs::read_to_string(&path).unwrap();
            let edited: String = text
                .split_inclusive('\n')
                .filter(|line| line.trim() != "\"parallel_tool_calls\": true,")
                .collect();
            assert_ne!(edited, text, "{} sends the field", path.display());
            std::fs::write(&path, edited).unwrap();
            files += 1;
        }
    }
    files
}

#[test]
fn one_new_field_in_every_request_is_one_drift_group_naming_every_run() {
    let snapshots = tempfile::tempdir().unwrap();
    let reports = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        cli::command(&[
            "run",
            "--filter",
            "correlation/*",
            "--supports",
            "stateless,previous_response_id",
        ])
        .arg("--snapshots")
        .arg(snapshots.path())
        .args(extra)
        .env("CI", "true")
        .output()
        .expect("loopcheck runs")
    };
    let output = cli::command(&[
        "run",
        "--filter",
        "correlation/*",
        "--supports",
        "stateless,previous_response_id",
        "--update-snapshots",
    ])
    .arg("--snapshots")
    .arg(snapshots.path())
    .env_remove("CI")
    .output()
    .unwrap();
    assert_success(&output);
    let runs = without_parallel_tool_calls(snapshots.path());
    assert!(runs >= 10, "{runs} case runs");

    let path = |name: &str| reports.path().join(name).to_string_lossy().into_owned();
    let output = run(&[
        "--report-json",
        &path("report.json"),
        "--junit",
        &path("junit.xml"),
        "--html",
        &path("report.html"),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", cli::text(&output));
    let change = "request (POST /v1/responses): `parallel_tool_calls` is new: true";

    // The console: the change told once, as a group naming the count of runs.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.matches("\nDRIFT correlation/").count(),
        runs,
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("in drift group 1 below").count(),
        runs,
        "each drifted run points to the group:\n{stdout}"
    );
    assert_eq!(
        stdout
            .matches(&format!(
                "[1] {change}, in {runs} case runs (against their snapshots): "
            ))
            .count(),
        1,
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("... and {} more", runs - 6)),
        "{stdout}"
    );
    assert!(!stdout.contains("[2] "), "one group only:\n{stdout}");
    assert!(
        stdout.matches("`parallel_tool_calls` is new").count() <= 2,
        "the change is not repeated per run or request:\n{stdout}"
    );
    assert_eq!(
        stdout
            .matches("+          \"parallel_tool_calls\": true,")
            .count(),
        stdout.matches("@@ ").count(),
        "one example diff:\n{stdout}"
    );
    let lines = stdout.lines().count();
    assert!(
        lines <= 6 * runs + 60,
        "{lines} console lines for {runs} runs:\n{stdout}"
    );

    // The JSON report: one group, every run, one example.
    let report = cli::read_report(&reports.path().join("report.json"));
    let groups = report["drift_groups"].as_array().expect("drift_groups");
    assert_eq!(groups.len(), 1, "{groups:#?}");
    assert_eq!(groups[0]["change"], change);
    assert_eq!(groups[0]["against"], "snapshot");
    let named: Vec<&str> = groups[0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(named.len(), runs);
    assert!(
        named.contains(&"correlation/06-three-rounds [stateless]"),
        "{named:?}"
    );
    let example = &groups[0]["example"];
    assert_eq!(example["run"], named[0]);
    assert!(
        example["diff"]
            .as_str()
            .unwrap()
            .contains("+          \"parallel_tool_calls\": true,")
    );
    assert!(
        example["changes"].as_array().unwrap().len() >= 2,
        "the example run's change at each request: {example:#}"
    );

    // JUnit: the grouped change in each failure message, the groups at suite level.
    let xml = std::fs::read_to_string(reports.path().join("junit.xml")).unwrap();
    crate::junit::validate(&xml);
    assert_eq!(
        xml.matches(&format!("(drift group 1, in {runs} case runs)"))
            .count(),
        runs,
        "{xml}"
    );
    assert!(
        xml.contains(&format!(
            "drift group 1: request (POST /v1/responses): `parallel_tool_calls` is new: true, in {runs} case runs against their snapshots ({runs} in this suite)"
        )),
        "{xml}"
    );

    // HTML: a grouped drift section linking to the runs.
    let html = std::fs::read_to_string(reports.path().join("report.html")).unwrap();
    assert!(
        html.contains("<h2>Drift, grouped</h2>"),
        "no grouped section"
    );
    assert_eq!(html.matches("<li class=\"drift-group\">").count(), 1);
    assert!(html.contains(&format!("in {runs} case runs (against their snapshots)")));
    assert!(html.contains("href=\"#case-correlation-01-single-call-stateless\""));
}
