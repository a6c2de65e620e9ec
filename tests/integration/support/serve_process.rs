//! A `loopcheck` server process started by a test, found by the URL it prints first.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};

use super::loopcheck_bin;

/// A `loopcheck` process the test started; killed when dropped.
pub struct ServeProcess {
    pub child: Child,
    stdin: Option<ChildStdin>,
}

impl ServeProcess {
    /// Starts `loopcheck ARGS` (under `sh -c 'ulimit -n N; exec ...'` with a descriptor
    /// limit) and reads the URL its first line names.
    pub fn start(args: &[&str], fd_limit: Option<u32>) -> (Self, String) {
        let mut command = match fd_limit {
            None => Command::new(loopcheck_bin()),
            Some(limit) => {
                let mut shell = Command::new("sh");
                shell
                    .arg("-c")
                    .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                    .arg(loopcheck_bin());
                shell
            }
        };
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("loopcheck starts");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let process = Self { child, stdin };
        let mut stdout = BufReader::new(stdout);
        let mut first = String::new();
        stdout.read_line(&mut first).expect("a first line");
        // Drained for the process's life: with the pipe closed, its next line would end it.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let url = first
            .split_whitespace()
            .find(|word| word.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL on the first line: {first:?}"))
            .to_owned();
        (process, url)
    }

    /// The process's standard input (once).
    pub fn stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
