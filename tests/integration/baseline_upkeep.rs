//! Baseline upkeep: `loopcheck baseline prune` drops what a fixed controller no longer
//! fails, `update` rewrites the baseline keeping each entry's reason, an entry matching
//! no case is noted once, and expected failures stay out of the console's failures.

use std::path::Path;
use std::process::Output;

use crate::support::cli::{self, assert_success};

/// A canned-result mutant: makes no request and reports `api_error`, so every case
/// it runs fails.
const MUTANT: &str = "sh harness/mutants/canned-api-error.sh";

const SELECTION: [&str; 4] = [
    "--filter",
    "correlation/0[12]*",
    "--supports",
    "previous_response_id",
];

fn loopcheck(args: &[&str], controller: Option<&str>, baseline: &Path) -> Output {
    let mut command = cli::command(args);
    command.args(SELECTION).arg("--baseline").arg(baseline);
    if let Some(controller) = controller {
        command.args(["--controller", controller]);
    }
    command.output().expect("loopcheck runs")
}

fn write_mutant_baseline(baseline: &Path) {
    let out = cli::command(&["run", "--controller", MUTANT, "--write-baseline"])
        .arg(baseline)
        .args(SELECTION)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", cli::text(&out));
    let text = std::fs::read_to_string(baseline).unwrap();
    assert_eq!(text.matches("[[expected]]").count(), 2, "{text}");
}

#[test]
fn prune_empties_the_baseline_of_a_controller_that_was_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    write_mutant_baseline(&baseline);
    // The mutant's own failures are all still expected: nothing goes.
    let out = loopcheck(&["baseline", "prune"], Some(MUTANT), &baseline);
    assert_success(&out);
    assert!(
        cli::text(&out).contains("2 entries kept, 0 dropped"),
        "{}",
        cli::text(&out)
    );

    // The reference passes both: both entries go, each named.
    let out = loopcheck(&["baseline", "prune"], None, &baseline);
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("dropped correlation/01-single-call [previous_response_id, json]")
            && stdout.contains("0 entries kept, 2 dropped"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(!text.contains("[[expected]]"), "{text}");
    // What is left is a baseline, and the run is green against it.
    assert_success(&loopcheck(&["run"], None, &baseline));
}

#[test]
fn a_narrowed_prune_or_update_keeps_the_entries_of_the_cases_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    write_mutant_baseline(&baseline);
    let narrowed = ["baseline", "prune", "--exclude", "correlation/02*"];
    let out = loopcheck(&narrowed, None, &baseline);
    assert_success(&out);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert_eq!(text.matches("[[expected]]").count(), 1, "{text}");
    assert!(
        text.contains("correlation/02-") && !text.contains("correlation/01-"),
        "{text}"
    );

    let narrowed = ["baseline", "update", "--exclude", "correlation/02*"];
    let out = loopcheck(&narrowed, None, &baseline);
    assert_success(&out);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("added"),
        "{}",
        cli::text(&out)
    );
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains("correlation/02-"), "{text}");
}

#[test]
fn update_rewrites_the_baseline_keeping_each_entry_s_reason() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    write_mutant_baseline(&baseline);
    let text = std::fs::read_to_string(&baseline).unwrap();
    let text = text.replacen(
        "case = \"correlation/01-single-call\"",
        "case = \"correlation/01-single-call\"\nreason = \"the endpoint is down in CI\"",
        1,
    ) + "\n[[expected]]\ncase = \"correlation/99-gone\"\n";
    std::fs::write(&baseline, text).unwrap();

    let out = loopcheck(&["baseline", "update"], Some(MUTANT), &baseline);
    assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("removed correlation/99-gone"),
        "{}",
        cli::text(&out)
    );
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert_eq!(text.matches("[[expected]]").count(), 2, "{text}");
    assert!(
        text.contains("reason = \"the endpoint is down in CI\""),
        "{text}"
    );
    assert!(!text.contains("99-gone"), "{text}");

    // A fixed controller's update leaves nothing expected; a new file is written too.
    assert_success(&loopcheck(&["baseline", "update"], None, &baseline));
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(!text.contains("[[expected]]"), "{text}");
    let fresh = dir.path().join("new.toml");
    assert_success(&loopcheck(&["baseline", "update"], Some(MUTANT), &fresh));
    assert!(fresh.exists());
}

#[test]
fn baseline_upkeep_needs_a_baseline_and_the_whole_selection() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli::loopcheck_in(
        dir.path(),
        &["baseline", "prune", "--filter", "correlation/01*"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no baseline"));
    let baseline = dir.path().join("baseline.toml");
    let out = cli::command(&[
        "baseline",
        "update",
        "--partition",
        "hash:1/2",
        "--baseline",
    ])
    .arg(&baseline)
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--partition runs only part"));
    assert!(!baseline.exists());
}

#[test]
fn an_unmatched_entry_is_noted_once_and_expected_failures_are_not_failures() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    write_mutant_baseline(&baseline);
    let mut text = std::fs::read_to_string(&baseline).unwrap();
    text.push_str("\n[[expected]]\ncase = \"correlation/99-gone\"\nstate = \"stateless\"\n");
    text.push_str("\n[[expected]]\ncase = \"correlation/99-gone\"\nstate = \"conversation\"\n");
    std::fs::write(&baseline, text).unwrap();

    let out = loopcheck(&["run"], Some(MUTANT), &baseline);
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches(
                "note: the baseline's entry for 'correlation/99-gone' matches no case of this run"
            )
            .count(),
        1,
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("Failures:"), "{stdout}");
    assert!(
        stdout.contains(
            "Expected by the baseline: 2\n  correlation/01-single-call [previous_response_id]\n"
        ),
        "{stdout}"
    );
}
