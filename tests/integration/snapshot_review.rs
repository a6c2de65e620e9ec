//! Snapshot upkeep: redactions from `loopcheck.toml` keep a field that varies by design
//! from drifting (and name a selector that matched nothing), and `loopcheck snapshots
//! review` / `pending` settle the `.snap.new` files a run leaves, without cargo.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::cli::{self, assert_success};
use crate::support::{missing_sdk, python, root, sdk_importable, shell_quote};

const CASE: &str = "correlation/01-single-call";

/// `loopcheck run` of `filter` in stateless mode, outside CI, against `controller`
/// (the Rust reference when `None`).
fn run(controller: Option<&str>, filter: &str, snapshots: &Path, extra: &[&str]) -> Output {
    let mut command = cli::command(&["run", "--filter", filter, "--supports", "stateless"]);
    if let Some(controller) = controller {
        command.args(["--controller", controller]);
    }
    command
        .arg("--snapshots")
        .arg(snapshots)
        .args(extra)
        .env_remove("CI")
        .output()
        .expect("loopcheck runs")
}

fn snap(dir: &Path, case: &str) -> PathBuf {
    dir.join(format!("{case}.stateless.snap"))
}

fn pending(dir: &Path, case: &str) -> PathBuf {
    snap(dir, case).with_extension("snap.new")
}

/// The Python reference, with a new random `metadata.trace_id` in every model request:
/// a field that varies by design.
fn tracing_controller(dir: &Path) -> Option<String> {
    let python = python();
    if let Err(err) = sdk_importable(&python) {
        missing_sdk("Python SDK", &format!("{} ({err})", python.display()));
        return None;
    }
    let script = dir.join("tracing.py");
    std::fs::write(
        &script,
        format!(
            r#"import sys, uuid
sys.path.insert(0, {harness:?})
import loop

sent = loop.model_request

def model_request(client, socket, kwargs, task):
    return sent(client, socket, dict(kwargs, metadata={{"trace_id": uuid.uuid4().hex}}), task)

loop.model_request = model_request
loop.main()
"#,
            harness = root().join("harness/python").to_string_lossy()
        ),
    )
    .unwrap();
    Some(format!(
        "{} {}",
        shell_quote(&python.to_string_lossy()),
        shell_quote(&script.to_string_lossy())
    ))
}

#[test]
fn a_redaction_keeps_a_varying_field_from_drifting_and_is_written_as_its_placeholder() {
    let dir = tempfile::tempdir().unwrap();
    let Some(controller) = tracing_controller(dir.path()) else {
        return;
    };
    let snapshots = dir.path().join("snapshots");
    let config = dir.path().join("loopcheck.toml");
    std::fs::write(
        &config,
        "[snapshots]\nredactions = { \"/steps/*/model/body/metadata/trace_id\" = \"[trace id]\", \"/steps/*/model/body/usr\" = \"[user]\" }\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let controller = Some(controller.as_str());

    // Without the redaction the trace id drifts from run to run...
    assert_success(&run(controller, CASE, &snapshots, &["--update-snapshots"]));
    let out = run(controller, CASE, &snapshots, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", cli::text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("DRIFT"), "{stdout}");
    assert!(stdout.contains("`metadata` is {\"trace_id\":"), "{stdout}");

    // ...with it, the same snapshot matches...
    let out = run(controller, CASE, &snapshots, &["--config", config]);
    assert_success(&out);
    assert!(!pending(&snapshots, CASE).exists());
    // ...the selector that matched nothing is named once...
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches(
                "note: the snapshot redaction '/steps/*/model/body/usr' matched nothing in this run"
            )
            .count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("metadata/trace_id"), "{stderr}");
    // ...and an update writes the placeholder, not a value.
    assert_success(&run(
        controller,
        CASE,
        &snapshots,
        &["--config", config, "--update-snapshots"],
    ));
    let text = std::fs::read_to_string(snap(&snapshots, CASE)).unwrap();
    assert_eq!(
        text.matches("\"trace_id\": \"[trace id]\"").count(),
        2,
        "{text}"
    );
}

#[test]
fn a_malformed_selector_is_a_settings_error_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loopcheck.toml");
    std::fs::write(
        &config,
        "[snapshots]\nredactions = { \"steps/*/model\" = \"x\" }\n",
    )
    .unwrap();
    let out = run(
        None,
        CASE,
        &dir.path().join("snapshots"),
        &["--config", config.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("loopcheck.toml:2:16: [snapshots] redactions: selector 'steps/*/model' does not start with `/`"),
        "{stderr}"
    );
}

fn review(dir: &Path, args: &[&str]) -> Output {
    let mut command = cli::command(&["snapshots"]);
    command
        .args(args)
        .arg("--snapshots")
        .arg(dir)
        .env_remove("CI");
    command.output().expect("loopcheck runs")
}

#[test]
fn review_accepts_only_the_filtered_rejects_the_rest_and_never_asks_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let snapshots = dir.path();
    let other = "correlation/02-call-id-distinct";
    assert_success(&run(None, "correlation/0[12]*", snapshots, &[]));
    assert!(pending(snapshots, CASE).exists() && pending(snapshots, other).exists());

    // Off a terminal, without --accept or --reject: a list and exit 1.
    for args in [&["review"][..], &["pending"], &["review", "--list"]] {
        let out = review(snapshots, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", cli::text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("{CASE} [stateless]"))
                && stdout.contains(&format!("{other} [stateless]"))
                && stdout.contains("2 snapshot(s) pending review"),
            "{stdout}"
        );
    }

    let out = review(
        snapshots,
        &["review", "--accept", "--filter", "correlation/01*"],
    );
    assert_success(&out);
    assert!(snap(snapshots, CASE).exists() && !pending(snapshots, CASE).exists());
    assert!(!snap(snapshots, other).exists() && pending(snapshots, other).exists());
    // The accepted snapshot is what the next run matches.
    assert_success(&run(None, CASE, snapshots, &[]));
    assert!(!pending(snapshots, CASE).exists());

    let out = review(snapshots, &["review", "--reject"]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("rejected {other}")));
    assert!(!pending(snapshots, other).exists() && !snap(snapshots, other).exists());
    let out = review(snapshots, &["pending"]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no snapshot is pending review"));
}

#[test]
fn review_without_a_folder_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli::loopcheck_in(dir.path(), &["snapshots", "review", "--accept"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no snapshot folder"));
}
