//! Persistent controllers (docs/contract.md): started once and fed one case per
//! line on standard input; each case's result is the next line on standard output. A
//! worker that dies, hangs or prints a garbled line is killed and restarted for the next
//! case; the case it was running is `crashed` or `timeout`.
//!
//! A fresh worker's start-up has its own budget: the contract has no readiness
//! handshake, so a worker is *ready* when it has taken (begun to read) its first case
//! line from the pipe, which loopcheck sees as the pipe's unread bytes going down
//! (`FIONREAD`). The case clock starts then. An interpreter importing its SDK under load
//! spends that time with the line waiting in the pipe, not on the case.

use std::os::fd::{AsRawFd, RawFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::Controller;
use super::group::ProcessGroup;
use super::process::start_command;
use crate::contract::var;
use crate::transcript::ProcessRecord;

/// The contract's variables that only a case gives. `OPENAI_API_KEY` and
/// `OPENAI_BASE_URL` stay as the environment has them: an SDK client built when the
/// worker starts may need a key before the first case brings one.
const CASE_VARIABLES: [&str; 3] = [var::TASK, var::TOOLS_URL, var::CASE];

/// How often a fresh worker's pipe is looked at until it takes its first line.
const READY_POLL: Duration = Duration::from_millis(10);

/// One running persistent controller.
pub(super) struct Worker {
    // First, so dropped first: the group is killed while its leader is unreaped.
    group: ProcessGroup,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// When the process was started.
    spawned: Instant,
    /// No case line was sent to it yet.
    fresh: bool,
}

/// The two budgets of a case on a worker.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budgets {
    /// A fresh worker's start-up: from its start until it takes its first case line.
    pub startup: Duration,
    /// The case: from when the worker is ready until its result line.
    pub case: Duration,
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Late {
    /// The fresh worker did not take its case line within the start-up budget.
    Startup,
    /// No result line within the case timeout.
    Case,
}

/// How one case went.
pub(super) struct Answer {
    /// What the process did during the case (its result line as `stdout`).
    pub record: ProcessRecord,
    /// False when the worker must be replaced before the next case.
    pub healthy: bool,
    /// Set when a budget ran out.
    pub late: Option<Late>,
    /// When the case's clock started: the worker took the line (a fresh worker), or the
    /// line was being sent (a worker that ran cases before).
    pub case_started: Instant,
    /// A fresh worker's start-up time, until it took its first case line.
    pub startup_ms: Option<u64>,
}

/// What came of sending a case line.
enum Outcome {
    /// The next non-empty line of standard output.
    Line(String),
    /// The worker closed its standard output or input, or exited.
    Closed,
    /// A budget ran out.
    Late(Late),
}

impl Worker {
    /// Starts `controller` in its own process group (see [`start_command`]), without the
    /// contract's `LOOPCHECK_` variables: each case brings its own, and a stale one
    /// exported in the shell that ran loopcheck would name another task or server.
    pub async fn start(controller: &Controller) -> std::io::Result<Self> {
        let mut command = start_command(controller);
        for name in CASE_VARIABLES {
            command.env_remove(name);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let spawned = Instant::now();
        let pipes: Vec<RawFd> = [
            child.stdin.as_ref().map(AsRawFd::as_raw_fd),
            child.stdout.as_ref().map(AsRawFd::as_raw_fd),
            child.stderr.as_ref().map(AsRawFd::as_raw_fd),
        ]
        .into_iter()
        .flatten()
        .collect();
        let group = ProcessGroup::new(child.id(), &pipes);
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let mut stderr_pipe = child
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("no stderr pipe"))?;
        let (sender, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buffer = [0u8; 8192];
            while let Ok(n) = stderr_pipe.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut kept) = sink.lock() {
                    kept.extend_from_slice(&buffer[..n]);
                }
            }
        });
        Ok(Self {
            group,
            child,
            stdin,
            lines,
            stderr,
            spawned,
            fresh: true,
        })
    }

    /// Sends one case and waits for its result line. A fresh worker first gets
    /// `budgets.startup` (counted from its start) to take the line; then the case gets
    /// `budgets.case`. Every wait, the write included, is inside one of them: a worker
    /// that never reads cannot hold the run up on a full pipe.
    pub async fn run(
        &mut self,
        case: &str,
        env: &[(String, String)],
        task: &Value,
        budgets: Budgets,
    ) -> Answer {
        let env: serde_json::Map<String, Value> =
            env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let mut line = json!({"case": case, "env": env, "task": task}).to_string();
        line.push('\n');
        let mut startup_ms = None;
        let (case_started, outcome) = if std::mem::take(&mut self.fresh) {
            let left = budgets.startup.saturating_sub(self.spawned.elapsed());
            let taken = tokio::time::timeout(left, self.hand_over(line.as_bytes())).await;
            startup_ms = Some(self.spawned.elapsed().as_millis() as u64);
            let case_started = Instant::now();
            let outcome = match taken {
                Err(_) => Outcome::Late(Late::Startup),
                Ok(Err(_)) => Outcome::Closed,
                Ok(Ok(())) => self.result_within(budgets.case).await,
            };
            (case_started, outcome)
        } else {
            let case_started = Instant::now();
            let answered = tokio::time::timeout(budgets.case, async {
                match self.write_line(line.as_bytes()).await {
                    Ok(()) => self.next_result_line().await,
                    Err(_) => None,
                }
            })
            .await;
            let outcome = match answered {
                Ok(Some(result)) => Outcome::Line(result),
                Ok(None) => Outcome::Closed,
                Err(_) => Outcome::Late(Late::Case),
            };
            (case_started, outcome)
        };
        let mut record = ProcessRecord::default();
        let mut late = None;
        let healthy = match outcome {
            Outcome::Line(result) => {
                let valid = crate::transcript::ControllerResult::from_stdout(&result).is_ok();
                record.stdout = result;
                valid
            }
            Outcome::Closed => {
                record.exit_code = self.child.try_wait().ok().flatten().and_then(|s| s.code());
                false
            }
            Outcome::Late(which) => {
                late = Some(which);
                false
            }
        };
        if !healthy {
            // The stream of results is out of step or gone: this worker is done.
            self.group.kill_all();
            let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
            self.group.disarm();
        }
        record.stderr = self.take_stderr();
        record.duration_ms = case_started.elapsed().as_millis() as u64;
        Answer {
            record,
            healthy,
            late,
            case_started,
            startup_ms,
        }
    }

    /// The next result line within `timeout`.
    async fn result_within(&mut self, timeout: Duration) -> Outcome {
        match tokio::time::timeout(timeout, self.next_result_line()).await {
            Ok(Some(result)) => Outcome::Line(result),
            Ok(None) => Outcome::Closed,
            Err(_) => Outcome::Late(Late::Case),
        }
    }

    async fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.stdin.write_all(line).await?;
        self.stdin.flush().await
    }

    /// Writes a fresh worker's first line and waits until the worker has begun to read
    /// it: the pipe then holds less than the line. Where the pipe's fill cannot be read,
    /// the completed write is all there is to see.
    async fn hand_over(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.write_line(line).await?;
        let fd = self.stdin.as_raw_fd();
        while unread(fd).is_some_and(|bytes| bytes >= line.len()) {
            if self.child.try_wait()?.is_some() {
                return Err(std::io::Error::other("the worker exited"));
            }
            tokio::time::sleep(READY_POLL).await;
        }
        Ok(())
    }

    /// The next non-empty stdout line, or `None` when the process closed it.
    async fn next_result_line(&mut self) -> Option<String> {
        loop {
            let line = self.lines.recv().await?;
            if !line.trim().is_empty() {
                return Some(line);
            }
        }
    }

    fn take_stderr(&self) -> String {
        self.stderr
            .lock()
            .map(|mut kept| String::from_utf8_lossy(&std::mem::take(&mut *kept)).into_owned())
            .unwrap_or_default()
    }

    /// Ends the worker: closes its input, then kills what is left of its group.
    pub async fn stop(self) {
        let Self {
            mut group,
            mut child,
            stdin,
            ..
        } = self;
        drop(stdin);
        let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
        group.kill_all();
        group.disarm();
    }
}

/// The bytes written to a pipe and not read yet (Linux reads this on either end).
fn unread(fd: RawFd) -> Option<usize> {
    let mut bytes: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `bytes`; a bad fd or request is an error.
    let ok = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut bytes) } == 0;
    ok.then_some(bytes.max(0) as usize)
}
