//! The official OpenAI Python SDK against the fake server: `harness/python/loop.py`, the
//! project's Python reference controller, must pass the whole embedded catalogue with every
//! capability it declares, so no case may come out `unsupported`. It validates every
//! response body with the SDK's `Response.model_validate` (for streams, the terminal
//! event's response), so a response shape the SDK's types reject fails its case with reason
//! `sdk_parse_error`.
//!
//! Needs a Python with `openai` and `jsonschema` importable: `LOOPCHECK_PYTHON`, else
//! `.venv/bin/python` in the repository, which the test creates from
//! `harness/python/requirements.txt` when it is missing. Without a usable Python the test
//! is skipped with a note, except under `CI`, where it fails.

use std::process::{Command, Stdio};

use crate::support::{
    assert_passes_catalogue, missing_sdk, python, root, sdk_importable, shell_quote,
};

const REQUIREMENTS: &str = "harness/python/requirements.txt";

/// Everything the controller supports (its README says the same); only `persistent` is
/// left out.
const CAPABILITIES: &str = "previous_response_id,stateless,conversation,stream,background,programmatic,approvals,persistent,budgets,websocket,custom,mcp,shell,apply_patch,compaction,text_format,computer,namespaces,tool_search";

/// Creates `.venv` with the pinned SDK, as `.ci/run` does, so that a plain `cargo test`
/// on a fresh machine runs this test too.
fn create_venv() -> Result<(), String> {
    let venv = root().join(".venv");
    let run = |program: &std::path::Path, args: &[&str]| -> Result<(), String> {
        let output = Command::new(program)
            .args(args)
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .map_err(|err| format!("{}: {err}", program.display()))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    };
    run(
        std::path::Path::new("python3"),
        &["-m", "venv", &venv.to_string_lossy()],
    )?;
    run(
        &venv.join("bin/pip"),
        // The Open Responses models too, for tests/integration/open_responses.rs.
        &[
            "install",
            "--quiet",
            "-r",
            REQUIREMENTS,
            "-r",
            "tests/requirements.txt",
        ],
    )
}

#[test]
fn the_official_python_sdk_passes_the_catalogue() {
    let mut python = python();
    if sdk_importable(&python).is_err()
        && std::env::var_os("LOOPCHECK_PYTHON").is_none()
        && !root().join(".venv").exists()
    {
        match create_venv() {
            Ok(()) => python = root().join(".venv/bin/python"),
            Err(err) => eprintln!("note: failed to create .venv: {err}"),
        }
    }
    if let Err(err) = sdk_importable(&python) {
        let message = format!(
            "{} cannot import openai and jsonschema ({err}); install them with \
             `python3 -m venv .venv && .venv/bin/pip install -r {REQUIREMENTS}` \
             or point LOOPCHECK_PYTHON at a Python that has them",
            python.display()
        );
        missing_sdk("Python SDK", &message);
        return;
    }

    let script = root().join("harness/python/loop.py");
    let controller = format!(
        "{} {}",
        shell_quote(&python.to_string_lossy()),
        shell_quote(&script.to_string_lossy())
    );
    assert_passes_catalogue(
        &controller,
        CAPABILITIES,
        "the official Python SDK",
        "snapshots/python",
    );
}
