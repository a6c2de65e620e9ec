//! A controller fuzzed in this process: no process to start, no pipe to cross, so the
//! cases per second are those of the fake server, the loop and the oracle alone.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::ControllerEnv;

/// The future of one case run: the result object (docs/contract.md) as JSON.
pub type CaseFuture = Pin<Box<dyn Future<Output = Value> + Send>>;

/// A controller that runs in this process, as [`crate::runner::run_in_process`] drives
/// it: it gets the environment and the task JSON and returns the result object.
#[derive(Clone)]
pub struct InProcess(pub Arc<dyn Fn(ControllerEnv, Value) -> CaseFuture + Send + Sync>);

impl fmt::Debug for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InProcess")
    }
}

impl InProcess {
    /// A controller from an async closure.
    pub fn new<F, Fut>(controller: F) -> Self
    where
        F: Fn(ControllerEnv, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Value> + Send + 'static,
    {
        Self(Arc::new(move |env, task| Box::pin(controller(env, task))))
    }

    /// The built-in Rust reference controller, run in this process; a task it cannot
    /// read is its `api_error` failure.
    pub fn reference() -> Self {
        Self::new(crate::runner::reference_controller)
    }
}
