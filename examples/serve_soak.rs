//! A soak of `loopcheck serve`: round after round of sessions, a hundred at a time, each
//! driven by the Rust reference in process and judged over HTTP; most are deleted after
//! their verdict, some are abandoned for the idle expiry to collect. The resident memory
//! after each round, as a ratio to the first round's, shows whether memory stays
//! bounded: it should level off, not grow with the sessions served.
//!
//! Run: `cargo run --release --example serve_soak [ROUNDS] [SESSIONS_PER_ROUND]`
//! (default 10 rounds of 500).

use std::time::{Duration, Instant};

use loopcheck::scenario::catalogue;
use loopcheck::serve::{Limits, ServeOptions, SessionServer};

#[path = "support/serve_client.rs"]
mod serve_client;

/// The allocator the `loopcheck` binary uses, so the bench measures what ships.
#[global_allocator]
static ALLOCATOR: loopcheck::allocator::Allocator = loopcheck::allocator::Allocator;

/// Areas whose cases finish quickly (no scripted waits), so the soak measures sessions,
/// not sleeps.
const QUICK_AREAS: &[&str] = &["authz", "correlation", "dispatch", "reasoning", "state"];

/// Every how many sessions one is abandoned instead of deleted.
const ABANDON_EVERY: usize = 10;

fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

async fn session(client: reqwest::Client, url: String, case: String, state: String, keep: bool) {
    let finished = serve_client::run_reference(&client, &url, &case, &state).await;
    assert_eq!(
        finished.verdict["verdict"], "pass",
        "{case} {state}: {}",
        finished.verdict
    );
    if !keep {
        serve_client::delete(&client, &finished).await;
    }
}

#[tokio::main]
async fn main() {
    ALLOCATOR.keep_freed_memory();
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10);
    let per_round: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(500);
    let cases = catalogue().expect("the catalogue loads");
    let runs: Vec<(String, String)> = cases
        .iter()
        .filter(|case| QUICK_AREAS.contains(&case.scenario.area()))
        .flat_map(|case| {
            case.scenario
                .states
                .iter()
                .map(|state| (case.scenario.id.clone(), state.as_str().to_owned()))
        })
        .collect();
    let idle = Duration::from_secs(1);
    let server = SessionServer::start(
        cases,
        ServeOptions {
            limits: Limits {
                idle,
                ..Limits::default()
            },
            ..ServeOptions::default()
        },
    )
    .await
    .expect("serve");
    let client = reqwest::Client::new();
    let mut first = None;
    println!("{per_round} sessions a round, 100 at a time; every {ABANDON_EVERY}th abandoned");
    for round in 1..=rounds {
        let started = Instant::now();
        for batch in (0..per_round).collect::<Vec<_>>().chunks(100) {
            let tasks: Vec<_> = batch
                .iter()
                .map(|n| {
                    let (case, state) = runs[(round * per_round + n) % runs.len()].clone();
                    let keep = n % ABANDON_EVERY == 0;
                    tokio::spawn(session(client.clone(), server.url(), case, state, keep))
                })
                .collect();
            for task in tasks {
                task.await.expect("a session");
            }
        }
        let elapsed = started.elapsed();
        // Past the idle limit, the abandoned sessions of this round are collected.
        tokio::time::sleep(idle * 2).await;
        let resident = resident_kib();
        let baseline = *first.get_or_insert(resident);
        println!(
            "round {round:>3}: {:>6.0} sessions/s, {} alive after expiry, resident {:>7} KiB ({:.2}x of round 1)",
            per_round as f64 / elapsed.as_secs_f64(),
            server.registry().live(),
            resident,
            resident as f64 / baseline as f64
        );
    }
    server.shutdown().await;
}
