//! The `loopcheck` binary of the profile an example runs in, which `cargo run --example`
//! does not build by itself.

use std::path::PathBuf;

/// `target/<profile>/loopcheck`, beside the example's own folder; exits with the command
/// that builds it when it is missing.
pub fn loopcheck_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the example's path");
    let binary = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("loopcheck"))
        .expect("target/<profile>/loopcheck");
    if !binary.is_file() {
        let release = if cfg!(debug_assertions) {
            ""
        } else {
            " --release"
        };
        eprintln!(
            "{} is missing: build it first with `cargo build{release} --bin loopcheck`",
            binary.display()
        );
        std::process::exit(2);
    }
    binary
}
