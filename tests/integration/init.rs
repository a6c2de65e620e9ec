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
