//! How fast `loopcheck fuzz` goes: cases per second against the Rust reference, the
//! Python reference kept running (persistent) and the Python reference started per case,
//! and the time to find and shrink a defect (the mutant that answers only the first of
//! parallel calls, persistent). Same seeds every run; run it on a quiet machine and read
//! the ratios, not the absolute numbers.
//!
//! Run: `cargo build --release && cargo run --release --example fuzz_speed [CASES]`
//! (needs `.venv` with the Python SDK, as the tests do).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use loopcheck::fuzz::{FuzzOptions, FuzzOutcome, fuzz};
use loopcheck::runner::{Controller, RunOptions};

#[path = "support/binary.rs"]
mod binary;

fn capabilities(words: &str) -> BTreeSet<String> {
    words.split(',').map(str::to_owned).collect()
}

fn options(
    controller: Controller,
    cases: usize,
    seed: u64,
    jobs: usize,
    out: PathBuf,
) -> FuzzOptions {
    FuzzOptions {
        controller,
        in_process: None,
        run: RunOptions {
            jobs,
            seed,
            timeout: Duration::from_secs(30),
            ..RunOptions::default()
        },
        cases,
        seed,
        out,
        max_turns: 4,
        time: None,
        max_shrink_steps: 256,
        fail_fast: true,
        prune: false,
    }
}

#[tokio::main]
async fn main() {
    let cases: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let loopcheck = binary::loopcheck_binary();
    let python = root.join(".venv/bin/python");
    let all = "previous_response_id,stateless,conversation,stream,programmatic,approvals";
    let controllers = [
        (
            "rust reference",
            format!("{} reference-controller", loopcheck.display()),
            all.to_owned(),
        ),
        (
            "python reference, persistent",
            format!(
                "{} {}",
                python.display(),
                root.join("harness/python/loop.py").display()
            ),
            format!("{all},persistent"),
        ),
        (
            "python reference, a process per case",
            format!(
                "{} {}",
                python.display(),
                root.join("harness/python/loop.py").display()
            ),
            all.to_owned(),
        ),
    ];
    println!("{cases} generated cases, seed 7, 2 jobs\n");
    for (name, command, supports) in controllers {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let controller = Controller::command(name, command, capabilities(&supports));
        let outcome = fuzz(
            &options(controller, cases, 7, 2, dir.path().join("found")),
            &mut |_| {},
        )
        .await;
        match outcome {
            Ok(FuzzOutcome::Passed { cases, elapsed }) => println!(
                "{name:<38} {:>6.1} cases/s ({cases} cases in {:.1} s)",
                cases as f64 / elapsed.as_secs_f64(),
                elapsed.as_secs_f64()
            ),
            other => println!("{name:<38} did not pass: {other:?}"),
        }
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mutant = Controller::command(
        "first-call-only",
        format!(
            "{} {}",
            python.display(),
            root.join("harness/mutants/first-call-only.py").display()
        ),
        capabilities("previous_response_id,stateless,persistent"),
    );
    match fuzz(
        &options(mutant, cases, 1, 1, dir.path().join("found")),
        &mut |_| {},
    )
    .await
    {
        Ok(FuzzOutcome::Failed {
            index,
            elapsed,
            shrink_steps,
            shrink_elapsed,
            ..
        }) => println!(
            "\nfirst-call-only (persistent): found at case {index} after {:.1} s, shrunk in {shrink_steps} steps in {:.1} s ({:.0} ms a step)",
            elapsed.as_secs_f64(),
            shrink_elapsed.as_secs_f64(),
            shrink_elapsed.as_secs_f64() * 1000.0 / shrink_steps.max(1) as f64
        ),
        other => println!("\nfirst-call-only was not found: {other:?}"),
    }
}
