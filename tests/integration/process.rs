//! Controllers that hang, crash or print garbage get `timeout` or `crashed` with their
//! output kept, without harming the other cases of the run.

use serde_json::Value;

use crate::support::cli::{loopcheck, run_with_report};
use crate::support::controllers::{HANGS, crashes, except_on, prints, reference};
use crate::support::loopcheck_bin;

/// `loopcheck run ARGS`: its exit code, standard output and JSON report.
fn run(args: &[&str]) -> (Option<i32>, String, Value) {
    let (output, report) = run_with_report(args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout, report)
}

/// The message of a case's `terminal/result-line` check.
fn result_line_message(case: &Value) -> String {
    let checks = case["checks"].as_array().expect("the case lists checks");
    let check = checks
        .iter()
        .find(|c| c["id"] == "terminal/result-line")
        .expect("a terminal/result-line check");
    check["message"].as_str().expect("a message").to_owned()
}

fn verdicts(report: &Value) -> Vec<(String, String)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_hanging_controller_times_out_and_its_process_group_is_killed() {
    let started = std::time::Instant::now();
    // The child sleeps in the background too: the whole group must die, or the run
    // would wait for the pipe.
    let (code, stdout, report) = run(&[
        "--controller",
        HANGS,
        "--timeout",
        "1",
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        started.elapsed().as_secs() < 30,
        "the run waited for the hung controller"
    );
    for (_, verdict) in verdicts(&report) {
        assert_eq!(verdict, "timeout");
    }
    assert!(stdout.contains("TIMEOUT"), "{stdout}");
}

#[test]
fn a_crashing_controller_is_crashed_with_its_stderr_in_the_report() {
    let (code, stdout, report) = run(&[
        "--controller",
        &crashes("Traceback: boom", 3),
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(code, Some(1));
    for (_, verdict) in verdicts(&report) {
        assert_eq!(verdict, "crashed");
    }
    assert!(
        stdout.contains("Traceback: boom"),
        "the console shows the controller's stderr:\n{stdout}"
    );
    assert!(stdout.contains("exit code: 3"), "{stdout}");
    let message = result_line_message(&report["cases"][0]);
    assert!(message.contains("printed nothing"), "{message}");
}

#[test]
fn garbage_output_is_crashed_and_names_what_was_printed() {
    let (code, _, report) = run(&[
        "--controller",
        &prints("{not json"),
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(code, Some(1));
    let case = &report["cases"][0];
    assert_eq!(case["verdict"], "crashed");
    let message = result_line_message(case);
    assert!(
        message.contains("not JSON") && message.contains("{not json"),
        "{message}"
    );
    let (_, _, report) = run(&[
        "--controller",
        &prints(r#"{"status": "done"}"#),
        "--filter",
        "correlation/01-single-call",
    ]);
    let message = result_line_message(&report["cases"][0]);
    assert!(message.contains("'done'"), "{message}");
}

#[test]
fn a_bad_controller_does_not_harm_the_other_cases() {
    // One command, two behaviours: hang on one case, behave on the others.
    let controller = except_on("correlation/01-single-call", "sleep 30");
    let (code, _, report) = run(&[
        "--controller",
        &controller,
        "--timeout",
        "6",
        "--jobs",
        "2",
        "--filter",
        "correlation/*",
    ]);
    assert_eq!(code, Some(1));
    for (id, verdict) in verdicts(&report) {
        let expected = if id == "correlation/01-single-call" {
            "timeout"
        } else {
            "pass"
        };
        assert_eq!(verdict, expected, "{id}");
    }
}

#[test]
fn unsupported_state_modes_are_reported_as_unsupported_not_passed() {
    let (code, _, report) = run(&[
        "--controller",
        &reference(),
        "--supports",
        "stateless",
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(code, Some(0), "unsupported is not a failure");
    let cases = report["cases"].as_array().unwrap();
    for case in cases {
        let expected = if case["state"] == "stateless" {
            "pass"
        } else {
            "unsupported"
        };
        assert_eq!(case["verdict"], expected, "{case}");
    }
    assert_eq!(report["summary"]["unsupported"], 1);
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, _) = run(&["--supports", "telepathy"]);
    assert_eq!(code, Some(2));
    let (code, _, _) = run(&["--filter", "no-such-area/*"]);
    assert_eq!(code, Some(2));
}

#[test]
fn matrix_compares_controllers_case_by_case() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("matrix.json");
    let markdown_path = dir.path().join("matrix.md");
    let output = loopcheck(&[
        "matrix",
        "--controller",
        "reference",
        "--controller",
        "broken=echo nonsense",
        "--supports",
        "broken=stateless",
        "--filter",
        "correlation/01-single-call",
        "--report-json",
        &json_path.to_string_lossy(),
        "--markdown",
        &markdown_path.to_string_lossy(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "a controller's failures are the matrix's content:\n{stdout}"
    );
    let matrix: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(
        matrix["controllers"],
        serde_json::json!(["reference", "broken"])
    );
    // The reference streams, so it also has the streamed runs, which the other
    // controller, not declaring `stream`, was never planned: rows align by run.
    let cases = matrix["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        assert_eq!(case["verdicts"]["reference"], "pass", "{case}");
        let expected = match (case["state"].as_str(), case["delivery"].as_str()) {
            (_, Some("stream")) => Value::Null,
            (Some("stateless"), _) => "crashed".into(),
            _ => "unsupported".into(),
        };
        assert_eq!(case["verdicts"]["broken"], expected, "{case}");
    }
    assert_eq!(matrix["summary"]["broken"]["crashed"], 1);
    let markdown = std::fs::read_to_string(&markdown_path).unwrap();
    assert!(
        markdown.starts_with("| case | reference | broken |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| `correlation/01-single-call [stateless]` | pass | crashed |"),
        "{markdown}"
    );
    assert!(stdout.contains("broken: 2 runs: 0 passed"), "{stdout}");

    let output = loopcheck(&["matrix", "--controller", "nameless"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_manifest_beside_the_controller_declares_its_capabilities() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ctl.sh");
    std::fs::write(&script, format!("exec {}\n", reference())).unwrap();
    let manifest = dir.path().join("ctl.sh.loopcheck.json");
    std::fs::write(&manifest, r#"{"supports": ["stateless"]}"#).unwrap();
    let command = format!("sh {}", script.display());
    let (code, stdout, report) = run(&[
        "--controller",
        &command,
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    for case in report["cases"].as_array().unwrap() {
        let expected = if case["state"] == "stateless" {
            "pass"
        } else {
            "unsupported"
        };
        assert_eq!(case["verdict"], expected, "{case}");
    }
    std::fs::write(&manifest, r#"{"supports": ["telepathy"]}"#).unwrap();
    let (code, _, _) = run(&[
        "--controller",
        &command,
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(code, Some(2), "a bad manifest is a usage error");
}

/// A persistent controller (docs/contract.md) that runs each case with the reference
/// controller, except the cases named in its argument list, where it misbehaves.
const PERSISTENT_ADAPTER: &str = r#"
import json, os, subprocess, sys, tempfile, time
reference, hang, die, garble = sys.argv[1:5]
for line in sys.stdin:
    request = json.loads(line)
    case = request["case"]
    if case == hang:
        time.sleep(60)
    if case == die:
        sys.exit(3)
    if case == garble:
        print("{not a result", flush=True)
        continue
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(request["task"], f)
    env = dict(os.environ, **request["env"], LOOPCHECK_TASK=f.name)
    out = subprocess.run([reference, "reference-controller"], env=env, capture_output=True, text=True).stdout
    print(out.strip().splitlines()[-1], flush=True)
"#;

#[test]
fn a_persistent_controller_runs_many_cases_and_is_restarted_when_it_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = dir.path().join("adapter.py");
    std::fs::write(&adapter, PERSISTENT_ADAPTER).unwrap();
    let command = format!(
        "python3 {} '{}' correlation/01-single-call correlation/02-call-id-distinct correlation/03-mixed-items",
        adapter.display(),
        loopcheck_bin().display()
    );
    let (code, stdout, report) = run(&[
        "--controller",
        &command,
        "--supports",
        "stateless,persistent",
        "--timeout",
        "6",
        "--jobs",
        "1",
        "--filter",
        "correlation/*",
    ]);
    assert_eq!(code, Some(1), "{stdout}");
    let mut passed = 0;
    for case in report["cases"].as_array().unwrap() {
        let expected = match (
            case["state"].as_str().unwrap(),
            case["id"].as_str().unwrap(),
        ) {
            ("previous_response_id", _) => "unsupported",
            (_, "correlation/01-single-call") => "timeout",
            (_, "correlation/02-call-id-distinct" | "correlation/03-mixed-items") => "crashed",
            _ => "pass",
        };
        assert_eq!(case["verdict"], expected, "{case}:\n{stdout}");
        passed += usize::from(expected == "pass");
    }
    // Every correlation case after the three the adapter breaks on.
    let remaining = crate::support::catalogue()
        .iter()
        .filter(|c| c.scenario.id.starts_with("correlation/"))
        .count()
        - 3;
    assert_eq!(
        passed, remaining,
        "the restarted worker ran the remaining cases"
    );
    let garbled = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "correlation/03-mixed-items" && c["state"] == "stateless")
        .unwrap();
    let message = result_line_message(garbled);
    assert!(message.contains("{not a result"), "{message}");
}
