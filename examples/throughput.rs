//! Throughput of the fake Responses server, as a ratio against a bare hyper server that
//! answers every request with the same bytes (DESIGN.md: "the bar is the speed of a bare
//! hyper server returning the same bytes"), for a plain JSON create and for a streamed
//! one. Both servers run side by side in this process, driven by the same keep-alive
//! client load in alternating rounds, so the ratio of the medians holds on a noisy
//! shared machine where a raw requests-per-second figure does not.
//!
//! - `json`: a stateless create answered with a reasoning item and a call; the baseline
//!   answers the same bytes as `application/json`.
//! - `sse`: the same create with `"stream": true`; the fake writes the events one by one
//!   as a chunked body, the baseline answers the same event bytes as one whole
//!   `text/event-stream` body.
//!
//! Every fake request is fully validated, served and recorded. Each case also measures the
//! engine alone (the same requests handed to a session without HTTP): the fake's own
//! work, set against what 0.8x of bare hyper would leave for it. Each fake round gets a
//! fresh session (a real session is bounded; one round's transcript holds every exchange
//! of the round), and the peak memory of the process is printed at the end.
//!
//! Run: `cargo run --release --example throughput [REQUESTS] [CONCURRENCY]` (requests
//! per case and per side, split over the rounds; default 30000 over 16 connections).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use loopcheck::scenario::{Scenario, StateMode};
use loopcheck::server::{EngineRequest, RunningServer, Session};
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[path = "support/bench_scenario.rs"]
mod bench_scenario;
use bench_scenario::bench_scenario;

/// The allocator the `loopcheck` binary uses, so the bench measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rounds per side and case; odd, for a true median. Many short rounds keep each
/// round's session (and its transcript, tens of KB per streamed exchange) small.
const ROUNDS: usize = 15;

/// A bare hyper server answering `body` as `content_type` to everything.
async fn bare_server(body: Bytes, content_type: String) -> std::net::SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let content_type = hyper::header::HeaderValue::try_from(content_type).expect("header");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let (body, content_type) = (body.clone(), content_type.clone());
            tokio::spawn(async move {
                let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                    let (body, content_type) = (body.clone(), content_type.clone());
                    async move {
                        let mut response = Response::new(Full::new(body));
                        response.headers_mut().insert("content-type", content_type);
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    addr
}

/// Sends `requests` POSTs over `concurrency` keep-alive connections; requests per second.
async fn load(url: &str, key: &str, body: &Value, requests: usize, concurrency: usize) -> f64 {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("client");
    let body = Bytes::from(serde_json::to_vec(body).expect("body"));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, url, key, body) =
            (client.clone(), url.to_owned(), key.to_owned(), body.clone());
        let share = requests / concurrency + usize::from(worker < requests % concurrency);
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                let answer = client
                    .post(&url)
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("request");
                assert!(answer.status().is_success(), "status {}", answer.status());
                let _ = answer.bytes().await.expect("body");
            }
        }));
    }
    for task in tasks {
        task.await.expect("load task");
    }
    requests as f64 / started.elapsed().as_secs_f64()
}

/// CPU time this process has used so far (client and both servers).
fn cpu_time() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// Peak resident memory of this process, from `/proc/self/status`.
fn peak_memory_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// One side's rounds: requests per second and CPU microseconds per request.
#[derive(Default)]
struct Rounds {
    rates: Vec<f64>,
    cpu_us: Vec<f64>,
}

impl Rounds {
    fn median(values: &[f64]) -> f64 {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }
}

/// A fake server on a fresh session of the bench scenario.
async fn fake_server(scenario: &Arc<Scenario>) -> (RunningServer, Arc<Session>) {
    let session = Arc::new(Session::new(scenario.clone(), StateMode::Stateless));
    let server = RunningServer::start(session.clone())
        .await
        .expect("fake server");
    (server, session)
}

/// CPU microseconds per request of the engine alone (no HTTP, no client): the fake's own
/// work, on fresh sessions of `per_session` requests each, as the HTTP rounds have.
fn engine_alone(
    scenario: &Arc<Scenario>,
    request: &Value,
    requests: usize,
    per_session: usize,
) -> f64 {
    let body = serde_json::to_vec(request).expect("body");
    let started = cpu_time();
    let (mut done, mut freeing) = (0, Duration::ZERO);
    while done < requests {
        let session = Session::new(scenario.clone(), StateMode::Stateless);
        let headers = vec![
            (
                "authorization".to_owned(),
                format!("Bearer {}", session.api_key()),
            ),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        for _ in 0..per_session.min(requests - done) {
            let reply = session.handle(EngineRequest {
                method: "POST".to_owned(),
                path: "/v1/responses".to_owned(),
                query: None,
                headers: headers.clone(),
                body: body.clone().into(),
            });
            assert_eq!(reply.status, 200);
            done += 1;
        }
        // The transcript is freed outside the measure, as in the HTTP rounds.
        let before = cpu_time();
        drop(session);
        freeing += cpu_time() - before;
    }
    (cpu_time() - started - freeing).as_secs_f64() * 1e6 / requests as f64
}

/// Measures one case: fake against bare hyper answering the fake's own bytes.
async fn measure(
    scenario: &Arc<Scenario>,
    name: &str,
    request: Value,
    requests: usize,
    concurrency: usize,
) {
    // The baseline answers with the bytes and content type the fake server really sends.
    let (server, session) = fake_server(scenario).await;
    let sample = reqwest::Client::new()
        .post(format!("{}/v1/responses", server.base_url()))
        .bearer_auth(session.api_key())
        .json(&request)
        .send()
        .await
        .expect("sample");
    let content_type = sample
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .expect("a content type")
        .to_owned();
    let sample = sample.bytes().await.expect("sample body");
    server.shutdown().await;
    let bare_url = format!(
        "http://{}/v1/responses",
        bare_server(sample.clone(), content_type.clone()).await
    );

    let per_round = requests / ROUNDS;
    let (mut fake, mut bare) = (Rounds::default(), Rounds::default());
    // The first round of each side warms up and is not counted.
    for round in 0..=ROUNDS {
        let (server, session) = fake_server(scenario).await;
        let fake_url = format!("{}/v1/responses", server.base_url());
        let cpu = cpu_time();
        let rate = load(
            &fake_url,
            session.api_key(),
            &request,
            per_round,
            concurrency,
        )
        .await;
        let cpu = (cpu_time() - cpu).as_secs_f64() * 1e6 / per_round as f64;
        server.shutdown().await;
        // The connections let go of the session as they close; its transcript is freed
        // here, before the next round, not during it.
        while Arc::strong_count(&session) > 1 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        drop(session);
        if round > 0 {
            fake.rates.push(rate);
            fake.cpu_us.push(cpu);
        }

        let cpu = cpu_time();
        let rate = load(&bare_url, "k", &request, per_round, concurrency).await;
        let cpu = (cpu_time() - cpu).as_secs_f64() * 1e6 / per_round as f64;
        if round > 0 {
            bare.rates.push(rate);
            bare.cpu_us.push(cpu);
        }
    }
    let (fake_rate, bare_rate) = (Rounds::median(&fake.rates), Rounds::median(&bare.rates));
    let spread = |rounds: &Rounds, baseline: &Rounds| {
        let ratios: Vec<f64> = rounds
            .rates
            .iter()
            .zip(&baseline.rates)
            .map(|(f, b)| f / b)
            .collect();
        let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratios.iter().copied().fold(0.0, f64::max);
        format!("{low:.2}..{high:.2}")
    };
    println!("{name}: {} bytes as {content_type}", sample.len());
    println!(
        "  bare hyper, same bytes: {bare_rate:>8.0} req/s, {:>5.1} us CPU/req",
        Rounds::median(&bare.cpu_us)
    );
    println!(
        "  loopcheck fake server:  {fake_rate:>8.0} req/s, {:>5.1} us CPU/req",
        Rounds::median(&fake.cpu_us)
    );
    println!(
        "  ratio: {:.2}x of bare hyper (rounds {})",
        fake_rate / bare_rate,
        spread(&fake, &bare)
    );
    // At 0.8x the fake may spend a quarter of a bare request's CPU on its own work.
    let bare_cpu = Rounds::median(&bare.cpu_us);
    println!(
        "  the engine alone (no HTTP): {:>5.1} us CPU/req; 0.8x would leave it {:.1} us",
        engine_alone(scenario, &request, per_round * 3, per_round),
        bare_cpu * 0.25
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(30_000);
    let concurrency: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(16);
    let scenario = bench_scenario();
    println!(
        "{requests} requests per case and side over {concurrency} connections, {ROUNDS} alternating rounds (medians)"
    );
    let create = json!({"model": "gpt-5", "store": false, "input": "hi", "tools": []});
    let mut streamed = create.clone();
    streamed["stream"] = json!(true);
    measure(&scenario, "json", create, requests, concurrency).await;
    measure(&scenario, "sse", streamed, requests, concurrency).await;
    if let Some(mb) = peak_memory_mb() {
        println!("peak memory: {mb} MB");
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
}
