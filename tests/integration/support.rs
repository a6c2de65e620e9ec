//! Shared helpers for the integration tests.

use std::path::PathBuf;
use std::sync::Arc;

use loopcheck::scenario::{self, Case, StateMode};
use loopcheck::server::{RunningServer, Session};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The embedded catalogue.
pub fn catalogue() -> Vec<Case> {
    scenario::catalogue().expect("the embedded catalogue loads")
}

/// One catalogue case by id.
pub fn case(id: &str) -> Case {
    catalogue()
        .into_iter()
        .find(|c| c.scenario.id == id)
        .unwrap_or_else(|| panic!("no catalogue case '{id}'"))
}

/// A case parsed from YAML text.
pub fn case_from_yaml(yaml: &str) -> Case {
    let path = PathBuf::from("inline.yaml");
    let scenario = scenario::parse(&path, yaml).unwrap_or_else(|e| panic!("{e}"));
    Case {
        scenario,
        source: path,
    }
}

/// A running fake server for a case.
pub async fn serve(case: &Case, state: StateMode) -> (Arc<Session>, RunningServer) {
    let session = Arc::new(Session::new(Arc::new(case.scenario.clone()), state));
    let server = RunningServer::start(session.clone())
        .await
        .expect("server starts");
    (session, server)
}

/// The loopcheck binary built for these tests.
pub fn loopcheck_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_loopcheck"))
}
