//! The integration tests' kit: where things are (the repository, the binary, the Python),
//! the catalogue and fake servers to test against, and one file per tool the tests share:
//! the HTTP client (`http`), the SSE reader (`sse`), the loopcheck command line (`cli`),
//! controllers broken on purpose (`controllers`), the snapshot redactor (`redact`), the
//! whole-catalogue run (`catalogue_run`) and the served process (`serve_process`).

pub mod catalogue_run;
pub mod cli;
pub mod controllers;
pub mod http;
pub mod redact;
pub mod serve_process;
pub mod sse;
pub mod stateless_api;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

pub use catalogue_run::assert_passes_catalogue;
pub use serve_process::ServeProcess;

use loopcheck::scenario::{self, Case, StateMode};
use loopcheck::serve::{ServeOptions, SessionServer};
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

/// A `loopcheck serve` server running in process over the embedded catalogue.
pub async fn session_server(options: ServeOptions) -> SessionServer {
    SessionServer::start(catalogue(), options)
        .await
        .expect("the session server starts")
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
