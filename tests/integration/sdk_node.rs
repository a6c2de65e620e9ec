//! The official OpenAI Node SDK against the fake server: `harness/node/loop.mjs`, the
//! project's Node.js reference controller, must pass the whole embedded catalogue with every
//! capability it declares, so no case may come out `unsupported`. It streams through the
//! SDK's `client.responses.stream()` helper, whose accumulator throws on any out-of-order
//! event, so a stream the fake server gets wrong fails its case.
//!
//! Needs `node` (20 or later) and the pinned packages in `harness/node/node_modules`, which
//! the test installs with `npm ci --prefix harness/node` when they are missing. Without
//! them the test is skipped with a note, except under `CI`, where it fails.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{loopcheck_bin, root};

/// Everything the controller supports (its README says the same); only `persistent` is
/// left out.
const CAPABILITIES: &str =
    "previous_response_id,stateless,conversation,stream,background,programmatic,approvals";

/// Single-quotes a word for `sh`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Runs a command in the repository; its stderr (or the spawn error) on failure.
fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("{program}: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

/// Whether `node` can import the SDK and Ajv from `harness/node`; the error otherwise.
fn sdk_importable(dir: &Path) -> Result<(), String> {
    let script = format!(
        "Promise.all([import({openai:?}), import({ajv:?})]).catch((e) => {{ console.error(e.message); process.exit(1) }})",
        openai = dir.join("node_modules/openai/index.mjs").to_string_lossy(),
        ajv = dir.join("node_modules/ajv/dist/ajv.js").to_string_lossy(),
    );
    run("node", &["--input-type=module", "-e", &script])
}

#[test]
fn the_official_node_sdk_passes_the_catalogue() {
    let dir = root().join("harness/node");
    if !dir.join("node_modules").exists() {
        // As `.ci/run` does, so that a plain `cargo test` on a fresh machine runs this too.
        if let Err(err) = run(
            "npm",
            &["ci", "--prefix", "harness/node", "--no-audit", "--no-fund"],
        ) {
            eprintln!("note: `npm ci --prefix harness/node` failed: {err}");
        }
    }
    if let Err(err) = sdk_importable(&dir) {
        let message = format!(
            "node cannot load openai and ajv from {} ({err}); install them with \
             `npm ci --prefix harness/node`",
            dir.join("node_modules").display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("CI must install the Node SDK: {message}");
        }
        eprintln!("note: skipping the Node SDK test: {message}");
        return;
    }

    let controller = format!(
        "node {}",
        shell_quote(&dir.join("loop.mjs").to_string_lossy())
    );
    let temp = tempfile::tempdir().expect("a temporary directory");
    let report_path = temp.path().join("report.json");
    let output = Command::new(loopcheck_bin())
        .arg("run")
        .args(["--controller", &controller])
        .args(["--supports", CAPABILITIES])
        .arg("--report-json")
        .arg(&report_path)
        .args(["--jobs", "2"])
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = match std::fs::read(&report_path) {
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
                "{} [{}]: {}",
                case["id"].as_str().unwrap_or("?"),
                case["state"].as_str().unwrap_or("?"),
                case["verdict"].as_str().unwrap_or("?"),
            );
            for check in case["checks"].as_array().into_iter().flatten() {
                if check["verdict"] != "pass" && check["verdict"] != "info" {
                    line.push_str(&format!(
                        "\n    {} ({}): {}",
                        check["id"].as_str().unwrap_or("?"),
                        check["verdict"].as_str().unwrap_or("?"),
                        check["message"].as_str().unwrap_or(""),
                    ));
                }
            }
            line
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} case(s) did not pass with the official Node SDK:\n{}\n\nloopcheck output:\n{stdout}",
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
