//! Throughput of the fake Responses server, as a ratio against a bare hyper server that
//! answers every request with the same bytes (DESIGN.md: "the bar is the speed of a bare
//! hyper server returning the same bytes"). Both run side by side on this machine, with
//! the same keep-alive client load, so the ratio holds on a noisy shared machine where a
//! raw requests-per-second figure does not.
//!
//! Run: `cargo run --release --example throughput [REQUESTS] [CONCURRENCY]`

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use loopcheck::scenario::{self, StateMode};
use loopcheck::server::{RunningServer, Session};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const SCENARIO: &str = r#"
format: 1
id: bench/endless
summary: A model that answers every request with a reasoning item and a call.
level: must
task:
  input: "hi"
  tools: [get_stock]
script:
  - output:
      - reasoning: {summary: "Looking it up."}
      - call: {name: get_stock, arguments: {sku: A7}}
    endless: true
expect:
  outcome: failed
  reason: max_rounds
"#;

/// A bare hyper server answering `body` to everything.
async fn bare_server(body: Bytes) -> std::net::SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let body = body.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                    let body = body.clone();
                    async move {
                        let mut response = Response::new(Full::new(body));
                        response
                            .headers_mut()
                            .insert("content-type", "application/json".parse().expect("header"));
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
async fn load(url: String, key: String, body: Value, requests: usize, concurrency: usize) -> f64 {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("client");
    let body = Arc::new(serde_json::to_vec(&body).expect("body"));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, url, key, body) = (client.clone(), url.clone(), key.clone(), body.clone());
        let share = requests / concurrency + usize::from(worker < requests % concurrency);
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                let answer = client
                    .post(&url)
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(body.as_ref().clone())
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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let concurrency: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(16);

    let scenario = scenario::parse(std::path::Path::new("bench.yaml"), SCENARIO)
        .expect("the bench scenario parses");
    let session = Arc::new(Session::new(Arc::new(scenario), StateMode::Stateless));
    let server = RunningServer::start(session.clone())
        .await
        .expect("fake server");
    let request = json!({"model": "gpt-5", "store": false, "input": "hi", "tools": []});

    // The baseline answers with the bytes the fake server really sends.
    let sample = reqwest::Client::new()
        .post(format!("{}/v1/responses", server.base_url()))
        .bearer_auth(session.api_key())
        .json(&request)
        .send()
        .await
        .expect("sample")
        .bytes()
        .await
        .expect("sample body");
    let bare = bare_server(sample.clone()).await;

    // Warm both up, then measure alternately so drift on the machine hits both alike.
    let fake_url = format!("{}/v1/responses", server.base_url());
    let bare_url = format!("http://{bare}/v1/responses");
    load(
        fake_url.clone(),
        session.api_key().to_owned(),
        request.clone(),
        2_000,
        concurrency,
    )
    .await;
    load(
        bare_url.clone(),
        "k".to_owned(),
        request.clone(),
        2_000,
        concurrency,
    )
    .await;
    let mut fake = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..3 {
        fake.push(
            load(
                fake_url.clone(),
                session.api_key().to_owned(),
                request.clone(),
                requests / 3,
                concurrency,
            )
            .await,
        );
        baseline.push(
            load(
                bare_url.clone(),
                "k".to_owned(),
                request.clone(),
                requests / 3,
                concurrency,
            )
            .await,
        );
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (fake, baseline) = (median(fake), median(baseline));
    println!(
        "response body: {} bytes; {requests} requests, {concurrency} connections",
        sample.len()
    );
    println!("bare hyper, same bytes: {baseline:>9.0} req/s");
    println!("loopcheck fake server:  {fake:>9.0} req/s");
    println!("ratio: {:.2}x of bare hyper", fake / baseline);
    server.shutdown().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
}
