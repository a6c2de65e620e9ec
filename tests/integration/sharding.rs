//! CI runs: `--partition` shards merged back with `loopcheck merge`, and `--baseline`
//! expected failures that only shrink.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::cli::assert_success;
use crate::support::cli::loopcheck;
use crate::support::controllers::reference;
use crate::support::loopcheck_bin;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn runs(report: &Value) -> Vec<String> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} [{}]",
                c["id"].as_str().unwrap(),
                c["state"].as_str().unwrap()
            )
        })
        .collect()
}

/// A controller that answers without asking the model: every case it runs fails.
const MADE_UP: &str = r#"echo '{"status": "completed", "output_text": "made up"}'"#;

#[test]
fn the_shards_of_a_partition_merge_into_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.json");
    let selection = ["--filter", "correlation/*", "--filter", "terminal/0[3-6]*"];
    let out = loopcheck(
        &[
            &["run", "--report-json", whole.to_str().unwrap()][..],
            &selection,
        ]
        .concat(),
    );
    assert_success(&out);
    for scheme in ["slice", "hash"] {
        let mut shards = Vec::new();
        for k in 1..=2 {
            let path = dir.path().join(format!("{scheme}-{k}.json"));
            let partition = format!("{scheme}:{k}/2");
            let out = loopcheck(
                &[
                    &[
                        "run",
                        "--partition",
                        &partition,
                        "--report-json",
                        path.to_str().unwrap(),
                    ][..],
                    &selection,
                ]
                .concat(),
            );
            assert_success(&out);
            assert!(
                !runs(&json(&path)).is_empty(),
                "{scheme}: shard {k} is empty"
            );
            shards.push(path);
        }
        let merged = dir.path().join(format!("{scheme}-merged.json"));
        let junit = dir.path().join(format!("{scheme}-merged.xml"));
        let out = loopcheck(&[
            "merge",
            shards[0].to_str().unwrap(),
            shards[1].to_str().unwrap(),
            "--report-json",
            merged.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ]);
        assert_success(&out);
        assert_eq!(runs(&json(&merged)), runs(&json(&whole)), "{scheme}");
        assert_eq!(json(&merged)["summary"], json(&whole)["summary"]);
        assert!(
            std::fs::read_to_string(&junit)
                .unwrap()
                .contains(r#"<testsuite name="correlation""#)
        );
    }
}

#[test]
fn merging_one_shard_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("shard.json");
    loopcheck(&[
        "run",
        "--filter",
        "correlation/01*",
        "--report-json",
        shard.to_str().unwrap(),
    ]);
    let out = loopcheck(&["merge", shard.to_str().unwrap(), shard.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is in more than one report"));
}

#[test]
fn a_baseline_accepts_the_failures_it_lists_and_fails_when_they_are_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    let baseline = baseline.to_str().unwrap();
    let selection = [
        "--filter",
        "correlation/01*",
        "--supports",
        "previous_response_id",
    ];
    // The failing controller writes its baseline...
    let out = loopcheck(
        &[
            &["run", "--controller", MADE_UP, "--write-baseline", baseline][..],
            &selection,
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1));
    let text = std::fs::read_to_string(baseline).unwrap();
    assert!(
        text.contains("case = \"correlation/01-single-call\""),
        "{text}"
    );
    assert!(text.contains("checks = [\"terminal/outcome\"]"), "{text}");
    // ...which makes the same failures expected...
    let out = loopcheck(
        &[
            &["run", "--controller", MADE_UP, "--baseline", baseline][..],
            &selection,
        ]
        .concat(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("1 expected-fail"), "{stdout}");
    // ...and a fixed controller finds the entry stale.
    let out = loopcheck(&[&["run", "--baseline", baseline][..], &selection].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("STALE correlation/01-single-call [previous_response_id]"),
        "{stdout}"
    );
    assert!(stdout.contains("baselines only shrink"), "{stdout}");
}

#[test]
fn a_malformed_baseline_is_a_usage_error_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(
        &baseline,
        "[[expected]]\ncase = \"x\"\nstate = \"sometimes\"\n",
    )
    .unwrap();
    let out = loopcheck(&[
        "run",
        "--baseline",
        baseline.to_str().unwrap(),
        "--filter",
        "correlation/01*",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("baseline.toml:3:9: "), "{stderr}");
}

#[test]
fn a_profile_in_loopcheck_toml_sets_the_run_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("loopcheck.toml"),
        format!(
            "[profile.default]\ncontroller = {MADE_UP:?}\nsupports = [\"previous_response_id\"]\nfilter = [\"correlation/01*\"]\n\n[profile.ci]\njunit = \"out/junit.xml\"\nreport-json = \"out/report.json\"\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        Command::new(loopcheck_bin())
            .arg("run")
            .args(args)
            .envs(env.iter().copied())
            .env_remove("CI")
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    // The ci profile inherits the failing controller from default and adds the reports.
    let out = run(&["--profile", "ci"], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&dir.path().join("out/report.json"));
    assert_eq!(
        runs(&report),
        [
            "correlation/01-single-call [previous_response_id]",
            "correlation/01-single-call [stateless]"
        ]
    );
    assert_eq!(
        report["summary"]["unsupported"], 1,
        "supports came from the profile"
    );
    assert!(dir.path().join("out/junit.xml").exists());
    // LOOPCHECK_PROFILE picks it too; the command line's controller wins over the file.
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let out = run(
        &["--controller", &reference()],
        &[("LOOPCHECK_PROFILE", "ci")],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(dir.path().join("out/junit.xml").exists());
    // A bad value is named with its source.
    let out = run(&[], &[("LOOPCHECK_JOBS", "many")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("LOOPCHECK_JOBS=many: not a whole number; expected a whole number")
    );
    let out = run(&["--profile", "nightly"], &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no profile 'nightly' (it has: ci, default)")
    );
}
