//! Property tests of loopcheck itself (proptest):
//! - no false positives: the Rust reference is never judged `fail` on a generated case;
//! - scenario files round-trip through YAML and JSON;
//! - the fake server's pairing rules agree with a small independent model of the real
//!   API's (every call answered once, outputs only for issued calls, reasoning followed by
//!   its item, no duplicate items) on generated requests;
//! - robustness: arbitrary bytes as a scenario file give a `file:line:col` error, and
//!   arbitrary requests to the fake server a real-API-shaped error, never a panic or a
//!   hang.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::AUTHORIZATION;
use loopcheck::fuzz::strategy::{Profile, plans};
use loopcheck::oracle::CaseVerdict;
use loopcheck::scenario::{Case, StateMode, parse};
use loopcheck::server::{EngineRequest, HeaderMap, ReplyBody, Session};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::support::case_from_yaml;

/// Everything the generator can use: what the Rust reference supports.
fn profile() -> Profile {
    Profile {
        supports: [
            "previous_response_id",
            "stateless",
            "conversation",
            "stream",
            "websocket",
            "programmatic",
            "approvals",
            "custom",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        max_turns: 4,
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn the_reference_is_never_judged_fail_on_a_generated_case() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runner(64)
        .run(&plans(&profile()), |plan| {
            let case = Case {
                scenario: plan.scenario("fuzz/property", "A generated case."),
                source: "fuzz/property.yaml".into(),
            };
            let report = runtime.block_on(loopcheck::runner::run_in_process(
                &case,
                plan.state,
                Duration::from_secs(20),
                |env, task| async move {
                    let task: loopcheck_reference::Task =
                        serde_json::from_value(task).expect("the task file reads");
                    let env = loopcheck_reference::ControllerEnv {
                        base_url: env.base_url,
                        api_key: env.api_key,
                        tools_url: env.tools_url,
                    };
                    serde_json::to_value(loopcheck_reference::run(&env, &task).await)
                        .expect("the outcome serializes")
                },
            ));
            let failing: Vec<String> = report
                .checks
                .iter()
                .filter(|c| c.verdict != loopcheck::oracle::CheckVerdict::Pass)
                .map(|c| format!("{} {}: {}", c.verdict.as_str(), c.id, c.message))
                .collect();
            prop_assert!(
                matches!(report.verdict, CaseVerdict::Pass),
                "{:?} for plan {plan:#?}:\n{}",
                report.verdict,
                failing.join("\n")
            );
            Ok(())
        })
        .unwrap();
}

/// Cases over the socket, with the server closing the connection between turns, are
/// generated for a controller that declares `websocket`, and only for one.
#[test]
fn socket_cases_with_server_closes_are_generated_only_for_websocket_controllers() {
    use proptest::strategy::ValueTree;
    let count = |profile: &Profile| {
        let mut runner = runner(1);
        let strategy = plans(profile);
        let (mut sockets, mut closes) = (0, 0);
        for _ in 0..300 {
            let scenario = strategy
                .new_tree(&mut runner)
                .unwrap()
                .current()
                .scenario("fuzz/count", "A generated case.");
            sockets += usize::from(scenario.task.websocket);
            closes += scenario
                .script
                .iter()
                .filter(|turn| turn.close_connection)
                .count();
        }
        (sockets, closes)
    };
    let (sockets, closes) = count(&profile());
    assert!(
        sockets > 30 && closes > 5,
        "{sockets} socket cases, {closes} closes"
    );
    let mut http_only = profile();
    http_only.supports.remove("websocket");
    assert_eq!(count(&http_only), (0, 0));
}

/// The output the fake has only lately sent is drawn too: custom tool calls (valid, and
/// breaking their grammar) for a controller that declares `custom` and only for one,
/// citations and reasoning text for any, and the content filter's incomplete ending;
/// and every such case is a valid scenario.
#[test]
fn generated_cases_draw_custom_calls_citations_reasoning_text_and_the_content_filter() {
    use loopcheck::scenario::{Annotation, MessageSpec, OutputSpec};
    use proptest::strategy::ValueTree;
    #[derive(Debug, Default, PartialEq)]
    struct Seen {
        valid_custom: usize,
        broken_custom: usize,
        cited: usize,
        reasoning_text: usize,
        filtered: usize,
    }
    let count = |profile: &Profile| {
        let mut runner = runner(1);
        let strategy = plans(profile);
        let mut seen = Seen::default();
        for _ in 0..300 {
            let scenario = strategy
                .new_tree(&mut runner)
                .unwrap()
                .current()
                .scenario("fuzz/count", "A generated case.");
            let yaml = serde_saphyr::to_string(&scenario).expect("a scenario serializes");
            parse(Path::new("fuzz/count.yaml"), &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
            let custom_tool = scenario.task.tools.iter().any(|tool| {
                matches!(tool, loopcheck::scenario::ToolRef::Inline(def) if def["type"] == "custom")
            });
            for turn in &scenario.script {
                for item in &turn.output {
                    match item {
                        OutputSpec::CustomCall(call) => {
                            assert!(custom_tool, "a custom call without the custom tool");
                            if call.input == "a7; drop" {
                                seen.broken_custom += 1;
                            } else {
                                seen.valid_custom += 1;
                            }
                        }
                        OutputSpec::Message(MessageSpec::Full(message))
                            if message
                                .annotations
                                .iter()
                                .any(|a| matches!(a, Annotation::UrlCitation { .. })) =>
                        {
                            seen.cited += 1
                        }
                        OutputSpec::Reasoning(reasoning) if reasoning.text.is_some() => {
                            seen.reasoning_text += 1
                        }
                        _ => {}
                    }
                }
                seen.filtered +=
                    usize::from(turn.incomplete_reason.as_deref() == Some("content_filter"));
            }
        }
        seen
    };
    let seen = count(&profile());
    assert!(
        seen.valid_custom > 10
            && seen.broken_custom > 3
            && seen.cited > 10
            && seen.reasoning_text > 10
            && seen.filtered > 3,
        "{seen:?}"
    );
    let mut without_custom = profile();
    without_custom.supports.remove("custom");
    let seen = count(&without_custom);
    assert_eq!((seen.valid_custom, seen.broken_custom), (0, 0));
    assert!(seen.cited > 10 && seen.reasoning_text > 10, "{seen:?}");
}

#[test]
fn scenarios_round_trip_through_yaml_and_json() {
    runner(256)
        .run(&plans(&profile()), |plan| {
            let scenario = plan.scenario("fuzz/round-trip", "A generated case.");
            let yaml = serde_saphyr::to_string(&scenario).unwrap();
            let from_yaml = parse(Path::new("case.yaml"), &yaml)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
            prop_assert_eq!(&from_yaml, &scenario);
            let json = serde_json::to_string_pretty(&scenario).unwrap();
            let from_json = parse(Path::new("case.json"), &json)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{json}")))?;
            prop_assert_eq!(&from_json, &scenario);
            Ok(())
        })
        .unwrap();
}

/// One turn of reasoning and two calls, then an answer: the context the pairing model
/// judges a second request in.
const PAIRS: &str = r#"
format: 1
id: property/01-pairs
summary: Reasoning and two calls, then an answer.
level: must
task: {input: "A1 and B2?", tools: [get_stock]}
states: [stateless, previous_response_id]
script:
  - output:
      - reasoning: {summary: "Two lookups."}
      - call: {name: get_stock, arguments: {sku: A1}}
      - call: {name: get_stock, arguments: {sku: B2}}
  - output: [{message: "Done."}]
expect: {outcome: completed}
"#;

/// What a second request's input may hold, by how it is built from the first response.
#[derive(Debug, Clone, Copy)]
enum Piece {
    /// The reasoning item, as served.
    Reasoning,
    /// A call as served (with its `fc_` id).
    Call(usize),
    /// A call replayed without its id.
    BareCall(usize),
    /// The output for a call.
    Output(usize),
    /// An output for a call_id the model never issued.
    StrayOutput,
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        Just(Piece::Reasoning),
        (0usize..2).prop_map(Piece::Call),
        (0usize..2).prop_map(Piece::BareCall),
        (0usize..2).prop_map(Piece::Output),
        Just(Piece::StrayOutput),
    ]
}

/// The independent model of the real API's pairing rules: E6
/// duplicate ids, E5 reasoning without its following item, E4 a call with its id without
/// its reasoning, E3 an output for no call, a second output for one call, E2 a call
/// without an output. `chain` is what
/// `previous_response_id` carries. True when the request is accepted.
fn model_accepts(chain: &[Value], input: &[Value], reasoning: &Value, calls: &[Value]) -> bool {
    let context: Vec<&Value> = chain.iter().chain(input).collect();
    let mut ids = BTreeSet::new();
    for item in &context {
        if let Some(id) = item["id"].as_str()
            && !ids.insert(id)
        {
            return false; // E6
        }
    }
    let rs = reasoning["id"].as_str().unwrap();
    for (i, item) in input.iter().enumerate() {
        if item["id"] == rs {
            let next = input.get(i + 1);
            let follows = next.is_some_and(|n| match n["id"].as_str() {
                Some(id) => id == calls[0]["id"],
                None => n["type"] == "function_call" && n["call_id"] == calls[0]["call_id"],
            });
            if !follows {
                return false; // E5
            }
        }
        if item["type"] == "function_call" && item["id"].is_string() && !ids.contains(rs) {
            return false; // E4
        }
    }
    let call_ids = |kind: &str| -> BTreeSet<String> {
        context
            .iter()
            .filter(|i| i["type"] == kind)
            .map(|i| i["call_id"].to_string())
            .collect()
    };
    let (issued, answered) = (call_ids("function_call"), call_ids("function_call_output"));
    if answered.iter().any(|c| !issued.contains(c)) {
        return false; // E3
    }
    let outputs = context
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .count();
    if outputs > answered.len() {
        return false; // two outputs for one call
    }
    issued.iter().all(|c| answered.contains(c)) // E2
}

fn send(session: &Session, body: &Value) -> (u16, Value) {
    let reply = session.handle(EngineRequest {
        method: "POST".to_owned(),
        path: "/v1/responses".to_owned(),
        query: None,
        headers: HeaderMap::from_iter([(
            AUTHORIZATION,
            format!("Bearer {}", session.api_key())
                .parse()
                .expect("a header value"),
        )]),
        body: body.to_string().into(),
    });
    match reply.body {
        ReplyBody::Json(bytes) => (
            reply.status,
            serde_json::from_slice(&bytes).expect("a JSON reply"),
        ),
        _ => (reply.status, Value::Null),
    }
}

#[test]
fn the_fake_servers_pairing_rules_agree_with_an_independent_model() {
    let case = case_from_yaml(PAIRS);
    let scenario = Arc::new(case.scenario);
    runner(512)
        .run(
            &(any::<bool>(), proptest::collection::vec(piece(), 0..7)),
            |(chained, pieces)| {
                let state = if chained {
                    StateMode::PreviousResponseId
                } else {
                    StateMode::Stateless
                };
                let session = Session::new(scenario.clone(), state);
                let user = json!({"role": "user", "content": "A1 and B2?"});
                let mut first = json!({"model": "gpt-5", "input": [user.clone()], "tools": []});
                if !chained {
                    first["store"] = json!(false);
                    first["include"] = json!(["reasoning.encrypted_content"]);
                }
                let (_, response) = send(&session, &first);
                let output = response["output"].as_array().unwrap().clone();
                let (reasoning, calls) = (&output[0], &output[1..3]);
                let item = |piece: &Piece| match *piece {
                    Piece::Reasoning => reasoning.clone(),
                    Piece::Call(i) => calls[i].clone(),
                    Piece::BareCall(i) => {
                        let mut call = calls[i].clone();
                        call.as_object_mut().unwrap().remove("id");
                        call
                    }
                    Piece::Output(i) => json!({"type": "function_call_output", "call_id": calls[i]["call_id"], "output": "{}"}),
                    Piece::StrayOutput => json!({"type": "function_call_output", "call_id": "call_StrayStrayStrayStrayStray", "output": "{}"}),
                };
                let mut input: Vec<Value> = if chained { Vec::new() } else { vec![user.clone()] };
                input.extend(pieces.iter().map(item));
                let mut second = first.clone();
                second["input"] = json!(input);
                let chain = if chained {
                    second["previous_response_id"] = response["id"].clone();
                    let mut chain = vec![user.clone()];
                    chain.extend(output.iter().cloned());
                    chain
                } else {
                    Vec::new()
                };
                let (status, answer) = send(&session, &second);
                let expected = model_accepts(&chain, &input, reasoning, calls);
                prop_assert_eq!(
                    status == 200,
                    expected,
                    "the fake answered {} {} to {:?} ({}); the model says {}",
                    status,
                    answer["error"]["message"],
                    pieces,
                    if chained { "chained" } else { "stateless" },
                    if expected { "accept" } else { "reject" }
                );
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn arbitrary_bytes_as_a_scenario_file_give_a_located_error() {
    let valid = std::fs::read_to_string(
        crate::support::root().join("scenarios/correlation/01-single-call.yaml"),
    )
    .unwrap();
    let mutated = (
        0..valid.len(),
        0..40usize,
        proptest::collection::vec(any::<u8>(), 0..12),
    )
        .prop_map(move |(at, cut, garbage)| {
            let mut bytes = valid.clone().into_bytes();
            let end = (at + cut).min(bytes.len());
            bytes.splice(at..end, garbage);
            bytes
        });
    let inputs = prop_oneof![proptest::collection::vec(any::<u8>(), 0..200), mutated];
    runner(1024)
        .run(&(inputs, any::<bool>()), |(bytes, json)| {
            let path = if json { "case.json" } else { "case.yaml" };
            let text = String::from_utf8_lossy(&bytes);
            if let Err(err) = parse(Path::new(path), &text) {
                let message = err.to_string();
                let mut parts = message.splitn(4, ':');
                prop_assert_eq!(parts.next(), Some(path), "{}", message);
                let line = parts.next().and_then(|l| l.parse::<u64>().ok());
                let column = parts.next().and_then(|c| c.parse::<u64>().ok());
                prop_assert!(
                    line.is_some() && column.is_some(),
                    "no line:col in {}",
                    message
                );
            }
            Ok(())
        })
        .unwrap();
}

/// Request bodies from nothing to mangled real requests.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z_]{0,8}".prop_map(Value::from),
    ];
    let value = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("model".to_owned()),
                    Just("input".to_owned()),
                    Just("type".to_owned()),
                    Just("call_id".to_owned()),
                    Just("output".to_owned()),
                    Just("id".to_owned()),
                    Just("previous_response_id".to_owned()),
                    Just("stream".to_owned()),
                    "[a-z_]{1,6}"
                ],
                inner,
                0..5
            )
            .prop_map(|m: BTreeMap<String, Value>| Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        value.clone().prop_map(|v| v.to_string().into_bytes()),
        value.prop_map(|v| json!({"model": "gpt-5", "input": [v]})
            .to_string()
            .into_bytes()),
    ]
}

#[test]
fn arbitrary_requests_get_an_api_shaped_error_never_a_panic_or_a_hang() {
    let case = case_from_yaml(PAIRS);
    let scenario = Arc::new(case.scenario);
    let method = prop_oneof![Just("GET"), Just("POST"), Just("DELETE"), Just("PUT")];
    let path = prop_oneof![
        Just("/v1/responses".to_owned()),
        "/v1/responses/[a-z_0-9]{0,12}(/cancel|/input_items)?",
        "/v1/conversations(/[a-z_0-9]{0,8}(/items)?)?",
        "/tools/(call/[a-z_]{0,8}|approvals)",
        "/[a-z/%.]{0,20}",
    ];
    let auth = prop_oneof![Just(Some(true)), Just(Some(false)), Just(None)];
    runner(1024)
        .run(
            &(method, path, auth, body(), any::<bool>()),
            |(method, path, auth, body, retry)| {
                let session = Arc::new(Session::new(scenario.clone(), StateMode::Stateless));
                let mut headers = HeaderMap::new();
                let key = match auth {
                    Some(true) => Some(format!("Bearer {}", session.api_key())),
                    Some(false) => Some("Bearer sk-wrong-key".to_owned()),
                    None => None,
                };
                if let Some(key) = key {
                    headers.insert("authorization", key.parse().expect("a header value"));
                }
                if retry {
                    headers.insert("x-stainless-retry-count", "1".parse().expect("a value"));
                }
                let request = EngineRequest {
                    method: method.to_owned(),
                    path: path.clone(),
                    query: None,
                    headers,
                    body: body.into(),
                };
                // A hang fails the property instead of the whole test run.
                let (sender, receiver) = std::sync::mpsc::channel();
                let handler = session.clone();
                std::thread::spawn(move || {
                    let _ = sender.send(handler.handle(request));
                });
                let reply = receiver.recv_timeout(Duration::from_secs(5)).map_err(|_| {
                    TestCaseError::fail(format!("{method} {path} hung or panicked"))
                })?;
                if reply.status >= 400 && !path.starts_with("/tools/") {
                    let body: Option<Value> = match reply.body {
                        ReplyBody::Json(bytes) => serde_json::from_slice(&bytes).ok(),
                        _ => None,
                    };
                    let Some(body) = body else {
                        return Err(TestCaseError::fail(format!(
                            "{method} {path}: {} without a JSON error",
                            reply.status
                        )));
                    };
                    let error = &body["error"];
                    prop_assert!(error["message"].is_string(), "{}", body);
                    prop_assert!(error["type"].is_string(), "{}", body);
                    prop_assert!(
                        error.get("param").is_some() && error.get("code").is_some(),
                        "{}",
                        body
                    );
                }
                Ok(())
            },
        )
        .unwrap();
}
