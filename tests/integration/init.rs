//! `loopcheck init`: the starter controllers a new user begins from. The Python one runs
//! the whole catalogue: it may fail cases (it leaves schema validation and approvals to
//! its user), never crash, hang or break the harness.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::cli::{self, assert_success, loopcheck, loopcheck_in};
use crate::support::controllers::interpreted;
use crate::support::{missing_sdk, python, sdk_importable};

#[test]
fn the_python_starter_runs_the_catalogue_without_crashing() {
    let python = python();
    if let Err(err) = sdk_importable(&python) {
        return missing_sdk("Python SDK", &err);
    }
    let dir = tempfile::tempdir().unwrap();
    assert_success(&loopcheck_in(dir.path(), &["init", "python"]));
    let report = dir.path().join("report.json");
    let controller = interpreted(&python, Path::new("loop.py"));
    let run = cli::command(&["run", "--jobs", "4", "--controller", &controller])
        .arg("--report-json")
        .arg(&report)
        .current_dir(dir.path())
        .env_remove("CI")
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let summary = &report["summary"];
    for verdict in ["crashed", "timeout", "errors"] {
        assert_eq!(summary[verdict], 0, "{verdict}:\n{stdout}");
    }
    // It declares only the two state modes, and really handles the plain loop.
    assert!(summary["passed"].as_u64().unwrap() > 50, "{stdout}");
    assert!(summary["unsupported"].as_u64().unwrap() > 0, "{stdout}");
}

#[test]
fn the_node_starter_is_valid_javascript_with_its_package() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_string_lossy();
    assert_success(&loopcheck(&["init", "node", "--dir", &target]));
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("package.json")).unwrap())
            .unwrap();
    assert_eq!(package["type"], "module");
    match Command::new("node")
        .arg("--check")
        .arg(dir.path().join("loop.mjs"))
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(err) => missing_sdk("node", &err.to_string()),
    }
    let again = loopcheck(&["init", "node", "--dir", &target]);
    assert_eq!(again.status.code(), Some(2), "existing files are kept");
}

/// Runs `loopcheck init LANGUAGE` into a fresh folder, then the `next:` line it prints,
/// verbatim, in a shell whose `loopcheck` is this build (the catalogue narrowed to the
/// correlation cases by `LOOPCHECK_FILTER`, as a user's environment may); the folder.
fn init_and_run_the_printed_steps(
    language: &str,
    installer: &str,
    install: &str,
) -> Option<tempfile::TempDir> {
    if let Err(err) = Command::new(installer).arg("--version").output() {
        missing_sdk(installer, &err.to_string());
        return None;
    }
    let parent = tempfile::tempdir().unwrap();
    let init = loopcheck_in(parent.path(), &["init", language, "--dir", "starter"]);
    assert_success(&init);
    let printed = String::from_utf8_lossy(&init.stdout).into_owned();
    let next = printed
        .lines()
        .find_map(|line| line.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("no next step printed:\n{printed}"));
    assert_eq!(next, format!("cd starter && {install} && loopcheck run"));
    let bin = crate::support::loopcheck_bin();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new("sh")
        .args(["-c", next])
        .current_dir(parent.path())
        .env("PATH", path)
        .env("LOOPCHECK_FILTER", "correlation/*")
        .env_remove("CI")
        .output()
        .expect("sh runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{next}\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("14 runs: 14 passed, 0 failed"), "{stdout}");
    Some(parent)
}

/// The starter in `parent/starter` run again with a report: every correlation case
/// passes, each served by a persistent worker (a worker's start-up is in the report
/// only when one serves many cases).
fn assert_persistent_passes(parent: &Path, manifest: &str) {
    let dir = parent.join("starter");
    let declared: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(manifest)).unwrap()).unwrap();
    assert!(
        declared["supports"]
            .as_array()
            .unwrap()
            .contains(&Value::from("persistent")),
        "{declared}"
    );
    let report = dir.join("report.json");
    let run = cli::command(&["run", "--filter", "correlation/*", "--jobs", "2"])
        .arg("--report-json")
        .arg(&report)
        .current_dir(&dir)
        .env_remove("CI")
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["passed"], 14, "{stdout}");
    let cases = report["cases"].as_array().unwrap();
    let started = cases
        .iter()
        .filter(|case| case["startup_ms"].is_u64())
        .count();
    assert!(
        (1..=2).contains(&started),
        "workers started: {started}\n{stdout}"
    );
}

#[test]
fn the_node_starter_runs_from_its_printed_steps_and_persists() {
    if let Some(parent) = init_and_run_the_printed_steps("node", "npm", "npm install") {
        assert_persistent_passes(parent.path(), "loop.mjs.loopcheck.json");
    }
}

#[test]
fn the_typescript_starter_runs_from_its_printed_steps_and_persists() {
    if let Some(parent) = init_and_run_the_printed_steps("ts", "npm", "npm install") {
        assert_persistent_passes(parent.path(), "loop.ts.loopcheck.json");
    }
}

#[test]
fn the_python_starter_runs_from_its_printed_steps() {
    let install = "python3 -m venv .venv && . .venv/bin/activate && pip install openai==3.57.0";
    init_and_run_the_printed_steps("python", "python3", install);
}
