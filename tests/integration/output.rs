//! What users see, under insta snapshots: the console report of a failing case, the JSON
//! report, `lint` errors and `--help`. A change to user-facing output is then reviewed
//! (`cargo insta review`), not accidental.

use std::process::{Command, Output};

use crate::support::cli::loopcheck_outside_ci as loopcheck;
use crate::support::loopcheck_bin;
use crate::support::redact::snapshot_settings;

/// A controller that makes no request and reports an answer it never got.
const IDLE: &str = r#"printf '%s\n' '{"status": "completed", "output_text": "It is sunny."}'"#;

/// The failing case run with IDLE, `extra` appended.
fn failing_run(extra: &[&str]) -> Output {
    let args = [
        "run",
        "--controller",
        IDLE,
        "--filter",
        "correlation/01-single-call",
        "--jobs",
        "1",
    ];
    loopcheck(&[&args[..], extra].concat())
}

#[test]
fn the_console_report_of_a_failing_case() {
    let output = failing_run(&[]);
    assert_eq!(output.status.code(), Some(1));
    snapshot_settings().bind(|| {
        insta::assert_snapshot!(String::from_utf8_lossy(&output.stdout));
    });
}

#[test]
fn the_json_report_of_a_failing_case() {
    let output = failing_run(&["--report-json", "-"]);
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("standard output is the JSON report");
    snapshot_settings().bind(|| {
        insta::assert_snapshot!(serde_json::to_string_pretty(&report).unwrap());
    });
}

#[test]
fn lint_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("typo.yaml"),
        "format: 1\nid: demo/01-x\nsummary: s\nlevl: must\ntask: {input: hi, tools: []}\nscript: []\nexpect: {outcome: completed}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("broken.json"),
        "{\"format\": 1,\n  \"id\": }\n",
    )
    .unwrap();
    let output = Command::new(loopcheck_bin())
        .args(["lint", "."])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    snapshot_settings().bind(|| {
        insta::assert_snapshot!(String::from_utf8_lossy(&output.stderr));
    });
}

#[test]
fn help_texts() {
    for command in [&["--help"][..], &["run", "--help"], &["list", "--help"]] {
        let output = loopcheck(command);
        assert!(output.status.success());
        let name = command.join("-").replace("--", "");
        snapshot_settings().bind(|| {
            insta::assert_snapshot!(name, String::from_utf8_lossy(&output.stdout));
        });
    }
}

#[test]
fn a_case_as_its_controller_meets_it() {
    let output = loopcheck(&[
        "task",
        "authz/08-permission-revoked",
        "--state",
        "stateless",
    ]);
    assert_eq!(output.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&output.stdout));

    let output = loopcheck(&["task", "correlation/01-single-call", "--json"]);
    let task: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(task["case"], "correlation/01-single-call");
    assert_eq!(task["state"], "previous_response_id");

    let output = loopcheck(&["task", "near-miss"]);
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!("task-unknown-case", String::from_utf8_lossy(&output.stderr));
    let output = loopcheck(&["task", "budget/05-deadline", "--state", "stateless"]);
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(
        "task-state-not-run",
        String::from_utf8_lossy(&output.stderr)
    );
}
