//! How fast `loopcheck fuzz` goes, side by side in one run on one seed: generated cases
//! per second against the Rust reference in this process (`loopcheck::fuzz` driving
//! `run_in_process`), the Python reference kept running (persistent) and the Node starter
//! of `loopcheck init node` (persistent), each on one job and on two, with the ratio.
//! Shrinking is off (a failure is counted, not shrunk): the rates are of generated
//! cases. Read the ratios, not the absolute numbers, on a quiet machine.
//!
//! Run: `cargo build --release --bin loopcheck && cargo run --release --example fuzz_speed [CASES]`
//! (needs `.venv` with the Python SDK and `harness/node/node_modules`, as the tests do).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use loopcheck::fuzz::{FuzzOptions, InProcess, fuzz};
use loopcheck::runner::{Controller, RunOptions};

const SEED: u64 = 7;

fn capabilities(words: &str) -> BTreeSet<String> {
    words.split(',').map(str::to_owned).collect()
}

fn options(controller: Controller, cases: usize, jobs: usize, out: PathBuf) -> FuzzOptions {
    FuzzOptions {
        controller,
        in_process: None,
        run: RunOptions {
            jobs,
            seed: SEED,
            timeout: Duration::from_secs(30),
            ..RunOptions::default()
        },
        cases,
        seed: SEED,
        out,
        max_turns: 4,
        time: None,
        max_shrink_steps: 0,
        fail_fast: false,
        prune: false,
        drops: false,
    }
}

/// Cases per second of one fuzz run, and the failure groups it met.
async fn rate(options: &FuzzOptions) -> (f64, usize) {
    match fuzz(options, &mut |_| {}).await {
        Ok(outcome) => (
            outcome.cases as f64 / outcome.elapsed.as_secs_f64().max(1e-6),
            outcome.groups.len(),
        ),
        Err(err) => {
            eprintln!("{}: {err}", options.controller.name);
            (0.0, 0)
        }
    }
}

/// The Node starter `loopcheck init node` writes, in `dir`, on the Node reference's
/// packages.
fn node_starter(root: &Path, dir: &Path) -> String {
    let starter = dir.join("loop.mjs");
    std::fs::copy(root.join("templates/init/loop.mjs"), &starter).expect("the starter copies");
    std::os::unix::fs::symlink(
        root.join("harness/node/node_modules"),
        dir.join("node_modules"),
    )
    .expect("node_modules links");
    format!("node {}", starter.display())
}

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
    let all = "previous_response_id,stateless,conversation,stream,programmatic,approvals";
    let rust = Controller::command(
        "rust reference, in process",
        "(in process)".to_owned(),
        capabilities(all),
    );
    let python_reference = Controller::command(
        "python reference, persistent",
        format!(
            "{} {}",
            python.display(),
            root.join("harness/python/loop.py").display()
        ),
        capabilities(&format!("{all},persistent")),
    );
    let node = Controller::command(
        "node starter, persistent",
        node_starter(&root, dir.path()),
        capabilities("previous_response_id,stateless,persistent"),
    );
    println!("{cases} generated cases, seed {SEED}, shrinking off\n");
    println!(
        "{:<30} {:>12} {:>12} {:>8}  failure groups",
        "controller", "1 job", "2 jobs", "ratio"
    );
    for (index, controller) in [rust, python_reference, node].into_iter().enumerate() {
        let in_process = (index == 0).then(InProcess::reference);
        let mut rates = Vec::new();
        let mut groups = 0;
        for jobs in [1, 2] {
            let mut options = options(
                controller.clone(),
                cases,
                jobs,
                dir.path().join(format!("found-{index}-{jobs}")),
            );
            options.in_process = in_process.clone();
            let (rate, met) = rate(&options).await;
            rates.push(rate);
            groups = met;
        }
        println!(
            "{:<30} {:>8.1} c/s {:>8.1} c/s {:>7.2}x  {groups}",
            controller.name,
            rates[0],
            rates[1],
            rates[1] / rates[0].max(1e-6)
        );
    }
}
