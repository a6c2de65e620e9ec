//! The library API that runs a case against an in-process async closure.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::case::{controller_env, finish, start_session};
use crate::contract::ControllerEnv;
use crate::report::CaseReport;
use crate::scenario::{Case, StateMode};
use crate::server::SessionOptions;
use crate::transcript::{ControllerResult, Unfinished};

/// Runs one case against an in-process controller: `controller` gets the environment and
/// the task JSON and returns the result object (docs/contract.md) as JSON. For
/// `#[tokio::test]`s of Rust tool loops.
pub async fn run_in_process<F, Fut>(
    case: &Case,
    state: StateMode,
    timeout: Duration,
    controller: F,
) -> CaseReport
where
    F: FnOnce(ControllerEnv, Value) -> Fut,
    Fut: Future<Output = Value>,
{
    let started = Instant::now();
    let (session, server) = match start_session(case, state, SessionOptions::default()).await {
        Ok(started) => started,
        Err(report) => return *report,
    };
    let env = controller_env(&server, &session, &case.scenario.id);
    let task = crate::scenario::task_json(&case.scenario, state);
    let outcome = tokio::time::timeout(timeout, controller(env, task)).await;
    server.shutdown().await;
    let result = match outcome {
        Ok(value) => ControllerResult::from_value(&value).map_err(|err| Unfinished::NoResult {
            why: err.to_string(),
        }),
        Err(_) => Err(Unfinished::TimedOut {
            after_ms: started.elapsed().as_millis() as u64,
        }),
    };
    finish(&case.scenario, state, &session, None, result, started)
}

/// The Rust reference controller as an in-process controller: the task JSON in, the
/// result object out (a task it cannot read is its `api_error` failure).
pub async fn reference_controller(env: ControllerEnv, task: Value) -> Value {
    let outcome = match serde_json::from_value::<loopcheck_reference::Task>(task) {
        Ok(task) => {
            let env = loopcheck_reference::ControllerEnv {
                base_url: env.base_url,
                api_key: env.api_key,
                tools_url: env.tools_url,
            };
            loopcheck_reference::run(&env, &task).await
        }
        Err(err) => loopcheck_reference::Outcome::failed("api_error", err.to_string()),
    };
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}
