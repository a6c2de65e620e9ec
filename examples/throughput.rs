//! Throughput of the fake Responses server, as a ratio against a bare hyper server that
//! answers every request with the same bytes (DESIGN.md: "the bar is the speed of a bare
//! hyper server returning the same bytes"), for a plain JSON create and for a streamed
//! one. Both servers run side by side in this process, driven by the same keep-alive
//! client load in alternating rounds, so the ratio of the medians holds on a noisy
//! shared machine where a raw requests-per-second figure does not.
//!
//! - `json`: a stateless create answered with a reasoning item and a call.
//! - `sse`: the same create with `"stream": true`; the fake writes the events as a
//!   chunked body.
//!
//! In these two, every request is served the scenario's one endless turn again: from the
//! second serving on, the fake fills it in from its compiled form. `json, served once` and
//! `sse, served once` write the same turn out once per request instead, so that each
//! request is its turn's first serving, written and planned.
//!
//! The baseline answers what the fake answered to a first request: the same headers
//! (content type, request id, version, processing time) and body, framed the same way
//! (with a length for `json`, chunked for `sse`), so the two differ only in the work
//! behind the bytes.
//!
//! Every fake request is fully validated, served and recorded. Each case also measures the
//! engine alone (the same requests handed to a session without HTTP): the fake's own
//! work, set against what 0.8x of bare hyper would leave for it. Each fake round gets a
//! fresh session (a real session is bounded; one round's transcript holds every exchange
//! of the round), and the peak memory of the process is printed at the end.
//!
//! Run: `cargo run --release --example throughput [REQUESTS] [CONCURRENCY]` (requests
//! per case and per side, split over the rounds; default 30000 over 16 connections).
//!
//! `throughput --only fake|bare json|sse|json-once|sse-once REQUESTS` runs one side's
//! load alone, for
//! callgrind: the ratio of the two sides' instruction counts is the same ratio in
//! instructions, which a noisy machine does not move.
//!
//! What each piece of speed code gives, with the same build: `LOOPCHECK_PLAIN_ALLOC=1`
//! runs the process on the system allocator instead of mimalloc, `LOOPCHECK_PLAIN_TURNS=1`
//! has the fake write and plan every turn at every serving instead of filling in
//! compiled ones.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use loopcheck::scenario::{Scenario, StateMode};
use loopcheck::server::{EngineRequest, HeaderMap, RunningServer, Session};
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[path = "support/bench_scenario.rs"]
mod bench_scenario;
use bench_scenario::{bench_scenario, served_once};

/// The allocator the `loopcheck` binary uses, so the bench measures what ships.
#[global_allocator]
static ALLOCATOR: loopcheck::allocator::Allocator = loopcheck::allocator::Allocator;

/// Rounds per side and case; odd, for a true median. Many short rounds keep each
/// round's session (and its transcript, tens of KB per streamed exchange) small.
const ROUNDS: usize = 15;

/// Requests per case and side when the command line gives none.
const DEFAULT_REQUESTS: usize = 30_000;

/// What the fake server answered, to be answered again by the bare server: the same
/// status line, headers and body, framed the same way (whole with a length, or chunked).
#[derive(Clone)]
struct Sample {
    headers: hyper::HeaderMap,
    body: Bytes,
    chunked: bool,
}

impl Sample {
    /// Headers hyper writes itself (`date`, the framing) are left to the bare server.
    fn of(headers: &reqwest::header::HeaderMap, body: Bytes) -> Self {
        let chunked = headers
            .get("transfer-encoding")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
        let mut kept = hyper::HeaderMap::new();
        for (name, value) in headers {
            if !matches!(
                name.as_str(),
                "date" | "content-length" | "transfer-encoding" | "connection"
            ) {
                kept.append(name.clone(), value.clone());
            }
        }
        Self {
            headers: kept,
            body,
            chunked,
        }
    }

    fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
    }

    fn response(&self) -> Response<BareBody> {
        let mut response = Response::new(BareBody {
            body: Some(self.body.clone()),
            chunked: self.chunked,
        });
        *response.headers_mut() = self.headers.clone();
        response
    }
}

/// A body of one frame; without a length when `chunked`, as the fake's streams go out.
struct BareBody {
    body: Option<Bytes>,
    chunked: bool,
}

impl http_body::Body for BareBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.body.take().map(|b| Ok(http_body::Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        !self.chunked && self.body.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match (&self.body, self.chunked) {
            (Some(body), false) => http_body::SizeHint::with_exact(body.len() as u64),
            (None, false) => http_body::SizeHint::with_exact(0),
            (_, true) => http_body::SizeHint::default(),
        }
    }
}

/// A bare hyper server answering `sample` to everything.
async fn bare_server(sample: Sample) -> std::net::SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let sample = Arc::new(sample);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let sample = sample.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                    let response = sample.response();
                    async move { Ok::<_, Infallible>(response) }
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

/// Stops a round's fake server and frees its session. The connections let go of the
/// session as they close; its transcript is freed here, before the next round, not
/// during it.
async fn stop_and_free(server: RunningServer, session: Arc<Session>) {
    server.shutdown().await;
    while Arc::strong_count(&session) > 1 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
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
        let mut headers = HeaderMap::new();
        let key = format!("Bearer {}", session.api_key());
        headers.insert("authorization", key.parse().expect("a header value"));
        headers.insert("content-type", "application/json".parse().expect("a value"));
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

/// What the fake server answers to a first `request`: the bare server's answer.
async fn sample(scenario: &Arc<Scenario>, request: &Value) -> Sample {
    let (server, session) = fake_server(scenario).await;
    let sample = reqwest::Client::new()
        .post(format!("{}/v1/responses", server.base_url()))
        .bearer_auth(session.api_key())
        .json(request)
        .send()
        .await
        .expect("sample");
    let headers = sample.headers().clone();
    let sample = Sample::of(&headers, sample.bytes().await.expect("sample body"));
    server.shutdown().await;
    sample
}

/// One side's load alone, for an instruction count under callgrind or a profile: the same
/// setup on both sides (a session, the sample), then `requests` requests to the fake
/// server or to the bare one, in rounds the size of the timed bench's own with a fresh
/// fake session each (a longer session grows a transcript the timed rounds never keep,
/// and a profile of it shows the pages it touches first).
async fn one_side(scenario: &Arc<Scenario>, side: &str, request: Value, requests: usize) {
    let sample = sample(scenario, &request).await;
    let bare_url = match side {
        "fake" => None,
        "bare" => Some(format!("http://{}/v1/responses", bare_server(sample).await)),
        other => panic!("--only takes fake or bare, not {other:?}"),
    };
    let round = DEFAULT_REQUESTS / ROUNDS;
    for start in (0..requests).step_by(round) {
        let (server, session) = fake_server(scenario).await;
        let url = bare_url
            .clone()
            .unwrap_or_else(|| format!("{}/v1/responses", server.base_url()));
        let share = round.min(requests - start);
        load(&url, session.api_key(), &request, share, 16).await;
        stop_and_free(server, session).await;
    }
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
    let sample = sample(scenario, &request).await;
    let bare_url = format!("http://{}/v1/responses", bare_server(sample.clone()).await);

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
        stop_and_free(server, session).await;
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
    println!(
        "{name}: {} bytes as {}{}, {} headers",
        sample.body.len(),
        sample.content_type(),
        if sample.chunked { ", chunked" } else { "" },
        sample.headers.len()
    );
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
    ALLOCATOR.keep_freed_memory();
    let mut args = std::env::args().skip(1).peekable();
    let only = args.next_if_eq("--only").map(|_| {
        let side = args.next().expect("--only fake|bare json|sse");
        (side, args.next().expect("--only fake|bare json|sse"))
    });
    let requests: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_REQUESTS);
    let concurrency: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(16);
    let again = bench_scenario();
    // A turn for every request a session is sent, in the timed rounds and alone.
    let once = served_once((requests / ROUNDS).max(DEFAULT_REQUESTS / ROUNDS) + 1);
    let create = json!({"model": "gpt-5", "store": false, "input": "hi", "tools": []});
    let mut streamed = create.clone();
    streamed["stream"] = json!(true);
    if let Some((side, case)) = only {
        let (scenario, request) = match case.as_str() {
            "json" => (&again, create),
            "sse" => (&again, streamed),
            "json-once" => (&once, create),
            "sse-once" => (&once, streamed),
            other => panic!("--only takes json, sse, json-once or sse-once, not {other:?}"),
        };
        return one_side(scenario, &side, request, requests).await;
    }
    println!(
        "{requests} requests per case and side over {concurrency} connections, {ROUNDS} alternating rounds (medians)"
    );
    measure(&again, "json", create.clone(), requests, concurrency).await;
    measure(&again, "sse", streamed.clone(), requests, concurrency).await;
    measure(&once, "json, served once", create, requests, concurrency).await;
    measure(&once, "sse, served once", streamed, requests, concurrency).await;
    if let Some(mb) = peak_memory_mb() {
        println!("peak memory: {mb} MB");
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
}
