//! The whole embedded catalogue run against one controller, which must pass every case.

use std::process::Stdio;

use super::cli;

/// Runs the whole embedded catalogue against `controller` and asserts that every case
/// passes (no `fail`, no `unsupported`, no `drift` from the snapshots in `snapshots`,
/// nothing else) and loopcheck exits 0.
pub fn assert_passes_catalogue(controller: &str, supports: &str, who: &str, snapshots: &str) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report_path = dir.path().join("report.json");
    let output = cli::command(&[
        "run",
        "--controller",
        controller,
        "--supports",
        supports,
        "--jobs",
        "2",
        "--snapshots",
        snapshots,
    ])
    .arg("--report-json")
    .arg(&report_path)
    .env("CI", "1")
    .stdin(Stdio::null())
    .output()
    .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: serde_json::Value = match std::fs::read(&report_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("the JSON report parses"),
        Err(err) => panic!(
            "no JSON report ({err}); loopcheck exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        ),
    };
    let cases = report["cases"].as_array().expect("the report lists cases");
    assert!(!cases.is_empty(), "the run covered no case:\n{stdout}");
    let failures: Vec<String> = cases
        .iter()
        .filter(|case| case["verdict"] != "pass")
        .map(|case| {
            let mut line = format!(
                "{} [{}, {}]: {}",
                case["id"], case["state"], case["delivery"], case["verdict"]
            );
            for check in case["checks"].as_array().into_iter().flatten() {
                if check["verdict"] != "pass" && check["verdict"] != "info" {
                    line.push_str(&format!(
                        "\n    {} ({}): {}",
                        check["id"], check["verdict"], check["message"]
                    ));
                }
            }
            for change in case["snapshot"]["changes"].as_array().into_iter().flatten() {
                line.push_str(&format!(
                    "\n    snapshot: {}",
                    change.as_str().unwrap_or("?")
                ));
            }
            line
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} case(s) did not pass with {who}:\n{}\n\n(if what it sends changed on purpose, rerun with --snapshots {snapshots} --update-snapshots outside CI)\n\nloopcheck output:\n{stdout}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        output.status.success(),
        "loopcheck exited with {}\n{stdout}",
        output.status
    );
}
