//! The scenario the fake server's benches serve: a model that answers every create with a
//! reasoning item and a call, for as long as it is asked.

use std::sync::Arc;

use loopcheck::scenario::{self, Scenario};

const SCENARIO: &str = r#"
format: 1
id: bench/endless
summary: A model that answers every request with a reasoning item and a call.
level: must
task:
  input: "hi"
  tools: [get_stock]
script:
  - output:
      - reasoning: {summary: "Looking it up."}
      - call: {name: get_stock, arguments: {sku: A7}}
    endless: true
expect:
  outcome: failed
  reason: max_rounds
"#;

/// The parsed scenario.
pub fn bench_scenario() -> Arc<Scenario> {
    Arc::new(
        scenario::parse(std::path::Path::new("bench.yaml"), SCENARIO)
            .expect("the bench scenario parses"),
    )
}
