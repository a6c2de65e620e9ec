//! Controllers that are slow to start, never read, fork daemons or are interrupted: every
//! wait on a controller is bounded, a worker's start-up has its own budget, a signal
//! leaves a partial report and no process, and nothing a controller printed is lost.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::loopcheck;
use crate::support::controllers::{
    Finished, finish, kill_all, pids, recording_pid, reference, start, wait_dead,
};
use crate::support::shell_quote;

/// The report's one case run in the `stateless` mode.
fn stateless(report: &Value) -> &Value {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["state"] == "stateless")
        .expect("a stateless case run")
}

#[test]
fn a_slow_starting_worker_gets_its_start_up_apart_from_the_case_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Sleeps longer than the case timeout before it reads anything, as an SDK's imports
    // do on a loaded machine.
    let controller = format!("sleep 6; exec {}", reference());
    let child = start(
        dir.path(),
        &[
            "--controller",
            &controller,
            "--supports",
            "previous_response_id,stateless,persistent",
            "--jobs",
            "1",
            "--timeout",
            "5",
            "--filter",
            "correlation/01-single-call",
        ],
    );
    let Finished { code, text, report } =
        finish(child, dir.path(), Duration::from_secs(60), dir.path());
    assert_eq!(code, Some(0), "{text}");
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{text}");
    assert!(cases.iter().all(|c| c["verdict"] == "pass"), "{text}");
    let startups: Vec<u64> = cases
        .iter()
        .filter_map(|c| c["startup_ms"].as_u64())
        .collect();
    assert_eq!(
        startups.len(),
        1,
        "only the fresh worker's case has one: {text}"
    );
    assert!(startups[0] >= 6000, "the start-up covers the sleep: {text}");
    assert!(text.contains("(start-up "), "the console shows it: {text}");
}

/// A scenario whose task line is far larger than a pipe holds.
fn big_scenario(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("big.yaml");
    let yaml = format!(
        r#"format: 1
id: big/01-long-input
summary: A task line larger than a pipe holds.
level: must
task:
  input: "{}"
  tools: [get_weather]
tools:
  get_weather:
    results:
      - when: {{city: Lisbon}}
        result: {{city: Lisbon}}
script:
  - output:
      - message: Fine.
expect:
  outcome: completed
"#,
        "a".repeat(300_000)
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn a_worker_that_stops_reading_its_input_times_out_instead_of_hanging_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = big_scenario(dir.path());
    let pid_file = dir.path().join("pids");
    // A worker that reads and answers its first case, then never reads again: the
    // second case's line does not fit in the pipe.
    let answers_once = recording_pid(
        &pid_file,
        "head -n 1 >/dev/null; echo '{\"status\": \"failed\", \"reason\": \"x\"}'; exec sleep 60",
    );
    let child = start(
        dir.path(),
        &[
            scenario.to_str().unwrap(),
            "--controller",
            &answers_once,
            "--supports",
            "previous_response_id,stateless,persistent",
            "--jobs",
            "1",
            "--timeout",
            "3",
        ],
    );
    let Finished { code, text, report } =
        finish(child, dir.path(), Duration::from_secs(40), &pid_file);
    assert_eq!(code, Some(1), "{text}");
    let verdicts: Vec<&str> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["fail", "timeout"], "{text}");
    assert!(wait_dead(&pids(&pid_file), Duration::from_secs(5)).is_empty());

    // A fresh worker that never reads: its start-up budget ends it.
    let never_reads = recording_pid(&pid_file, "exec sleep 60");
    let child = start(
        dir.path(),
        &[
            scenario.to_str().unwrap(),
            "--controller",
            &never_reads,
            "--supports",
            "previous_response_id,persistent",
            "--startup-timeout",
            "2",
            "--timeout",
            "2",
        ],
    );
    let Finished { code, text, report } =
        finish(child, dir.path(), Duration::from_secs(30), &pid_file);
    assert_eq!(code, Some(1), "{text}");
    let case = &report["cases"][0];
    assert_eq!(case["verdict"], "timeout", "{text}");
    assert!(
        case["detail"]
            .as_str()
            .unwrap()
            .contains("start-up timeout"),
        "{case}"
    );
    assert!(wait_dead(&pids(&pid_file), Duration::from_secs(5)).is_empty());
}

/// Sends `signal` to `child` once the controllers have written `count` pids, then
/// checks the interrupted run: exit 130, a partial report, no controller left.
fn interrupt_run(args: &[&str], dir: &Path, pid_file: &Path, count: usize, signal: i32) {
    let child = start(dir, args);
    let deadline = Instant::now() + Duration::from_secs(60);
    while pids(pid_file).len() < count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(pids(pid_file).len() >= count, "the controllers started");
    // SAFETY: kill only sends a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, signal) };
    let Finished { code, text, report } = finish(child, dir, Duration::from_secs(30), pid_file);
    let left = wait_dead(&pids(pid_file), Duration::from_secs(5));
    kill_all(&left);
    assert_eq!(code, Some(130), "{text}");
    assert_eq!(report["interrupted"], true, "{text}");
    let cases = report["cases"]
        .as_array()
        .expect("the partial report lists cases");
    assert_eq!(report["summary"]["cases"], cases.len());
    assert!(left.is_empty(), "controllers left running: {left:?}");
    assert!(text.contains("interrupted"), "{text}");
}

#[test]
fn ctrl_c_or_sigterm_stops_the_run_with_a_partial_report_and_no_controller_left() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let quoted = shell_quote(&pid_file.to_string_lossy());
    // A process per case, with a child of its own in its group.
    let sleeper = recording_pid(&pid_file, &format!("sleep 60 & echo $! >> {quoted}; wait"));
    interrupt_run(
        &["--controller", &sleeper, "--jobs", "2", "--timeout", "100"],
        dir.path(),
        &pid_file,
        4,
        libc::SIGINT,
    );

    // A persistent worker per job.
    std::fs::remove_file(&pid_file).unwrap();
    let worker = recording_pid(&pid_file, "exec sleep 60");
    interrupt_run(
        &[
            "--controller",
            &worker,
            "--supports",
            "previous_response_id,stateless,persistent",
            "--jobs",
            "2",
            "--timeout",
            "100",
        ],
        dir.path(),
        &pid_file,
        2,
        libc::SIGTERM,
    );
}

#[test]
fn a_daemon_holding_standard_output_loses_no_result_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let quoted = shell_quote(&pid_file.to_string_lossy());
    // The daemon leaves the process group (setsid) and keeps standard output open.
    let controller = format!(
        "setsid sh -c 'echo $$ >> {}; exec sleep 60' & \
         while [ ! -s {quoted} ]; do sleep 0.1; done; \
         echo '{{\"status\": \"failed\", \"reason\": \"max_rounds\"}}'",
        pid_file.to_string_lossy()
    );
    let child = start(
        dir.path(),
        &[
            "--controller",
            &controller,
            "--supports",
            "stateless",
            "--filter",
            "correlation/01-single-call",
        ],
    );
    let Finished { text, report, .. } =
        finish(child, dir.path(), Duration::from_secs(40), &pid_file);
    let left = wait_dead(&pids(&pid_file), Duration::from_secs(5));
    kill_all(&left);
    let case = stateless(&report);
    assert_eq!(case["verdict"], "fail", "{text}");
    assert!(
        case["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != "terminal/result-line"),
        "the result line was read: {case}"
    );
    assert_eq!(pids(&pid_file).len(), 1);
    assert!(left.is_empty(), "the daemon was left running: {left:?}");
}

#[test]
fn a_result_line_cut_by_the_capture_cap_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let controller = "python3 -c 'import json; print(json.dumps({\"status\": \"completed\", \"output_text\": \"x\" * 1500000}))'";
    let child = start(
        dir.path(),
        &[
            "--controller",
            controller,
            "--supports",
            "stateless",
            "--filter",
            "correlation/01-single-call",
        ],
    );
    let Finished { text, report, .. } =
        finish(child, dir.path(), Duration::from_secs(40), dir.path());
    let case = stateless(&report);
    assert_eq!(case["verdict"], "crashed", "{text}");
    assert!(
        case["detail"].as_str().unwrap().contains("capture cap"),
        "{case}"
    );
}

#[test]
fn an_empty_controller_command_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = loopcheck(&[
        "run",
        "--controller",
        "",
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the controller command is empty"),
        "{stderr}"
    );

    let config = dir.path().join("loopcheck.toml");
    std::fs::write(&config, "[profile.default]\ncontroller = \"\"\n").unwrap();
    let output = loopcheck(&[
        "run",
        "--filter",
        "correlation/01-single-call",
        "--config",
        &config.to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(2));
}
