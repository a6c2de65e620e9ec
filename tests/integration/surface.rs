//! The protocol surface of the fake Responses server over real HTTP: the SSE stream's
//! exact shape, the scripted ways of delivering it badly (hostile
//! delta boundaries, byte-sized chunks, cuts, in-stream errors), errors before any event,
//! transport faults and SDK retries (section 6), background runs, conversations (section
//! 4) and programmatic tool calling (section 2.5). Every test starts its own server from
//! an inline scenario and reads the raw answers with reqwest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loopcheck::scenario::StateMode;
use loopcheck::server::{RunningServer, Session};
use loopcheck::transcript::{FaultRecord, ModelExchange, StreamRecord};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::http::{Api, Reply};
use crate::support::sse::{Streamed, parse_strict as parse_sse};
use crate::support::{case_from_yaml, response_text, serve};

const INVALID: &str = "invalid_request_error";
const STREAM_TERMINALS: &[&str] = &[
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

// ---------------------------------------------------------------------------------------
// Helpers

/// One running fake and the API a controller would call, with the session's key.
struct Fake {
    session: Arc<Session>,
    /// Kept for the fake's life: dropping it stops the server.
    _server: RunningServer,
    api: Api,
}

impl Fake {
    async fn start(yaml: &str, state: StateMode) -> Self {
        let (session, server) = serve(&case_from_yaml(yaml), state).await;
        let api = Api::new(&server.base_url(), Some(session.api_key()));
        Self {
            session,
            _server: server,
            api,
        }
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.api.request(method, path)
    }

    fn post_builder(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.api.post_json(path, body)
    }

    async fn send(&self, builder: reqwest::RequestBuilder) -> Reply {
        self.api.send(builder).await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        self.api.post(path, body).await
    }

    async fn create(&self, body: &Value) -> Reply {
        self.post("/v1/responses", body).await
    }

    async fn get(&self, path: &str) -> Reply {
        self.api.get(path).await
    }

    async fn delete(&self, path: &str) -> Reply {
        self.api.delete(path).await
    }

    /// `body` sent again as an SDK's retry number `count`.
    async fn retry(&self, body: &Value, count: &str) -> Reply {
        self.send(
            self.post_builder("/v1/responses", body)
                .header("x-stainless-retry-count", count.to_owned()),
        )
        .await
    }

    async fn stream(&self, body: &Value) -> Streamed {
        Streamed::read(self.post_builder("/v1/responses", body)).await
    }

    /// Streams `body` to a clean end (200, no broken body); its events, numbered from 0.
    async fn stream_events(&self, body: &Value) -> Vec<Value> {
        let streamed = self.stream(body).await;
        assert_eq!(streamed.status, 200);
        assert!(streamed.error.is_none(), "{:?}", streamed.error);
        let events = streamed.events();
        assert_sequence(&events, 0);
        events
    }

    fn last(&self) -> ModelExchange {
        self.session
            .transcript()
            .model
            .last()
            .cloned()
            .expect("an exchange")
    }

    /// The transcript's stream record of the last exchange, once the stream has ended.
    async fn stream_record(&self) -> StreamRecord {
        for _ in 0..200 {
            let record = self.last().stream.expect("a streamed exchange");
            if record.ended_seq.is_some() {
                return record;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the stream never ended in the transcript");
    }
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().expect("a type"))
        .collect()
}

/// `sequence_number` counts up by one from `first`.
fn assert_sequence(events: &[Value], first: usize) {
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], json!(first + i), "{event}");
    }
}

/// The concatenated `delta` of the events of one type for one output index.
fn deltas(events: &[Value], kind: &str, output_index: usize) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == kind && e["output_index"] == output_index)
        .map(|e| e["delta"].as_str().expect("a delta").to_owned())
        .collect()
}

/// Items are streamed one at a time in `output` order: `added`, the item's own events
/// (all with its `output_index` and `item_id`), `done` with the final item.
fn assert_items_not_interleaved(events: &[Value], response: &Value) {
    let output = response["output"].as_array().expect("output");
    let mut next = 0;
    let mut open: Option<usize> = None;
    for event in events {
        let kind = event["type"].as_str().expect("a type");
        if kind.starts_with("response.") && event.get("response").is_some() {
            assert_eq!(open, None, "{kind} inside an item");
            continue;
        }
        match kind {
            "response.output_item.added" => {
                assert_eq!(open, None, "an item added before the last one was done");
                assert_eq!(event["output_index"], json!(next));
                assert_eq!(event["item"]["id"], output[next]["id"]);
                assert_eq!(event["item"]["type"], output[next]["type"]);
                open = Some(next);
            }
            "response.output_item.done" => {
                assert_eq!(open, Some(next), "done without added");
                assert_eq!(event["output_index"], json!(next));
                assert_eq!(event["item"], output[next], "done item != final item");
                open = None;
                next += 1;
            }
            "error" => {}
            _ => {
                let index = open.unwrap_or_else(|| panic!("{kind} outside any item"));
                assert_eq!(event["output_index"], json!(index), "{event}");
                assert_eq!(event["item_id"], output[index]["id"], "{event}");
            }
        }
    }
    assert_eq!(open, None);
}

/// Every delta event carries an `obfuscation` string of 3 to 16 characters, or (when
/// obfuscation is off) none does; other events never do.
fn assert_obfuscation(events: &[Value], on: bool) {
    for event in events {
        let is_delta = event["type"]
            .as_str()
            .unwrap_or_default()
            .ends_with(".delta");
        match event.get("obfuscation") {
            Some(Value::String(o)) if is_delta && on => {
                assert!((3..=16).contains(&o.len()), "{event}");
                assert!(o.bytes().all(|b| b.is_ascii_alphanumeric()), "{event}");
            }
            None if !(is_delta && on) => {}
            _ => panic!("obfuscation (on: {on}) wrong on {event}"),
        }
    }
}

fn assert_api_error(
    reply: &Reply,
    status: u16,
    kind: &str,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
) {
    assert_eq!(reply.status, status, "{}", reply.text);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(
        reply.json(),
        json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
    );
}

fn is_request_id(id: &str) -> bool {
    id.strip_prefix("req_")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("no string `{key}` in {value}"))
}

// ---------------------------------------------------------------------------------------
// 1. Stream shape

const STREAM_SHAPE: &str = r#"
format: 1
id: surface/stream-shape
summary: Reasoning with a summary, a message and two parallel calls, streamed.
level: must
task:
  input: Weather in Paris and Rome?
  tools: [get_weather]
  stream: true
script:
  - output:
      - reasoning: {summary: Look up both cities.}
      - message: Checking both.
      - call: {name: get_weather, arguments: {city: Paris}}
      - call: {name: get_weather, arguments: {city: Rome}}
expect:
  outcome: completed
  output_text: done
"#;

fn stream_request(extra: Value) -> Value {
    let mut body = json!({
        "model": "gpt-5",
        "input": "Weather in Paris and Rome?",
        "stream": true,
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    body
}

/// The fault record of an answer with `status` and nothing else.
fn fault_status(status: u16) -> FaultRecord {
    FaultRecord {
        status: Some(status),
        retry_after_ms: None,
        should_retry: None,
        dropped: false,
        delay_ms: 0,
    }
}

/// The fault record of a dropped connection.
fn fault_dropped() -> FaultRecord {
    FaultRecord {
        status: None,
        dropped: true,
        ..fault_status(0)
    }
}

#[tokio::test]
async fn stream_has_the_canonical_shape() {
    let fake = Fake::start(STREAM_SHAPE, StateMode::PreviousResponseId).await;
    let streamed = fake.stream(&stream_request(json!({}))).await;
    assert_eq!(streamed.status, 200);
    assert_eq!(
        streamed.content_type.split(';').next().map(str::trim),
        Some("text/event-stream")
    );
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    let events = streamed.events();

    // "Look up both cities." is 20 characters (3 deltas of 8), "Checking both." 14 (2),
    // {"city":"Paris"} 16 (2), {"city":"Rome"} 15 (2).
    let call = |t: &mut Vec<&str>| {
        t.push("response.output_item.added");
        t.extend(["response.function_call_arguments.delta"; 2]);
        t.push("response.function_call_arguments.done");
        t.push("response.output_item.done");
    };
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ];
    call(&mut expected);
    call(&mut expected);
    expected.push("response.completed");
    assert_eq!(types(&events), expected);
    assert_sequence(&events, 0);

    // Exactly one terminal event, the last, whose response is the one served.
    let terminals: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| STREAM_TERMINALS.contains(&e["type"].as_str().unwrap_or_default()))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(terminals, [events.len() - 1]);
    let exchange = fake.last();
    assert_eq!(exchange.turn, Some(0));
    let served = exchange.served().expect("a served response").clone();
    let response = &events[events.len() - 1]["response"];
    assert_eq!(response, &served);
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"].as_array().map(Vec::len), Some(4));
    assert!(response["usage"]["total_tokens"].is_u64());

    // The snapshots before any item.
    for (event, status) in events[..2].iter().zip(["in_progress", "in_progress"]) {
        let snapshot = &event["response"];
        assert_eq!(snapshot["id"], served["id"]);
        assert_eq!(snapshot["object"], "response");
        assert_eq!(snapshot["status"], status);
        assert_eq!(snapshot["usage"], Value::Null);
        assert_eq!(snapshot["output"], json!([]));
        assert_eq!(snapshot["completed_at"], Value::Null);
    }

    assert_items_not_interleaved(&events, &served);
    assert_obfuscation(&events, true);

    // Deltas add up to the final texts and arguments.
    let output = served["output"].as_array().expect("output");
    assert_eq!(
        deltas(&events, "response.reasoning_summary_text.delta", 0),
        ["Look up ", "both cit", "ies."]
    );
    assert_eq!(output[0]["summary"][0]["text"], "Look up both cities.");
    assert_eq!(
        deltas(&events, "response.output_text.delta", 1).concat(),
        "Checking both."
    );
    for (index, arguments) in [(2, r#"{"city":"Paris"}"#), (3, r#"{"city":"Rome"}"#)] {
        assert_eq!(output[index]["arguments"], arguments);
        assert_eq!(
            deltas(&events, "response.function_call_arguments.delta", index).concat(),
            arguments
        );
        let done = events
            .iter()
            .find(|e| {
                e["type"] == "response.function_call_arguments.done" && e["output_index"] == index
            })
            .expect("arguments.done");
        assert_eq!(done["arguments"], arguments);
        let added = events
            .iter()
            .find(|e| e["type"] == "response.output_item.added" && e["output_index"] == index)
            .expect("output_item.added");
        assert_eq!(added["item"]["status"], "in_progress");
        assert_eq!(added["item"]["arguments"], "");
        assert_eq!(added["item"]["call_id"], output[index]["call_id"]);
    }
    // The encrypted content of the added reasoning item is partial; the done one final.
    let added = &events[2]["item"];
    let full = str_of(&output[0], "encrypted_content");
    assert!(full.starts_with(str_of(added, "encrypted_content")));
    assert_ne!(added["encrypted_content"], output[0]["encrypted_content"]);

    // The transcript's stream record.
    let record = fake.stream_record().await;
    assert_eq!(record.planned, events.len());
    assert_eq!(record.sent, events.len());
    assert!(!record.cut);
    assert_eq!(record.last_type.as_deref(), Some("response.completed"));
    assert_eq!(record.call_done_seq.keys().cloned().collect::<Vec<_>>(), {
        let mut ids = vec![
            str_of(&output[2], "call_id").to_owned(),
            str_of(&output[3], "call_id").to_owned(),
        ];
        ids.sort();
        ids
    });
}

#[tokio::test]
async fn stream_without_obfuscation_has_no_obfuscation_key() {
    let fake = Fake::start(STREAM_SHAPE, StateMode::PreviousResponseId).await;
    let body = stream_request(json!({"stream_options": {"include_obfuscation": false}}));
    let events = fake.stream_events(&body).await;
    assert_eq!(events.len(), 28);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "response.function_call_arguments.delta")
    );
    assert_obfuscation(&events, false);
    assert_eq!(events.last().map(|e| &e["response"]), fake.last().served());
}

// ---------------------------------------------------------------------------------------
// 2. Hostile boundaries

const HOSTILE: &str = r#"
format: 1
id: surface/hostile
summary: One call whose arguments split inside a multi-byte string value, one byte a chunk.
level: must
task:
  input: Weather in Zürich?
  tools: [get_weather]
  stream: true
script:
  - output:
      - call: {name: get_weather, arguments: {city: Zürich}}
    stream:
      split_at: [3, 10, 11]
      chunk_bytes: 1
expect:
  outcome: completed
  output_text: done
"#;

#[tokio::test]
async fn hostile_split_and_one_byte_chunks_reassemble() {
    let fake = Fake::start(HOSTILE, StateMode::PreviousResponseId).await;
    let body = json!({"model": "gpt-5", "input": "Weather in Zürich?", "stream": true});
    let streamed = fake.stream(&body).await;
    assert_eq!(streamed.status, 200);
    assert!(streamed.error.is_none(), "{:?}", streamed.error);

    let bytes = streamed.bytes();
    let events = streamed.events();
    // One byte at a time: as many chunks as bytes, far more than events, and some of
    // them half a character.
    assert!(
        streamed.chunks.iter().all(|c| c.len() == 1),
        "chunk sizes: {:?}",
        streamed.chunks.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert_eq!(streamed.chunks.len(), bytes.len());
    assert!(streamed.chunks.len() > events.len());
    assert!(
        streamed
            .chunks
            .iter()
            .any(|c| std::str::from_utf8(c).is_err()),
        "no chunk split a multi-byte character"
    );

    assert_sequence(&events, 0);
    let arguments = r#"{"city":"Zürich"}"#;
    assert_eq!(
        deltas(&events, "response.function_call_arguments.delta", 0),
        [r#"{"c"#, r#"ity":"Z"#, "ü", r#"rich"}"#]
    );
    assert_eq!(
        deltas(&events, "response.function_call_arguments.delta", 0).concat(),
        arguments
    );
    let served = fake.last().served().expect("served").clone();
    assert_eq!(served["output"][0]["arguments"], arguments);
    assert_eq!(events.last().map(|e| &e["response"]), Some(&served));
    assert_items_not_interleaved(&events, &served);
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
}

// ---------------------------------------------------------------------------------------
// 3. Cut

/// 12 events: created, in_progress, added, 6 deltas of 4 ({"order_id":"O-4417"} is 21
/// characters), arguments.done, output_item.done, completed.
const CUT: &str = r#"
format: 1
id: surface/cut
summary: The same call streamed three times, cut in the middle, before the terminal event, and not.
level: must
task:
  input: Where is my order O-4417?
  tools: [get_order]
  stream: true
script:
  - output:
      - call: {name: get_order, arguments: {order_id: O-4417}}
    stream: {delta_size: 4, cut_after: 5}
  - output:
      - call: {name: get_order, arguments: {order_id: O-4417}}
    stream: {delta_size: 4, cut_after: 11}
  - output:
      - call: {name: get_order, arguments: {order_id: O-4417}}
    stream: {delta_size: 4}
expect:
  outcome: failed
  reason: api_error
"#;

#[tokio::test]
async fn cut_stream_delivers_exactly_n_events_then_breaks() {
    let fake = Fake::start(CUT, StateMode::PreviousResponseId).await;
    let body = json!({"model": "gpt-5", "input": "Where is my order O-4417?", "stream": true});

    // The uncut plan, from the third turn, is what the cuts are prefixes of.
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let streamed = fake.stream(&body).await;
        assert_eq!(streamed.status, 200);
        let record = fake.stream_record().await;
        outcomes.push((streamed, record, fake.last()));
    }
    let full = outcomes[2].0.events();
    assert!(outcomes[2].0.error.is_none());
    assert_eq!(full.len(), 12);
    assert_eq!(full[11]["type"], "response.completed");
    let full_types = types(&full);

    for (turn, n) in [(0, 5), (1, 11)] {
        let (streamed, record, exchange) = &outcomes[turn];
        assert_eq!(exchange.turn, Some(turn));
        let error = streamed
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("cut_after {n}: the body ended cleanly"));
        assert!(error.is_body() || error.is_decode(), "{error:?}");
        assert_eq!(error.status(), None);
        // Exactly the first n complete events, nothing of the next.
        let text = streamed.text();
        assert!(
            text.ends_with("\n\n"),
            "cut_after {n}: partial event: {text:?}"
        );
        let events = parse_sse(&text);
        assert_eq!(events.len(), n);
        assert_sequence(&events, 0);
        assert_eq!(types(&events), full_types[..n]);
        assert!(
            !events
                .iter()
                .any(|e| STREAM_TERMINALS.contains(&e["type"].as_str().unwrap_or_default()))
        );
        assert_eq!(
            *record,
            StreamRecord {
                planned: 12,
                sent: n,
                cut: true,
                last_type: Some(full_types[n - 1].to_owned().into()),
                call_done_seq: record.call_done_seq.clone(),
                ended_seq: record.ended_seq,
            }
        );
        // The call's output_item.done (event 10) went out only when the cut came after it.
        assert_eq!(record.call_done_seq.len(), usize::from(n > 10));
    }
    assert_eq!(
        outcomes[1].0.events()[10]["type"],
        "response.output_item.done"
    );
    let record = &outcomes[2].1;
    assert!(!record.cut);
    assert_eq!(record.sent, 12);
}

// ---------------------------------------------------------------------------------------
// 4. Error event

const ERROR_EVENT: &str = r#"
format: 1
id: surface/error-event
summary: A streamed call ended by an in-stream error, nested then flat.
level: must
task:
  input: Where is my order O-4417?
  tools: [get_order]
  stream: true
script:
  - output:
      - call: {name: get_order, arguments: {order_id: O-4417}}
    stream:
      delta_size: 4
      error: {after: 3, shape: nested}
  - output:
      - call: {name: get_order, arguments: {order_id: O-4417}}
    stream:
      delta_size: 4
      error: {after: 5, shape: flat, code: too_many_requests, message: Too Many Requests}
expect:
  outcome: failed
  reason: api_error
"#;

const SERVER_ERROR_MESSAGE: &str = "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.";

#[tokio::test]
async fn error_event_ends_the_stream_in_either_shape() {
    let fake = Fake::start(ERROR_EVENT, StateMode::PreviousResponseId).await;
    let body = json!({"model": "gpt-5", "input": "Where is my order O-4417?", "stream": true});
    let expected = [
        (
            3,
            json!({"type": "error", "sequence_number": 3, "error": {
                "type": "server_error", "code": "server_error",
                "message": SERVER_ERROR_MESSAGE, "param": null,
            }}),
        ),
        (
            5,
            json!({"type": "error", "sequence_number": 5, "code": "too_many_requests",
                "message": "Too Many Requests", "param": null}),
        ),
    ];
    for (turn, (k, error_event)) in expected.into_iter().enumerate() {
        let events = fake.stream_events(&body).await;
        assert_eq!(events.len(), k + 1, "nothing after the error event");
        assert_eq!(events[k], error_event);
        assert_eq!(
            types(&events[..k])
                .iter()
                .filter(|t| STREAM_TERMINALS.contains(t))
                .count(),
            0
        );
        assert_eq!(
            types(&events[..2]),
            ["response.created", "response.in_progress"]
        );
        assert_eq!(events[2]["type"], "response.output_item.added");
        let record = fake.stream_record().await;
        assert_eq!(fake.last().turn, Some(turn));
        assert_eq!(record.planned, k + 1);
        assert_eq!(record.sent, k + 1);
        assert!(!record.cut);
        assert_eq!(record.last_type.as_deref(), Some("error"));
        assert!(record.call_done_seq.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// 5. Incomplete and failed turns, streamed

const ENDINGS: &str = r#"
format: 1
id: surface/endings
summary: An incomplete streamed turn, then a failed one.
level: must
task:
  input: Summarise the report.
  tools: [search_docs]
  stream: true
script:
  - status: incomplete
    incomplete_reason: max_output_tokens
    output:
      - message: {text: "The report says", status: incomplete}
  - status: failed
    error: {code: server_error, message: The model crashed.}
expect:
  outcome: failed
  reason: incomplete
"#;

#[tokio::test]
async fn incomplete_and_failed_turns_end_with_their_terminal_event() {
    let fake = Fake::start(ENDINGS, StateMode::PreviousResponseId).await;
    let body = json!({"model": "gpt-5", "input": "Summarise the report.", "stream": true});

    let events = fake.stream_events(&body).await;
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.incomplete",
        ]
    );
    let served = fake.last().served().expect("served").clone();
    let terminal = &events[9]["response"];
    assert_eq!(terminal, &served);
    assert_eq!(terminal["status"], "incomplete");
    assert_eq!(
        terminal["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(terminal["completed_at"], Value::Null);
    assert_eq!(terminal["error"], Value::Null);
    assert_eq!(terminal["output"][0]["status"], "incomplete");
    assert_eq!(response_text(terminal), "The report says");
    assert_items_not_interleaved(&events, &served);

    let events = fake.stream_events(&body).await;
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.failed"
        ]
    );
    let exchange = fake.last();
    assert_eq!(exchange.turn, Some(1));
    let terminal = &events[2]["response"];
    assert_eq!(Some(terminal), exchange.served());
    assert_eq!(terminal["status"], "failed");
    assert_eq!(
        terminal["error"],
        json!({"code": "server_error", "message": "The model crashed."})
    );
    assert_eq!(terminal["incomplete_details"], Value::Null);
    assert_eq!(terminal["completed_at"], Value::Null);
    assert_eq!(terminal["output"], json!([]));
}

// ---------------------------------------------------------------------------------------
// 6. Validation errors before any event

/// A scenario that answers "Hello?" with `script` (YAML list items, indented by two).
fn hello_scenario(id: &str, summary: &str, script: &str) -> String {
    format!(
        r#"
format: 1
id: surface/{id}
summary: {summary}
level: must
task:
  input: Hello?
  tools: [search_docs]
script:
{script}
expect:
  outcome: completed
"#
    )
}

fn one_message() -> String {
    hello_scenario(
        "one-message",
        "One final answer.",
        "  - output:\n      - message: Hello there.",
    )
}

fn fault_scenario(fault: &str) -> String {
    hello_scenario(
        "fault",
        "One fault, then the answer.",
        &format!("  - faults:\n      - {fault}\n    output:\n      - message: Hello there."),
    )
}

fn two_turns() -> String {
    hello_scenario(
        "two-turns",
        "Two answers in a row.",
        "  - output:\n      - message: First.\n  - output:\n      - message: Second.",
    )
}

fn served_then_fault() -> String {
    hello_scenario(
        "served-then-fault",
        "A first answer, then a 500 on the next turn's first attempt.",
        "  - output:\n      - message: First.\n  - faults:\n      - {status: 500}\n    output:\n      - message: Second.",
    )
}

#[tokio::test]
async fn validation_errors_are_plain_json_even_when_streaming() {
    let fake = Fake::start(&one_message(), StateMode::PreviousResponseId).await;
    let unknown = "resp_0123456789abcdef0123456789abcdef0123456789abcdef";
    let reply = fake
        .create(&json!({"model": "gpt-5", "input": "Hello?", "stream": true, "previous_response_id": unknown}))
        .await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        Some("previous_response_not_found"),
        Some("previous_response_id"),
        &format!("Previous response with id '{unknown}' not found."),
    );
    let exchange = fake.last();
    assert_eq!(exchange.rejected_by.as_deref(), Some("E1"));
    assert_eq!(exchange.turn, None);
    assert!(exchange.stream.is_none());

    let reply = fake
        .create(&json!({"model": "gpt-5.3", "input": "Hello?", "stream": true}))
        .await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        Some("model_not_found"),
        Some("model"),
        "The requested model 'gpt-5.3' does not exist.",
    );
    assert_eq!(fake.last().rejected_by.as_deref(), Some("E9"));
    assert!(fake.last().stream.is_none());

    // The rejected requests did not use up the turn.
    let streamed = fake
        .stream(&json!({"model": "gpt-5", "input": "Hello?", "stream": true}))
        .await;
    assert_eq!(streamed.status, 200);
    let events = streamed.events();
    assert_eq!(
        events.last().map(|e| &e["type"]),
        Some(&json!("response.completed"))
    );
    assert_eq!(fake.last().turn, Some(0));
}

// ---------------------------------------------------------------------------------------
// 7. Faults

fn hello() -> Value {
    json!({"model": "gpt-5", "input": "Hello?"})
}

/// Sends the faulted attempt's twin (as an SDK retry) and checks it gets turn 0, then
/// checks the faulted exchange's record; `row` names the case in a failure.
async fn assert_retry_served(row: &str, fake: &Fake, record: FaultRecord) {
    let reply = fake.retry(&hello(), "1").await;
    assert_eq!(reply.status, 200, "{row}: {}", reply.text);
    assert_eq!(response_text(&reply.json()), "Hello there.", "{row}");
    let transcript = fake.session.transcript();
    let [faulted, served] = transcript.model.as_slice() else {
        panic!(
            "{row}: expected two exchanges, got {}",
            transcript.model.len()
        );
    };
    assert_eq!(faulted.turn, None, "{row}");
    assert_eq!(faulted.fault.as_ref(), Some(&record), "{row}");
    assert_eq!(served.turn, Some(0), "{row}");
    assert_eq!(served.fault, None, "{row}");
    assert_eq!(served.body, faulted.body, "{row}");
}

/// What the body of a faulted answer must be.
enum FaultBody {
    /// The whole JSON error envelope: its type, code and message, where `{request_id}`
    /// stands for the answer's own `x-request-id`.
    Error {
        kind: &'static str,
        code: &'static str,
        message: &'static str,
    },
    /// A JSON error with this code.
    Code(&'static str),
    /// This HTML page, which is not JSON.
    Html(&'static str),
}

/// One scripted fault: the answer it must get (status, headers, body, no sooner than
/// `at_least_ms`) and the record the transcript keeps of it.
struct FaultRow {
    name: &'static str,
    fault: &'static str,
    status: u16,
    /// Headers and their exact values; `None`: the header is absent.
    headers: &'static [(&'static str, Option<&'static str>)],
    /// Whether `x-request-id` must be a request id.
    request_id: bool,
    body: FaultBody,
    at_least_ms: u64,
    record: FaultRecord,
}

const RATE_LIMITED: &str = "Rate limit reached for gpt-5 in organization org-loopcheck on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms. Visit https://platform.openai.com/account/rate-limits to learn more.";

const UNAVAILABLE_PAGE: &str = "<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>\n";

fn fault_rows() -> Vec<FaultRow> {
    vec![
        FaultRow {
            name: "429 with retry_after_ms",
            fault: "{status: 429, retry_after_ms: 250}",
            status: 429,
            headers: &[
                ("retry-after-ms", Some("250")),
                ("retry-after", None),
                ("x-should-retry", None),
            ],
            request_id: true,
            body: FaultBody::Error {
                kind: "tokens",
                code: "rate_limit_exceeded",
                message: RATE_LIMITED,
            },
            at_least_ms: 0,
            record: FaultRecord {
                retry_after_ms: Some(250),
                ..fault_status(429)
            },
        },
        FaultRow {
            name: "429 with retry_after in seconds",
            fault: "{status: 429, retry_after: 1}",
            status: 429,
            headers: &[("retry-after", Some("1")), ("retry-after-ms", None)],
            request_id: false,
            body: FaultBody::Code("rate_limit_exceeded"),
            at_least_ms: 0,
            record: FaultRecord {
                retry_after_ms: Some(1000),
                ..fault_status(429)
            },
        },
        FaultRow {
            name: "500 naming the request id of its header",
            fault: "{status: 500}",
            status: 500,
            headers: &[],
            request_id: true,
            body: FaultBody::Error {
                kind: "server_error",
                code: "server_error",
                message: "{server_error} Please include the request ID {request_id} in your message.",
            },
            at_least_ms: 0,
            record: fault_status(500),
        },
        FaultRow {
            name: "503 as an HTML page",
            fault: "{status: 503}",
            status: 503,
            headers: &[("content-type", Some("text/html"))],
            request_id: false,
            body: FaultBody::Html(UNAVAILABLE_PAGE),
            at_least_ms: 0,
            record: fault_status(503),
        },
        FaultRow {
            name: "500 with should_retry false",
            fault: "{status: 500, should_retry: false}",
            status: 500,
            headers: &[("x-should-retry", Some("false"))],
            request_id: false,
            body: FaultBody::Code("server_error"),
            at_least_ms: 0,
            record: FaultRecord {
                should_retry: Some(false),
                ..fault_status(500)
            },
        },
        FaultRow {
            // A fault with a status waits, then fails.
            name: "500 after a delay",
            fault: "{status: 500, delay_ms: 300}",
            status: 500,
            headers: &[],
            request_id: false,
            body: FaultBody::Code("server_error"),
            at_least_ms: 250,
            record: FaultRecord {
                delay_ms: 300,
                ..fault_status(500)
            },
        },
    ]
}

/// Each fault gets exactly its answer, and the SDK's retry that follows gets the turn.
#[tokio::test]
async fn faults_answer_as_the_api_does_and_a_retry_is_served() {
    for row in fault_rows() {
        let name = row.name;
        let fake = Fake::start(&fault_scenario(row.fault), StateMode::PreviousResponseId).await;
        let started = Instant::now();
        let reply = fake.create(&hello()).await;
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(row.at_least_ms),
            "{name}: answered after {elapsed:?}"
        );
        assert_eq!(reply.status, row.status, "{name}: {}", reply.text);
        for (header, value) in row.headers {
            assert_eq!(reply.header(header), *value, "{name}: header {header}");
        }
        let request_id = reply.header("x-request-id").unwrap_or_default().to_owned();
        if row.request_id {
            assert!(is_request_id(&request_id), "{name}: {request_id:?}");
        }
        match row.body {
            FaultBody::Error {
                kind,
                code,
                message,
            } => {
                assert_eq!(reply.content_type(), "application/json", "{name}");
                let message = message
                    .replace("{server_error}", SERVER_ERROR_MESSAGE)
                    .replace("{request_id}", &request_id);
                assert_eq!(
                    reply.json(),
                    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
                    "{name}"
                );
            }
            FaultBody::Code(code) => assert_eq!(reply.json()["error"]["code"], code, "{name}"),
            FaultBody::Html(page) => {
                assert!(
                    serde_json::from_str::<Value>(&reply.text).is_err(),
                    "{name}: a JSON body"
                );
                assert_eq!(reply.text, page, "{name}");
            }
        }
        assert_retry_served(name, &fake, row.record).await;
    }
}

#[tokio::test]
async fn fault_drop_closes_the_connection_without_an_answer() {
    let fake = Fake::start(
        &fault_scenario("{drop: true}"),
        StateMode::PreviousResponseId,
    )
    .await;
    let error = fake
        .post_builder("/v1/responses", &hello())
        .send()
        .await
        .expect_err("no answer to a dropped connection");
    assert_eq!(error.status(), None);
    assert!(error.is_request(), "{error:?}");
    assert_retry_served("drop", &fake, fault_dropped()).await;
}

/// A delay alone is a slow but successful answer: the turn itself, no fault record
/// (the oracle reads any `fault` as a failed attempt).
#[tokio::test]
async fn fault_delay_alone_holds_a_successful_answer_back() {
    let fake = Fake::start(
        &fault_scenario("{delay_ms: 300}"),
        StateMode::PreviousResponseId,
    )
    .await;
    let started = Instant::now();
    let reply = fake.create(&hello()).await;
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(response_text(&reply.json()), "Hello there.");
    let exchange = fake.last();
    assert_eq!(exchange.turn, Some(0));
    assert_eq!(exchange.fault, None);
}

// ---------------------------------------------------------------------------------------
// 8. SDK retry re-serve

#[tokio::test]
async fn sdk_retry_of_the_last_body_is_served_the_same_turn() {
    let fake = Fake::start(&two_turns(), StateMode::Stateless).await;
    let body = json!({"model": "gpt-5", "input": "Hello?", "store": false});

    let first = fake.create(&body).await.json();
    assert_eq!(response_text(&first), "First.");
    assert_eq!(fake.last().turn, Some(0));

    // The SDK's retry of the same body: the same turn, fresh ids.
    let again = fake.retry(&body, "1").await.json();
    assert_eq!(response_text(&again), "First.");
    assert_eq!(fake.last().turn, Some(0));
    assert_eq!(fake.last().retry_count(), Some(1));
    assert_ne!(again["id"], first["id"]);
    assert_ne!(again["output"][0]["id"], first["output"][0]["id"]);

    // A retry count of 0 is a first attempt, not a retry.
    let second = fake.retry(&body, "0").await.json();
    assert_eq!(response_text(&second), "Second.");
    assert_eq!(fake.last().turn, Some(1));

    let again = fake.retry(&body, "2").await.json();
    assert_eq!(response_text(&again), "Second.");
    assert_eq!(fake.last().turn, Some(1));
    assert_ne!(again["id"], second["id"]);

    // The same body without the header asks for the next turn: there is none.
    let reply = fake.create(&body).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], "script_exhausted");
    assert_eq!(fake.last().rejected_by.as_deref(), Some("script"));
    assert_eq!(fake.last().turn, None);

    // A retry header on a different body is no re-serve either.
    let other = json!({"model": "gpt-5", "input": "Hello again?", "store": false});
    let reply = fake.retry(&other, "1").await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], "script_exhausted");
}

/// A controller that sends the same body again (its own retry, count 0) meets a fault on
/// the next turn; the SDK's retry of *that* request (count 1) is a retry of the faulted
/// attempt and must get the next turn, not a re-serve of the turn before the fault.
#[tokio::test]
async fn sdk_retry_after_a_fault_is_not_a_re_serve() {
    let fake = Fake::start(&served_then_fault(), StateMode::Stateless).await;
    let body = json!({"model": "gpt-5", "input": "Hello?", "store": false});
    let first = fake.create(&body).await.json();
    assert_eq!(response_text(&first), "First.");

    let reply = fake.retry(&body, "0").await;
    assert_eq!(reply.status, 500);
    assert_eq!(fake.last().turn, None);

    let reply = fake.retry(&body, "1").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(response_text(&reply.json()), "Second.");
    assert_eq!(fake.last().turn, Some(1));
}

// ---------------------------------------------------------------------------------------
// 9. Background

const BACKGROUND: &str = r#"
format: 1
id: surface/background
summary: Two background turns (one finished, one cancelled), then a foreground one.
level: must
task:
  input: Hello?
  tools: [get_weather]
  background: true
states: [previous_response_id]
script:
  - polls: 2
    output:
      - reasoning: {summary: Think.}
      - message: Background answer.
  - polls: 3
    output:
      - message: Never finished.
  - output:
      - message: Foreground answer.
expect:
  outcome: completed
"#;

#[tokio::test]
async fn background_runs_poll_cancel_and_replay() {
    let fake = Fake::start(BACKGROUND, StateMode::PreviousResponseId).await;
    let background = json!({"model": "gpt-5", "input": "Hello?", "background": true});

    // background with store:false is refused (and uses up no turn).
    let reply = fake
        .create(&json!({"model": "gpt-5", "input": "Hello?", "background": true, "store": false}))
        .await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        Some("invalid_value"),
        Some("background"),
        "Background mode requires `store` to be true.",
    );

    // Queued first.
    let reply = fake.create(&background).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let queued = reply.json();
    assert_eq!(queued["status"], "queued");
    assert_eq!(queued["background"], true);
    assert_eq!(queued["output"], json!([]));
    assert_eq!(queued["usage"], Value::Null);
    assert_eq!(queued["completed_at"], Value::Null);
    let id = str_of(&queued, "id").to_owned();
    assert!(id.starts_with("resp_"));
    let exchange = fake.last();
    assert_eq!(exchange.turn, Some(0));
    let terminal = exchange
        .final_response
        .clone()
        .expect("the terminal response");
    assert_eq!(terminal["status"], "completed");
    assert_eq!(terminal["id"], json!(id));
    assert_eq!(response_text(&terminal), "Background answer.");

    // In progress for `polls` polls, then the terminal response, from then on.
    let path = format!("/v1/responses/{id}");
    for _ in 0..2 {
        let polled = fake.get(&path).await.json();
        assert_eq!(polled["status"], "in_progress");
        assert_eq!(polled["output"], json!([]));
        assert_eq!(polled["usage"], Value::Null);
    }
    for _ in 0..2 {
        let reply = fake.get(&path).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json(), terminal);
    }

    // Cancelling a finished background response changes nothing, every time.
    for _ in 0..2 {
        let reply = fake.post(&format!("{path}/cancel"), &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.json(), terminal);
    }
    assert_eq!(fake.get(&path).await.json(), terminal);

    // Resuming the stream replays the events after the given sequence number.
    let full = Streamed::read(fake.request(Method::GET, &format!("{path}?stream=true"))).await;
    assert_eq!(full.status, 200);
    assert_eq!(
        full.content_type.split(';').next(),
        Some("text/event-stream")
    );
    let full = full.events();
    assert_sequence(&full, 0);
    assert_eq!(
        types(&full[..3]),
        [
            "response.created",
            "response.queued",
            "response.in_progress"
        ]
    );
    assert_eq!(full[0]["response"]["status"], "queued");
    assert_eq!(full.last().map(|e| &e["response"]), Some(&*terminal));
    let resumed =
        Streamed::read(fake.request(Method::GET, &format!("{path}?stream=true&starting_after=3")))
            .await;
    assert!(resumed.error.is_none());
    let resumed = resumed.events();
    assert_eq!(resumed.len(), full.len() - 4);
    assert_sequence(&resumed, 4);
    assert_eq!(resumed, full[4..]);

    // Cancelling a queued one cancels it for good.
    let second = fake.create(&background).await.json();
    assert_eq!(second["status"], "queued");
    assert_eq!(fake.last().turn, Some(1));
    let second_path = format!("/v1/responses/{}", str_of(&second, "id"));
    let cancelled = fake
        .post(&format!("{second_path}/cancel"), &json!({}))
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    let cancelled = cancelled.json();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["id"], second["id"]);
    assert_eq!(cancelled["output"], json!([]));
    for _ in 0..4 {
        assert_eq!(fake.get(&second_path).await.json()["status"], "cancelled");
    }
    let again = fake
        .post(&format!("{second_path}/cancel"), &json!({}))
        .await;
    assert_eq!(again.json(), fake.get(&second_path).await.json());

    // A foreground (stored) response cannot be cancelled.
    let foreground = fake
        .create(&json!({"model": "gpt-5", "input": "Hello?"}))
        .await
        .json();
    assert_eq!(foreground["status"], "completed");
    assert_eq!(fake.last().turn, Some(2));
    let foreground_path = format!("/v1/responses/{}", str_of(&foreground, "id"));
    let reply = fake
        .post(&format!("{foreground_path}/cancel"), &json!({}))
        .await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        None,
        None,
        "Only responses created with the `background` parameter set to `true` can be cancelled.",
    );
    assert_eq!(fake.get(&foreground_path).await.json(), foreground);

    // Unknown ids, and delete.
    let reply = fake
        .post("/v1/responses/resp_unknown/cancel", &json!({}))
        .await;
    assert_api_error(
        &reply,
        404,
        INVALID,
        None,
        None,
        "Response with id 'resp_unknown' not found.",
    );
    let deleted = fake.delete(&path).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(
        deleted.json(),
        json!({"id": id, "object": "response", "deleted": true})
    );
    assert_eq!(fake.get(&path).await.status, 404);
    assert_eq!(fake.delete(&path).await.status, 404);
}

// ---------------------------------------------------------------------------------------
// 10. Conversations

const CONVERSATION: &str = r#"
format: 1
id: surface/conversation
summary: One answer inside a conversation.
level: must
task:
  input: What is the capital of France?
  tools: [search_docs]
states: [conversation]
script:
  - output:
      - reasoning: {summary: Easy.}
      - message: Paris.
expect:
  outcome: completed
"#;

#[tokio::test]
async fn conversations_hold_items_and_responses_append_to_them() {
    let fake = Fake::start(CONVERSATION, StateMode::Conversation).await;

    let created = fake
        .post(
            "/v1/conversations",
            &json!({
                "items": [{"type": "message", "role": "user", "content": "Hi, I have questions."}],
                "metadata": {"topic": "geography"},
            }),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let conversation = created.json();
    let id = str_of(&conversation, "id").to_owned();
    assert!(id.starts_with("conv_"), "{id}");
    assert_eq!(conversation["object"], "conversation");
    assert!(conversation["created_at"].is_u64());
    assert_eq!(conversation["metadata"], json!({"topic": "geography"}));
    let path = format!("/v1/conversations/{id}");
    assert_eq!(fake.get(&path).await.json(), conversation);

    // Update.
    let updated = fake
        .post(&path, &json!({"metadata": {"topic": "capitals"}}))
        .await
        .json();
    let mut expected = conversation.clone();
    expected["metadata"] = json!({"topic": "capitals"});
    assert_eq!(updated, expected);
    assert_eq!(fake.get(&path).await.json(), expected);

    // Items.
    let items = fake.get(&format!("{path}/items")).await.json();
    assert_eq!(items["object"], "list");
    assert_eq!(items["has_more"], false);
    let data = items["data"].as_array().expect("data");
    assert_eq!(data.len(), 1);
    let first_id = str_of(&data[0], "id").to_owned();
    assert!(first_id.starts_with("msg_"), "{first_id}");
    assert_eq!(items["first_id"], json!(first_id));
    assert_eq!(items["last_id"], json!(first_id));
    assert_eq!(data[0]["content"], "Hi, I have questions.");
    let item = fake.get(&format!("{path}/items/{first_id}")).await;
    assert_eq!(item.status, 200);
    assert_eq!(item.json(), data[0]);

    // A response in the conversation: its input and output are appended.
    let reply = fake
        .create(&json!({"model": "gpt-5", "input": "What is the capital of France?", "conversation": id}))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let response = reply.json();
    assert_eq!(response["conversation"], json!({"id": id}));
    assert_eq!(response_text(&response), "Paris.");
    let items = fake.get(&format!("{path}/items?order=asc")).await.json();
    let data = items["data"].as_array().expect("data").clone();
    assert_eq!(data.len(), 4);
    assert_eq!(data[0]["id"], json!(first_id));
    assert_eq!(data[1]["role"], "user");
    assert_eq!(data[1]["content"], "What is the capital of France?");
    assert!(str_of(&data[1], "id").starts_with("msg_"));
    assert_eq!(
        data[2..],
        response["output"].as_array().expect("output")[..]
    );
    let newest = fake.get(&format!("{path}/items?limit=1")).await.json();
    assert_eq!(newest["data"], json!([data[3].clone()]));
    assert_eq!(newest["has_more"], true);

    // Delete an item: the answer is the conversation.
    let reply = fake.delete(&format!("{path}/items/{first_id}")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), expected);
    let items = fake.get(&format!("{path}/items?order=asc")).await.json();
    assert_eq!(items["data"], json!(data[1..]));
    assert_eq!(
        fake.get(&format!("{path}/items/{first_id}")).await.status,
        404
    );

    // conversation with previous_response_id; unknown conversations.
    let reply = fake
        .create(&json!({
            "model": "gpt-5", "input": "And Italy?", "conversation": id,
            "previous_response_id": response["id"],
        }))
        .await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        Some("mutually_exclusive_parameters"),
        Some("conversation"),
        "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.",
    );
    let reply = fake
        .create(&json!({"model": "gpt-5", "input": "And Italy?", "conversation": {"id": "conv_unknown"}}))
        .await;
    assert_api_error(
        &reply,
        404,
        INVALID,
        None,
        None,
        "Conversation with id 'conv_unknown' not found.",
    );
    assert_eq!(fake.get("/v1/conversations/conv_unknown").await.status, 404);

    // Delete the conversation.
    let reply = fake.delete(&path).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"id": id, "object": "conversation.deleted", "deleted": true})
    );
    assert_eq!(fake.get(&path).await.status, 404);
}

// ---------------------------------------------------------------------------------------
// 11. Programmatic tool calling

const PROGRAM: &str = r#"
format: 1
id: surface/program
summary: A program with two child calls, then its output and the answer.
level: must
task:
  input: Total stock of A7 and B2?
  tools:
    - get_stock
    - type: programmatic_tool_calling
script:
  - output:
      - program:
          label: p1
          code: "const a = await get_stock({sku: 'A7'}); const b = await get_stock({sku: 'B2'}); return a.available_units + b.available_units;"
      - call: {name: get_stock, arguments: {sku: A7}, caller: p1}
      - call: {name: get_stock, arguments: {sku: B2}, caller: p1}
  - output:
      - program_output: {program: p1, result: "8"}
      - message: "8 units in total."
expect:
  outcome: completed
"#;

const PROGRAM_CODE: &str = "const a = await get_stock({sku: 'A7'}); const b = await get_stock({sku: 'B2'}); return a.available_units + b.available_units;";

fn program_request(extra: Value) -> Value {
    let mut body = json!({
        "model": "gpt-5",
        "tools": [
            {"type": "function", "name": "get_stock", "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}, "allowed_callers": ["direct", "programmatic"]},
            {"type": "programmatic_tool_calling"},
        ],
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    body
}

/// The first turn: a program and its two child calls; checks their shape.
async fn program_round(fake: &Fake, store: bool) -> (Value, Value, [Value; 2]) {
    let reply = fake
        .create(&program_request(
            json!({"input": "Total stock of A7 and B2?", "store": store}),
        ))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let response = reply.json();
    let output = response["output"].as_array().expect("output").clone();
    assert_eq!(output.len(), 3);
    let program = output[0].clone();
    assert_eq!(program["type"], "program");
    assert!(str_of(&program, "id").starts_with("cm_"));
    let program_call = str_of(&program, "call_id").to_owned();
    assert!(program_call.starts_with("call_") && program_call.len() == 29);
    assert_eq!(program["code"], PROGRAM_CODE);
    let fingerprint = str_of(&program, "fingerprint");
    assert!(
        fingerprint.starts_with("fp_") && fingerprint.len() == 46,
        "{fingerprint}"
    );
    let mut keys: Vec<&str> = program
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["call_id", "code", "fingerprint", "id", "type"]);
    for (call, sku) in output[1..].iter().zip(["A7", "B2"]) {
        assert_eq!(call["type"], "function_call");
        assert_eq!(call["name"], "get_stock");
        assert_eq!(call["arguments"], json!({"sku": sku}).to_string());
        assert_eq!(
            call["caller"],
            json!({"type": "program", "caller_id": program_call})
        );
    }
    (response, program, [output[1].clone(), output[2].clone()])
}

fn call_output(call: &Value, with_caller: bool) -> Value {
    let mut output = json!({
        "type": "function_call_output",
        "call_id": call["call_id"],
        "output": "{\"available_units\": 4}",
    });
    if with_caller {
        output["caller"] = call["caller"].clone();
    }
    output
}

fn assert_program_output(fake: &Fake, reply: &Reply, program: &Value) {
    assert_eq!(reply.status, 200, "{}", reply.text);
    let response = reply.json();
    let program_output = &response["output"][0];
    assert_eq!(program_output["type"], "program_output");
    assert!(str_of(program_output, "id").starts_with("cmo_"));
    assert_eq!(program_output["call_id"], program["call_id"]);
    assert_eq!(program_output["result"], "8");
    assert_eq!(program_output["status"], "completed");
    assert_eq!(response_text(&response), "8 units in total.");
    let exchange = fake.last();
    assert_eq!(exchange.turn, Some(1));
    assert_eq!(exchange.rejected_by, None);
}

#[tokio::test]
async fn program_child_outputs_must_echo_the_caller() {
    let fake = Fake::start(PROGRAM, StateMode::PreviousResponseId).await;
    let (response, program, calls) = program_round(&fake, true).await;

    let reply = fake
        .create(&program_request(json!({
            "previous_response_id": response["id"],
            "input": [call_output(&calls[0], false), call_output(&calls[1], true)],
        })))
        .await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        Some("invalid_value"),
        Some("input[0].caller"),
        &format!(
            "Invalid 'input[0].caller': the output for function call {} must carry the same caller as the call.",
            str_of(&calls[0], "call_id")
        ),
    );
    assert_eq!(fake.last().rejected_by.as_deref(), Some("caller"));
    assert_eq!(fake.last().turn, None);

    let reply = fake
        .create(&program_request(json!({
            "previous_response_id": response["id"],
            "input": [call_output(&calls[0], true), call_output(&calls[1], true)],
        })))
        .await;
    assert_program_output(&fake, &reply, &program);
}

#[tokio::test]
async fn program_replay_needs_the_program_item_verbatim() {
    let fake = Fake::start(PROGRAM, StateMode::Stateless).await;
    let (_, program, calls) = program_round(&fake, false).await;
    let user = json!({"role": "user", "content": "Total stock of A7 and B2?"});
    let replay = |program: Option<&Value>| {
        let mut input = vec![user.clone()];
        input.extend(program.cloned());
        input.extend(calls.iter().cloned());
        input.extend(calls.iter().map(|c| call_output(c, true)));
        program_request(json!({"store": false, "input": input}))
    };
    let program_call = str_of(&program, "call_id").to_owned();

    // Without the program item.
    let reply = fake.create(&replay(None)).await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        None,
        Some("input"),
        &format!(
            "No program item found for caller_id {program_call}. Include the program item when replaying its calls."
        ),
    );
    assert_eq!(fake.last().rejected_by.as_deref(), Some("program"));

    // With its fingerprint changed by one character.
    let mut altered = program.clone();
    let fingerprint = str_of(&program, "fingerprint");
    let last = fingerprint.chars().last().expect("a character");
    let swapped = if last == 'A' { 'B' } else { 'A' };
    altered["fingerprint"] = json!(format!(
        "{}{swapped}",
        &fingerprint[..fingerprint.len() - 1]
    ));
    let reply = fake.create(&replay(Some(&altered))).await;
    assert_api_error(
        &reply,
        400,
        INVALID,
        Some("invalid_program_fingerprint"),
        Some("input"),
        &format!(
            "The fingerprint of program item '{}' could not be verified.",
            str_of(&program, "id")
        ),
    );
    assert_eq!(fake.last().rejected_by.as_deref(), Some("program"));
    assert_eq!(fake.last().turn, None);

    // Verbatim.
    let reply = fake.create(&replay(Some(&program))).await;
    assert_program_output(&fake, &reply, &program);
}
