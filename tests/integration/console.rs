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
