//! Controllers that are slow to start, never read, fork daemons or are interrupted: every
//! wait on a controller is bounded, a worker's start-up has its own budget, a signal
//! leaves a partial report and no process, and nothing a controller printed is lost.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{loopcheck_bin, root, shell_quote};

/// Whether `pid` names a live process (a zombie is dead: it only waits to be reaped).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// The pids a controller wrote, one per line, into `file`.
fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Kills what the controllers of a test left (only after a failure: the test then
/// still stops every process it caused).
fn kill_all(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill only sends a signal, to a pid a controller of this test wrote.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Waits until none of `pids` lives, at most `within`; the ones still alive.
fn wait_dead(pids: &[i32], within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let living: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if living.is_empty() || Instant::now() > deadline {
            return living;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A `loopcheck run` started with `args` and a JSON report in `dir`.
fn start(dir: &Path, args: &[&str]) -> Child {
    Command::new(loopcheck_bin())
        .arg("run")
        .args(args)
        .arg("--report-json")
        .arg(dir.join("report.json"))
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loopcheck starts")
}

/// Waits for `child` at most `within`, killing it (and the pids in `pid_file`) if it
/// is still running; its exit code, its output and its report.
fn finish(
    mut child: Child,
    dir: &Path,
    within: Duration,
    pid_file: &Path,
) -> (Option<i32>, String, Value) {
    let deadline = Instant::now() + within;
    while child.try_wait().expect("waiting works").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            kill_all(&pids(pid_file));
            panic!("loopcheck was still running after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report = std::fs::read(dir.join("report.json"))
        .map(|bytes| serde_json::from_slice(&bytes).expect("the JSON report parses"))
        .unwrap_or(Value::Null);
    (output.status.code(), text, report)
}

/// The report's one case run in the `stateless` mode.
fn stateless(report: &Value) -> &Value {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["state"] == "stateless")
        .expect("a stateless case run")
}

fn reference() -> String {
    shell_quote(&loopcheck_bin().to_string_lossy())
}

#[test]
fn a_slow_starting_worker_gets_its_start_up_apart_from_the_case_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Sleeps longer than the case timeout before it reads anything, as an SDK's imports
    // do on a loaded machine.
    let controller = format!("sleep 6; exec {} reference-controller", reference());
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
    let (code, text, report) = finish(child, dir.path(), Duration::from_secs(60), dir.path());
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
    let quoted = shell_quote(&pid_file.to_string_lossy());
    // A worker that reads and answers its first case, then never reads again: the
    // second case's line does not fit in the pipe.
    let answers_once = format!(
        "echo $$ >> {quoted}; head -n 1 >/dev/null; \
         echo '{{\"status\": \"failed\", \"reason\": \"x\"}}'; exec sleep 60"
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
    let (code, text, report) = finish(child, dir.path(), Duration::from_secs(40), &pid_file);
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
    let never_reads = format!("echo $$ >> {quoted}; exec sleep 60");
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
    let (code, text, report) = finish(child, dir.path(), Duration::from_secs(30), &pid_file);
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
    let (code, text, report) = finish(child, dir, Duration::from_secs(30), pid_file);
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
    let sleeper = format!("echo $$ >> {quoted}; sleep 60 & echo $! >> {quoted}; wait");
    interrupt_run(
        &["--controller", &sleeper, "--jobs", "2", "--timeout", "100"],
        dir.path(),
        &pid_file,
        4,
        libc::SIGINT,
    );

    // A persistent worker per job.
    std::fs::remove_file(&pid_file).unwrap();
    let worker = format!("echo $$ >> {quoted}; exec sleep 60");
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
    let (_, text, report) = finish(child, dir.path(), Duration::from_secs(40), &pid_file);
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
    let (_, text, report) = finish(child, dir.path(), Duration::from_secs(40), dir.path());
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
    let output = Command::new(loopcheck_bin())
        .args([
            "run",
            "--controller",
            "",
            "--filter",
            "correlation/01-single-call",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the controller command is empty"),
        "{stderr}"
    );

    let config = dir.path().join("loopcheck.toml");
    std::fs::write(&config, "[profile.default]\ncontroller = \"\"\n").unwrap();
    let output = Command::new(loopcheck_bin())
        .args(["run", "--filter", "correlation/01-single-call", "--config"])
        .arg(&config)
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
