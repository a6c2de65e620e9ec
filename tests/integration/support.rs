//! Shared helpers for the integration tests.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;

use loopcheck::scenario::{self, Case, StateMode};
use loopcheck::server::{RunningServer, Session};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The embedded catalogue.
pub fn catalogue() -> Vec<Case> {
    scenario::catalogue().expect("the embedded catalogue loads")
}

/// One catalogue case by id.
pub fn case(id: &str) -> Case {
    catalogue()
        .into_iter()
        .find(|c| c.scenario.id == id)
        .unwrap_or_else(|| panic!("no catalogue case '{id}'"))
}

/// A case parsed from YAML text.
pub fn case_from_yaml(yaml: &str) -> Case {
    let path = PathBuf::from("inline.yaml");
    let scenario = scenario::parse(&path, yaml).unwrap_or_else(|e| panic!("{e}"));
    Case {
        scenario,
        source: path,
    }
}

/// A running fake server for a case.
pub async fn serve(case: &Case, state: StateMode) -> (Arc<Session>, RunningServer) {
    let session = Arc::new(Session::new(Arc::new(case.scenario.clone()), state));
    let server = RunningServer::start(session.clone())
        .await
        .expect("server starts");
    (session, server)
}

/// The Python the SDK tests use: `LOOPCHECK_PYTHON`, else `.venv/bin/python`, else
/// `python3`.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("LOOPCHECK_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let venv = root().join(".venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Whether `python` can import the SDK; the error output otherwise.
pub fn sdk_importable(python: &PathBuf) -> Result<(), String> {
    match Command::new(python)
        .args(["-c", "import openai, jsonschema"])
        .stdin(Stdio::null())
        .output()
    {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// The loopcheck binary built for these tests.
pub fn loopcheck_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_loopcheck"))
}

/// At most `max` characters of `text`.
pub fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Single-quotes a word for `sh`.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Installs `harness/node`'s pinned packages with `npm ci` when its `node_modules` is
/// missing, as `.ci/run` does, so that a plain `cargo test` on a fresh machine runs the Node
/// tests too. Once per test process: the Node tests run in parallel, and two `npm ci` in one
/// folder break each other.
pub fn install_node_packages() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        if root().join("harness/node/node_modules").exists() {
            return;
        }
        let installed = Command::new("npm")
            .args(["ci", "--prefix", "harness/node", "--no-audit", "--no-fund"])
            .current_dir(root())
            .stdin(Stdio::null())
            .output();
        match installed {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!(
                "note: `npm ci --prefix harness/node` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(err) => eprintln!("note: `npm ci --prefix harness/node` failed: npm: {err}"),
        }
    });
}

/// A missing SDK: a failure under CI (which must install it), a skip with a note
/// elsewhere. Returns when the caller should skip.
pub fn missing_sdk(what: &str, message: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("CI must install the {what}: {message}");
    }
    eprintln!("note: skipping the {what} test: {message}");
}

/// Runs the whole embedded catalogue against `controller` and asserts that every case
/// passes (no `fail`, no `unsupported`, no `drift` from the snapshots in `snapshots`,
/// nothing else) and loopcheck exits 0.
pub fn assert_passes_catalogue(controller: &str, supports: &str, who: &str, snapshots: &str) {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report_path = dir.path().join("report.json");
    let output = Command::new(loopcheck_bin())
        .args([
            "run",
            "--controller",
            controller,
            "--supports",
            supports,
            "--jobs",
            "2",
            "--snapshots",
            snapshots,
        ])
        .arg("--report-json")
        .arg(&report_path)
        .env("CI", "1")
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: serde_json::Value = match std::fs::read(&report_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("the JSON report parses"),
        Err(err) => panic!(
            "no JSON report ({err}); loopcheck exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        ),
    };
    let cases = report["cases"].as_array().expect("the report lists cases");
    assert!(!cases.is_empty(), "the run covered no case:\n{stdout}");
    let failures: Vec<String> = cases
        .iter()
        .filter(|case| case["verdict"] != "pass")
        .map(|case| {
            let mut line = format!(
                "{} [{}, {}]: {}",
                case["id"], case["state"], case["delivery"], case["verdict"]
            );
            for check in case["checks"].as_array().into_iter().flatten() {
                if check["verdict"] != "pass" && check["verdict"] != "info" {
                    line.push_str(&format!(
                        "\n    {} ({}): {}",
                        check["id"], check["verdict"], check["message"]
                    ));
                }
            }
            for change in case["snapshot"]["changes"].as_array().into_iter().flatten() {
                line.push_str(&format!(
                    "\n    snapshot: {}",
                    change.as_str().unwrap_or("?")
                ));
            }
            line
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} case(s) did not pass with {who}:\n{}\n\n(if what it sends changed on purpose, rerun with --snapshots {snapshots} --update-snapshots outside CI)\n\nloopcheck output:\n{stdout}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        output.status.success(),
        "loopcheck exited with {}\n{stdout}",
        output.status
    );
}

/// The text of a response's message items (what the SDKs call `output_text`).
pub fn response_text(response: &serde_json::Value) -> String {
    response["output"]
        .as_array()
        .expect("output")
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

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
