//! Strict emulation over real HTTP: each rule of the real API that the fake enforces,
//! with the exact status and error envelope, its record in the transcript, and proof that
//! a rejected request does not advance the script (the corrected request that follows it
//! is still answered with turn 2).

use std::sync::Arc;

use loopcheck::scenario::StateMode;
use loopcheck::server::{RunningServer, Session};
use serde_json::{Value, json};

use crate::support::http::Api;
use crate::support::{case_from_yaml, response_text, serve};

/// Turn 1: one reasoning item, then two parallel calls. Turn 2: the final answer.
const SCENARIO: &str = r#"
format: 1
id: emulation/probe
summary: One reasoning item and two parallel stock calls, then the final answer.
level: must
tags: [emulation]
task:
  input:
    - role: user
      content: How many units of A7 and B2 do we have?
  tools: [get_stock]
tools:
  get_stock:
    results:
      - when: {sku: A7}
        result: {sku: A7, available_units: 8}
      - when: {sku: B2}
        result: {sku: B2, available_units: 0}
script:
  - output:
      - reasoning: {summary: Look up both SKUs.}
      - call: {name: get_stock, arguments: {sku: A7}}
      - call: {name: get_stock, arguments: {sku: B2}}
  - output:
      - message: "A7: 8 units. B2: out of stock."
expect:
  outcome: completed
"#;

const SCENARIO_ID: &str = "emulation/probe";
const QUESTION: &str = "How many units of A7 and B2 do we have?";
const FINAL: &str = "A7: 8 units. B2: out of stock.";
const INVALID: &str = "invalid_request_error";

// ---------------------------------------------------------------------------------------
// Helpers

async fn start(state: StateMode) -> (Arc<Session>, RunningServer, String) {
    let (session, server) = serve(&case_from_yaml(SCENARIO), state).await;
    let key = session.api_key().to_owned();
    (session, server, key)
}

/// One HTTP request (with `key` as its bearer key, `body` as it is); the answer's status
/// and JSON body.
async fn send(
    server: &RunningServer,
    method: reqwest::Method,
    path: &str,
    key: Option<&str>,
    body: Option<String>,
) -> (u16, Value) {
    let api = Api::new(&server.base_url(), key);
    let mut request = api.request(method, path);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let reply = api.send(request).await;
    (reply.status, reply.json())
}

async fn post(server: &RunningServer, key: Option<&str>, body: &Value) -> (u16, Value) {
    send(
        server,
        reqwest::Method::POST,
        "/v1/responses",
        key,
        Some(body.to_string()),
    )
    .await
}

async fn get(server: &RunningServer, key: &str, path: &str) -> (u16, Value) {
    send(server, reqwest::Method::GET, path, Some(key), None).await
}

fn user() -> Value {
    json!({"role": "user", "content": QUESTION})
}

/// A stateless request (`store:false`) carrying `input`.
fn stateless(input: Vec<Value>) -> Value {
    json!({
        "model": "gpt-5",
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "input": input,
    })
}

/// A request continuing `previous` with `input`.
fn chained(previous: &str, input: Vec<Value>) -> Value {
    json!({"model": "gpt-5", "previous_response_id": previous, "input": input})
}

/// The first response: reasoning, then two calls.
struct Round1 {
    response: Value,
}

impl Round1 {
    fn id(&self) -> &str {
        self.response["id"].as_str().expect("response id")
    }
    fn reasoning(&self) -> Value {
        self.response["output"][0].clone()
    }
    fn call(&self, i: usize) -> Value {
        self.response["output"][1 + i].clone()
    }
    fn rs_id(&self) -> String {
        self.reasoning()["id"].as_str().expect("rs id").to_owned()
    }
    fn fc_id(&self, i: usize) -> String {
        self.call(i)["id"].as_str().expect("fc id").to_owned()
    }
    fn call_id(&self, i: usize) -> String {
        self.call(i)["call_id"]
            .as_str()
            .expect("call_id")
            .to_owned()
    }
    fn output(&self, i: usize) -> Value {
        json!({"type": "function_call_output", "call_id": self.call_id(i), "output": format!("{{\"n\":{i}}}")})
    }
    /// The complete, correct stateless replay.
    fn full_replay(&self) -> Vec<Value> {
        vec![
            user(),
            self.reasoning(),
            self.call(0),
            self.call(1),
            self.output(0),
            self.output(1),
        ]
    }
}

/// Sends turn 1 (`store` as given) and checks it is the scripted reasoning + two calls.
async fn round1(server: &RunningServer, key: &str, store: bool) -> Round1 {
    let body = json!({
        "model": "gpt-5",
        "store": store,
        "include": ["reasoning.encrypted_content"],
        "input": [user()],
    });
    let (status, response) = post(server, Some(key), &body).await;
    assert_eq!(status, 200, "{response}");
    let kinds: Vec<&str> = response["output"]
        .as_array()
        .expect("output")
        .iter()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["reasoning", "function_call", "function_call"]);
    let round = Round1 { response };
    assert!(round.rs_id().starts_with("rs_"));
    assert!(round.fc_id(0).starts_with("fc_"));
    assert!(round.call_id(0).starts_with("call_"));
    assert_ne!(round.call_id(0), round.call_id(1));
    round
}

/// Asserts the exact error reply.
fn assert_error(
    reply: &(u16, Value),
    status: u16,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
) {
    assert_eq!(reply.0, status, "{}", reply.1);
    assert_eq!(
        reply.1,
        json!({"error": {"message": message, "type": INVALID, "param": param, "code": code}})
    );
}

/// Asserts the last exchange was rejected by `rule` and served no turn.
fn assert_rejected(session: &Session, rule: &str) {
    let transcript = session.transcript();
    let last = transcript.model.last().expect("an exchange");
    assert_eq!(
        last.rejected_by.as_deref(),
        Some(rule),
        "{:?}",
        last.response
    );
    assert_eq!(last.turn, None);
}

/// Asserts `reply` is turn 2 (the final answer) and the transcript says so; `row` names
/// the case in a failure.
fn assert_turn2(row: &str, session: &Session, reply: &(u16, Value)) {
    assert_eq!(reply.0, 200, "{row} {}", reply.1);
    assert_eq!(response_text(&reply.1), FINAL, "{row}");
    let transcript = session.transcript();
    let last = transcript.model.last().expect("an exchange");
    assert_eq!(last.rejected_by, None, "{row}");
    assert_eq!(last.turn, Some(1), "{row}");
}

/// The correct stateless request for turn 2, which must get the final answer.
async fn finish_stateless(
    row: &str,
    session: &Session,
    server: &RunningServer,
    key: &str,
    round: &Round1,
) {
    let reply = post(server, Some(key), &stateless(round.full_replay())).await;
    assert_turn2(row, session, &reply);
}

/// The correct chained request for turn 2, which must get the final answer.
async fn finish_chained(
    row: &str,
    session: &Session,
    server: &RunningServer,
    key: &str,
    round: &Round1,
) {
    let body = chained(round.id(), vec![round.output(0), round.output(1)]);
    let reply = post(server, Some(key), &body).await;
    assert_turn2(row, session, &reply);
}

// ---------------------------------------------------------------------------------------
// Requests rejected by one rule (E1 to E13, id prefixes, part types, duplicates, route)

/// A change to the correct stateless replay of turn 1.
type Edit = fn(&Round1, &mut Vec<Value>);

/// What a rejected request sends.
enum Request {
    /// The correct stateless replay of turn 1 with this edit applied to its input.
    Replay(Edit),
    /// This body.
    Body(fn(&Round1) -> Value),
}

/// One request the fake must reject, sent after turn 1: its exact error, the rule the
/// transcript names, and the correct turn-2 request after it still answered.
struct Rejection {
    name: &'static str,
    /// `Stateless`: turn 1 unstored, turn 2 a full replay. `PreviousResponseId`: turn 1
    /// stored, turn 2 chained to it.
    state: StateMode,
    path: &'static str,
    /// Whether the request carries the session's key (else none at all).
    keyed: bool,
    /// Whether turn 1 is deleted before the request (turn 2 is then a full replay).
    deleted: bool,
    request: Request,
    status: u16,
    code: Option<&'static str>,
    param: Option<&'static str>,
    message: fn(&Round1) -> String,
    rule: &'static str,
}

/// A rejection of a request sent with the session's key to `/v1/responses`, after
/// turn 1 unstored (the modifiers below say otherwise).
fn reject(
    name: &'static str,
    request: Request,
    status: u16,
    code: Option<&'static str>,
    param: Option<&'static str>,
    message: fn(&Round1) -> String,
    rule: &'static str,
) -> Rejection {
    Rejection {
        name,
        state: StateMode::Stateless,
        path: "/v1/responses",
        keyed: true,
        deleted: false,
        request,
        status,
        code,
        param,
        message,
        rule,
    }
}

/// A stateless replay of turn 1 with `edit` applied, rejected with 400 naming `param`.
fn replay(
    name: &'static str,
    edit: Edit,
    code: Option<&'static str>,
    param: &'static str,
    message: fn(&Round1) -> String,
    rule: &'static str,
) -> Rejection {
    reject(
        name,
        Request::Replay(edit),
        400,
        code,
        Some(param),
        message,
        rule,
    )
}

impl Rejection {
    /// Turn 1 stored, and turn 2 chained to it.
    fn chained(self) -> Self {
        Self {
            state: StateMode::PreviousResponseId,
            ..self
        }
    }

    /// Turn 1 deleted before the request.
    fn deleted(self) -> Self {
        Self {
            deleted: true,
            ..self
        }
    }

    /// No key at all.
    fn unkeyed(self) -> Self {
        Self {
            keyed: false,
            ..self
        }
    }

    /// Sent to `path`.
    fn at(self, path: &'static str) -> Self {
        Self { path, ..self }
    }
}

fn previous_not_found(id: &str) -> String {
    format!("Previous response with id '{id}' not found.")
}

/// Both outputs chained to turn 1, which the fake no longer holds (or never stored).
fn chained_to_lost_turn_1(name: &'static str) -> Rejection {
    reject(
        name,
        Request::Body(|round| chained(round.id(), vec![round.output(0), round.output(1)])),
        400,
        Some("previous_response_not_found"),
        Some("previous_response_id"),
        |round| previous_not_found(round.id()),
        "E1",
    )
}

fn no_tool_output(call_id: &str) -> String {
    format!("No tool output found for function call {call_id}.")
}

fn no_tool_call(round: &Round1) -> String {
    format!(
        "No tool call found for function call output with call_id {}.",
        round.fc_id(0)
    )
}

/// An output keyed by the call's item id instead of its call_id.
fn output_keyed_by_item_id(round: &Round1) -> Value {
    json!({"type": "function_call_output", "call_id": round.fc_id(0), "output": "{}"})
}

fn reasoning_without_following_item(round: &Round1) -> String {
    format!(
        "Item '{}' of type 'reasoning' was provided without its required following item.",
        round.rs_id()
    )
}

const UNKNOWN_RESPONSE: &str = "resp_0123456789abcdef0123456789abcdef0123456789abcdef";

/// Turn 1's encrypted content with one byte in its middle changed.
fn tampered(round: &Round1) -> String {
    let original = round.reasoning()["encrypted_content"]
        .as_str()
        .expect("encrypted_content")
        .to_owned();
    assert!(original.starts_with("gAAAA") && original.len() > 20);
    let mut bytes = original.clone().into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).expect("ascii");
    assert_ne!(tampered, original);
    tampered
}

fn duplicate_output(call_id: &str) -> String {
    format!(
        "Duplicate function_call_output for call_id '{call_id}'. Each function_call must have exactly one matching function_call_output"
    )
}

fn item_not_found(id: &str) -> String {
    format!(
        "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
    )
}

fn rejections() -> Vec<Rejection> {
    vec![
        reject(
            "E1: an unknown previous_response_id",
            Request::Body(|round| {
                chained(UNKNOWN_RESPONSE, vec![round.output(0), round.output(1)])
            }),
            400,
            Some("previous_response_not_found"),
            Some("previous_response_id"),
            |_| previous_not_found(UNKNOWN_RESPONSE),
            "E1",
        )
        .chained(),
        chained_to_lost_turn_1("E1: the previous_response_id of an unstored response"),
        reject(
            "E2: previous_response_id without the outputs",
            Request::Body(|round| chained(round.id(), vec![])),
            400,
            None,
            Some("input"),
            |round| no_tool_output(&round.call_id(0)),
            "E2",
        )
        .chained(),
        // Only the first call answered: the second one is reported.
        reject(
            "E2: previous_response_id with the second output missing",
            Request::Body(|round| chained(round.id(), vec![round.output(0)])),
            400,
            None,
            Some("input"),
            |round| no_tool_output(&round.call_id(1)),
            "E2",
        )
        .chained(),
        replay(
            "E2: a stateless replay of a call without its output",
            |_, input| {
                input.pop();
            },
            None,
            "input",
            |round| no_tool_output(&round.call_id(1)),
            "E2",
        ),
        reject(
            "E3: a chained output keyed by the item id",
            Request::Body(|round| {
                chained(
                    round.id(),
                    vec![output_keyed_by_item_id(round), round.output(1)],
                )
            }),
            400,
            None,
            Some("input"),
            no_tool_call,
            "E3",
        )
        .chained(),
        reject(
            "E3: a replayed output keyed by the item id",
            Request::Replay(|round, input| input[4] = output_keyed_by_item_id(round)),
            400,
            None,
            Some("input"),
            no_tool_call,
            "E3",
        )
        .chained(),
        replay(
            "E4: a call with its id replayed without its reasoning",
            |_, input| {
                input.remove(1);
            },
            None,
            "input",
            |round| {
                format!(
                    "Item '{}' of type 'function_call' was provided without its required 'reasoning' item: '{}'.",
                    round.fc_id(0),
                    round.rs_id()
                )
            },
            "E4",
        ),
        replay(
            // The call that followed the reasoning item is dropped.
            "E5: reasoning replayed without the call that followed it",
            |round, input| *input = vec![user(), round.reasoning(), round.call(1), round.output(1)],
            None,
            "input",
            reasoning_without_following_item,
            "E5",
        ),
        replay(
            // The reasoning item is no longer followed by its call.
            "E5: reasoning replayed with its calls reordered",
            |_, input| input.swap(2, 3),
            None,
            "input",
            reasoning_without_following_item,
            "E5",
        ),
        replay(
            "E6: the same item id twice",
            |round, input| input.insert(2, round.reasoning()),
            None,
            "input",
            |round| {
                format!(
                    "Duplicate item found with id {}. Remove duplicate items from your input and try again.",
                    round.rs_id()
                )
            },
            "E6",
        ),
        reject(
            "E7: unstored reasoning without its encrypted content",
            Request::Replay(|_, input| {
                input[1]
                    .as_object_mut()
                    .expect("reasoning object")
                    .remove("encrypted_content");
            }),
            404,
            None,
            None,
            |round| item_not_found(&round.rs_id()),
            "E7",
        ),
        chained_to_lost_turn_1("E1: the previous_response_id of a deleted response")
            .chained()
            .deleted(),
        reject(
            "E7: a reference to an item of a deleted response",
            Request::Replay(|round, input| {
                input[1] = json!({"type": "item_reference", "id": round.rs_id()});
            }),
            404,
            None,
            None,
            |round| item_not_found(&round.rs_id()),
            "E7",
        )
        .chained()
        .deleted(),
        reject(
            "E8: encrypted content altered by one byte",
            Request::Replay(|round, input| {
                input[1]["encrypted_content"] = json!(tampered(round));
            }),
            400,
            Some("invalid_encrypted_content"),
            None,
            |round| {
                let tampered = tampered(round);
                let shown = format!("{}...{}", &tampered[..4], &tampered[tampered.len() - 4..]);
                format!(
                    "The encrypted content {shown} could not be verified. Reason: Encrypted content could not be decrypted or parsed."
                )
            },
            "E8",
        ),
        reject(
            "E9: an unknown model",
            Request::Body(|round| {
                let mut body = stateless(round.full_replay());
                body["model"] = json!("gpt-5.3");
                body
            }),
            400,
            Some("model_not_found"),
            Some("model"),
            |_| "The requested model 'gpt-5.3' does not exist.".to_owned(),
            "E9",
        ),
        reject(
            "E10: no model",
            Request::Body(|round| {
                let mut body = stateless(round.full_replay());
                body.as_object_mut().expect("object").remove("model");
                body
            }),
            400,
            Some("missing_required_parameter"),
            Some("model"),
            |_| "Missing required parameter: 'model'.".to_owned(),
            "E10",
        ),
        reject(
            "E10: a null model",
            Request::Body(|round| {
                let mut body = stateless(round.full_replay());
                body["model"] = Value::Null;
                body
            }),
            400,
            Some("missing_required_parameter"),
            Some("model"),
            |_| "Missing required parameter: 'model'.".to_owned(),
            "E10",
        ),
        reject(
            "E12: no API key",
            Request::Replay(|_, _| {}),
            401,
            None,
            None,
            |_| {
                "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.".to_owned()
            },
            "E12",
        )
        .unkeyed(),
        replay(
            "E13: status on replayed reasoning",
            |_, input| input[1]["status"] = json!("completed"),
            Some("unknown_parameter"),
            "input[1].status",
            |_| "Unknown parameter: 'input[1].status'.".to_owned(),
            "E13",
        ),
        replay(
            // A model dump of an output item carries `status: null`; the API rejects that too.
            "E13: a null status on replayed reasoning",
            |_, input| input[1]["status"] = Value::Null,
            Some("unknown_parameter"),
            "input[1].status",
            |_| "Unknown parameter: 'input[1].status'.".to_owned(),
            "E13",
        ),
        replay(
            "E13: an unknown key on a replayed call",
            |_, input| input[2]["parsed_arguments"] = json!({"sku": "A7"}),
            Some("unknown_parameter"),
            "input[2].parsed_arguments",
            |_| "Unknown parameter: 'input[2].parsed_arguments'.".to_owned(),
            "E13",
        ),
        replay(
            "a call_id sent as the item id",
            |round, input| input[3]["id"] = json!(round.call_id(1)),
            Some("invalid_value"),
            "input[3].id",
            |round| {
                format!(
                    "Invalid 'input[3].id': '{}'. Expected an ID that begins with 'fc'.",
                    round.call_id(1)
                )
            },
            "id-prefix",
        ),
        replay(
            "a function_call item id without the fc prefix",
            |_, input| input[2]["id"] = json!("item_0001"),
            Some("invalid_value"),
            "input[2].id",
            |_| {
                "Invalid 'input[2].id': 'item_0001'. Expected an ID that begins with 'fc'."
                    .to_owned()
            },
            "id-prefix",
        ),
        replay(
            // A message wrapped in a message: the API cannot read its parts.
            "a message's content part without its type",
            |_, input| {
                input[0]["content"] =
                    json!([{"type": "input_text", "text": "a"}, {"role": "user", "content": "b"}]);
            },
            Some("missing_required_parameter"),
            "input[0].content[1].type",
            |_| "Missing required parameter: 'input[0].content[1].type'.".to_owned(),
            "part-type",
        ),
        replay(
            "a call's output given as parts without their type",
            |_, input| input[5]["output"] = json!([{"text": "{\"n\":1}"}]),
            Some("missing_required_parameter"),
            "input[5].output[0].type",
            |_| "Missing required parameter: 'input[5].output[0].type'.".to_owned(),
            "part-type",
        ),
        replay(
            "two outputs for one call in a stateless replay",
            |round, input| input.push(round.output(0)),
            None,
            "input",
            |round| duplicate_output(&round.call_id(0)),
            "duplicate-output",
        ),
        reject(
            "an unknown route",
            Request::Replay(|_, _| {}),
            404,
            None,
            None,
            |_| "Invalid URL (POST /v1/nope)".to_owned(),
            "route",
        )
        .at("/v1/nope"),
    ]
}

/// Each row's request gets exactly its error, is recorded as rejected by its rule and
/// serves no turn, and the correct request after it still gets turn 2.
#[tokio::test]
async fn each_broken_rule_gets_the_apis_exact_error_and_uses_up_no_turn() {
    for row in rejections() {
        let name = row.name;
        let (session, server, key) = start(row.state).await;
        let chaining = row.state == StateMode::PreviousResponseId;
        let round = round1(&server, &key, chaining).await;
        if row.deleted {
            let path = format!("/v1/responses/{}", round.id());
            let deleted = send(&server, reqwest::Method::DELETE, &path, Some(&key), None).await;
            let gone = json!({"id": round.id(), "object": "response", "deleted": true});
            assert_eq!(deleted, (200, gone), "{name}: deleting turn 1");
        }
        let body = match row.request {
            Request::Replay(edit) => {
                let mut input = round.full_replay();
                edit(&round, &mut input);
                stateless(input)
            }
            Request::Body(body) => body(&round),
        };
        let sent_key = row.keyed.then_some(key.as_str());
        let (status, reply) = send(
            &server,
            reqwest::Method::POST,
            row.path,
            sent_key,
            Some(body.to_string()),
        )
        .await;
        assert_eq!(status, row.status, "{name}: {reply}");
        let error = json!({"error": {
            "message": (row.message)(&round),
            "type": INVALID,
            "param": row.param,
            "code": row.code,
        }});
        assert_eq!(reply, error, "{name}");
        let transcript = session.transcript();
        let last = transcript.model.last().expect("an exchange");
        assert_eq!(last.rejected_by.as_deref(), Some(row.rule), "{name}");
        assert_eq!(last.turn, None, "{name}");
        if chaining && !row.deleted {
            finish_chained(name, &session, &server, &key, &round).await;
        } else {
            finish_stateless(name, &session, &server, &key, &round).await;
        }
    }
}

// ---------------------------------------------------------------------------------------
// E7, E11

#[tokio::test]
async fn e7_item_reference_to_unknown_id() {
    let (session, server, key) = start(StateMode::PreviousResponseId).await;
    let round = round1(&server, &key, true).await;
    let unknown = "msg_0123456789abcdef0123456789abcdef0123456789abcdef";
    let reference = |id: &str| json!({"type": "item_reference", "id": id});
    let input = vec![user(), reference(unknown), round.output(0), round.output(1)];
    let reply = post(&server, Some(&key), &stateless(input)).await;
    assert_error(&reply, 404, None, None, &item_not_found(unknown));
    assert_rejected(&session, "E7");

    // References to the stored items resolve.
    let input = vec![
        user(),
        reference(&round.rs_id()),
        reference(&round.fc_id(0)),
        reference(&round.fc_id(1)),
        round.output(0),
        round.output(1),
    ];
    let reply = post(&server, Some(&key), &stateless(input)).await;
    assert_turn2("", &session, &reply);
}

#[tokio::test]
async fn e11_wrong_api_key() {
    let (session, server, key) = start(StateMode::Stateless).await;
    let round = round1(&server, &key, false).await;
    // The real API shows the first 8 characters and the last 4 (e.g. `sk-WRQsP***…xQBt`).
    for (wrong, masked) in [
        ("sk-proj-notTheSessionKeyAtAll0123MxYA", "sk-proj-****MxYA"),
        ("sk-WRQsPnotTheSessionKeyAtAll0xQBt", "sk-WRQsP****xQBt"),
    ] {
        let reply = post(&server, Some(wrong), &stateless(round.full_replay())).await;
        assert_error(
            &reply,
            401,
            Some("invalid_api_key"),
            None,
            &format!(
                "Incorrect API key provided: {masked}. You can find your API key at https://platform.openai.com/account/api-keys."
            ),
        );
        assert_rejected(&session, "E11");
    }
    let wrong = "sk-proj-notTheSessionKeyAtAll0123MxYA";
    // The key itself reaches neither the client nor the transcript.
    let transcript = session.transcript();
    let last = transcript.model.last().expect("an exchange");
    assert_eq!(
        last.headers.get("authorization").map(String::as_str),
        Some("[redacted]")
    );
    assert!(
        !serde_json::to_string(&transcript)
            .expect("serializes")
            .contains(wrong)
    );
    finish_stateless("", &session, &server, &key, &round).await;
}

// ---------------------------------------------------------------------------------------
// E13, id prefixes

// ---------------------------------------------------------------------------------------
// Body, route, script

#[tokio::test]
async fn body_that_is_not_json() {
    let (session, server, key) = start(StateMode::Stateless).await;
    let round = round1(&server, &key, false).await;
    let raw = "{\"model\": \"gpt-5\", \"input\": [";
    let reply = send(
        &server,
        reqwest::Method::POST,
        "/v1/responses",
        Some(&key),
        Some(raw.to_owned()),
    )
    .await;
    assert_eq!(reply.0, 400, "{}", reply.1);
    let error = &reply.1["error"];
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .starts_with("We could not parse the JSON body of your request."),
        "{error}"
    );
    assert_eq!(error["type"], INVALID);
    assert_eq!(error["param"], Value::Null);
    assert_eq!(error["code"], Value::Null);
    assert_eq!(error.as_object().expect("object").len(), 4);
    assert_rejected(&session, "parse");
    let transcript = session.transcript();
    let last = transcript.model.last().expect("an exchange");
    assert!(last.body_unparsed);
    assert_eq!(last.body, json!(raw));
    finish_stateless("", &session, &server, &key, &round).await;
}

#[tokio::test]
async fn request_beyond_the_script() {
    let (session, server, key) = start(StateMode::Stateless).await;
    let round = round1(&server, &key, false).await;
    finish_stateless("", &session, &server, &key, &round).await;
    let reply = post(&server, Some(&key), &stateless(round.full_replay())).await;
    assert_error(
        &reply,
        400,
        Some("script_exhausted"),
        None,
        &format!(
            "loopcheck: the script of scenario '{SCENARIO_ID}' is exhausted: all 2 scripted model turns were already served, so this request has no scripted answer (a correct controller stops at the final answer or at max_rounds)."
        ),
    );
    assert_rejected(&session, "script");
}

// ---------------------------------------------------------------------------------------
// Positive controls

#[tokio::test]
async fn correct_stateless_replay_is_accepted() {
    let (session, server, key) = start(StateMode::Stateless).await;
    let round = round1(&server, &key, false).await;
    finish_stateless("", &session, &server, &key, &round).await;
    let transcript = session.transcript();
    let turns: Vec<Option<usize>> = transcript.model.iter().map(|x| x.turn).collect();
    assert_eq!(turns, [Some(0), Some(1)]);
    assert!(transcript.model.iter().all(|x| x.rejected_by.is_none()));
}

/// Stateless replays the real API accepts, each a correct replay with one edit: (name,
/// edit). Each gets turn 2.
const ACCEPTED: &[(&str, Edit)] = &[
    ("content parts with their types", |_, input| {
        input[0] = json!({"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]});
        input[5]["output"] = json!([{"type": "input_text", "text": "{\"n\":1}"}]);
    }),
    // The real API accepts this silently; judging the lost reasoning is the oracle's job.
    (
        "calls without their item ids, and no reasoning",
        |round, input| {
            let bare = |i: usize| {
                let mut call = round.call(i);
                call.as_object_mut().expect("call object").remove("id");
                call
            };
            *input = vec![user(), bare(0), bare(1), round.output(0), round.output(1)];
        },
    ),
];

#[tokio::test]
async fn replays_the_api_accepts_get_turn_2() {
    for &(name, edit) in ACCEPTED {
        let (session, server, key) = start(StateMode::Stateless).await;
        let round = round1(&server, &key, false).await;
        let mut input = round.full_replay();
        edit(&round, &mut input);
        let reply = post(&server, Some(&key), &stateless(input)).await;
        assert_turn2(name, &session, &reply);
    }
}

#[tokio::test]
async fn retrieve_list_input_items_and_delete() {
    let (session, server, key) = start(StateMode::PreviousResponseId).await;
    let round = round1(&server, &key, true).await;
    let path = format!("/v1/responses/{}", round.id());

    let (status, stored) = get(&server, &key, &path).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored, round.response);

    // Turn 2 chained, so its input items are the two outputs.
    finish_chained("", &session, &server, &key, &round).await;
    let second = session
        .transcript()
        .model
        .last()
        .expect("turn 2")
        .response
        .clone();
    let second_id = second["id"].as_str().expect("id").to_owned();

    let (status, list) = get(&server, &key, &format!("{path}/input_items")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["object"], "list");
    assert_eq!(list["has_more"], false);
    let data = list["data"].as_array().expect("data");
    assert_eq!(data.len(), 1);
    assert_eq!(data[0]["role"], "user");
    assert_eq!(data[0]["content"], QUESTION);
    let user_id = data[0]["id"].as_str().expect("input items carry ids");
    assert!(user_id.starts_with("msg_"), "{user_id}");
    assert_eq!(list["first_id"], user_id);
    assert_eq!(list["last_id"], user_id);

    let items = format!("/v1/responses/{second_id}/input_items");
    let (status, list) = get(&server, &key, &format!("{items}?order=asc")).await;
    assert_eq!(status, 200, "{list}");
    let call_ids: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|item| {
            assert_eq!(item["type"], "function_call_output");
            assert!(item["id"].is_string(), "{item}");
            item["call_id"].as_str().expect("call_id")
        })
        .collect();
    assert_eq!(call_ids, [round.call_id(0), round.call_id(1)]);
    assert_eq!(list["has_more"], false);
    let (status, page) = get(&server, &key, &format!("{items}?order=asc&limit=1")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["object"], "list");
    assert_eq!(page["has_more"], true);
    assert_eq!(page["data"].as_array().expect("data").len(), 1);
    assert_eq!(page["data"][0]["call_id"], round.call_id(0).as_str());

    let deleted = send(&server, reqwest::Method::DELETE, &path, Some(&key), None).await;
    assert_eq!(
        deleted,
        (
            200,
            json!({"id": round.id(), "object": "response", "deleted": true})
        )
    );

    let not_found = format!("Response with id '{}' not found.", round.id());
    let reply = get(&server, &key, &path).await;
    assert_error(&reply, 404, None, None, &not_found);
    assert_rejected(&session, "not-found");
    let reply = get(&server, &key, &format!("{path}/input_items")).await;
    assert_error(&reply, 404, None, None, &not_found);
    let reply = send(&server, reqwest::Method::DELETE, &path, Some(&key), None).await;
    assert_error(&reply, 404, None, None, &not_found);

    // None of this advanced the script: turn 2 was the last one served.
    let transcript = session.transcript();
    let turns: Vec<usize> = transcript.model.iter().filter_map(|x| x.turn).collect();
    assert_eq!(turns, [0, 1]);
}

// ---------------------------------------------------------------------------------------
// Order of the checks

/// A request breaking several rules is rejected by the first in order: auth, JSON parse,
/// model, previous_response_id, per-item input checks, then the context checks.
#[tokio::test]
async fn the_first_failing_check_wins() {
    let (session, server, key) = start(StateMode::PreviousResponseId).await;
    let round = round1(&server, &key, true).await;
    let raw = Some("not json".to_owned());
    let path = "/v1/responses";

    let reply = send(&server, reqwest::Method::POST, path, None, raw.clone()).await;
    assert_eq!(reply.0, 401, "{}", reply.1);
    assert_rejected(&session, "E12");
    let reply = send(
        &server,
        reqwest::Method::POST,
        path,
        Some("sk-wrong-key-0000"),
        raw.clone(),
    )
    .await;
    assert_eq!(reply.0, 401, "{}", reply.1);
    assert_rejected(&session, "E11");
    let reply = send(&server, reqwest::Method::POST, path, Some(&key), raw).await;
    assert_eq!(reply.0, 400, "{}", reply.1);
    assert_rejected(&session, "parse");

    // Missing model beats an unknown previous_response_id.
    let mut body = chained("resp_unknown", vec![]);
    body.as_object_mut().expect("object").remove("model");
    post(&server, Some(&key), &body).await;
    assert_rejected(&session, "E10");

    // An unknown previous_response_id beats a bad input item.
    let mut reasoning = round.reasoning();
    reasoning["status"] = json!("completed");
    post(
        &server,
        Some(&key),
        &chained("resp_unknown", vec![reasoning]),
    )
    .await;
    assert_rejected(&session, "E1");

    // Per-item checks (E7 here) beat the context checks (E4, E2).
    let mut input = round.full_replay();
    input[1]["id"] = json!("rs_0123456789abcdef0123456789abcdef0123456789abcdef");
    input[1]
        .as_object_mut()
        .expect("object")
        .remove("encrypted_content");
    input.truncate(3);
    let reply = post(&server, Some(&key), &stateless(input)).await;
    assert_eq!(reply.0, 404, "{}", reply.1);
    assert_rejected(&session, "E7");

    // E4 beats E3 and E2.
    let stray = json!({"type": "function_call_output", "call_id": "call_nope", "output": "{}"});
    let input = vec![user(), round.call(0), stray];
    post(&server, Some(&key), &stateless(input)).await;
    assert_rejected(&session, "E4");

    // E5 beats E3 and E2.
    let stray = json!({"type": "function_call_output", "call_id": "call_nope", "output": "{}"});
    let input = vec![user(), round.reasoning(), round.call(1), stray];
    post(&server, Some(&key), &stateless(input)).await;
    assert_rejected(&session, "E5");

    // E3 beats E2.
    let stray = json!({"type": "function_call_output", "call_id": "call_nope", "output": "{}"});
    post(&server, Some(&key), &chained(round.id(), vec![stray])).await;
    assert_rejected(&session, "E3");

    finish_chained("", &session, &server, &key, &round).await;
}

#[tokio::test]
async fn an_output_sent_again_after_its_chain_stored_it() {
    let (session, server, key) = start(StateMode::PreviousResponseId).await;
    let round = round1(&server, &key, true).await;
    let both = vec![round.output(0), round.output(1)];
    let (status, second) = post(&server, Some(&key), &chained(round.id(), both)).await;
    assert_eq!(status, 200, "{second}");
    let again = vec![round.output(0)];
    let second_id = second["id"].as_str().expect("id");
    let reply = post(&server, Some(&key), &chained(second_id, again)).await;
    let expected = duplicate_output(&round.call_id(0));
    assert_error(&reply, 400, None, Some("input"), &expected);
    assert_rejected(&session, "duplicate-output");
}

/// A streamed reasoning item is announced in `response.output_item.added` with a partial
/// `encrypted_content` (the SDK types: it "may be incomplete"; take the item from
/// `response.output_item.done`), and with no summary yet. The done item is the one the
/// terminal response carries; a replay of the added one is refused as tampered content
/// (E8), a replay of the done one continues the script.
#[tokio::test]
async fn a_streamed_reasoning_item_is_whole_only_when_done() {
    let (session, server, key) = start(StateMode::Stateless).await;
    let api = Api::new(&server.base_url(), Some(&key));
    let mut body = stateless(vec![user()]);
    // The content is populated by default: the stream is asked without `include`.
    body.as_object_mut().expect("object").remove("include");
    body["stream"] = json!(true);
    let request = api
        .request(reqwest::Method::POST, "/v1/responses")
        .header("content-type", "application/json")
        .body(body.to_string());
    let streamed = crate::support::sse::Streamed::read(request).await;
    assert_eq!(streamed.status, 200);
    let events = streamed.events();
    let item_event = |kind: &str| {
        events
            .iter()
            .find(|e| e["type"] == kind && e["item"]["type"] == "reasoning")
            .map(|e| e["item"].clone())
            .expect("a reasoning item event")
    };
    let (added, done) = (
        item_event("response.output_item.added"),
        item_event("response.output_item.done"),
    );
    let response = events.last().expect("events")["response"].clone();
    assert_eq!(response["output"][0], done);
    assert_eq!(added["id"], done["id"]);
    assert_eq!(added["summary"], json!([]));
    assert_eq!(done["summary"][0]["text"], "Look up both SKUs.");
    let (partial, whole) = (
        added["encrypted_content"]
            .as_str()
            .expect("partial content"),
        done["encrypted_content"].as_str().expect("whole content"),
    );
    assert!(!partial.is_empty() && partial.len() < whole.len());
    assert!(whole.starts_with(partial));

    let round = Round1 { response };
    let mut input = round.full_replay();
    input[1] = added;
    let reply = post(&server, Some(&key), &stateless(input)).await;
    assert_eq!(reply.0, 400, "{}", reply.1);
    assert_eq!(reply.1["error"]["code"], "invalid_encrypted_content");
    assert_rejected(&session, "E8");
    finish_stateless("the done item", &session, &server, &key, &round).await;
}
