//! The vitest helper, `harness/node/loopcheck-vitest.mjs`: its example suite runs three
//! catalogue cases against an in-process loop through one `loopcheck serve` and passes
//! them, with the runs the loop does not support shown as skipped; the seeded defect beside
//! it (a loop that answers a call under its item id) fails, and the failure names the check
//! and says what was wrong.
//!
//! Needs `node` and `harness/node/node_modules` with vitest in it, installed as for the
//! Node SDK test; without them the test is skipped with a note, except under `CI`, where it
//! fails.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{install_node_packages, loopcheck_bin, missing_sdk, root};

/// The example suite's case runs that the loop supports: each must pass.
const PASSING: &[&str] = &[
    "correlation/02-call-id-distinct [previous_response_id]",
    "dispatch/01-unknown-tool [previous_response_id]",
    "terminal/05-incomplete-partial-text [previous_response_id]",
];

/// One vitest run: its exit status, its JSON report and what it printed.
struct VitestRun {
    status: ExitStatus,
    report: Value,
    output: String,
}

/// Runs `vitest run` in `harness/node` with `config`, against the loopcheck built for
/// these tests.
fn vitest(dir: &Path, config: &str) -> VitestRun {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let report_path = scratch.path().join("report.json");
    let stdout_path = scratch.path().join("stdout");
    let stderr_path = scratch.path().join("stderr");
    let mut child = Command::new(dir.join("node_modules/.bin/vitest"))
        .args([
            "run",
            "--config",
            config,
            "--reporter=default",
            "--reporter=json",
        ])
        .arg(format!("--outputFile.json={}", report_path.display()))
        .current_dir(dir)
        .env("LOOPCHECK_BIN", loopcheck_bin())
        // The global setup would use a server named here instead of starting its own.
        .env_remove("LOOPCHECK_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).expect("stdout file"))
        .stderr(File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("vitest starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("vitest's status") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            // SIGTERM first: vitest then runs its teardown, which stops the server.
            // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            let _ = child.kill();
            panic!("vitest --config {config} did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = format!(
        "{}{}",
        std::fs::read_to_string(&stdout_path).unwrap_or_default(),
        std::fs::read_to_string(&stderr_path).unwrap_or_default()
    );
    let report = match std::fs::read(&report_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("vitest's JSON report parses"),
        Err(err) => {
            panic!("vitest wrote no JSON report ({err}); it exited with {status}:\n{output}")
        }
    };
    VitestRun {
        status,
        report,
        output,
    }
}

/// Every test of a report, as (title, status, failure messages).
fn tests(report: &Value) -> Vec<(String, String, String)> {
    report["testResults"]
        .as_array()
        .expect("testResults")
        .iter()
        .flat_map(|file| {
            file["assertionResults"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|test| {
            let failures: Vec<&str> = test["failureMessages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            (
                test["title"].as_str().unwrap_or_default().to_owned(),
                test["status"].as_str().unwrap_or_default().to_owned(),
                failures.join("\n"),
            )
        })
        .collect()
}

#[test]
fn the_vitest_helper_passes_the_examples_and_names_a_seeded_defect() {
    let dir = root().join("harness/node");
    install_node_packages();
    if !dir.join("node_modules/.bin/vitest").exists() {
        let message = format!(
            "{} has no vitest; install the pinned packages with `npm ci --prefix harness/node`",
            dir.join("node_modules").display()
        );
        missing_sdk("vitest helper", &message);
        return;
    }

    let examples = vitest(&dir, "vitest.config.mjs");
    let ran = tests(&examples.report);
    let passed: Vec<&str> = ran
        .iter()
        .filter(|(_, status, _)| status == "passed")
        .map(|(title, _, _)| title.as_str())
        .collect();
    let skipped = ran
        .iter()
        .filter(|(_, status, _)| status == "skipped")
        .count();
    assert!(
        examples.status.success() && passed == PASSING && skipped == 3,
        "the examples must pass {PASSING:?} and skip their 3 stateless runs; vitest exited with \
         {} and passed {passed:?}, skipped {skipped}:\n{}",
        examples.status,
        examples.output
    );

    let defect = vitest(&dir, "vitest.defects.config.mjs");
    let ran = tests(&defect.report);
    let failed: Vec<&(String, String, String)> = ran
        .iter()
        .filter(|(_, status, _)| status == "failed")
        .collect();
    assert!(
        !defect.status.success() && failed.len() == 1,
        "the seeded defect must fail exactly one test; vitest exited with {}:\n{}",
        defect.status,
        defect.output
    );
    let (title, _, message) = failed[0];
    assert_eq!(
        title,
        "correlation/02-call-id-distinct [previous_response_id]"
    );
    // The assertion names the check and says what was sent and what was expected.
    let own_id = message
        .lines()
        .find(|line| line.trim_start().starts_with("call-id/own-id: "))
        .unwrap_or_else(|| panic!("no call-id/own-id line in the failure:\n{message}"));
    assert!(
        own_id.contains("function_call_output carries call_id 'fc_")
            && own_id.contains("expected call_"),
        "call-id/own-id does not say which id was sent and which was expected: {own_id}"
    );
    assert!(
        message.contains("the loop threw: Error: 400 No tool call found"),
        "the failure does not show the loop's own error:\n{message}"
    );
    assert!(
        defect.output.contains("call-id/own-id: "),
        "vitest's own output does not name the check:\n{}",
        defect.output
    );
}

/// Runs vitest on the snapshot suite copied into `dir` (its `node_modules` linked to
/// `harness/node`'s), outside CI, with `env`.
fn snapshot_suite(dir: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let link = dir.join("node_modules");
    if !link.exists() {
        std::os::unix::fs::symlink(root().join("harness/node/node_modules"), &link).unwrap();
    }
    let mut command = Command::new(root().join("harness/node/node_modules/.bin/vitest"));
    command
        .args(["run", "--config", "vitest.config.mjs"])
        .current_dir(dir)
        .env("LOOPCHECK_BIN", loopcheck_bin())
        .env(
            "LOOPCHECK_VITEST_HELPER",
            root().join("harness/node/loopcheck-vitest.mjs"),
        )
        .env("LOOPCHECK_SNAPSHOTS", "snapshots/traced")
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .env_remove("LOOPCHECK_URL")
        .env_remove("LOOPCHECK_UPDATE_SNAPSHOTS")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("vitest starts");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

#[test]
fn a_tests_snapshot_is_written_then_drifts_on_a_random_field_unless_redacted() {
    install_node_packages();
    if !root()
        .join("harness/node/node_modules/.bin/vitest")
        .exists()
    {
        missing_sdk("vitest helper", "no harness/node/node_modules/.bin/vitest");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for file in ["traced.test.mjs", "vitest.config.mjs"] {
        std::fs::copy(
            root().join("tests/integration/snapshot_suite").join(file),
            dir.path().join(file),
        )
        .unwrap();
    }
    // The test's own snapshot, named by its file and title.
    let snapshot = dir.path().join(
        "snapshots/traced/traced.test/correlation-01-single-call-previous_response_id.previous_response_id.snap",
    );

    // First run: written at once with the update option.
    let (passed, said) = snapshot_suite(dir.path(), &[("LOOPCHECK_UPDATE_SNAPSHOTS", "1")]);
    assert!(passed, "{said}");
    assert!(snapshot.is_file(), "no {}:\n{said}", snapshot.display());

    // Second run: a new trace id drifts, and the failure names the field.
    let (passed, said) = snapshot_suite(dir.path(), &[]);
    assert!(!passed, "the drift passed:\n{said}");
    assert!(
        said.contains("correlation/01-single-call [previous_response_id]: drift")
            && said.contains("`metadata` is {\"trace_id\":"),
        "the failure does not name the field:\n{said}"
    );
    assert!(
        said.contains("loopcheck snapshots review --snapshots"),
        "{said}"
    );

    // With the redaction, the same loop matches its snapshot.
    std::fs::write(
        dir.path().join("loopcheck.toml"),
        "[snapshots]\nredactions = { \"/steps/*/model/body/metadata/trace_id\" = \"[trace id]\" }\n",
    )
    .unwrap();
    let (passed, said) = snapshot_suite(dir.path(), &[]);
    assert!(passed, "{said}");
}
