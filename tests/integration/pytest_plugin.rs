//! The pytest plugin in `harness/python`: its example suite runs three catalogue cases
//! against an in-process loop through `loopcheck serve`, a seeded defect fails with the
//! check that catches it, and the examples of its README and of
//! docs/testing-in-your-suite.md run as written. The plugin is loaded from the source
//! tree; the `loopcheck` wheel that installs it is tested by `packaging/ci-check.sh`.

use std::path::Path;
use std::process::{Command, Output};

use crate::support;

/// Runs pytest on `target` (relative to the repository) with the plugin from the source
/// tree; None when pytest or the SDK is not installed here.
fn pytest(target: &str) -> Option<Output> {
    pytest_in(&support::root(), &[target])
}

/// Runs pytest with `args` in `dir`, with the plugin from the source tree; None when
/// pytest or the SDK is not installed here.
fn pytest_in(dir: &Path, args: &[&str]) -> Option<Output> {
    pytest_with(dir, args, &[])
}

/// As [`pytest_in`], with `env` set (`None`: removed).
fn pytest_with(dir: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Option<Output> {
    let python = support::python();
    let probe = Command::new(&python)
        .args(["-c", "import openai, jsonschema, pytest"])
        .output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            support::missing_sdk(
                "pytest (pip install -r harness/python/requirements.txt)",
                String::from_utf8_lossy(&output.stderr).trim(),
            );
            return None;
        }
        Err(err) => {
            support::missing_sdk("pytest", &err.to_string());
            return None;
        }
    }
    let root = support::root();
    let mut command = Command::new(&python);
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(args)
        // The plugin as it is in this tree, named: no installed copy (an older
        // `loopcheck` wheel, say) registers itself beside it.
        .args(["-p", "loopcheck_pytest.plugin"])
        .env("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        .env("PYTHONPATH", root.join("harness/python"))
        .current_dir(dir)
        .env("LOOPCHECK_BIN", support::loopcheck_bin())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("pytest starts");
    Some(output)
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_example_suite_passes_three_cases_through_the_plugin() {
    let Some(output) = pytest("harness/python/examples") else {
        return;
    };
    let text = text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("3 passed"), "{text}");
}

#[test]
fn a_seeded_defect_fails_with_the_check_that_catches_it() {
    let Some(output) = pytest("harness/python/examples/seeded_defect.py") else {
        return;
    };
    let text = text(&output);
    assert!(!output.status.success(), "the defect passed:\n{text}");
    assert!(text.contains("1 failed"), "{text}");
    assert!(
        text.contains(
            "fail call-id/own-id (must): request 2: function_call_output carries call_id 'fc_"
        ),
        "{text}"
    );
}

/// The ```python blocks of `markdown`, each as (file name, code): every block opens with
/// a `# NAME.py` comment naming the file it is, so none can be left out of the test.
fn python_files(markdown: &str, from: &str) -> Vec<(String, String)> {
    markdown
        .split("```python\n")
        .skip(1)
        .map(|rest| {
            let code = rest.split("```").next().unwrap_or_default();
            let name = code
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("# "))
                .and_then(|line| line.split_whitespace().next())
                .filter(|name| name.ends_with(".py"))
                .unwrap_or_else(|| panic!("a python block in {from} names no file:\n{code}"));
            (name.to_owned(), code.to_owned())
        })
        .collect()
}

/// The README's pytest example: its python blocks.
fn readme_example() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(support::root().join("harness/python/README.md"))
        .expect("the README reads");
    let files = python_files(&readme, "harness/python/README.md");
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    assert!(
        names.iter().any(|name| name.starts_with("test_")),
        "the README shows no test: {names:?}"
    );
    files
}

/// A project of these files in a fresh folder.
fn project(files: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, code) in files {
        std::fs::write(dir.path().join(name), code).unwrap();
    }
    dir
}

/// Runs pytest in `dir` (unless the plugin cannot run here) and holds every test to pass.
fn assert_all_pass(dir: &std::path::Path) {
    let Some(output) = pytest_in(dir, &[]) else {
        return;
    };
    let text = text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(" passed") && !text.contains("failed"),
        "{text}"
    );
}

#[test]
fn the_readme_example_runs_as_written() {
    let dir = project(&readme_example());
    assert_all_pass(dir.path());
}

#[test]
fn the_docs_page_example_runs_with_the_readmes_loop() {
    let page = std::fs::read_to_string(support::root().join("docs/testing-in-your-suite.md"))
        .expect("the page reads");
    let section = page
        .split("\n## pytest\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the page has a pytest section");
    let shown = python_files(section, "docs/testing-in-your-suite.md");
    assert!(!shown.is_empty(), "no python block in the pytest section");
    // The page's test beside the README's loop and fixture, in place of the README's test.
    let mut files: Vec<(String, String)> = readme_example()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("test_"))
        .collect();
    files.extend(shown);
    let dir = project(&files);
    assert_all_pass(dir.path());
}

#[test]
fn k_selects_case_runs_by_their_ids_and_the_report_names_the_run() {
    let dir = project(&readme_example());
    let junit = dir.path().join("junit.xml");
    let junit_arg = format!("--junitxml={}", junit.display());
    let Some(output) = pytest_in(
        dir.path(),
        &["-k", "dispatch and previous_response_id", &junit_arg],
    ) else {
        return;
    };
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("1 passed, ") && said.contains(" deselected"),
        "{said}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"name="test_my_loop[dispatch/01-unknown-tool:previous_response_id]""#),
        "{xml}"
    );
    for property in [
        r#"<property name="loopcheck_case" value="dispatch/01-unknown-tool" />"#,
        r#"<property name="loopcheck_state" value="previous_response_id" />"#,
        r#"<property name="loopcheck_delivery" value="json" />"#,
    ] {
        assert!(xml.contains(property), "{property} missing:\n{xml}");
    }

    // A part of a case id, slash and colon included, selects as written.
    for (expression, selected) in [
        ("01-unknown", "1 passed, 1 skipped"),
        (
            "correlation/01-single-call:previous_response_id",
            "1 passed, ",
        ),
        (
            "single-call or unknown-tool:previous",
            "2 passed, 1 skipped",
        ),
    ] {
        let Some(output) = pytest_in(dir.path(), &["-k", expression]) else {
            return;
        };
        let said = text(&output);
        assert!(output.status.success(), "-k {expression}: {said}");
        assert!(said.contains(selected), "-k {expression}: {said}");
    }
}

#[test]
fn a_test_that_raised_shows_the_verdict_without_the_missing_result() {
    // Answers the call under its item id, then raises before posting a result.
    let test = r#"import pytest
from openai import OpenAI


@pytest.mark.loopcheck(cases=["correlation/01-single-call"], supports=["previous_response_id"])
def test_raises_after_answering_by_item_id(loopcheck_session):
    s = loopcheck_session
    client = OpenAI(base_url=s.base_url, api_key=s.api_key, max_retries=0)
    request = {"model": s.task["model"], "tools": s.task["tools"]}
    first = client.responses.create(**request, input=s.task["input"])
    call = next(item for item in first.output if item.type == "function_call")
    answer = {"type": "function_call_output", "call_id": call.id, "output": "{}"}
    try:
        client.responses.create(**request, previous_response_id=first.id, input=[answer])
    finally:
        raise RuntimeError("the loop gave up")
"#;
    let dir = project(&[("test_raises.py".to_owned(), test.to_owned())]);
    let Some(output) = pytest_in(dir.path(), &[]) else {
        return;
    };
    let text = text(&output);
    assert!(text.contains("1 failed"), "{text}");
    assert!(text.contains("RuntimeError: the loop gave up"), "{text}");
    let section = text
        .split("loopcheck verdict")
        .nth(1)
        .unwrap_or_else(|| panic!("no verdict section:\n{text}"));
    assert!(
        section.contains(
            "fail call-id/own-id (must): request 2: function_call_output carries call_id 'fc_"
        ),
        "the loop's own finding is gone:\n{text}"
    );
    assert!(!section.contains("no result was posted"), "{text}");
}

/// The redaction of a loop's trace id, as the suite's loopcheck.toml names it.
const TRACE_ID_REDACTION: &str =
    "[snapshots]\nredactions = { \"/steps/*/model/body/metadata/trace_id\" = \"[trace id]\" }\n";

#[test]
fn a_tests_snapshot_is_reviewed_then_drifts_on_a_random_field_unless_redacted() {
    let suite = support::root().join("tests/integration/snapshot_suite/test_traced.py");
    let test = std::fs::read_to_string(suite).unwrap();
    let dir = project(&[
        ("test_traced.py".to_owned(), test),
        (
            "pytest.ini".to_owned(),
            "[pytest]\nloopcheck_snapshots = snapshots/traced\n".to_owned(),
        ),
    ]);
    let outside_ci = [("CI", None)];
    let folder = dir.path().join("snapshots/traced");
    // The test's own snapshot, named by its id.
    let name = "test_traced.py-test_traced_loop-correlation_01-single-call_previous_response_id_.previous_response_id.snap";

    // First run: the snapshot is new, pending review; the test passes.
    let Some(first) = pytest_with(dir.path(), &[], &outside_ci) else {
        return;
    };
    assert!(first.status.success(), "{}", text(&first));
    assert!(
        folder.join(format!("{name}.new")).is_file(),
        "{}",
        text(&first)
    );
    let accepted = support::cli::loopcheck_in(
        dir.path(),
        &[
            "snapshots",
            "review",
            "--snapshots",
            "snapshots/traced",
            "--accept",
        ],
    );
    support::cli::assert_success(&accepted);
    assert!(folder.join(name).is_file());

    // Second run: a new trace id drifts, and the failure names the field.
    let drifted = pytest_with(dir.path(), &[], &outside_ci).unwrap();
    let said = text(&drifted);
    assert!(
        !drifted.status.success() && said.contains("1 failed"),
        "{said}"
    );
    assert!(
        said.contains("correlation/01-single-call [previous_response_id]: drift"),
        "{said}"
    );
    assert!(
        said.contains("`metadata` is {\"trace_id\":") && said.contains("(requests 1, 2)"),
        "the change is not named once:\n{said}"
    );
    assert!(
        said.contains("loopcheck snapshots review --snapshots"),
        "{said}"
    );

    // With the redaction, the same loop matches its snapshot, under CI too.
    std::fs::write(dir.path().join("loopcheck.toml"), TRACE_ID_REDACTION).unwrap();
    for env in [outside_ci, [("CI", Some("true"))]] {
        let redacted = pytest_with(dir.path(), &[], &env).unwrap();
        assert!(redacted.status.success(), "{env:?}: {}", text(&redacted));
    }
}
