//! The fuzzer's honesty, measured: each catalogue mutant whose defect a generated case
//! can reach is fuzzed from a fixed seed within a fixed budget, and the table says
//! whether it was found, after how many generated cases, what the shrunk case fails and
//! how big it is. The mutants are those `tests/integration/fuzzing.rs` hunts; a
//! mutant's header gives its capabilities and the check that must catch it.
//!
//! Run: `cargo run --release --example fuzz_mutants [CASES]` (default 200; needs `.venv`
//! with the Python SDK, or `LOOPCHECK_PYTHON`). About a minute on two cores.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use loopcheck::fuzz::{FuzzOptions, fuzz};
use loopcheck::runner::{Controller, RunOptions};

#[path = "support/mutant_header.rs"]
mod mutant_header;
use mutant_header::{fuzz_reachable, header};

const SEED: u64 = 1;

#[tokio::main]
async fn main() {
    let cases: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("LOOPCHECK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join(".venv/bin/python"));
    let dir = tempfile::tempdir().expect("a temporary folder");
    let started = Instant::now();
    println!("{cases} generated cases at most, seed {SEED}, one job, up to 3 turns\n");
    println!(
        "| mutant | caught by | found? | cases to find | shrunk case fails it | shrunk size |"
    );
    println!("|---|---|---|---:|---|---|");
    let reachable = fuzz_reachable(&root.join("harness/mutants"));
    let mut found = 0;
    for (index, file) in reachable.iter().enumerate() {
        let path = root.join("harness/mutants").join(file);
        let caught_by = header(&path, "caught-by");
        let mut supports: BTreeSet<String> = header(&path, "supports")
            .split(',')
            .map(|w| w.trim().to_owned())
            .collect();
        supports.insert("persistent".to_owned());
        let controller = Controller::command(
            file,
            format!("{} {}", python.display(), path.display()),
            supports,
        );
        let options = FuzzOptions {
            controller,
            in_process: None,
            run: RunOptions {
                jobs: 1,
                seed: SEED,
                timeout: Duration::from_secs(30),
                ..RunOptions::default()
            },
            cases,
            seed: SEED,
            out: dir.path().join(format!("found-{index}")),
            max_turns: 3,
            time: None,
            max_shrink_steps: 256,
            // The first failure group is the one the table reports.
            fail_fast: true,
            prune: false,
            drops: false,
        };
        let outcome = match fuzz(&options, &mut |_| {}).await {
            Ok(outcome) => outcome,
            Err(err) => {
                println!("| {file} | {caught_by} | error: {err} | | | |");
                continue;
            }
        };
        let group = outcome.groups.first();
        match group.and_then(|g| g.shrunk.as_ref().map(|s| (g, s))) {
            Some((group, shrunk)) => {
                found += 1;
                let caught = shrunk.failing.contains(&caught_by);
                println!(
                    "| {file} | {caught_by} | yes | {} | {} | {} |",
                    group.index + 1,
                    if caught { "yes" } else { "no" },
                    shrunk.after
                );
            }
            None => println!("| {file} | {caught_by} | no | - | - | - |"),
        }
    }
    println!(
        "\n{found} of {} found in {:.0} s",
        reachable.len(),
        started.elapsed().as_secs_f64()
    );
}
