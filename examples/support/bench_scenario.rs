//! The scenario the fake server's benches serve: a model that answers every create with a
//! reasoning item and a call, for as long as it is asked (one turn served again and
//! again), or the same turn written out once per request.

use std::sync::Arc;

use loopcheck::scenario::{self, Scenario, Turn};

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

/// The same model with its turn written out `turns` times instead of repeated, so that
/// each request of a session is its turn's first serving: written and planned, where a
/// turn served again is filled in from its compiled form.
pub fn served_once(turns: usize) -> Arc<Scenario> {
    let mut scenario = (*bench_scenario()).clone();
    let turn = Turn {
        endless: false,
        ..scenario.script[0].clone()
    };
    scenario.script = vec![turn; turns];
    Arc::new(scenario)
}
