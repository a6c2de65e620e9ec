//! What the console says about a run: why a case is unsupported, which filter matched
//! nothing, and a summary that counts runs as the header does.

use crate::support::cli::{loopcheck_outside_ci as loopcheck, text};

#[test]
fn an_unsupported_case_names_the_capabilities_it_lacks() {
    let output = loopcheck(&[
        "run",
        "--filter",
        "program/01-one-pause",
        "--supports",
        "stream",
        "--jobs",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("UNSUPPORTED program/01-one-pause"))
        .unwrap_or_else(|| panic!("no unsupported line:\n{stdout}"));
    assert!(
        line.contains("does not declare: ") && line.contains("programmatic"),
        "{line}"
    );
}

#[test]
fn a_filter_that_matches_nothing_fails_the_run() {
    let output = loopcheck(&[
        "run",
        "--filter",
        "correlation/01-single-call",
        "--filter",
        "corelation/*",
        "--filter",
        "nothing-*",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("'corelation/*'") && stderr.contains("'nothing-*'"),
        "{stderr}"
    );
    assert!(!stderr.contains("'correlation/01-single-call'"), "{stderr}");
}

#[test]
fn the_summary_counts_runs_as_the_header_does() {
    let output = loopcheck(&["run", "--filter", "correlation/01-single-call"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let runs = stdout
        .lines()
        .next()
        .and_then(|header| header.split(", ").nth(1))
        .and_then(|runs| runs.split(' ').next())
        .unwrap_or_else(|| panic!("no header:\n{stdout}"))
        .to_owned();
    assert!(
        stdout.contains(&format!("\n{runs} runs: {runs} passed")),
        "{stdout}"
    );
}

#[test]
fn a_crash_shows_its_first_error_line_when_it_scrolled_out() {
    let controller = "echo \"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai'\" >&2; \
                      for n in 1 2 3 4 5 6 7 8 9 10; do echo \"    at frame $n\" >&2; done; exit 1";
    let output = loopcheck(&[
        "run",
        "--controller",
        controller,
        "--filter",
        "correlation/01-single-call",
        "--supports",
        "stateless",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "  stderr (first error line):\n    | Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai'\n  stderr (last lines):\n    |     at frame 3\n"
        ),
        "{stdout}"
    );
}

/// A controller that crashes on `correlation/01-single-call` and runs the reference
/// controller on every other case.
fn crashing_on_single_call() -> String {
    format!(
        "case \"$LOOPCHECK_CASE\" in *single*) exit 3;; esac; exec '{}' reference-controller",
        crate::support::loopcheck_bin().display()
    )
}

/// `loopcheck ARGS` in `dir`, outside CI.
fn loopcheck_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::support::loopcheck_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .output()
        .expect("loopcheck runs")
}

#[test]
fn quiet_prints_only_what_did_not_pass() {
    let controller = crashing_on_single_call();
    let output = loopcheck(&[
        "run",
        "--controller",
        &controller,
        "--supports",
        "stateless",
        "--filter",
        "correlation/0[12]-*",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("CRASHED     correlation/01-single-call [stateless]"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("PASS") && !stdout.contains("UNSUPPORTED"),
        "{stdout}"
    );
    assert!(stdout.contains("\n4 runs: 1 passed, "), "{stdout}");
}

#[test]
fn exclude_leaves_cases_out() {
    let output = loopcheck(&[
        "run",
        "--filter",
        "correlation/0[12]-*",
        "--exclude",
        "*/01-*",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("correlation/02-call-id-distinct"),
        "{stdout}"
    );
    assert!(!stdout.contains("correlation/01-single-call"), "{stdout}");
}

#[test]
fn fail_fast_stops_after_the_first_failure_and_counts_what_did_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let controller = crashing_on_single_call();
    let output = loopcheck(&[
        "run",
        "--controller",
        &controller,
        "--supports",
        "stateless",
        "--filter",
        "correlation/*",
        "--jobs",
        "1",
        "--fail-fast",
        "--report-json",
        report.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(", 12 not run\n"), "{stdout}");
    assert!(
        stdout.contains("fail-fast: stopped after the first failure"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("correlation/02-call-id-distinct [stateless]"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["not_run"], 12);
}

#[test]
fn last_failed_reruns_only_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let controller = crashing_on_single_call();
    let run = |extra: &[&str]| {
        let args = [
            &[
                "run",
                "--controller",
                &controller,
                "--supports",
                "stateless",
                "--filter",
                "correlation/0[12]-*",
            ][..],
            extra,
        ]
        .concat();
        loopcheck_in(dir.path(), &args)
    };
    let output = run(&["--last-failed"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("last-failed.json"),
        "{}",
        text(&output)
    );

    assert_eq!(run(&[]).status.code(), Some(1));
    let kept: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("target/loopcheck/last-failed.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        kept["runs"],
        serde_json::json!(["correlation/01-single-call [stateless]"])
    );
    let output = run(&["--last-failed"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\n1 run: 0 passed, "), "{stdout}");
}

#[test]
fn retries_report_a_run_that_passes_again_as_flaky() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    // Crashes the first time each case runs, then runs the reference controller.
    let controller = format!(
        "m='{}'/\"$(echo \"$LOOPCHECK_CASE\" | tr / _)\"; if [ ! -e \"$m\" ]; then : > \"$m\"; exit 3; fi; exec '{}' reference-controller",
        dir.path().display(),
        crate::support::loopcheck_bin().display()
    );
    let output = loopcheck(&[
        "run",
        "--controller",
        &controller,
        "--supports",
        "stateless",
        "--filter",
        "correlation/01-single-call",
        "--retries",
        "2",
        "--report-json",
        report.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("FLAKY       correlation/01-single-call [stateless]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 runs: 1 passed, 1 flaky, 0 failed"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["flaky"], 1);
    assert_eq!(report["cases"][1]["flaky"], true, "{report:#}");

    // Without retries the same controller fails.
    let again = tempfile::tempdir().unwrap();
    let controller = controller.replace(
        &dir.path().display().to_string(),
        &again.path().display().to_string(),
    );
    let output = loopcheck(&[
        "run",
        "--controller",
        &controller,
        "--supports",
        "stateless",
        "--filter",
        "correlation/01-single-call",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
}

#[test]
fn exclude_and_fail_fast_come_from_the_settings_file_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("loopcheck.toml"),
        "[profile.default]\nfilter = [\"correlation/*\"]\nexclude = [\"*/0[3-7]-*\"]\nfail-fast = true\njobs = 1\nsupports = [\"stateless\"]\n",
    )
    .unwrap();
    let controller = crashing_on_single_call();
    let output = loopcheck_in(dir.path(), &["run", "--controller", &controller]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Two cases left, each in two state modes; the crash stops the run after the
    // unsupported run before it.
    assert!(
        stdout.starts_with("loopcheck ") && stdout.contains(": 2 case(s), 4 run(s)"),
        "{stdout}"
    );
    assert!(stdout.contains(", 2 not run\n"), "{stdout}");
}
