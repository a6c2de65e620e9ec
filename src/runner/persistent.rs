//! Persistent controllers (docs/contract.md): started once and fed one case per
//! line on standard input; each case's result is the next line on standard output. A
//! worker that dies, hangs or prints a garbled line is killed and restarted for the next
//! case; the case it was running is `crashed` or `timeout`.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::Controller;
use super::process::{kill_group, start_command};
use super::task::var;
use crate::transcript::ProcessRecord;

/// The contract's variables that only a case gives. `OPENAI_API_KEY` and
/// `OPENAI_BASE_URL` stay as the environment has them: an SDK client built when the
/// worker starts may need a key before the first case brings one.
const CASE_VARIABLES: [&str; 3] = [var::TASK, var::TOOLS_URL, var::CASE];

/// One running persistent controller.
pub(super) struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    group: Option<i32>,
}

/// How one case went.
pub(super) struct Answer {
    /// What the process did during the case (its result line as `stdout`).
    pub record: ProcessRecord,
    /// False when the worker must be replaced before the next case.
    pub healthy: bool,
    /// No result line came within the case timeout.
    pub timed_out: bool,
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
        let group = child.id().map(|pid| pid as i32);
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
            child,
            stdin,
            lines,
            stderr,
            group,
        })
    }

    /// Sends one case and waits for its result line, at most `timeout`.
    pub async fn run(
        &mut self,
        case: &str,
        env: &[(String, String)],
        task: &Value,
        timeout: Duration,
    ) -> Answer {
        let started = Instant::now();
        let env: serde_json::Map<String, Value> =
            env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let mut line = json!({"case": case, "env": env, "task": task}).to_string();
        line.push('\n');
        let written = self
            .stdin
            .write_all(line.as_bytes())
            .await
            .and(self.stdin.flush().await);
        let outcome = match written {
            Err(_) => Ok(None),
            Ok(()) => tokio::time::timeout(timeout, self.next_result_line()).await,
        };
        let mut record = ProcessRecord::default();
        let mut timed_out = false;
        let healthy = match outcome {
            Ok(Some(result)) => {
                let valid = crate::transcript::ControllerResult::from_stdout(&result).is_ok();
                record.stdout = result;
                valid
            }
            Ok(None) => {
                record.exit_code = self.child.try_wait().ok().flatten().and_then(|s| s.code());
                false
            }
            Err(_) => {
                timed_out = true;
                false
            }
        };
        if !healthy {
            // The stream of results is out of step or gone: this worker is done.
            kill_group(self.group);
            let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        }
        record.stderr = self.take_stderr();
        record.duration_ms = started.elapsed().as_millis() as u64;
        Answer {
            record,
            healthy,
            timed_out,
        }
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
    pub async fn stop(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await;
        kill_group(self.group);
    }
}
