//! Strict emulation of MCP approval requests and hosted tools' items over real HTTP: the
//! fake issues `mcp_approval_request` and hosted items (JSON and streamed, with their
//! progress events), pairs an `mcp_approval_response` with its request by
//! `approval_request_id`, refuses one that names no request, and takes what the API is
//! not known to refuse (a request left undecided, two decisions on one request, an
//! altered hosted item).

use loopcheck::server::RunningServer;
use serde_json::{Value, json};

use crate::support::response_text;
use crate::support::stateless_api::{post_json, serve_stateless, stateless_create as stateless};

/// Turn 1: a web search, an MCP tool list and an approval request. Turn 2: the MCP call
/// the server ran, and the final answer.
const SCENARIO: &str = r#"
format: 1
id: emulation/mcp
summary: Hosted items and an MCP approval request, then the MCP call and the answer.
level: must
task:
  input:
    - role: user
      content: Search the web, then open an issue.
  tools:
    - type: web_search
    - type: mcp
      server_label: github
      server_url: https://mcp.example.com/github
      require_approval: always
script:
  - output:
      - hosted:
          type: web_search_call
          action: {type: search, query: checkout timeout}
      - hosted:
          type: mcp_list_tools
          server_label: github
          tools: [{name: create_issue, input_schema: {type: object}}]
      - mcp_approval:
          server_label: github
          name: create_issue
          arguments: {title: Checkout times out}
  - output:
      - hosted:
          type: mcp_call
          server_label: github
          name: create_issue
          arguments: {title: Checkout times out}
          error: {type: http_error, code: 502, message: Bad gateway}
      - message: The issue could not be opened.
expect:
  outcome: completed
"#;

const QUESTION: &str = "Search the web, then open an issue.";

fn user() -> Value {
    json!({"role": "user", "content": QUESTION})
}

async fn start() -> (RunningServer, String) {
    serve_stateless(SCENARIO).await
}

async fn post(server: &RunningServer, key: &str, body: &Value) -> (u16, Value, String) {
    post_json(server, key, "/v1/responses", body).await
}

/// Turn 1, checked; its three items.
async fn round1(server: &RunningServer, key: &str) -> Vec<Value> {
    let (status, response, _) = post(server, key, &stateless(vec![user()])).await;
    assert_eq!(status, 200, "{response}");
    let output = response["output"].as_array().expect("output").clone();
    assert_eq!(output.len(), 3, "{response}");
    let (search, list, request) = (&output[0], &output[1], &output[2]);
    assert_eq!(search["type"], "web_search_call");
    assert!(
        search["id"].as_str().unwrap().starts_with("ws_"),
        "{search}"
    );
    assert_eq!(search["status"], "completed");
    assert_eq!(search["action"]["query"], "checkout timeout");
    assert_eq!(list["type"], "mcp_list_tools");
    assert!(list["id"].as_str().unwrap().starts_with("mcpl_"), "{list}");
    assert!(
        list.get("status").is_none(),
        "mcp_list_tools has no status: {list}"
    );
    assert_eq!(list["tools"][0]["name"], "create_issue");
    assert_eq!(request["type"], "mcp_approval_request");
    assert!(
        request["id"].as_str().unwrap().starts_with("mcpr_"),
        "{request}"
    );
    assert_eq!(request["server_label"], "github");
    assert_eq!(request["name"], "create_issue");
    assert_eq!(request["arguments"], r#"{"title":"Checkout times out"}"#);
    output
}

fn decision(id: &Value, approve: bool) -> Value {
    json!({"type": "mcp_approval_response", "approval_request_id": id, "approve": approve})
}

#[tokio::test]
async fn an_approved_request_gets_the_mcp_call_and_the_answer() {
    let (server, key) = start().await;
    let mut input = vec![user()];
    input.extend(round1(&server, &key).await);
    let id = input[3]["id"].clone();
    input.push(decision(&id, true));
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
    let call = &response["output"][0];
    assert_eq!(call["type"], "mcp_call");
    assert!(call["id"].as_str().unwrap().starts_with("mcp_"), "{call}");
    assert_eq!(call["arguments"], r#"{"title":"Checkout times out"}"#);
    assert_eq!(call["error"]["code"], 502);
    // The call names the request it ran on.
    assert_eq!(call["approval_request_id"], id, "{call}");
    assert_eq!(response_text(&response), "The issue could not be opened.");
}

#[tokio::test]
async fn a_response_naming_no_request_is_refused() {
    let (server, key) = start().await;
    let mut input = vec![user()];
    input.extend(round1(&server, &key).await);
    input.push(decision(&json!("mcpr_unknown"), true));
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(
        response,
        json!({"error": {
            "message": "No approval request found for mcp_approval_response with approval_request_id mcpr_unknown.",
            "type": "invalid_request_error", "param": "input", "code": null}})
    );
}

#[tokio::test]
async fn an_undecided_request_and_two_decisions_are_taken() {
    let (server, key) = start().await;
    let items = round1(&server, &key).await;
    // The model simply goes on when a request is left undecided.
    let mut undecided = vec![user()];
    undecided.extend(items.clone());
    undecided.push(json!({"role": "user", "content": "Never mind."}));
    let (status, _, text) = post(&server, &key, &stateless(undecided)).await;
    assert_eq!(status, 200, "{text}");
    // What the API answers two decisions on one request is not known: taken.
    let (server, key) = start().await;
    let items = round1(&server, &key).await;
    let id2 = items[2]["id"].clone();
    let mut twice = vec![user()];
    twice.extend(items);
    twice.push(decision(&id2, true));
    twice.push(decision(&id2, false));
    let (status, _, text) = post(&server, &key, &stateless(twice)).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn a_decision_carries_only_the_fields_of_its_sdk_type() {
    let (server, key) = start().await;
    let mut input = vec![user()];
    input.extend(round1(&server, &key).await);
    let mut answer = decision(&input[3]["id"], false);
    answer["call_id"] = input[3]["id"].clone();
    input.push(answer);
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(response["error"]["param"], "input[4].call_id", "{text}");
}

#[tokio::test]
async fn an_altered_hosted_item_is_taken() {
    let (server, key) = start().await;
    let mut input = vec![user()];
    input.extend(round1(&server, &key).await);
    input[1]["action"]["query"] = json!("checkout");
    let id = input[3]["id"].clone();
    input.push(decision(&id, true));
    let (status, _, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn hosted_items_stream_with_their_progress_events() {
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
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let search = events
        .iter()
        .find(|e| e["type"] == "response.output_item.added" && e["output_index"] == 0)
        .expect("the search is announced");
    assert_eq!(search["item"]["status"], "in_progress");
    let from = |kind: &str| types.iter().position(|t| *t == kind).expect(kind);
    assert!(
        from("response.web_search_call.in_progress") < from("response.web_search_call.searching")
    );
    assert!(
        from("response.web_search_call.searching") < from("response.web_search_call.completed")
    );
    assert!(
        from("response.mcp_list_tools.in_progress") < from("response.mcp_list_tools.completed")
    );
    let searching = &events[from("response.web_search_call.searching")];
    assert_eq!(searching["item_id"], search["item"]["id"]);
    assert_eq!(searching["output_index"], 0);
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["output_index"] == 0)
        .expect("the search is done");
    assert_eq!(done["item"]["status"], "completed");
    let request = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["output_index"] == 2)
        .expect("the approval request is done");
    assert_eq!(request["item"]["type"], "mcp_approval_request");
}

#[tokio::test]
async fn an_mcp_call_with_an_error_streams_its_failed_event() {
    let (server, key) = start().await;
    let mut input = vec![user()];
    input.extend(round1(&server, &key).await);
    let id = input[3]["id"].clone();
    input.push(decision(&id, true));
    let mut body = stateless(input);
    body["stream"] = json!(true);
    let (status, _, text) = post(&server, &key, &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("event: response.mcp_call.in_progress"),
        "{text}"
    );
    assert!(text.contains("event: response.mcp_call.failed"), "{text}");
    assert!(
        !text.contains("event: response.mcp_call.completed"),
        "{text}"
    );
}
