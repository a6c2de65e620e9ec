//! `loopcheck init`: the starter controllers a new user begins from. The Python one runs
//! the whole catalogue: it may fail cases (it leaves schema validation and approvals to
//! its user), never crash, hang or break the harness.

use std::process::Command;

use serde_json::Value;

use crate::support::{loopcheck_bin, missing_sdk, python, sdk_importable, shell_quote};

#[test]
fn the_python_starter_runs_the_catalogue_without_crashing() {
    let python = python();
    if let Err(err) = sdk_importable(&python) {
        return missing_sdk("Python SDK", &err);
    }
    let dir = tempfile::tempdir().unwrap();
    let init = Command::new(loopcheck_bin())
        .args(["init", "python"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let report = dir.path().join("report.json");
    let controller = format!("{} loop.py", shell_quote(&python.display().to_string()));
    let run = Command::new(loopcheck_bin())
        .args([
            "run",
            "--jobs",
            "4",
            "--controller",
            &controller,
            "--report-json",
        ])
        .arg(&report)
        .current_dir(dir.path())
        .env_remove("CI")
        .output()
        .unwrap();
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
    let init = Command::new(loopcheck_bin())
        .args(["init", "node", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
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
    let again = Command::new(loopcheck_bin())
        .args(["init", "node", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "existing files are kept");
}
