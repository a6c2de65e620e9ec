//! Running a controller command as a process: its own process group, the contract's
//! environment, a timeout that kills the whole group (and what left it holding the
//! output), and capped output capture.

use std::future::Future;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::Controller;
use super::capture::Capture;
use super::group::ProcessGroup;
use crate::transcript::ProcessRecord;

/// A program started as it is, without a shell: the built-in reference controller.
#[derive(Debug, Clone)]
pub struct Direct {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment it gets beyond the contract's.
    pub env: Vec<(String, String)>,
}

/// The command that starts `controller`, in its own process group and killed when
/// dropped: `direct` as it is when given, else its command through `sh -c` (a shell
/// started for each case costs a process start of its own).
pub(super) fn start_command(controller: &Controller) -> Command {
    let mut cmd = match &controller.direct {
        Some(direct) => {
            let mut cmd = Command::new(&direct.program);
            cmd.args(&direct.args)
                .envs(direct.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            cmd
        }
        None => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(&controller.command);
            cmd
        }
    };
    cmd.process_group(0).kill_on_drop(true);
    cmd
}

/// How a controller process ran for one case.
pub struct Exited {
    /// What it did.
    pub record: ProcessRecord,
    /// Killed at the case timeout.
    pub timed_out: bool,
    /// Killed when `stop` (given to [`run`]) finished first.
    pub stopped: bool,
    /// Its last line of standard output lost its beginning to the capture cap.
    pub last_line_cut: bool,
}

/// How long the output pipes may stay open after the process ended before loopcheck
/// looks for what holds them.
const PIPE_GRACE: Duration = Duration::from_millis(200);

/// Runs `controller` for one case with `env` added, for at most `timeout`, and no longer
/// than until `stop` finishes (the fake server saw a loop without a round limit).
pub async fn run(
    controller: &Controller,
    env: &[(String, String)],
    timeout: Duration,
    stop: impl Future<Output = ()>,
) -> std::io::Result<Exited> {
    let started = Instant::now();
    let mut cmd = start_command(controller);
    cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let pipes: Vec<RawFd> = [
        child.stdout.as_ref().map(AsRawFd::as_raw_fd),
        child.stderr.as_ref().map(AsRawFd::as_raw_fd),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Declared after `child`, so dropped (and killed) first: the leader stays unreaped
    // until then and its group id cannot name another group.
    let mut group = ProcessGroup::new(child.id(), &pipes);
    let mut stdout = Capture::start(child.stdout.take());
    let mut stderr = Capture::start(child.stderr.take());

    let (exit_code, timed_out, stopped) = tokio::select! {
        biased;
        () = stop => {
            group.kill();
            let _ = child.wait().await;
            (None, false, true)
        }
        waited = tokio::time::timeout(timeout, child.wait()) => match waited {
            Ok(status) => (status.ok().and_then(|s| s.code()), false, false),
            Err(_) => {
                group.kill();
                let _ = child.wait().await;
                (None, true, false)
            }
        },
    };
    // Children the controller left behind would keep the pipes open; the case is over.
    group.kill();
    if !(stdout.ended(PIPE_GRACE).await && stderr.ended(PIPE_GRACE).await) {
        // Something outside the group (a daemon) holds them: it goes too.
        group.kill_all();
        stdout.ended(Duration::from_secs(2)).await;
        stderr.ended(Duration::from_secs(2)).await;
    }
    group.disarm();
    let (stdout, stderr) = (stdout.take(), stderr.take());
    let record = ProcessRecord {
        exit_code,
        stdout: stdout.text,
        stderr: stderr.text,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    Ok(Exited {
        record,
        timed_out,
        stopped,
        last_line_cut: stdout.last_line_cut,
    })
}
