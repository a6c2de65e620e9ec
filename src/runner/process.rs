//! Running a controller command as a process: its own process group, the contract's
//! environment, a timeout that kills the whole group, and capped output capture.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::Controller;
use crate::transcript::ProcessRecord;

/// Most bytes kept of each of stdout and stderr.
const OUTPUT_CAP: usize = 1024 * 1024;

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

/// Runs `controller` for one case with `env` added, for at most `timeout`; the record,
/// and whether it was killed at the timeout.
pub async fn run(
    controller: &Controller,
    env: &[(String, String)],
    timeout: Duration,
) -> std::io::Result<(ProcessRecord, bool)> {
    let started = Instant::now();
    let mut cmd = start_command(controller);
    cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let group = child.id().map(|pid| pid as i32);
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));

    let (exit_code, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok().and_then(|s| s.code()), false),
        Err(_) => {
            kill_group(group);
            let _ = child.wait().await;
            (None, true)
        }
    };
    // Children the controller left behind would keep the pipes open; the case is over.
    kill_group(group);
    let collect = |handle: tokio::task::JoinHandle<String>| async move {
        tokio::time::timeout(Duration::from_secs(2), handle)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    let record = ProcessRecord {
        exit_code,
        stdout: collect(stdout).await,
        stderr: collect(stderr).await,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    Ok((record, timed_out))
}

/// Kills a whole process group (a command and everything it started).
pub(crate) fn kill_group(group: Option<i32>) {
    if let Some(pgid) = group.filter(|&p| p > 0) {
        // SAFETY: killpg only sends a signal; a stale group id at worst names no process.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Reads everything, keeping the first and the last `OUTPUT_CAP / 2` bytes: the result
/// line is the last line, so the tail must survive a chatty controller.
async fn read_capped(source: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut source) = source else {
        return String::new();
    };
    let half = OUTPUT_CAP / 2;
    let mut head = Vec::new();
    let mut tail = Vec::new();
    let mut dropped = 0usize;
    let mut buffer = [0u8; 8192];
    loop {
        match source.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let chunk = &buffer[..n];
                let into_head = chunk.len().min(half.saturating_sub(head.len()));
                head.extend_from_slice(&chunk[..into_head]);
                tail.extend_from_slice(&chunk[into_head..]);
                if tail.len() > half {
                    let excess = tail.len() - half;
                    tail.drain(..excess);
                    dropped += excess;
                }
            }
        }
    }
    let mut text = String::from_utf8_lossy(&head).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n[loopcheck: {dropped} bytes not kept]\n"));
    }
    text.push_str(&String::from_utf8_lossy(&tail));
    text
}
