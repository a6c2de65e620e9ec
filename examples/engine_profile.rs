//! Feeds one session of the throughput bench's scenario a run of creates, with no HTTP and
//! no client, so that a profiler sees the engine's own work alone. Under callgrind the
//! count of instructions per request is exact and repeatable, where timings on a shared
//! machine are not:
//!
//! ```sh
//! cargo build --release --example engine_profile
//! valgrind --tool=callgrind --toggle-collect='*Session::handle*' \
//!   target/release/examples/engine_profile json 2000
//! ```
//!
//! The `Collected` count divided by the requests is the engine's instructions per create.
//! Run: `engine_profile [json|sse|json-once|sse-once] [REQUESTS]` (default `json 2000`):
//! `-once`, each request is its turn's first serving (see the throughput bench). A
//! streamed reply's events are reported written, as a front end would, so the transcript
//! is complete.
//!
//! `LOOPCHECK_PLAIN_ALLOC=1` and `LOOPCHECK_PLAIN_TURNS=1` profile the engine on the
//! system allocator, and with every turn planned instead of compiled.

use loopcheck::scenario::StateMode;
use loopcheck::server::{EngineRequest, HeaderMap, ReplyBody, Session};
use serde_json::json;

#[path = "support/bench_scenario.rs"]
mod bench_scenario;
use bench_scenario::{bench_scenario, served_once};

/// The allocator the `loopcheck` binary uses, so the profile sees what ships.
#[global_allocator]
static ALLOCATOR: loopcheck::allocator::Allocator = loopcheck::allocator::Allocator;

fn main() {
    ALLOCATOR.keep_freed_memory();
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "json".to_owned());
    let requests: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000);
    let scenario = match kind.strip_suffix("-once") {
        Some(_) => served_once(requests + 1),
        None => bench_scenario(),
    };
    let mut create = json!({"model": "gpt-5", "store": false, "input": "hi", "tools": []});
    if kind.starts_with("sse") {
        create["stream"] = json!(true);
    }
    let body = bytes::Bytes::from(serde_json::to_vec(&create).expect("body"));
    let session = Session::new(scenario, StateMode::Stateless);
    // The headers an HTTP client sends, as the front end hands them over.
    let mut headers = HeaderMap::new();
    let mut header = |name: &'static str, value: String| {
        headers.insert(name, value.parse().expect("a header value"));
    };
    header("authorization", format!("Bearer {}", session.api_key()));
    header("content-type", "application/json".to_owned());
    header("accept", "*/*".to_owned());
    header("host", "127.0.0.1:4000".to_owned());
    header("content-length", body.len().to_string());
    let started = std::time::Instant::now();
    for _ in 0..requests {
        let reply = session.handle(EngineRequest {
            method: "POST".to_owned(),
            path: "/v1/responses".to_owned(),
            query: None,
            headers: headers.clone(),
            body: body.clone(),
        });
        assert_eq!(reply.status, 200, "the bench scenario answers every create");
        if let ReplyBody::Stream {
            events, progress, ..
        } = reply.body
        {
            progress.events_sent(0..events.len(), &events);
            progress.ended();
        }
    }
    let micros = started.elapsed().as_secs_f64() * 1e6 / requests as f64;
    println!("{requests} {kind} creates: {micros:.2} us each (wall time)");
}
