//! The wiremock plug-in as a team would use it: their own tool loop (reqwest against the
//! Responses API, tools run by an HTTP tool service), their own `MockServer`, one
//! `#[tokio::test]` per case. The loop passes the cases; the same loop with one bug fails
//! each on the check that names it.

use loopcheck::oracle::{CaseVerdict, CheckVerdict};
use loopcheck::report::CaseReport;
use loopcheck::runner::ControllerEnv;
use loopcheck::scenario::{Delivery, StateMode};
use loopcheck::transcript::Unfinished;
use loopcheck::wiremock::{Approximation, FakeError, LoopcheckFake, approximations};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::catalogue;
use crate::support::http::Api;

/// A bug to plant in the loop; `None` is the loop as it should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bug {
    None,
    /// Answers each call with its item id (`fc_...`) instead of its `call_id`.
    ItemIdAsCallId,
    /// Sends calls to the tool service without checking them against the schema.
    NoArgumentValidation,
    /// Stops after a fixed ten rounds instead of the task's `max_rounds`.
    FixedRoundLimit,
}

/// The application's tool loop: chains responses with `previous_response_id`, checks each
/// call against its tool's schema, asks for approval where the task says so, runs the
/// call on the tool service, and answers every call with a `function_call_output`.
struct ToolLoop {
    http: reqwest::Client,
    env: ControllerEnv,
    bug: Bug,
}

fn failed(reason: &str, detail: impl Into<String>) -> Value {
    json!({"status": "failed", "reason": reason, "detail": detail.into()})
}

fn error_output(message: impl Into<String>) -> String {
    json!({"error": message.into()}).to_string()
}

impl ToolLoop {
    fn new(env: ControllerEnv, bug: Bug) -> Self {
        Self {
            http: reqwest::Client::new(),
            env,
            bug,
        }
    }

    /// Runs the task to its result object.
    async fn run(&self, task: &Value) -> Value {
        let max_rounds = match self.bug {
            Bug::FixedRoundLimit => 10,
            _ => task["max_rounds"].as_u64().unwrap_or(6),
        };
        let mut input = task["input"].clone();
        let mut previous: Option<String> = None;
        for round in 1..=max_rounds {
            let mut request =
                json!({"model": task["model"], "tools": task["tools"], "input": input});
            if let Some(instructions) = task.get("instructions") {
                request["instructions"] = instructions.clone();
            }
            if let Some(id) = &previous {
                request["previous_response_id"] = json!(id);
            }
            let response = match self.create_response(&request).await {
                Ok(response) => response,
                Err(detail) => return failed("api_error", detail),
            };
            match response["status"].as_str() {
                Some("completed") => {}
                Some("incomplete") => return failed("incomplete", ""),
                _ => return failed("response_failed", ""),
            }
            previous = response["id"].as_str().map(str::to_owned);
            let output = response["output"].as_array().cloned().unwrap_or_default();
            let calls: Vec<&Value> = output
                .iter()
                .filter(|item| item["type"] == "function_call")
                .collect();
            if calls.is_empty() {
                return json!({"status": "completed", "output_text": output_text(&output)});
            }
            // Calls on the last round could never be answered: run none of them.
            if round == max_rounds {
                break;
            }
            let mut outputs = Vec::new();
            for call in calls {
                let id = match self.bug {
                    Bug::ItemIdAsCallId => &call["id"],
                    _ => &call["call_id"],
                };
                let result = self.run_call(task, call).await;
                outputs
                    .push(json!({"type": "function_call_output", "call_id": id, "output": result}));
            }
            input = json!(outputs);
        }
        failed("max_rounds", "")
    }

    async fn create_response(&self, request: &Value) -> Result<Value, String> {
        let answer = self
            .http
            .post(format!("{}/responses", self.env.base_url))
            .bearer_auth(&self.env.api_key)
            .json(request)
            .send()
            .await
            .map_err(|err| err.to_string())?;
        if !answer.status().is_success() {
            return Err(format!("HTTP {}", answer.status()));
        }
        answer.json().await.map_err(|err| err.to_string())
    }

    /// One call's output: the tool's result, or an error the model can read.
    async fn run_call(&self, task: &Value, call: &Value) -> String {
        let name = call["name"].as_str().unwrap_or_default();
        let tool = task["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|tool| tool["type"] == "function" && tool["name"] == name);
        let Some(tool) = tool else {
            return error_output(format!("unknown tool {name}"));
        };
        let arguments =
            match serde_json::from_str::<Value>(call["arguments"].as_str().unwrap_or_default()) {
                Ok(arguments) if arguments.is_object() => arguments,
                _ => return error_output("the arguments are not a JSON object"),
            };
        if self.bug != Bug::NoArgumentValidation
            && !jsonschema::validator_for(&tool["parameters"])
                .is_ok_and(|schema| schema.is_valid(&arguments))
        {
            return error_output("the arguments do not match the tool's schema");
        }
        let mut body = json!({"call_id": call["call_id"], "arguments": arguments, "principal": task["principal"]});
        let needs_approval = task["approval_required"]
            .as_array()
            .is_some_and(|names| names.iter().any(|n| n == name));
        if needs_approval {
            let mut ask = body.clone();
            ask["name"] = json!(name);
            let (_, decision) = self.post_tools("/approvals", &ask).await;
            if decision["approved"] != true {
                return error_output(format!("not approved: {}", decision["reason"]));
            }
            body["approval"] = decision["approval"].clone();
        }
        match self.post_tools(&format!("/call/{name}"), &body).await {
            (200, answer) => answer["result"].to_string(),
            (_, answer) => error_output(
                answer["error"]["message"]
                    .as_str()
                    .unwrap_or("the tool failed"),
            ),
        }
    }

    async fn post_tools(&self, path: &str, body: &Value) -> (u16, Value) {
        let sent = self
            .http
            .post(format!("{}{path}", self.env.tools_url))
            .json(body)
            .send()
            .await;
        match sent {
            Ok(answer) => (
                answer.status().as_u16(),
                answer.json().await.unwrap_or(Value::Null),
            ),
            Err(err) => (0, json!({"error": {"message": err.to_string()}})),
        }
    }
}

fn output_text(output: &[Value]) -> String {
    output
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

/// A fresh `MockServer` of the test's own with the fake of case `id` mounted on it.
async fn mounted(id: &str) -> (MockServer, LoopcheckFake) {
    let server = MockServer::start().await;
    let fake = LoopcheckFake::from_catalogue(id, StateMode::PreviousResponseId)
        .unwrap_or_else(|err| panic!("{err}"));
    fake.mount(&server).await;
    (server, fake)
}

/// One case run on a fresh `MockServer` of the test's own, through the plug-in.
async fn run_on_own_server(id: &str, bug: Bug) -> (LoopcheckFake, Value) {
    let (server, fake) = mounted(id).await;
    let result = ToolLoop::new(fake.env(&server), bug)
        .run(&fake.task())
        .await;
    (fake, result)
}

/// The ids of the checks that failed.
fn failed_checks(report: &CaseReport) -> Vec<&str> {
    report
        .checks
        .iter()
        .filter(|check| check.verdict == CheckVerdict::Fail)
        .map(|check| check.id.as_str())
        .collect()
}

#[tokio::test]
async fn the_loop_conforms_on_its_own_mock_server() {
    for id in [
        "correlation/01-single-call",
        "correlation/05-parallel-same-tool",
        "dispatch/05-missing-required-field",
        "budget/01-endless-tool-calls",
    ] {
        let (fake, result) = run_on_own_server(id, Bug::None).await;
        let report = fake.assert_conforms(&result);
        assert_eq!(report.id, id);
        assert!(
            report
                .checks
                .iter()
                .any(|c| c.verdict == CheckVerdict::Pass),
            "{id}: no check was judged"
        );
    }
}

#[tokio::test]
async fn each_planted_bug_fails_the_check_that_names_it() {
    for (id, bug, check) in [
        (
            "correlation/05-parallel-same-tool",
            Bug::ItemIdAsCallId,
            "call-id/answered",
        ),
        (
            "dispatch/05-missing-required-field",
            Bug::NoArgumentValidation,
            "dispatch/schema-valid",
        ),
        (
            "budget/01-endless-tool-calls",
            Bug::FixedRoundLimit,
            "budget/max-rounds",
        ),
    ] {
        let (fake, result) = run_on_own_server(id, bug).await;
        let report = fake.verdict(&result);
        assert_eq!(report.verdict, CaseVerdict::Fail, "{id} with {bug:?}");
        assert!(
            failed_checks(&report).contains(&check),
            "{id} with {bug:?}: expected {check} to fail, failed: {:?}",
            failed_checks(&report)
        );
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fake.assert_conforms(&result)
        }))
        .expect_err("assert_conforms panics on a failing verdict");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains(check), "{message}");
    }
}

#[tokio::test]
async fn the_users_own_mocks_answer_before_the_fake() {
    let (server, fake) = mounted("correlation/01-single-call").await;
    Mock::given(method("GET"))
        .and(path("/health"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&server)
        .await;
    let health = Api::new(&server.uri(), None).get("/health").await;
    assert_eq!(health.status, 204);
    let result = ToolLoop::new(fake.env(&server), Bug::None)
        .run(&fake.task())
        .await;
    fake.assert_conforms(&result);
}

#[tokio::test]
async fn a_loop_without_a_result_is_judged_unfinished() {
    let (_server, fake) = mounted("correlation/01-single-call").await;
    let report = fake.verdict_unfinished(Unfinished::NoResult {
        why: "the loop panicked".to_owned(),
    });
    assert_eq!(report.verdict, CaseVerdict::Crashed, "{:?}", report.detail);
    let report = fake.verdict(&json!({"status": "done"}));
    assert_eq!(report.verdict, CaseVerdict::Crashed, "{:?}", report.detail);
}

#[test]
fn cases_wiremock_cannot_serve_faithfully_are_refused_by_name() {
    let approximated: Vec<(String, Vec<Approximation>)> = catalogue()
        .into_iter()
        .map(|case| (case.scenario.id.clone(), approximations(&case.scenario)))
        .filter(|(_, found)| !found.is_empty())
        .collect();
    let ids: Vec<&str> = approximated.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "stream/02-cut-before-terminal",
            "stream/03-delayed-call-executed-after-done",
            "stream/07-parallel-hostile-deltas",
            "stream/10-incomplete-after-whole-call",
            "transport/05-connection-dropped",
            "websocket/08-dropped-mid-chain",
        ],
        "{approximated:?}"
    );
    let refused = LoopcheckFake::from_catalogue(
        "stream/02-cut-before-terminal",
        StateMode::PreviousResponseId,
    );
    assert!(
        matches!(&refused, Err(FakeError::Approximated { approximations, .. })
            if approximations == &[Approximation::CutStream { turn: 1 }]),
        "{:?}",
        refused.err()
    );
    let message =
        LoopcheckFake::from_catalogue("transport/05-connection-dropped", StateMode::Stateless)
            .err()
            .map(|err| err.to_string())
            .unwrap_or_default();
    assert!(message.contains("drops a connection"), "{message}");
    assert!(matches!(
        LoopcheckFake::from_catalogue("no/such-case", StateMode::Stateless),
        Err(FakeError::UnknownCase(_))
    ));
    assert!(matches!(
        LoopcheckFake::from_catalogue("budget/05-deadline", StateMode::Stateless),
        Err(FakeError::StateNotCovered { .. })
    ));
}

#[test]
fn a_run_over_the_socket_is_refused_by_name() {
    for state in [StateMode::PreviousResponseId, StateMode::Stateless] {
        let refused = LoopcheckFake::from_catalogue("websocket/01-single-call", state);
        assert!(
            matches!(&refused, Err(FakeError::WebSocket { case }) if case == "websocket/01-single-call"),
            "{:?}",
            refused.err()
        );
    }
    let scenario = |id: &str| {
        catalogue()
            .into_iter()
            .find(|case| case.scenario.id == id)
            .map(|case| case.scenario)
            .expect("a catalogue case")
    };
    let over_socket = scenario("correlation/01-single-call").delivered(Delivery::WebSocket);
    let message = LoopcheckFake::approximating(over_socket, StateMode::Stateless)
        .err()
        .map(|err| err.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("WebSocket mode") && message.contains("json and stream"),
        "{message}"
    );
    // The same case delivered as JSON or a stream is still served.
    let streamed = scenario("correlation/01-single-call").delivered(Delivery::Stream);
    assert!(LoopcheckFake::new(streamed, StateMode::Stateless).is_ok());
}

#[tokio::test]
async fn an_approximated_case_says_so_in_its_verdict() {
    let case = crate::support::case("transport/05-connection-dropped");
    let fake = LoopcheckFake::approximating(case.scenario, StateMode::PreviousResponseId).unwrap();
    let server = MockServer::start().await;
    fake.mount(&server).await;
    // The reference controller retries the 502 that stands in for the dropped connection.
    let env = fake.env(&server);
    let task: loopcheck_reference::Task = serde_json::from_value(fake.task()).unwrap();
    let outcome = loopcheck_reference::run(
        &loopcheck_reference::ControllerEnv {
            base_url: env.base_url,
            api_key: env.api_key,
            tools_url: env.tools_url,
        },
        &task,
    )
    .await;
    let report = fake.verdict(&serde_json::to_value(outcome).unwrap());
    assert_eq!(report.verdict, CaseVerdict::Pass, "{:#?}", report.checks);
    let detail = report.detail.unwrap_or_default();
    assert!(
        detail.contains("served through wiremock with approximations") && detail.contains("502"),
        "{detail}"
    );
}
