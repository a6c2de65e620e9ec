//! The record proxy's added latency per request: the same requests sent directly to an
//! upstream stand-in and through `loopcheck record`'s proxy, side by side, for a JSON
//! answer and for a streamed one (whose events the proxy splits and times while passing
//! them on). Reports the median and 90th percentile of each, and the median added by
//! the proxy. The stand-in answers at once, so what is measured is the proxy's own work.
//!
//! Run: `cargo run --release --example proxy_latency [REQUESTS]`

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use loopcheck::record::proxy::{Proxy, Upstream};
use loopcheck::scenario::StateMode;
use loopcheck::server::Session;
use serde_json::json;
use tokio::net::TcpListener;

const SCENARIO: &str = r#"
format: 2
id: bench/proxy
summary: The proxy's session; it only records.
level: must
task: {input: "hi", tools: []}
script: [{output: [{message: "unused"}]}]
expect: {outcome: completed}
"#;

/// A response with a reasoning item and a call, as the real API sends one.
fn response() -> serde_json::Value {
    json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5",
        "output": [
            {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAAB".to_owned() + &"x".repeat(400)},
            {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{\"sku\":\"A7\"}", "call_id": "call_1", "name": "get_stock"}],
        "usage": {"input_tokens": 20, "output_tokens": 40, "total_tokens": 60}})
}

/// The same response as a stream of 24 events.
fn stream() -> String {
    let mut events = vec![
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    ];
    for n in 1..23 {
        events.push(json!({"type": "response.function_call_arguments.delta", "sequence_number": n, "item_id": "fc_1", "output_index": 1, "delta": "x"}));
    }
    events
        .push(json!({"type": "response.completed", "sequence_number": 23, "response": response()}));
    events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// A stand-in answering JSON, or the stream when the request asks for one.
async fn upstream() -> std::net::SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let json = Bytes::from(response().to_string());
    let sse = Bytes::from(stream());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let (json, sse) = (json.clone(), sse.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let (json, sse) = (json.clone(), sse.clone());
                    async move {
                        let streamed = request.uri().query().is_some_and(|q| q.contains("stream"));
                        let (body, kind) = if streamed {
                            (sse, "text/event-stream")
                        } else {
                            (json, "application/json")
                        };
                        let mut response = Response::new(Full::new(body));
                        response
                            .headers_mut()
                            .insert("content-type", kind.parse().expect("header"));
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

/// Latencies of `requests` sequential POSTs to `url` over one keep-alive connection,
/// each read to its end.
async fn latencies(client: &reqwest::Client, url: &str, requests: usize) -> Vec<Duration> {
    let body = json!({"model": "gpt-5", "input": "hi"}).to_string();
    let mut out = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        let answer = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("the request is answered");
        let _ = answer.bytes().await.expect("the body is read");
        out.push(started.elapsed());
    }
    out.sort();
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let requests: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let upstream_addr = upstream().await;
    let scenario = loopcheck::scenario::parse(std::path::Path::new("bench.yaml"), SCENARIO)
        .expect("the scenario");
    let session = Arc::new(Session::new(
        Arc::new(scenario),
        StateMode::PreviousResponseId,
    ));
    let proxy = Proxy::new(
        Upstream::new(&format!("http://{upstream_addr}/v1"), None).expect("the upstream"),
        session,
    );
    let server = proxy.start().await.expect("the proxy starts");
    let client = reqwest::Client::new();
    println!("{requests} sequential requests per line, one keep-alive connection each\n");
    println!(
        "{:<10} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "answer", "direct p50", "direct p90", "proxy p50", "proxy p90", "added p50"
    );
    for (name, query) in [("json", ""), ("streamed", "?stream=1")] {
        // Warm both paths, then measure them alternately so load affects both alike.
        let direct_url = format!("http://{upstream_addr}/v1/responses{query}");
        let proxy_url = format!("{}/v1/responses{query}", server.base_url());
        latencies(&client, &direct_url, 100).await;
        latencies(&client, &proxy_url, 100).await;
        let mut direct = Vec::new();
        let mut through = Vec::new();
        for _ in 0..4 {
            direct.extend(latencies(&client, &direct_url, requests / 4).await);
            through.extend(latencies(&client, &proxy_url, requests / 4).await);
        }
        direct.sort();
        through.sort();
        let (d50, p50) = (percentile(&direct, 0.5), percentile(&through, 0.5));
        println!(
            "{name:<10} {:>10.0}µs {:>10.0}µs {:>10.0}µs {:>10.0}µs {:>12.0}µs",
            d50.as_secs_f64() * 1e6,
            percentile(&direct, 0.9).as_secs_f64() * 1e6,
            p50.as_secs_f64() * 1e6,
            percentile(&through, 0.9).as_secs_f64() * 1e6,
            p50.saturating_sub(d50).as_secs_f64() * 1e6
        );
    }
    server.shutdown().await;
}
