//! The published framework matrix (docs/frameworks.json) holds: one framework, installed
//! by `harness/frameworks/install.sh` (which CI runs), is run on a few cases and must get
//! the verdicts and failing checks the matrix publishes for it. The whole matrix is a
//! documented command (`harness/frameworks/matrix.py`), not part of the test run.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::support;

/// The framework CI installs, and the cases it runs.
const FRAMEWORK: &str = "openai-agents";
const CASES: &[&str] = &[
    "correlation/01-single-call",
    "dispatch/01-unknown-tool",
    "budget/01-endless-tool-calls",
];

fn installed() -> PathBuf {
    match std::env::var_os("LOOPCHECK_FRAMEWORKS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/loopcheck/frameworks"),
    }
}

/// (verdict, failing checks) per case run of `report` rows, named by case, state mode
/// and delivery (a row without one is a JSON run, as reports before deliveries were).
fn verdicts(rows: impl Iterator<Item = (String, String, Value)>) -> Vec<(String, Value)> {
    let mut runs: Vec<(String, Value)> = rows
        .map(|(id, state, value)| (format!("{id} [{state}]"), value))
        .collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0));
    runs
}

/// `stateless`, or `stateless, stream` for a streamed run.
fn run_label(row: &Value) -> String {
    let state = row["state"].as_str().unwrap_or_default();
    match row["delivery"].as_str() {
        Some("stream") => format!("{state}, stream"),
        _ => state.to_owned(),
    }
}

#[test]
fn a_framework_gets_the_verdicts_the_matrix_publishes() {
    let root = support::root();
    let python = installed().join(FRAMEWORK).join("venv/bin/python");
    if !python.exists() {
        support::missing_sdk(
            &format!("{FRAMEWORK} framework (harness/frameworks/install.sh {FRAMEWORK})"),
            &format!("{} is missing", python.display()),
        );
        return;
    }
    let adapter = root
        .join("harness/frameworks")
        .join(FRAMEWORK)
        .join("adapter.py");
    let report = tempfile::NamedTempFile::new().expect("a temporary file");
    let mut command = Command::new(support::loopcheck_bin());
    command
        .arg("run")
        .arg("--controller")
        .arg(format!("{} {}", python.display(), adapter.display()))
        .arg("--report-json")
        .arg(report.path())
        .arg("--jobs")
        .arg("2")
        .current_dir(&root);
    for case in CASES {
        command.arg("--filter").arg(case);
    }
    let output = command.output().expect("loopcheck runs");
    let ran: Value = serde_json::from_slice(&std::fs::read(report.path()).expect("the report"))
        .unwrap_or_else(|err| {
            panic!(
                "no JSON report ({err}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let seen = verdicts(ran["cases"].as_array().expect("cases").iter().map(|case| {
        let failing: Vec<&str> = case["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["verdict"] == "fail" || c["verdict"] == "non-strict")
            .filter_map(|c| c["id"].as_str())
            .collect();
        (
            case["id"].as_str().unwrap_or_default().to_owned(),
            run_label(case),
            serde_json::json!({"verdict": case["verdict"], "failing": failing}),
        )
    }));

    let published: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/frameworks.json")).expect("docs/frameworks.json"),
    )
    .expect("the published matrix parses");
    let expected = verdicts(
        published["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|row| CASES.contains(&row["id"].as_str().unwrap_or_default()))
            .map(|row| {
                let failing = row["failing"][FRAMEWORK].clone();
                (
                    row["id"].as_str().unwrap_or_default().to_owned(),
                    run_label(row),
                    serde_json::json!({
                        "verdict": row["verdicts"][FRAMEWORK],
                        "failing": if failing.is_null() { serde_json::json!([]) } else { failing },
                    }),
                )
            }),
    );
    assert!(!expected.is_empty(), "the matrix has no row for {CASES:?}");
    assert_eq!(
        seen, expected,
        "{FRAMEWORK} no longer gets what docs/frameworks.json publishes: regenerate it with \
         harness/frameworks/matrix.py"
    );
}
