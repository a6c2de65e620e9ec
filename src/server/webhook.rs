//! Webhooks for background responses, as OpenAI sends them: a controller registers one
//! receiving endpoint (`POST {LOOPCHECK_TOOLS_URL}/webhooks`, the fake's stand-in for the
//! project's dashboard) and gets its signing secret; from then on a background response
//! ends after a short time instead of after a number of polls, and its terminal event
//! (`response.completed`, `.failed`, `.cancelled`, `.incomplete`) is POSTed to the
//! endpoint, signed the Standard Webhooks way the official SDKs verify
//! (`client.webhooks.unwrap`). One forged event (a wrong key, a response id never
//! issued) goes first, so the oracle can tell a receiver that acts on what it did not
//! verify.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use super::recorder::{Recorder, lock};
use crate::transcript::WebhookDelivery;
use crate::wire::{ApiError, IdGen};

/// How long a background response runs once an endpoint is registered.
pub(crate) const RUN_TIME: Duration = Duration::from_millis(300);
/// When the forged event goes, after the create: well before the genuine one.
const FORGED_AFTER: Duration = Duration::from_millis(100);
/// Deliveries of the genuine event while the receiver answers non-2xx (or not at all).
const ATTEMPTS: u32 = 3;
/// The wait before the second attempt; it doubles after each.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// How long one delivery waits for the receiver's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes of a signing secret (base64 after `whsec_`).
const SECRET_BYTES: usize = 24;

/// A session's webhooks: the registered endpoint, and the events the last request
/// scheduled, for the engine to send.
#[derive(Default)]
pub(super) struct Webhooks {
    endpoint: Option<Endpoint>,
    pub outbox: Vec<Scheduled>,
}

/// The registered receiving endpoint.
struct Endpoint {
    pub url: String,
    /// The HMAC-SHA256 key: the bytes `signing_secret` encodes after `whsec_`.
    key: Vec<u8>,
}

/// One event, rendered as it is sent.
#[derive(Debug, Clone)]
struct Event {
    id: String,
    kind: String,
    response_id: String,
    body: String,
}

/// The terminal status a background run will announce: shared with its run, so a
/// cancel before the event goes out announces `response.cancelled`.
pub(super) type Announced = Arc<Mutex<String>>;

/// A background response's events, waiting to be sent.
pub(super) struct Scheduled {
    url: String,
    key: Vec<u8>,
    /// Signed with another key, naming a response that does not exist.
    forged: Event,
    forged_at: Instant,
    /// The genuine event's id, its response and when that was created.
    genuine_id: String,
    response_id: String,
    created_at: u64,
    status: Announced,
    ready_at: Instant,
}

/// When a background run ends, and the status it will announce.
pub(super) struct Timed {
    pub ready_at: Instant,
    pub status: Announced,
}

/// `POST /tools/webhooks {"url": "http://127.0.0.1:PORT/..."}`: registers (or replaces)
/// the endpoint and answers a `webhook_endpoint` with its `signing_secret`, as the real
/// API does when an endpoint is created. Only plain HTTP to 127.0.0.1 is taken: the fake
/// never sends anything off the machine.
impl Webhooks {
    pub(super) fn register(
        &mut self,
        ids: &mut IdGen,
        created_at: u64,
        body: &[u8],
    ) -> Result<Value, ApiError> {
        let body: Value = serde_json::from_slice(body)
            .map_err(|_| ApiError::invalid_type("body", "a JSON object"))?;
        let Some(url) = body.get("url").and_then(Value::as_str) else {
            return Err(ApiError::invalid_type("url", "a string"));
        };
        if !is_loopback_http(url) {
            return Err(ApiError {
                status: 400,
                rule: "webhook",
                message: format!(
                    "Invalid 'url': {url:?}. This server delivers webhooks only to http://127.0.0.1:PORT/..."
                ),
                kind: "invalid_request_error",
                param: Some("url".to_owned()),
                code: Some("invalid_value"),
            });
        }
        let key = crate::secret::random_bytes(SECRET_BYTES);
        let secret = format!("whsec_{}", base64(&key));
        let tail = ids.tail();
        let id = ids.item_id("we", created_at, &tail);
        self.endpoint = Some(Endpoint {
            url: url.to_owned(),
            key,
        });
        Ok(json!({
            "object": "webhook_endpoint",
            "id": id,
            "created_at": created_at,
            "name": body.get("name").and_then(Value::as_str).unwrap_or("loopcheck"),
            "url": url,
            "event_types": ["response.completed", "response.failed", "response.cancelled", "response.incomplete"],
            "signing_secret": secret,
        }))
    }

    /// With an endpoint registered, schedules the events of background response `terminal`
    /// (created now) and returns when it ends; `None` without one.
    pub(super) fn schedule(&mut self, ids: &mut IdGen, terminal: &Value) -> Option<Timed> {
        let endpoint = self.endpoint.as_ref()?;
        let (url, key) = (endpoint.url.clone(), endpoint.key.clone());
        let response_id = terminal["id"].as_str().unwrap_or_default().to_owned();
        let created_at = terminal["created_at"].as_u64().unwrap_or_default();
        let status: Announced = Arc::new(Mutex::new(
            terminal["status"]
                .as_str()
                .unwrap_or("completed")
                .to_owned(),
        ));
        let mut event_id = || {
            let tail = ids.tail();
            ids.item_id("evt", created_at, &tail)
        };
        let (forged_id, genuine_id) = (event_id(), event_id());
        let tail = ids.tail();
        let foreign_response = ids.item_id("resp", created_at, &tail);
        let now = Instant::now();
        self.outbox.push(Scheduled {
            url,
            key,
            forged: Event::new(
                forged_id,
                "response.completed",
                &foreign_response,
                created_at,
            ),
            forged_at: now + FORGED_AFTER,
            genuine_id,
            response_id,
            created_at,
            status: status.clone(),
            ready_at: now + RUN_TIME,
        });
        Some(Timed {
            ready_at: now + RUN_TIME,
            status,
        })
    }
}

/// Whether `url` is `http://127.0.0.1[:port]/...`.
fn is_loopback_http(url: &str) -> bool {
    url.parse::<hyper::Uri>()
        .is_ok_and(|uri| uri.scheme_str() == Some("http") && uri.host() == Some("127.0.0.1"))
}

impl Event {
    fn new(id: String, kind: &str, response_id: &str, created_at: u64) -> Self {
        let body = json!({
            "id": id,
            "object": "event",
            "type": kind,
            "created_at": created_at,
            "data": {"id": response_id},
        })
        .to_string();
        Self {
            id,
            kind: kind.to_owned(),
            response_id: response_id.to_owned(),
            body,
        }
    }
}

/// Sends `scheduled` from a task of the current runtime, recording each attempt; without
/// a runtime (a synchronous test) nothing is sent.
pub(super) fn spawn(scheduled: Scheduled, recorder: Arc<Mutex<Recorder>>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(deliver(scheduled, recorder));
    }
}

async fn deliver(scheduled: Scheduled, recorder: Arc<Mutex<Recorder>>) {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let send = |event: &Event, key: &[u8], attempt: u32| {
        let request = signed(&scheduled.url, event, key);
        let client = client.clone();
        let recorder = recorder.clone();
        let (event, forged) = (event.clone(), key != scheduled.key.as_slice());
        async move {
            let answer = match request {
                Ok(request) => tokio::time::timeout(ANSWER_TIMEOUT, client.request(request))
                    .await
                    .map_err(|_| "no answer in time".to_owned())
                    .and_then(|answered| answered.map_err(|err| err.to_string()))
                    .map(|response| response.status().as_u16()),
                Err(err) => Err(err.to_string()),
            };
            let delivered = answer
                .as_ref()
                .is_ok_and(|status| (200..300).contains(status));
            lock(&recorder).webhook(WebhookDelivery {
                seq: 0,
                at_ms: 0,
                event_id: event.id,
                event_type: event.kind,
                response_id: event.response_id,
                forged,
                attempt,
                status: answer.as_ref().ok().copied(),
                error: answer.err(),
            });
            delivered
        }
    };
    tokio::time::sleep_until(scheduled.forged_at.into()).await;
    // A key no receiver was given: the event fails verification.
    let wrong_key = crate::secret::random_bytes(SECRET_BYTES);
    send(&scheduled.forged, &wrong_key, 1).await;
    tokio::time::sleep_until(scheduled.ready_at.into()).await;
    let status = lock(&scheduled.status).clone();
    let genuine = Event::new(
        scheduled.genuine_id.clone(),
        &format!("response.{status}"),
        &scheduled.response_id,
        scheduled.created_at,
    );
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1..=ATTEMPTS {
        if send(&genuine, &scheduled.key, attempt).await {
            return;
        }
        if attempt < ATTEMPTS {
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
    }
}

/// The POST of `event`, with the Standard Webhooks headers signed with `key`.
fn signed(
    url: &str,
    event: &Event,
    key: &[u8],
) -> Result<hyper::Request<Full<Bytes>>, hyper::http::Error> {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
        .to_string();
    hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &event.id)
        .header("webhook-timestamp", &timestamp)
        .header(
            "webhook-signature",
            format!("v1,{}", signature(key, &event.id, &timestamp, &event.body)),
        )
        .body(Full::new(Bytes::from(event.body.clone())))
}

/// Base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}`: what `webhook-signature` carries
/// after `v1,`, and what the SDKs' `unwrap` recomputes with the secret's key.
fn signature(key: &[u8], id: &str, timestamp: &str, body: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let tag = ring::hmac::sign(&key, format!("{id}.{timestamp}.{body}").as_bytes());
    base64(tag.as_ref())
}

/// Standard base64 with padding (the secret after `whsec_`, the signature).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> shift & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn the_signature_is_the_standard_webhooks_hmac() {
        // The Standard Webhooks specification's example: secret
        // `whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw`, id `msg_p5jXN8AQM9LWM0D4loKWxJek`,
        // timestamp 1614265330, body `{"test": 2432232314}`.
        let key = [
            0x31, 0xf2, 0x90, 0xf6, 0xbf, 0x06, 0x29, 0x8a, 0xab, 0x4f, 0x08, 0xd4, 0x3c, 0x3f,
            0x08, 0x2c, 0xf6, 0x48, 0xa3, 0x62, 0xda, 0x2d, 0xa4, 0xb0,
        ];
        assert_eq!(base64(&key), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        assert_eq!(
            signature(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                "1614265330",
                r#"{"test": 2432232314}"#
            ),
            "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    /// A receiver on 127.0.0.1 that answers each POST with the next of `statuses` (the
    /// last one for ever after), and hands each request's head and body on.
    async fn receiver(
        statuses: Vec<u16>,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            for answered in 0.. {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The whole request: the head, then `content-length` bytes of body.
                loop {
                    let n = socket.read(&mut buf).await.unwrap();
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length: "))
                            .map_or(0, |n| n.trim().parse().unwrap());
                        if body.len() >= length || n == 0 {
                            tx.send(text).unwrap();
                            break;
                        }
                    }
                }
                let status = statuses[answered.min(statuses.len() - 1)];
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                socket.write_all(reply.as_bytes()).await.unwrap();
            }
        });
        (url, rx)
    }

    fn request(method: &str, path: &str, body: Value, key: &str) -> crate::server::EngineRequest {
        let mut headers = crate::server::HeaderMap::new();
        headers.insert("authorization", format!("Bearer {key}").parse().unwrap());
        crate::server::EngineRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            query: None,
            headers,
            body: Bytes::from(body.to_string()),
        }
    }

    #[tokio::test]
    async fn the_forged_event_goes_first_and_the_genuine_one_is_sent_again_until_taken() {
        use crate::scenario::{StateMode, catalogue_scenario};
        let (url, mut received) = receiver(vec![400, 500, 200]).await;
        let session = crate::server::Session::new(
            Arc::new(catalogue_scenario("background/01-polling")),
            StateMode::PreviousResponseId,
        );
        let key = session.api_key().to_owned();
        let reply = session.handle(request(
            "POST",
            "/tools/webhooks",
            json!({ "url": url }),
            &key,
        ));
        let crate::server::ReplyBody::Json(endpoint) = reply.body else {
            panic!("a JSON answer")
        };
        let endpoint: Value = serde_json::from_slice(&endpoint).unwrap();
        assert_eq!(reply.status, 200, "{endpoint}");
        let task = crate::scenario::task_json(session.scenario(), session.state());
        let body = json!({
            "model": task["model"], "tools": task["tools"], "input": task["input"],
            "background": true,
        });
        let created = session.handle(request("POST", "/v1/responses", body, &key));
        assert_eq!(created.status, 200);
        tokio::time::sleep(RUN_TIME + FIRST_BACKOFF * 3 / 2).await;
        let forged = received.recv().await.unwrap();
        let genuine = received.recv().await.unwrap();
        assert!(forged.contains("webhook-signature: v1,"), "{forged}");
        assert!(
            genuine.contains(r#""type":"response.completed""#),
            "{genuine}"
        );
        // The genuine event verifies with the secret the endpoint was given.
        let header = |text: &str, name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                .unwrap()
                .trim()
                .to_owned()
        };
        let secret = endpoint["signing_secret"].as_str().unwrap();
        let registered = session_key(secret);
        let (_, event) = genuine.split_once("\r\n\r\n").unwrap();
        let expected = signature(
            &registered,
            &header(&genuine, "webhook-id"),
            &header(&genuine, "webhook-timestamp"),
            event,
        );
        assert_eq!(
            header(&genuine, "webhook-signature"),
            format!("v1,{expected}")
        );
        let (_, forged_event) = forged.split_once("\r\n\r\n").unwrap();
        let forged_expected = signature(
            &registered,
            &header(&forged, "webhook-id"),
            &header(&forged, "webhook-timestamp"),
            forged_event,
        );
        assert_ne!(
            header(&forged, "webhook-signature"),
            format!("v1,{forged_expected}")
        );
        let deliveries = session.transcript().webhooks;
        let summary: Vec<_> = deliveries
            .iter()
            .map(|d| (d.forged, d.attempt, d.status))
            .collect();
        assert_eq!(
            summary,
            [
                (true, 1, Some(400)),
                (false, 1, Some(500)),
                (false, 2, Some(200))
            ]
        );
    }

    #[tokio::test]
    async fn a_run_cancelled_before_its_end_announces_response_cancelled() {
        use crate::scenario::{StateMode, catalogue_scenario};
        let (url, mut received) = receiver(vec![200]).await;
        let session = crate::server::Session::new(
            Arc::new(catalogue_scenario("background/01-polling")),
            StateMode::PreviousResponseId,
        );
        let key = session.api_key().to_owned();
        let registration = request("POST", "/tools/webhooks", json!({ "url": url }), &key);
        assert_eq!(session.handle(registration).status, 200);
        let task = crate::scenario::task_json(session.scenario(), session.state());
        let body = json!({
            "model": task["model"], "tools": task["tools"], "input": task["input"],
            "background": true,
        });
        let created = session.handle(request("POST", "/v1/responses", body, &key));
        let crate::server::ReplyBody::Json(queued) = created.body else {
            panic!("a JSON answer")
        };
        let queued: Value = serde_json::from_slice(&queued).unwrap();
        let cancel = format!("/v1/responses/{}/cancel", queued["id"].as_str().unwrap());
        assert_eq!(
            session
                .handle(request("POST", &cancel, json!({}), &key))
                .status,
            200
        );
        let _forged = received.recv().await.unwrap();
        let genuine = received.recv().await.unwrap();
        assert!(
            genuine.contains(r#""type":"response.cancelled""#),
            "{genuine}"
        );
    }

    /// The key a `whsec_` secret encodes.
    fn session_key(secret: &str) -> Vec<u8> {
        let text = secret.strip_prefix("whsec_").unwrap();
        const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let bits: Vec<u8> = text
            .trim_end_matches('=')
            .chars()
            .map(|c| ALPHABET.find(c).unwrap() as u8)
            .collect();
        bits.chunks(4)
            .flat_map(|c| {
                let n = c.iter().fold(0u32, |n, b| n << 6 | u32::from(*b)) << (6 * (4 - c.len()));
                let bytes = n.to_be_bytes();
                bytes[1..c.len()].to_vec()
            })
            .collect()
    }

    #[test]
    fn only_plain_http_to_127_0_0_1_is_taken() {
        assert!(is_loopback_http("http://127.0.0.1:8123/hook"));
        assert!(is_loopback_http("http://127.0.0.1/"));
        for refused in [
            "https://127.0.0.1:8123/hook",
            "http://localhost:8123/hook",
            "http://10.0.0.1:8123/hook",
            "http://127.0.0.1.example.com/hook",
            "not a url",
        ] {
            assert!(!is_loopback_http(refused), "{refused}");
        }
    }
}
