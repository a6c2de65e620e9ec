//! Controllers broken on purpose, as shell commands (they hang, crash, print garbage,
//! never read, fork daemons), and the bounded run of loopcheck against them: every
//! process they start writes its pid to a file, so a test can prove none is left.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{cli, loopcheck_bin, shell_quote};

/// The Rust reference controller as a shell command.
pub fn reference() -> String {
    format!(
        "{} reference-controller",
        shell_quote(&loopcheck_bin().to_string_lossy())
    )
}

/// A controller that hangs: it and a child of its own sleep for a minute.
pub const HANGS: &str = "sleep 60 & sleep 60";

/// A controller that prints `stderr` to standard error and exits with `code`, with no
/// result line.
pub fn crashes(stderr: &str, code: i32) -> String {
    format!("echo {} >&2; exit {code}", shell_quote(stderr))
}

/// A controller that prints `line` as its only output, whatever it is.
pub fn prints(line: &str) -> String {
    format!("echo {}", shell_quote(line))
}

/// A controller that behaves as the reference, except on `case`, where it runs `defect`.
pub fn except_on(case: &str, defect: &str) -> String {
    format!(
        "if [ \"$LOOPCHECK_CASE\" = {case} ]; then {defect}; else {}; fi",
        reference()
    )
}

/// `then`, after the shell's pid is appended to `pid_file`.
pub fn recording_pid(pid_file: &Path, then: &str) -> String {
    format!(
        "echo $$ >> {}; {then}",
        shell_quote(&pid_file.to_string_lossy())
    )
}

/// Whether `pid` names a live process (a zombie is dead: it only waits to be reaped).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// The pids a controller wrote, one per line, into `file`.
pub fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Kills what the controllers of a test left (only after a failure: the test then
/// still stops every process it caused).
pub fn kill_all(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill only sends a signal, to a pid a controller of this test wrote.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Waits until none of `pids` lives, at most `within`; the ones still alive.
pub fn wait_dead(pids: &[i32], within: Duration) -> Vec<i32> {
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
pub fn start(dir: &Path, args: &[&str]) -> Child {
    cli::command(&["run"])
        .args(args)
        .arg("--report-json")
        .arg(dir.join("report.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loopcheck starts")
}

/// How a bounded run ended.
pub struct Finished {
    pub code: Option<i32>,
    /// Standard output, then standard error.
    pub text: String,
    pub report: Value,
}

/// Waits for `child` at most `within`, killing it (and the pids in `pid_file`) if it
/// is still running; its exit code, its output and its report.
pub fn finish(mut child: Child, dir: &Path, within: Duration, pid_file: &Path) -> Finished {
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
    Finished {
        code: output.status.code(),
        text: cli::text(&output),
        report: cli::read_report(&dir.join("report.json")),
    }
}

/// A script run by `interpreter` (a mutant, an adapter), as a shell command.
pub fn interpreted(interpreter: &Path, script: &Path) -> String {
    format!(
        "{} {}",
        shell_quote(&interpreter.to_string_lossy()),
        shell_quote(&script.to_string_lossy())
    )
}

/// Runs one case run in process against the Rust reference controller.
pub async fn run_reference_in_process(
    case: &loopcheck::scenario::Case,
    state: loopcheck::scenario::StateMode,
    timeout: std::time::Duration,
) -> loopcheck::report::CaseReport {
    loopcheck::runner::run_in_process(
        case,
        state,
        timeout,
        loopcheck::runner::reference_controller,
    )
    .await
}
