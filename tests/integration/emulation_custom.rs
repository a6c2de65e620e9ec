//! Strict emulation of custom tool calls over real HTTP: the fake issues a
//! `custom_tool_call` (JSON and streamed), accepts its `custom_tool_call_output`, and
//! answers each broken pairing with the real API's error, as for function calls.

use loopcheck::server::RunningServer;
use serde_json::{Value, json};

use crate::support::response_text;
use crate::support::stateless_api::{post_json, serve_stateless, stateless_create as stateless};

/// Turn 1: a function call and a custom tool call. Turn 2: the final answer.
const SCENARIO: &str = r#"
format: 1
id: emulation/custom
summary: A function call and a custom tool call in one turn, then the final answer.
level: must
task:
  input:
    - role: user
      content: How many units of A7, and how many open orders?
  tools:
    - get_stock
    - type: custom
      name: run_sql
      description: Run one SQL query.
script:
  - output:
      - call: {name: get_stock, arguments: {sku: A7}}
      - custom_call: {name: run_sql, input: "SELECT count(*) FROM orders WHERE status = 'open'"}
  - output:
      - message: "A7: 8. Open orders: 14."
expect:
  outcome: completed
"#;

const QUESTION: &str = "How many units of A7, and how many open orders?";
const INPUT: &str = "SELECT count(*) FROM orders WHERE status = 'open'";

fn user() -> Value {
    json!({"role": "user", "content": QUESTION})
}

async fn start() -> (RunningServer, String) {
    serve_stateless(SCENARIO).await
}

async fn post(server: &RunningServer, key: &str, body: &Value) -> (u16, Value, String) {
    post_json(server, key, "/v1/responses", body).await
}

/// Turn 1, checked: a function_call then a custom_tool_call; returns both items.
async fn round1(server: &RunningServer, key: &str) -> (Value, Value) {
    let (status, response, _) = post(server, key, &stateless(vec![user()])).await;
    assert_eq!(status, 200, "{response}");
    let output = response["output"].as_array().expect("output").clone();
    assert_eq!(output.len(), 2, "{response}");
    let (function, custom) = (output[0].clone(), output[1].clone());
    assert_eq!(function["type"], "function_call");
    assert_eq!(custom["type"], "custom_tool_call");
    assert!(
        custom["id"].as_str().unwrap().starts_with("ctc_"),
        "{custom}"
    );
    assert!(
        custom["call_id"].as_str().unwrap().starts_with("call_"),
        "{custom}"
    );
    assert_eq!(custom["name"], "run_sql");
    assert_eq!(custom["input"], INPUT);
    assert!(custom.get("arguments").is_none(), "{custom}");
    (function, custom)
}

fn answer(kind: &str, call_id: &Value) -> Value {
    json!({"type": kind, "call_id": call_id, "output": "{\"n\":1}"})
}

fn assert_error(reply: &(u16, Value, String), message: &str) {
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert_eq!(
        reply.1,
        json!({"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": null}})
    );
}

#[tokio::test]
async fn a_custom_call_answered_by_its_own_kind_gets_turn_2() {
    let (server, key) = start().await;
    let (function, custom) = round1(&server, &key).await;
    let input = vec![
        user(),
        function.clone(),
        custom.clone(),
        answer("function_call_output", &function["call_id"]),
        answer("custom_tool_call_output", &custom["call_id"]),
    ];
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(response_text(&response), "A7: 8. Open orders: 14.");
}

#[tokio::test]
async fn a_custom_call_streams_its_input_in_deltas_and_whole_at_done() {
    let (server, key) = start().await;
    let mut body = stateless(vec![user()]);
    body["stream"] = json!(true);
    let (status, _, text) = post(&server, &key, &body).await;
    assert_eq!(status, 200, "{text}");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let added = of("response.output_item.added");
    let custom_added = added
        .iter()
        .find(|e| e["item"]["type"] == "custom_tool_call")
        .expect("the custom call is announced");
    assert_eq!(custom_added["item"]["input"], "");
    let deltas = of("response.custom_tool_call_input.delta");
    assert!(!deltas.is_empty(), "{text}");
    let streamed: String = deltas
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, INPUT);
    let item_id = &custom_added["item"]["id"];
    assert!(
        deltas
            .iter()
            .all(|e| &e["item_id"] == item_id && e["output_index"] == 1)
    );
    let done = of("response.custom_tool_call_input.done");
    assert_eq!(done.len(), 1, "{text}");
    assert_eq!(done[0]["input"], INPUT);
    assert_eq!(&done[0]["item_id"], item_id);
    let item_done = of("response.output_item.done");
    assert!(
        item_done
            .iter()
            .any(|e| e["item"]["type"] == "custom_tool_call" && e["item"]["input"] == INPUT),
        "{text}"
    );
    // No function-call events for the custom call.
    assert!(
        of("response.function_call_arguments.delta")
            .iter()
            .all(|e| &e["item_id"] != item_id)
    );
}

/// Each broken pairing of a custom call with its answer, and the API's error for it: an
/// unanswered call, an answer to a call never issued, and an answer of the other kind
/// either way. A rejected request serves no turn, so one first round serves them all.
#[tokio::test]
async fn each_broken_pairing_of_a_custom_call_gets_the_apis_error() {
    let (server, key) = start().await;
    let (function, custom) = round1(&server, &key).await;
    let (function_id, custom_id) = (&function["call_id"], &custom["call_id"]);
    let id = |value: &Value| value.as_str().unwrap().to_owned();
    let cases = [
        (
            vec![answer("function_call_output", function_id)],
            format!(
                "No tool output found for custom tool call {}.",
                id(custom_id)
            ),
        ),
        (
            vec![
                answer("function_call_output", function_id),
                answer("custom_tool_call_output", custom_id),
                answer("custom_tool_call_output", &json!("call_never_issued")),
            ],
            "No tool call found for custom tool call output with call_id call_never_issued."
                .to_owned(),
        ),
        (
            vec![
                answer("function_call_output", function_id),
                answer("function_call_output", custom_id),
            ],
            format!(
                "No tool call found for function call output with call_id {}.",
                id(custom_id)
            ),
        ),
        (
            vec![
                answer("custom_tool_call_output", function_id),
                answer("custom_tool_call_output", custom_id),
            ],
            format!(
                "No tool call found for custom tool call output with call_id {}.",
                id(function_id)
            ),
        ),
    ];
    for (answers, expected) in cases {
        let mut input = vec![user(), function.clone(), custom.clone()];
        input.extend(answers);
        let reply = post(&server, &key, &stateless(input)).await;
        assert_error(&reply, &expected);
    }
}

#[tokio::test]
async fn a_replayed_custom_call_with_a_function_id_prefix_is_rejected() {
    let (server, key) = start().await;
    let (function, mut custom) = round1(&server, &key).await;
    custom["id"] = json!("fc_not_a_custom_id");
    let input = vec![
        user(),
        function.clone(),
        custom.clone(),
        answer("function_call_output", &function["call_id"]),
        answer("custom_tool_call_output", &custom["call_id"]),
    ];
    let reply = post(&server, &key, &stateless(input)).await;
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert!(
        reply.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ctc"),
        "{}",
        reply.2
    );
}
