//! The official OpenAI Node SDK against the fake server: `harness/node/loop.mjs`, the
//! project's Node.js reference controller, must pass the whole embedded catalogue with every
//! capability it declares, so no case may come out `unsupported`. It streams through the
//! SDK's `client.responses.stream()` helper, whose accumulator throws on any out-of-order
//! event, so a stream the fake server gets wrong fails its case.
//!
//! Needs `node` (20 or later) and the pinned packages in `harness/node/node_modules`, which
//! the test installs with `npm ci --prefix harness/node` when that folder is missing. Without
//! them the test is skipped with a note, except under `CI`, where it fails.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{
    assert_passes_catalogue, install_node_packages, missing_sdk, root, shell_quote,
};

/// Everything the controller supports (its README says the same); only `persistent` is
/// left out.
const CAPABILITIES: &str = concat!(
    "previous_response_id,stateless,conversation,stream,background,programmatic,approvals,",
    "budgets,websocket,custom,mcp,shell,apply_patch,compaction,text_format,computer,namespaces,",
    "tool_search"
);

/// Runs a command in the repository; its stderr (or the spawn error) on failure.
fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("{program}: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

/// Whether `node` can import the SDK and Ajv from `harness/node`; the error otherwise.
fn sdk_importable(dir: &Path) -> Result<(), String> {
    let script = format!(
        "Promise.all([import({openai:?}), import({ajv:?})]).catch((e) => {{ console.error(e.message); process.exit(1) }})",
        openai = dir.join("node_modules/openai/index.mjs").to_string_lossy(),
        ajv = dir.join("node_modules/ajv/dist/ajv.js").to_string_lossy(),
    );
    run("node", &["--input-type=module", "-e", &script])
}

#[test]
fn the_official_node_sdk_passes_the_catalogue() {
    let dir = root().join("harness/node");
    install_node_packages();
    if let Err(err) = sdk_importable(&dir) {
        let message = format!(
            "node cannot load openai and ajv from {} ({err}); install them with \
             `npm ci --prefix harness/node`",
            dir.join("node_modules").display()
        );
        missing_sdk("Node SDK", &message);
        return;
    }

    let controller = format!(
        "node {}",
        shell_quote(&dir.join("loop.mjs").to_string_lossy())
    );
    assert_passes_catalogue(
        &controller,
        CAPABILITIES,
        "the official Node SDK",
        "snapshots/node",
    );
}

/// The WebSocket mode's own tests (`harness/node/socket.test.mjs`, `node --test`), against a
/// scripted socket server: failures the catalogue cannot script all at once (a refused
/// upgrade, retries running out, a close racing the next create).
#[test]
fn the_node_reference_reads_and_retries_socket_answers_as_over_http() {
    let dir = root().join("harness/node");
    install_node_packages();
    if let Err(err) = sdk_importable(&dir) {
        missing_sdk(
            "Node SDK",
            &format!("node cannot load openai and ajv: {err}"),
        );
        return;
    }
    let output = Command::new("node")
        .args(["--test", "socket.test.mjs"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("node starts");
    assert!(
        output.status.success(),
        "harness/node/socket.test.mjs failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
