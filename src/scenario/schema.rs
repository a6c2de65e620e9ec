//! The JSON Schema of the scenario format, generated from the file model's types, so that
//! editors complete and check scenario files (`loopcheck schema`; the catalogue's files
//! name it in a `# yaml-language-server: $schema=...` line).

use serde_json::Value;

use super::Scenario;

/// Where the committed copy lives, relative to the repository root.
pub const COMMITTED: &str = "docs/scenario.schema.json";

/// The schema of a scenario file.
pub fn scenario_schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Scenario)).unwrap_or_default();
    schema["title"] = Value::from("loopcheck scenario");
    schema["description"] = Value::from(
        "One conformance case: the task handed to the controller, the fixture tools' behaviour, the model's scripted turns and the expected outcome.",
    );
    schema
}

/// The schema as written to disk: pretty JSON with a final newline.
pub fn scenario_schema_text() -> String {
    serde_json::to_string_pretty(&scenario_schema()).unwrap_or_default() + "\n"
}
