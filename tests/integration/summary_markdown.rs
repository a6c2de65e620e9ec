//! `--summary-markdown`: the run in Markdown for a CI's job summary, from `run` and from
//! `merge` of the shards' JSON reports alike.

use crate::support::cli;
use crate::support::controllers::{except_on, prints};

const CASES: [&str; 2] = ["correlation/01-single-call", "dispatch/01-unknown-tool"];

/// The reference, except that it reports a failure on the first case.
fn controller() -> String {
    except_on(
        CASES[0],
        &prints(r#"{"status":"failed","reason":"gave_up","detail":"seeded"}"#),
    )
}

fn run(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let controller = controller();
    let mut args = vec![
        "run",
        "--controller",
        &controller,
        "--supports",
        "stateless",
    ];
    for case in CASES {
        args.extend(["--filter", case]);
    }
    args.extend(extra);
    cli::command(&args)
        .current_dir(dir)
        .output()
        .expect("loopcheck runs")
}

#[test]
fn a_failing_run_lists_its_counts_and_failing_checks() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["--summary-markdown", "summary.md"]);
    assert_eq!(output.status.code(), Some(1), "{}", cli::text(&output));
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.starts_with("### loopcheck: failed\n"), "{summary}");
    // Four case runs: each case in the stateless mode (one passed, one failed) and in
    // the previous_response_id mode, which the controller does not declare.
    assert!(
        summary.contains("\n| 4 | 1 | 1 | 0 | 0 | 0 | 0 | 2 | 0 | 0 | 0 |"),
        "{summary}"
    );
    let row = summary
        .lines()
        .find(|line| line.starts_with(&format!("| `{}` | stateless | fail | `", CASES[0])))
        .unwrap_or_else(|| panic!("no row of the failing case:\n{summary}"));
    assert!(row.contains("| must |"), "{row}");
    assert!(
        !summary.contains(CASES[1]),
        "a passing case is not listed:\n{summary}"
    );
}

#[test]
fn merged_shards_are_summarised_as_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    for k in 1..=2 {
        let partition = format!("slice:{k}/2");
        let report = format!("shard-{k}.json");
        run(
            dir.path(),
            &["--partition", &partition, "--report-json", &report],
        );
    }
    let merged = cli::command(&[
        "merge",
        "shard-1.json",
        "shard-2.json",
        "--summary-markdown",
        "merged.md",
    ])
    .current_dir(dir.path())
    .output()
    .expect("loopcheck merge runs");
    assert_eq!(merged.status.code(), Some(1), "{}", cli::text(&merged));
    let whole = run(dir.path(), &["--summary-markdown", "whole.md"]);
    assert_eq!(whole.status.code(), Some(1));
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("merged.md"), read("whole.md"));
}
