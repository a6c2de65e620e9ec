//! `rust-version` says what really builds: no dependency in the lock file asks for a newer
//! Rust than the workspace declares.

use std::process::Command;

use serde_json::Value;

use crate::support::cli::assert_success;
use crate::support::root;

fn version(text: &str) -> Vec<u64> {
    text.split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

#[test]
fn rust_version_covers_every_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_success(&output);
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "loopcheck")
        .and_then(|p| p["rust_version"].as_str())
        .expect("loopcheck declares rust-version")
        .to_owned();
    let newest = packages
        .iter()
        .filter_map(|p| Some((p["rust_version"].as_str()?, p["name"].as_str()?)))
        .max_by_key(|(v, _)| version(v))
        .unwrap();
    assert!(
        version(&ours) >= version(newest.0),
        "rust-version is {ours}, but {} needs {}: raise rust-version in Cargo.toml",
        newest.1,
        newest.0
    );
}
