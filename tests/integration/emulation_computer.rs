//! Strict emulation of computer calls and client tool searches over real HTTP: the fake
//! issues a `computer_call` (JSON and streamed, whole at its `output_item.done`), accepts
//! its `computer_call_output` screenshot, and answers each broken pairing, and an answer
//! that is no screenshot, with the real API's error; a client `tool_search_call` pairs
//! with its `tool_search_output` the same way, and a hosted search needs no answer.

use loopcheck::server::RunningServer;
use serde_json::{Value, json};

use crate::support::response_text;
use crate::support::stateless_api::{post_json, serve_stateless, stateless_create as stateless};

/// Turn 1: a function call and a computer call with a pending safety check. Turn 2: the
/// final answer.
const SCENARIO: &str = r#"
format: 1
id: emulation/computer
summary: A function call and a computer call in one turn, then the final answer.
level: must
task:
  input:
    - role: user
      content: Check A7's stock, then open the shop page.
  tools:
    - get_stock
    - type: computer
script:
  - output:
      - call: {name: get_stock, arguments: {sku: A7}}
      - computer_call:
          action: {type: click, button: left, x: 10, y: 20}
          pending_safety_checks:
            - {id: cu_sc_1, code: sensitive_domain, message: A shop.}
  - output:
      - message: "A7: 8. The shop page is open."
expect:
  outcome: completed
"#;

const QUESTION: &str = "Check A7's stock, then open the shop page.";
const SCREENSHOT: &str = "data:image/png;base64,iVBORw0KGgo=";

fn user() -> Value {
    json!({"role": "user", "content": QUESTION})
}

async fn start() -> (RunningServer, String) {
    serve_stateless(SCENARIO).await
}

async fn post(server: &RunningServer, key: &str, body: &Value) -> (u16, Value, String) {
    post_json(server, key, "/v1/responses", body).await
}

/// Turn 1, checked: a function_call then a computer_call; returns both items.
async fn round1(server: &RunningServer, key: &str) -> (Value, Value) {
    let (status, response, _) = post(server, key, &stateless(vec![user()])).await;
    assert_eq!(status, 200, "{response}");
    let output = response["output"].as_array().expect("output").clone();
    assert_eq!(output.len(), 2, "{response}");
    let (function, computer) = (output[0].clone(), output[1].clone());
    assert_eq!(function["type"], "function_call");
    assert_eq!(computer["type"], "computer_call");
    assert!(
        computer["id"].as_str().unwrap().starts_with("cu_"),
        "{computer}"
    );
    assert!(
        computer["call_id"].as_str().unwrap().starts_with("call_"),
        "{computer}"
    );
    assert_eq!(
        computer["action"],
        json!({"type": "click", "button": "left", "x": 10, "y": 20})
    );
    assert_eq!(
        computer["pending_safety_checks"],
        json!([{"id": "cu_sc_1", "code": "sensitive_domain", "message": "A shop."}])
    );
    assert_eq!(computer["status"], "completed");
    assert!(computer.get("name").is_none(), "{computer}");
    (function, computer)
}

fn function_answer(call_id: &Value) -> Value {
    json!({"type": "function_call_output", "call_id": call_id, "output": "{\"n\":1}"})
}

fn screenshot(call_id: &Value) -> Value {
    json!({
        "type": "computer_call_output",
        "call_id": call_id,
        "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
    })
}

fn assert_error(reply: &(u16, Value, String), message: &str, param: &str, code: Value) {
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert_eq!(
        reply.1,
        json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})
    );
}

#[tokio::test]
async fn a_computer_call_answered_with_a_screenshot_gets_turn_2() {
    let (server, key) = start().await;
    let (function, computer) = round1(&server, &key).await;
    let mut answered = screenshot(&computer["call_id"]);
    answered["acknowledged_safety_checks"] = computer["pending_safety_checks"].clone();
    let input = vec![
        user(),
        function.clone(),
        computer.clone(),
        function_answer(&function["call_id"]),
        answered,
    ];
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(response_text(&response), "A7: 8. The shop page is open.");
}

/// The API's acknowledgement rule is not settled: a pending check left unacknowledged
/// is accepted, and only the oracle judges it.
#[tokio::test]
async fn a_screenshot_without_acknowledgement_or_image_is_accepted() {
    let (server, key) = start().await;
    let (function, computer) = round1(&server, &key).await;
    let input = vec![
        user(),
        function.clone(),
        computer.clone(),
        function_answer(&function["call_id"]),
        json!({"type": "computer_call_output", "call_id": computer["call_id"], "output": {"type": "computer_screenshot"}}),
    ];
    let (status, _, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn a_computer_call_is_streamed_whole_without_events_of_its_own() {
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
    let for_computer: Vec<&Value> = events.iter().filter(|e| e["output_index"] == 1).collect();
    let kinds: Vec<&str> = for_computer
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["response.output_item.added", "response.output_item.done"],
        "{text}"
    );
    assert_eq!(for_computer[0]["item"]["status"], "in_progress");
    assert_eq!(for_computer[1]["item"]["status"], "completed");
    assert_eq!(
        for_computer[1]["item"]["action"],
        json!({"type": "click", "button": "left", "x": 10, "y": 20})
    );
}

/// Each broken pairing of a computer call with its answer, and the API's error for it: an
/// unanswered call, an answer to a call never issued, an answer of the other kind either
/// way, and an answer whose output is no screenshot. A rejected request serves no turn,
/// so one first round serves them all.
#[tokio::test]
async fn each_broken_pairing_of_a_computer_call_gets_the_apis_error() {
    let (server, key) = start().await;
    let (function, computer) = round1(&server, &key).await;
    let (function_id, computer_id) = (&function["call_id"], &computer["call_id"]);
    let id = |value: &Value| value.as_str().unwrap().to_owned();
    let no_screenshot = |output: Value| json!({"type": "computer_call_output", "call_id": computer_id, "output": output});
    let cases = [
        (
            vec![function_answer(function_id)],
            format!("No tool output found for computer call {}.", id(computer_id)),
            "input",
            Value::Null,
        ),
        (
            vec![
                function_answer(function_id),
                screenshot(computer_id),
                screenshot(&json!("call_never_issued")),
            ],
            "No tool call found for computer call output with call_id call_never_issued."
                .to_owned(),
            "input",
            Value::Null,
        ),
        (
            vec![function_answer(function_id), function_answer(computer_id)],
            format!(
                "No tool call found for function call output with call_id {}.",
                id(computer_id)
            ),
            "input",
            Value::Null,
        ),
        (
            vec![screenshot(function_id), screenshot(computer_id)],
            format!(
                "No tool call found for computer call output with call_id {}.",
                id(function_id)
            ),
            "input",
            Value::Null,
        ),
        (
            vec![
                function_answer(function_id),
                no_screenshot(json!("{\"image_url\": \"data:,\"}")),
            ],
            "Invalid type for 'input[4].output': expected an object of type 'computer_screenshot', but got a string instead.".to_owned(),
            "input[4].output",
            json!("invalid_type"),
        ),
        (
            vec![
                function_answer(function_id),
                no_screenshot(json!({"type": "input_image", "image_url": SCREENSHOT})),
            ],
            "Invalid type for 'input[4].output': expected an object of type 'computer_screenshot', but got an object of another type instead.".to_owned(),
            "input[4].output",
            json!("invalid_type"),
        ),
    ];
    for (answers, expected, param, code) in cases {
        let mut input = vec![user(), function.clone(), computer.clone()];
        input.extend(answers);
        let reply = post(&server, &key, &stateless(input)).await;
        assert_error(&reply, &expected, param, code);
    }
}

#[tokio::test]
async fn a_replayed_computer_call_with_a_function_id_prefix_is_rejected() {
    let (server, key) = start().await;
    let (function, mut computer) = round1(&server, &key).await;
    computer["id"] = json!("fc_not_a_computer_id");
    let input = vec![
        user(),
        function.clone(),
        computer.clone(),
        function_answer(&function["call_id"]),
        screenshot(&computer["call_id"]),
    ];
    let reply = post(&server, &key, &stateless(input)).await;
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert!(
        reply.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'cu'"),
        "{}",
        reply.2
    );
}

/// Turn 1: a client tool search beside a server-executed one and its output. Turn 2: the
/// final answer.
const SEARCH_SCENARIO: &str = r#"
format: 1
id: emulation/tool-search
summary: A client tool search and a hosted one in one turn, then the final answer.
level: must
task:
  input:
    - role: user
      content: Where is SH-204?
  tools:
    - {type: tool_search, execution: client}
    - type: function
      name: track_shipment
      description: Where a shipment is.
      defer_loading: true
      parameters: {type: object, properties: {id: {type: string}}}
script:
  - output:
      - tool_search_call: {arguments: {query: shipment}}
      - tool_search_call: {arguments: {query: shipment}, execution: server}
      - tool_search_output:
          tools: [{type: function, name: track_shipment, defer_loading: true}]
  - output:
      - message: "In Basel."
expect:
  outcome: completed
"#;

/// Turn 1 of the search scenario, checked: the client search, the hosted search and its
/// output.
async fn search_round1(server: &RunningServer, key: &str) -> Vec<Value> {
    let first = json!({"role": "user", "content": "Where is SH-204?"});
    let (status, response, _) = post(server, key, &stateless(vec![first])).await;
    assert_eq!(status, 200, "{response}");
    let output = response["output"].as_array().expect("output").clone();
    assert_eq!(output.len(), 3, "{response}");
    let (client, hosted, loaded) = (&output[0], &output[1], &output[2]);
    assert_eq!(client["type"], "tool_search_call");
    assert!(
        client["id"].as_str().unwrap().starts_with("tsc_"),
        "{client}"
    );
    assert!(
        client["call_id"].as_str().unwrap().starts_with("call_"),
        "{client}"
    );
    assert_eq!(client["execution"], "client");
    assert_eq!(client["arguments"], json!({"query": "shipment"}));
    assert_eq!(hosted["execution"], "server");
    assert!(hosted["call_id"].is_null(), "{hosted}");
    assert_eq!(loaded["type"], "tool_search_output");
    assert!(loaded["call_id"].is_null(), "{loaded}");
    assert_eq!(loaded["tools"][0]["name"], "track_shipment");
    output
}

fn search_answer(call_id: &Value) -> Value {
    json!({"type": "tool_search_output", "call_id": call_id, "execution": "client", "tools": []})
}

#[tokio::test]
async fn a_client_search_answered_beside_a_replayed_hosted_one_gets_turn_2() {
    let (server, key) = serve_stateless(SEARCH_SCENARIO).await;
    let output = search_round1(&server, &key).await;
    let mut input = vec![json!({"role": "user", "content": "Where is SH-204?"})];
    input.extend(output.iter().cloned());
    input.push(search_answer(&output[0]["call_id"]));
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(response_text(&response), "In Basel.");
}

/// Each broken pairing of a client tool search, and the API's error for it. The hosted
/// search, replayed with its output, needs no answer in any of them.
#[tokio::test]
async fn each_broken_pairing_of_a_client_tool_search_gets_the_apis_error() {
    let (server, key) = serve_stateless(SEARCH_SCENARIO).await;
    let output = search_round1(&server, &key).await;
    let call_id = &output[0]["call_id"];
    let id = call_id.as_str().unwrap().to_owned();
    let cases = [
        (
            Vec::new(),
            format!("No tool output found for tool search call {id}."),
            "input",
            Value::Null,
        ),
        (
            vec![search_answer(call_id), search_answer(&json!("call_never_issued"))],
            "No tool call found for tool search call output with call_id call_never_issued."
                .to_owned(),
            "input",
            Value::Null,
        ),
        (
            vec![json!({"type": "function_call_output", "call_id": call_id, "output": "[]"})],
            format!("No tool call found for function call output with call_id {id}."),
            "input",
            Value::Null,
        ),
        (
            vec![json!({"type": "tool_search_output", "call_id": call_id, "tools": "track_shipment"})],
            "Invalid type for 'input[4].tools': expected an array of tools, but got a string instead."
                .to_owned(),
            "input[4].tools",
            json!("invalid_type"),
        ),
    ];
    for (answers, expected, param, code) in cases {
        let mut input = vec![json!({"role": "user", "content": "Where is SH-204?"})];
        input.extend(output.iter().cloned());
        input.extend(answers);
        let reply = post(&server, &key, &stateless(input)).await;
        assert_error(&reply, &expected, param, code);
    }
}
