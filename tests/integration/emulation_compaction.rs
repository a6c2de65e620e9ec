//! Strict emulation of compaction, structured output and logprobs over real HTTP:
//! `POST /v1/responses/compact` answers the user messages and a compaction item, which a
//! later request must send back as issued (an altered or unknown one gets the API's
//! `invalid_encrypted_content`); a scripted compaction item is served in a response and
//! streamed with `response.compaction.compacting`; a request's `text` config is echoed;
//! output text carries its tokens' log probabilities only when the request asks.

use loopcheck::server::RunningServer;
use serde_json::{Value, json};

use crate::support::response_text;
use crate::support::stateless_api::{post_json as post, serve_stateless};

/// Turn 1: a call; turn 2: a compaction item and a call; turn 3: the answer.
const SCENARIO: &str = r#"
format: 1
id: emulation/compaction
summary: A call, then a compaction item beside a call, then the final answer.
level: must
task:
  input:
    - role: user
      content: How many units of A7 and B2?
  tools: [get_stock]
  context_management: [{type: compaction, compact_threshold: 1000}]
script:
  - output:
      - reasoning: {summary: Check A7.}
      - call: {name: get_stock, arguments: {sku: A7}}
  - output:
      - compaction: {}
      - call: {name: get_stock, arguments: {sku: B2}}
  - output:
      - message: "A7: 8 units\nB2: none"
expect:
  outcome: completed
"#;

const QUESTION: &str = "How many units of A7 and B2?";

fn user() -> Value {
    json!({"role": "user", "content": QUESTION})
}

async fn start() -> (RunningServer, String) {
    serve_stateless(SCENARIO).await
}

fn stateless(input: Vec<Value>) -> Value {
    json!({"model": "gpt-5", "store": false, "include": ["reasoning.encrypted_content"], "input": input})
}

fn output(call: &Value) -> Value {
    json!({"type": "function_call_output", "call_id": call["call_id"], "output": "{\"units\":8}"})
}

/// Turn 1 and the context after it (with the call's output).
async fn round1(server: &RunningServer, key: &str) -> Vec<Value> {
    let (status, response, text) =
        post(server, key, "/v1/responses", &stateless(vec![user()])).await;
    assert_eq!(status, 200, "{text}");
    let mut context = vec![user()];
    for item in response["output"].as_array().expect("output") {
        let mut item = item.clone();
        if item["type"] == "reasoning" {
            item.as_object_mut().expect("an object").remove("status");
        }
        context.push(item);
    }
    let call = context[2].clone();
    context.push(output(&call));
    context
}

/// Compacts `context`; the compacted response.
async fn compact(server: &RunningServer, key: &str, context: Vec<Value>) -> Value {
    let body = json!({"model": "gpt-5", "input": context});
    let (status, compacted, text) = post(server, key, "/v1/responses/compact", &body).await;
    assert_eq!(status, 200, "{text}");
    compacted
}

fn assert_invalid_encrypted_content(reply: &(u16, Value, String)) {
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert_eq!(
        reply.1["error"]["code"], "invalid_encrypted_content",
        "{}",
        reply.2
    );
    assert_eq!(
        reply.1["error"]["type"], "invalid_request_error",
        "{}",
        reply.2
    );
}

#[tokio::test]
async fn compact_answers_the_user_messages_and_one_compaction_item() {
    let (server, key) = start().await;
    let context = round1(&server, &key).await;
    let compacted = compact(&server, &key, context).await;
    assert_eq!(compacted["object"], "response.compaction", "{compacted}");
    assert!(compacted["id"].as_str().is_some() && compacted["created_at"].as_u64().is_some());
    let usage = &compacted["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap())
    );
    let output = compacted["output"].as_array().expect("output");
    assert_eq!(output.len(), 2, "{compacted}");
    let message_id = output[0]["id"].as_str().unwrap_or_default().to_owned();
    assert!(message_id.starts_with("msg_"), "{compacted}");
    assert_eq!(
        output[0],
        json!({"id": message_id, "type": "message", "status": "completed", "role": "user",
               "content": [{"type": "input_text", "text": QUESTION}]})
    );
    assert_eq!(output[1]["type"], "compaction");
    assert!(
        output[1]["id"].as_str().unwrap().starts_with("cmp_"),
        "{compacted}"
    );
    assert!(
        output[1]["encrypted_content"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );
}

#[tokio::test]
async fn the_compacted_output_sent_as_it_came_serves_the_next_turn() {
    let (server, key) = start().await;
    let context = round1(&server, &key).await;
    let compacted = compact(&server, &key, context).await;
    let input = compacted["output"].as_array().expect("output").clone();
    let (status, response, text) = post(&server, &key, "/v1/responses", &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(response["output"][0]["type"], "compaction", "{response}");
}

/// An altered compaction item, one under another id, and one never issued: each is
/// refused with the shape of the API's `invalid_encrypted_content` (the real message for
/// a compaction item is not known). A refused request serves no turn.
#[tokio::test]
async fn an_altered_or_unknown_compaction_item_is_refused() {
    let (server, key) = start().await;
    let context = round1(&server, &key).await;
    let compacted = compact(&server, &key, context).await;
    let issued = compacted["output"][1].clone();
    let content = issued["encrypted_content"].as_str().unwrap().to_owned();
    let mut altered = issued.clone();
    altered["encrypted_content"] = json!(format!("{}x", &content[..content.len() - 1]));
    let mut other_id = issued.clone();
    other_id["id"] = json!("cmp_0000000000000000000000000000000000000000");
    let forged = json!({"type": "compaction", "encrypted_content": "gAAAAforged"});
    for item in [altered, other_id, forged] {
        let reply = post(
            &server,
            &key,
            "/v1/responses",
            &stateless(vec![user(), item]),
        )
        .await;
        assert_invalid_encrypted_content(&reply);
    }
    // Without its id, the item is known by its content.
    let mut without_id = issued.clone();
    without_id.as_object_mut().unwrap().remove("id");
    let (status, _, text) = post(
        &server,
        &key,
        "/v1/responses",
        &stateless(vec![user(), without_id]),
    )
    .await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn a_scripted_compaction_item_is_served_remembered_and_streamed_with_its_event() {
    let (server, key) = start().await;
    let mut context = round1(&server, &key).await;
    let mut body = stateless(context.clone());
    body["context_management"] = json!([{"type": "compaction", "compact_threshold": 1000}]);
    body["stream"] = json!(true);
    let (status, _, text) = post(&server, &key, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{text}");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let at = |kind: &str| types.iter().position(|t| *t == kind).unwrap_or(usize::MAX);
    let compacting = &events[at("response.compaction.compacting")];
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "compaction")
        .expect("the compaction item is done");
    let item = done["item"].clone();
    assert_eq!(compacting["item_id"], item["id"], "{text}");
    assert_eq!(compacting["output_index"], 0, "{text}");
    assert!(at("response.output_item.added") < at("response.compaction.compacting"));
    // The stateless replay of that item goes through; altered, it is refused.
    let terminal = events.last().expect("a terminal event");
    let call = terminal["response"]["output"][1].clone();
    context.extend([item.clone(), call.clone(), output(&call)]);
    let mut altered_context = context.clone();
    let last = altered_context.len() - 3;
    altered_context[last]["encrypted_content"] = json!("gAAAAaltered");
    let reply = post(&server, &key, "/v1/responses", &stateless(altered_context)).await;
    assert_invalid_encrypted_content(&reply);
    let (status, response, text) = post(&server, &key, "/v1/responses", &stateless(context)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(response_text(&response), "A7: 8 units\nB2: none");
}

/// The final message's output_text part carries logprobs (deterministic, one per token,
/// the tokens making up the text) only when the request asks for them; streamed, each
/// delta carries its piece's and the done event the whole text's.
#[tokio::test]
async fn output_text_carries_logprobs_only_when_asked() {
    let (server, key) = start().await;
    let context = round1(&server, &key).await;
    let compacted = compact(&server, &key, context).await;
    let mut input = compacted["output"].as_array().unwrap().clone();
    let (_, turn2, _) = post(&server, &key, "/v1/responses", &stateless(input.clone())).await;
    let call = turn2["output"][1].clone();
    input.extend([turn2["output"][0].clone(), call.clone(), output(&call)]);
    let mut asked = stateless(input.clone());
    asked["include"] = json!([
        "reasoning.encrypted_content",
        "message.output_text.logprobs"
    ]);
    let (status, response, text) = post(&server, &key, "/v1/responses", &asked).await;
    assert_eq!(status, 200, "{text}");
    let part = &response["output"][0]["content"][0];
    let logprobs = part["logprobs"].as_array().expect("logprobs");
    assert_eq!(logprobs.len(), 5, "{part}");
    let tokens: String = logprobs
        .iter()
        .map(|l| l["token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, part["text"].as_str().unwrap());
    assert_eq!(logprobs[1]["token"], " 8");
    assert_eq!(logprobs[1]["bytes"], json!([32, 56]));
    assert_eq!(logprobs[1]["logprob"], -2.0 / 64.0);
    assert_eq!(logprobs[1]["top_logprobs"], json!([]));

    // The same turn, unasked, in a fresh session: an empty list.
    let (server, key) = start().await;
    let context = round1(&server, &key).await;
    let compacted = compact(&server, &key, context).await;
    let mut input = compacted["output"].as_array().unwrap().clone();
    let (_, turn2, _) = post(&server, &key, "/v1/responses", &stateless(input.clone())).await;
    let call = turn2["output"][1].clone();
    input.extend([turn2["output"][0].clone(), call.clone(), output(&call)]);
    let (_, plain, _) = post(&server, &key, "/v1/responses", &stateless(input)).await;
    assert_eq!(plain["output"][0]["content"][0]["logprobs"], json!([]));
}

#[tokio::test]
async fn streamed_text_events_carry_their_pieces_logprobs_when_asked() {
    let (server, key) = start().await;
    let context = round1(&server, &key).await;
    let compacted = compact(&server, &key, context).await;
    let mut input = compacted["output"].as_array().unwrap().clone();
    let (_, turn2, _) = post(&server, &key, "/v1/responses", &stateless(input.clone())).await;
    let call = turn2["output"][1].clone();
    input.extend([turn2["output"][0].clone(), call.clone(), output(&call)]);
    let mut body = stateless(input);
    body["top_logprobs"] = json!(2);
    body["stream"] = json!(true);
    let (status, _, text) = post(&server, &key, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{text}");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .collect();
    assert!(!deltas.is_empty(), "{text}");
    for delta in &deltas {
        let tokens: String = delta["logprobs"]
            .as_array()
            .expect("logprobs")
            .iter()
            .map(|l| l["token"].as_str().unwrap())
            .collect();
        assert_eq!(tokens, delta["delta"].as_str().unwrap(), "{delta}");
    }
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .expect("output_text.done");
    assert_eq!(done["logprobs"].as_array().map(Vec::len), Some(5), "{done}");
    let terminal = events.last().expect("terminal");
    assert_eq!(terminal["response"]["top_logprobs"], 2);
}

#[tokio::test]
async fn a_text_format_is_echoed_in_the_response() {
    let (server, key) = start().await;
    let format = json!({"type": "json_schema", "name": "stock", "strict": true,
        "schema": {"type": "object", "properties": {"units": {"type": "integer"}}, "required": ["units"], "additionalProperties": false}});
    let mut body = stateless(vec![user()]);
    body["text"] = json!({"format": format});
    let (status, response, text) = post(&server, &key, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        response["text"],
        json!({"format": format, "verbosity": "medium"})
    );
}
