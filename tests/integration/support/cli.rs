//! The loopcheck command line as a user runs it: from the repository root, its output
//! captured, and the JSON report of a run read back.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::{loopcheck_bin, root};

/// `loopcheck ARGS` from the repository root, for a caller that sets more (environment,
/// standard input) before it runs.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(loopcheck_bin());
    command.args(args).current_dir(root());
    command
}

/// `loopcheck ARGS` run to its end (standard input closed).
pub fn loopcheck(args: &[&str]) -> Output {
    command(args).output().expect("loopcheck runs")
}

/// `loopcheck ARGS` as outside CI: the `CI` variable removed.
pub fn loopcheck_outside_ci(args: &[&str]) -> Output {
    command(args)
        .env_remove("CI")
        .output()
        .expect("loopcheck runs")
}

/// `loopcheck run ARGS --report-json FILE`: its output and the report (`Null` when it
/// wrote none).
pub fn run_with_report(args: &[&str]) -> (Output, Value) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report_path = dir.path().join("report.json");
    let output = command(&["run"])
        .args(args)
        .arg("--report-json")
        .arg(&report_path)
        .output()
        .expect("loopcheck runs");
    (output, read_report(&report_path))
}

/// The JSON report at `path`, `Null` when none was written; a report that is not JSON
/// fails the test.
pub fn read_report(path: &Path) -> Value {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("the JSON report parses"),
        Err(_) => Value::Null,
    }
}

/// Standard output, then standard error, as text.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `loopcheck ARGS` run to its end in `dir`.
pub fn loopcheck_in(dir: &Path, args: &[&str]) -> Output {
    command(args)
        .current_dir(dir)
        .output()
        .expect("loopcheck runs")
}

/// Asserts that `output` is a success, showing what it printed otherwise.
pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "the command exited with {}\n{}",
        output.status,
        text(output)
    );
}
