//! `--junit`: the JUnit XML a CI's test tab reads, validated against the format's schema
//! with `xmllint` (installed by `.ci/run`; without it the validation is skipped with a
//! note, except under CI).

use std::process::Command;

use crate::support::{cli, missing_sdk, root};

/// Runs `loopcheck run` with `--junit`; the XML written.
fn junit_of(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junit.xml");
    let output = cli::command(&["run"])
        .args(args)
        .arg("--junit")
        .arg(&path)
        .output()
        .expect("loopcheck runs");
    assert!(
        path.exists(),
        "no JUnit report written: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let xml = std::fs::read_to_string(&path).unwrap();
    validate(&xml);
    xml
}

/// Validates `xml` against the JUnit schema; panics with xmllint's complaint.
pub(crate) fn validate(xml: &str) {
    let Some(status) = xmllint(xml) else {
        return;
    };
    assert!(
        status.0,
        "the JUnit report breaks the schema: {}\n{xml}",
        status.1
    );
}

/// `(valid, xmllint's output)`, or None when xmllint is missing outside CI.
fn xmllint(xml: &str) -> Option<(bool, String)> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.xml");
    std::fs::write(&file, xml).unwrap();
    let schema = root().join("tests/integration/schemas/junit.xsd");
    match Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(&file)
        .output()
    {
        Ok(out) => Some((
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Err(err) => {
            missing_sdk("xmllint (Debian package libxml2-utils)", &err.to_string());
            None
        }
    }
}

#[test]
fn the_schema_rejects_what_ci_systems_would_not_read() {
    for broken in [
        // A test case without a name.
        r#"<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase classname="a"/></testsuite></testsuites>"#,
        // A count that is not a number.
        r#"<testsuites><testsuite name="a" tests="one" failures="0" errors="0"/></testsuites>"#,
        // Two outcomes for one case.
        r#"<testsuites><testsuite name="a" tests="1" failures="1" errors="0"><testcase name="c"><failure/><skipped/></testcase></testsuite></testsuites>"#,
        // A failed case that was flaky too.
        r#"<testsuites><testsuite name="a" tests="1" failures="1" errors="0"><testcase name="c"><failure/><flakyFailure/></testcase></testsuite></testsuites>"#,
    ] {
        if let Some((valid, _)) = xmllint(broken) {
            assert!(!valid, "the schema accepts {broken}");
        }
    }
}

#[test]
fn a_passing_run_is_one_suite_per_area_and_one_case_per_state_mode() {
    let xml = junit_of(&["--filter", "correlation/0[12]*", "--filter", "terminal/09*"]);
    // Each case in two state modes, with JSON and with streamed responses.
    assert!(
        xml.contains(
            r#"<testsuite name="correlation" tests="8" skipped="0" errors="0" failures="0""#
        ),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testsuite name="terminal" tests="4""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="terminal/09-refusal [stateless, stream]""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="correlation/01-single-call [previous_response_id]" classname="correlation""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="terminal/09-refusal [stateless]""#),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "{xml}");
}

#[test]
fn failures_carry_the_failing_checks_and_unsupported_runs_are_skipped() {
    // A controller that answers without asking the model: every judged case fails
    // terminal/outcome; stateless is not declared, so those runs are unsupported.
    let controller = r#"echo '{"status": "completed", "output_text": "made up"}'"#;
    let xml = junit_of(&[
        "--controller",
        controller,
        "--supports",
        "previous_response_id",
        "--filter",
        "correlation/01*",
    ]);
    assert!(
        xml.contains(r#"failures="1""#) && xml.contains(r#"skipped="1""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<failure message="1 check failed: terminal/outcome" type="terminal/outcome">terminal/outcome (must, fail): "#),
        "{xml}"
    );
    assert!(xml.contains("rule: report the final message"), "{xml}");
    assert!(
        xml.contains(r#"<skipped message="the controller does not declare: stateless"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains("<system-out>{&quot;status&quot;: &quot;completed&quot;"),
        "{xml}"
    );
}

#[test]
fn a_crashed_controller_is_an_error_with_its_output() {
    let xml = junit_of(&[
        "--controller",
        "echo 'about to fail' >&2; exit 3",
        "--supports",
        "previous_response_id",
        "--filter",
        "correlation/01*",
    ]);
    assert!(xml.contains(r#"errors="1""#), "{xml}");
    assert!(
        xml.contains(r#"<error message=""#) && xml.contains(r#"type="crashed""#),
        "{xml}"
    );
    assert!(xml.contains("<system-err>about to fail"), "{xml}");
}

/// The `time` attribute that follows `prefix` in `xml`, in seconds.
fn time_after(xml: &str, prefix: &str) -> f64 {
    let at = xml
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix}:\n{xml}"));
    let rest = &xml[at..];
    let start = rest.find(" time=\"").expect("a time attribute") + 7;
    let end = start + rest[start..].find('"').expect("a closing quote");
    rest[start..end].parse().expect("a number of seconds")
}

#[test]
fn the_root_time_is_the_wall_time_not_the_sum_of_the_cases() {
    // Four runs of a controller that sleeps half a second, four at a time: the cases
    // add up to two seconds or more, the run takes about one.
    let controller = format!(
        "sleep 0.5; exec '{}' reference-controller",
        crate::support::loopcheck_bin().display()
    );
    let xml = junit_of(&[
        "--controller",
        &controller,
        "--supports",
        "stateless,previous_response_id",
        "--filter",
        "correlation/0[12]-*",
        "--jobs",
        "4",
    ]);
    let root = time_after(&xml, "<testsuites");
    let cases = time_after(&xml, "<testsuite name=\"correlation\"");
    assert!(cases >= 2.0, "the cases' sum is {cases} s:\n{xml}");
    assert!(
        root < cases,
        "the root time {root} s is not the wall time:\n{xml}"
    );
}

#[test]
fn a_flaky_run_passes_with_a_flaky_failure_per_failed_try() {
    let dir = tempfile::tempdir().unwrap();
    // Crashes the first time each case runs, reports a wrong answer the second time
    // (each try saying which it is), then runs the reference controller.
    let controller = format!(
        "m='{}'/\"$(echo \"$LOOPCHECK_CASE\" | tr / _)\"; n=$(cat \"$m\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$m\"; echo \"try $n\" >&2; if [ \"$n\" = 0 ]; then exit 3; fi; if [ \"$n\" = 1 ]; then echo '{{\"status\": \"completed\", \"output_text\": \"no idea\"}}'; exit 0; fi; exec '{}' reference-controller",
        dir.path().display(),
        crate::support::loopcheck_bin().display()
    );
    let xml = junit_of(&[
        "--controller",
        &controller,
        "--supports",
        "stateless",
        "--filter",
        "correlation/01-single-call",
        "--retries",
        "3",
    ]);
    let case = xml
        .split("<testcase ")
        .find(|case| case.contains("name=\"correlation/01-single-call [stateless]\""))
        .unwrap_or_else(|| panic!("no stateless test case:\n{xml}"));
    let case = case.split("</testcase>").next().unwrap();
    // The crash is an error, the wrong answer a failure, in the order they ran.
    let error = case
        .find("<flakyError ")
        .unwrap_or_else(|| panic!("{case}"));
    let failure = case
        .find("<flakyFailure ")
        .unwrap_or_else(|| panic!("{case}"));
    assert!(error < failure, "tries out of order: {case}");
    assert_eq!(case.matches("<flakyError ").count(), 1, "{case}");
    assert_eq!(case.matches("<flakyFailure ").count(), 1, "{case}");
    assert!(case.contains("type=\"crashed\""), "{case}");
    assert!(case.contains("try 0") && case.contains("try 1"), "{case}");
    assert!(case.contains(" failed: "), "the failure's message: {case}");
    assert!(
        !case.contains("<failure") && !case.contains("<error"),
        "{case}"
    );
}
