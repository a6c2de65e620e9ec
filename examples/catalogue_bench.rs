//! What a catalogue run costs, side by side in one process, as ratios: the harness's own
//! overhead per case run (a controller that does nothing), the whole catalogue against
//! the Rust reference with one job and with two, and how much of the reference's wall
//! time the harness accounts for. Rounds alternate so that a noisy machine affects every
//! figure alike; read the ratios, not the absolute numbers.
//!
//! Run: `cargo run --release --example catalogue_bench [ROUNDS]` (default 3).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use loopcheck::runner::{CAPABILITIES, Controller, RunOptions, run_all};
use loopcheck::scenario::catalogue;

#[path = "support/binary.rs"]
mod binary;

fn controller(name: &str, command: String) -> Controller {
    let supports = CAPABILITIES
        .iter()
        .filter(|w| **w != "persistent")
        .map(|w| w.to_string())
        .collect::<BTreeSet<_>>();
    Controller::command(name, command, supports)
}

/// Wall time of one run of the whole catalogue.
async fn wall(
    cases: &[loopcheck::scenario::Case],
    controller: &Controller,
    jobs: usize,
) -> (Duration, usize) {
    let options = RunOptions {
        jobs,
        timeout: Duration::from_secs(30),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let reports = run_all(cases, controller, &options, &mut |_| {}).await;
    (started.elapsed(), reports.len())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let cases = catalogue().expect("the catalogue loads");
    let loopcheck = binary::loopcheck_binary();
    let idle = controller(
        "idle",
        r#"echo '{"status": "failed", "reason": "cancelled"}'"#.to_owned(),
    );
    // As `loopcheck run` starts it.
    let reference = Controller::reference("reference", loopcheck);
    let (mut idle_ms, mut one_ms, mut two_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut runs = 0;
    for round in 1..=rounds {
        let (idle_wall, n) = wall(&cases, &idle, 2).await;
        let (one, _) = wall(&cases, &reference, 1).await;
        let (two, _) = wall(&cases, &reference, 2).await;
        runs = n;
        println!(
            "round {round}: idle {:.2} s, reference --jobs 1 {:.2} s, --jobs 2 {:.2} s",
            idle_wall.as_secs_f64(),
            one.as_secs_f64(),
            two.as_secs_f64()
        );
        idle_ms.push(idle_wall.as_secs_f64() * 1000.0);
        one_ms.push(one.as_secs_f64() * 1000.0);
        two_ms.push(two.as_secs_f64() * 1000.0);
    }
    let (idle, one, two) = (median(idle_ms), median(one_ms), median(two_ms));
    println!("\n{runs} case runs, medians of {rounds} rounds:");
    println!(
        "  harness overhead per case run (idle controller, --jobs 2): {:.1} ms",
        idle * 2.0 / runs as f64
    );
    println!(
        "  catalogue against the Rust reference: {:.2} s with --jobs 2, {:.2} s with --jobs 1",
        two / 1000.0,
        one / 1000.0
    );
    println!(
        "  --jobs 2 against --jobs 1: {:.2}x the wall time",
        two / one
    );
    println!(
        "  the idle harness against the reference run (--jobs 2): {:.2}x",
        idle / two
    );
}
