//! The strict emulation tests' client: one scenario served statelessly over real HTTP,
//! and JSON posted to it, each answer read as status, JSON and text.

use loopcheck::scenario::StateMode;
use loopcheck::server::RunningServer;
use serde_json::{Value, json};

use super::http::Api;
use super::{case_from_yaml, serve};

/// Serves the scenario `yaml` statelessly: the server and its session's key (the session
/// lives as long as the server holds it).
pub async fn serve_stateless(yaml: &str) -> (RunningServer, String) {
    let (session, server) = serve(&case_from_yaml(yaml), StateMode::Stateless).await;
    let key = session.api_key().to_owned();
    (server, key)
}

/// POSTs `body` to `path`: the status, the answer as JSON (`Null` when it is none) and
/// as text.
pub async fn post_json(
    server: &RunningServer,
    key: &str,
    path: &str,
    body: &Value,
) -> (u16, Value, String) {
    let api = Api::new(&server.base_url(), Some(key));
    let reply = api.send(api.post_json(path, body)).await;
    let json = serde_json::from_str(&reply.text).unwrap_or(Value::Null);
    (reply.status, json, reply.text)
}

/// A create with `store: false` and this `input`.
pub fn stateless_create(input: Vec<Value>) -> Value {
    json!({"model": "gpt-5", "store": false, "input": input})
}
