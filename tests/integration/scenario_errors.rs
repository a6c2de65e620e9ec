//! Malformed scenario files are rejected with `file:line:col` and what was expected.

use std::path::Path;

use loopcheck::scenario::parse;

use crate::support::cli::loopcheck;

const GOOD: &str = r#"format: 1
id: demo/ok
summary: A single call.
level: must
task:
  input: "Weather in Paris?"
  tools: [get_weather]
script:
  - output:
      - call: {name: get_weather, arguments: {city: Paris}}
  - output:
      - message: "Sunny."
expect:
  outcome: completed
"#;

fn error_for(text: &str) -> String {
    parse(Path::new("case.yaml"), text)
        .expect_err("must be rejected")
        .to_string()
}

#[test]
fn the_good_file_parses() {
    parse(Path::new("case.yaml"), GOOD).unwrap();
}

#[test]
fn an_unknown_field_names_its_line_and_column() {
    let text = GOOD.replace("level: must", "level: must\nlevle: should");
    let message = error_for(&text);
    assert!(message.starts_with("case.yaml:5:1: "), "{message}");
    assert!(message.contains("levle"), "{message}");
}

#[test]
fn a_wrong_enum_value_says_what_was_expected() {
    let message = error_for(&GOOD.replace("level: must", "level: maybe"));
    assert!(message.starts_with("case.yaml:4:"), "{message}");
    assert!(
        message.contains("maybe") && message.contains("must"),
        "{message}"
    );
}

#[test]
fn broken_yaml_syntax_is_located() {
    let message = error_for(&GOOD.replace("tools: [get_weather]", "tools: [get_weather"));
    assert!(message.starts_with("case.yaml:"), "{message}");
    let location: Vec<&str> = message.splitn(4, ':').collect();
    assert!(location[1].parse::<u32>().unwrap() >= 7, "{message}");
}

#[test]
fn semantic_errors_point_at_the_offending_text() {
    let message = error_for(&GOOD.replace("tools: [get_weather]", "tools: [get_wether]"));
    assert!(message.starts_with("case.yaml:7:"), "{message}");
    assert!(
        message.contains("unknown fixture tool 'get_wether'"),
        "{message}"
    );
    let message = error_for(&GOOD.replace("format: 1", "format: 9"));
    assert!(
        message.starts_with("case.yaml:1:1: unsupported format version 9"),
        "{message}"
    );
    let message = error_for(&GOOD.replace("id: demo/ok", "id: Demo OK"));
    assert!(message.contains("invalid id"), "{message}");
}

#[test]
fn a_zero_budget_and_a_slow_rule_that_holds_nothing_are_rejected() {
    let budgets = GOOD.replace(
        "tools: [get_weather]",
        "tools: [get_weather]\n  deadline_ms: 2000\n  max_tool_calls: 2\n  tool_timeout_ms: 300",
    );
    parse(Path::new("case.yaml"), &budgets).unwrap();
    for field in ["deadline_ms", "max_tool_calls", "tool_timeout_ms"] {
        let zero = budgets.replace(&format!("{field}: "), &format!("{field}: 0 #"));
        let message = error_for(&zero);
        assert!(
            message.contains(&format!("invalid `task.{field}`: expected at least 1")),
            "{message}"
        );
    }
    let slow = |rule: &str| {
        GOOD.replace(
            "script:",
            &format!("tools:\n  get_weather:\n    slow: [{rule}]\nscript:"),
        )
    };
    parse(
        Path::new("case.yaml"),
        &slow("{delay_ms: 800, attempts: 1}"),
    )
    .unwrap();
    let message = error_for(&slow("{delay_ms: 0, attempts: 1}"));
    assert!(message.starts_with("case.yaml:10:"), "{message}");
    assert!(
        message.contains("tool 'get_weather': a `slow` rule with `delay_ms: 0` holds nothing"),
        "{message}"
    );
    let message = error_for(&slow("{delay_ms: 800, attempts: 0}"));
    assert!(
        message.contains("`attempts: 0` holds no attempt"),
        "{message}"
    );
}

#[test]
fn json_scenarios_are_located_too() {
    let message = parse(
        Path::new("case.json"),
        "{\n  \"format\": 1,\n  \"id\": 7\n}",
    )
    .unwrap_err()
    .to_string();
    assert!(message.starts_with("case.json:3:"), "{message}");
}

#[test]
fn lint_reports_every_bad_file_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        GOOD.replace("outcome: completed", "outcome: done"),
    )
    .unwrap();
    let lint = |path: &Path| loopcheck(&["lint", &path.to_string_lossy()]);
    let output = lint(dir.path());
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.yaml:14:"), "{stderr}");
    let output = lint(&dir.path().join("good.yaml"));
    assert_eq!(output.status.code(), Some(0));
    let bad = dir.path().join("bad.yaml");
    let output = loopcheck(&["run", &bad.to_string_lossy()]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "run refuses a malformed file before running anything"
    );
}

#[test]
fn an_endless_turn_repeats_calls_or_nothing_never_an_answer() {
    let endless_answer = GOOD.replace(
        "      - message: \"Sunny.\"\n",
        "      - message: \"Sunny.\"\n    endless: true\n",
    );
    let message = error_for(&endless_answer);
    assert!(
        message.contains("an `endless` turn must contain a call, or no message at all"),
        "{message}"
    );
    let endless_empty = GOOD.replace(
        "  - output:\n      - message: \"Sunny.\"\n",
        "  - output: []\n    endless: true\n",
    );
    let endless_empty = endless_empty.replace(
        "  outcome: completed\n",
        "  outcome: completed\n  output_text: \"\"\n",
    );
    parse(Path::new("case.yaml"), &endless_empty).unwrap();
}

#[test]
fn a_background_case_cannot_run_over_the_socket() {
    let over_socket = GOOD.replace("script:", "deliveries: [websocket]\nscript:");
    parse(Path::new("case.yaml"), &over_socket).unwrap();
    let background = over_socket.replace(
        "tools: [get_weather]",
        "tools: [get_weather]\n  background: true",
    );
    let background =
        background.replace("level: must", "level: must\nstates: [previous_response_id]");
    let message = error_for(&background);
    assert!(message.starts_with("case.yaml:10:1: "), "{message}");
    assert!(
        message.contains("a `background` task cannot run over `websocket`"),
        "{message}"
    );
    // `task.websocket` alone does not make a case run over the socket.
    let message = error_for(&GOOD.replace(
        "tools: [get_weather]",
        "tools: [get_weather]\n  websocket: true",
    ));
    assert!(message.starts_with("case.yaml:8:3: "), "{message}");
    assert!(
        message.contains("list `deliveries: [websocket]` instead"),
        "{message}"
    );
    // Background in JSON, as every background case runs, is still fine.
    parse(
        Path::new("case.yaml"),
        &background.replace("deliveries: [websocket]", "deliveries: [json]"),
    )
    .unwrap();
}

#[test]
fn an_annotation_outside_its_text_is_refused_and_one_inside_parses() {
    let cited = |end: u32| {
        GOOD.replace(
            r#"      - message: "Sunny.""#,
            &format!(
                "      - message:\n          text: \"Sunny.\"\n          annotations:\n            - {{type: url_citation, start_index: 0, end_index: {end}, title: Met, url: \"https://example.com/\"}}"
            ),
        )
    };
    parse(Path::new("case.yaml"), &cited(6)).unwrap();
    let message = error_for(&cited(7));
    assert!(message.starts_with("case.yaml:14:11: "), "{message}");
    assert!(
        message.contains("an annotation spans 0..7 of a message whose text has 6 characters"),
        "{message}"
    );
}

#[test]
fn a_compaction_item_needs_context_management_and_a_text_format_a_json_schema() {
    let compaction = GOOD.replace(
        "      - message: \"Sunny.\"",
        "      - compaction: {}\n      - message: \"Sunny.\"",
    );
    let message = error_for(&compaction);
    assert!(
        message.contains("a `compaction` item without `task.context_management`"),
        "{message}"
    );
    let asked = compaction.replace(
        "  tools: [get_weather]",
        "  tools: [get_weather]\n  context_management: [{type: compaction, compact_threshold: 100}]",
    );
    parse(Path::new("case.yaml"), &asked).unwrap();
    let format = GOOD.replace(
        "  tools: [get_weather]",
        "  tools: [get_weather]\n  text_format: {type: json_object}",
    );
    let message = error_for(&format);
    assert!(
        message.contains("`text_format` must be a json_schema config"),
        "{message}"
    );
}

/// A task file as `record --task` reads it: the `task` and `tools` sections alone.
const TASK_ONLY: &str = r#"task:
  input: "Weather in Paris?"
  tools: [get_weather]
tools:
  get_weather:
    results:
      - when: {city: Paris}
        result: {condition: sunny}
"#;

/// `record --task FILE` with a command that makes no request: how far it got.
fn record_with_task(task: &Path) -> std::process::Output {
    let out = task.with_file_name("cassette.yaml");
    loopcheck(&[
        "record",
        "--upstream",
        "http://127.0.0.1:9",
        "--task",
        &task.to_string_lossy(),
        "--out",
        &out.to_string_lossy(),
        "--",
        "true",
    ])
}

#[test]
fn lint_and_record_agree_on_task_files() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("task.yaml");
    std::fs::write(&task, TASK_ONLY).unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();

    // A valid task file lints clean, alone and beside a scenario in a folder...
    let output = loopcheck(&["lint", &task.to_string_lossy()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(stdout.contains("1 task file(s) OK"), "{stdout}");
    let output = loopcheck(&["lint", &dir.path().to_string_lossy()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        stdout.contains("1 scenario file(s) and 1 task file(s) OK"),
        "{stdout}"
    );
    // ... and record takes it: it gets as far as the command, which asked nothing.
    let output = record_with_task(&task);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nothing to save"), "{stderr}");

    // A malformed one gets the same located error from both.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        TASK_ONLY.replace(
            "  tools: [get_weather]\n",
            "  tools: [get_weather]\n  max_rounds: many\n",
        ),
    )
    .unwrap();
    let expected = format!("{}:4:15: invalid u32", bad.display());
    let output = loopcheck(&["lint", &bad.to_string_lossy()]);
    let linted = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{linted}");
    assert!(linted.contains(&expected), "{linted}");
    let output = record_with_task(&bad);
    let recorded = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{recorded}");
    assert!(recorded.contains(&expected), "{recorded}");

    // A file with a task and a script is a scenario, linted as one.
    let half = dir.path().join("half.yaml");
    std::fs::write(&half, format!("{TASK_ONLY}script: []\n")).unwrap();
    let output = loopcheck(&["lint", &half.to_string_lossy()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("missing field `format`"), "{stderr}");
}
