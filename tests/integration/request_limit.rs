//! A loop without a round limit is stopped once it passes the case's request limit and
//! fails on its budget, not at the case timeout.

use serde_json::Value;

use crate::support::cli::run_with_report;
use crate::support::{missing_sdk, python, root, sdk_importable, shell_quote};

/// The check `id` of a judged case.
fn check<'a>(case: &'a Value, id: &str) -> Option<&'a Value> {
    case["checks"].as_array()?.iter().find(|c| c["id"] == id)
}

#[test]
fn a_loop_without_a_round_limit_is_stopped_and_fails_on_its_budget() {
    let python = python();
    if let Err(why) = sdk_importable(&python) {
        return missing_sdk("openai SDK", &why);
    }
    let mutant = root().join("harness/mutants/rounds-unbounded.py");
    let controller = format!(
        "{} {}",
        shell_quote(&python.to_string_lossy()),
        shell_quote(&mutant.to_string_lossy())
    );
    let (output, report) = run_with_report(&[
        "--controller",
        &controller,
        "--supports",
        "previous_response_id,stream,websocket",
        "--filter",
        "budget/01-endless-tool-calls",
        "--timeout",
        "120",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let cases: Vec<&Value> = report["cases"]
        .as_array()
        .expect("the report lists cases")
        .iter()
        .filter(|c| c["verdict"] != "unsupported")
        .collect();
    assert_eq!(cases.len(), 3, "json, stream and websocket runs: {stdout}");
    for case in cases {
        let label = format!("{} [{}]", case["id"], case["delivery"]);
        assert_eq!(case["verdict"], "fail", "{label}: {stdout}");
        let detail = case["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("loopcheck stopped the controller after 25 model requests, past the limit of 24 for a budget of 4"),
            "{label}: {detail}"
        );
        let budget = check(case, "budget/max-rounds").expect("budget/max-rounds is judged");
        assert_eq!(budget["verdict"], "fail", "{label}");
        assert_eq!(
            budget["message"],
            "the controller made 25 model requests and was stopped, past the limit of 24 for a budget of 4 (max_rounds is 4): the loop has no round limit",
            "{label}"
        );
        assert!(
            check(case, "terminal/finished").is_none(),
            "{label}: a stopped run is not judged as one that timed out"
        );
    }
}
