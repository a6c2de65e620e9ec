//! `loopcheck init`: the starter controllers a new user begins from. Each runs the whole
//! catalogue and passes its own CI: what it leaves to its user (schema validation, a
//! refusal reported as one) fails only the case runs its baseline lists, and it never
//! crashes, hangs or breaks the harness. The npm starters run from their printed steps,
//! verbatim, and through the workflow `init` writes, shard by shard.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::cli::{self, assert_success, loopcheck, loopcheck_in};
use crate::support::controllers::interpreted;
use crate::support::{missing_sdk, python, sdk_importable};

#[test]
fn the_python_starter_runs_the_catalogue_without_crashing() {
    let python = python();
    if let Err(err) = sdk_importable(&python) {
        return missing_sdk("Python SDK", &err);
    }
    let dir = tempfile::tempdir().unwrap();
    assert_success(&loopcheck_in(dir.path(), &["init", "python"]));
    let report = dir.path().join("report.json");
    let controller = interpreted(&python, Path::new("loop.py"));
    let run = cli::command(&["run", "--jobs", "4", "--controller", &controller])
        .arg("--report-json")
        .arg(&report)
        .current_dir(dir.path())
        .env_remove("CI")
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let summary = &report["summary"];
    for verdict in ["crashed", "timeout", "errors"] {
        assert_eq!(summary[verdict], 0, "{verdict}:\n{stdout}");
    }
    // It declares only the two state modes, and really handles the plain loop.
    assert!(summary["passed"].as_u64().unwrap() > 50, "{stdout}");
    assert!(summary["unsupported"].as_u64().unwrap() > 0, "{stdout}");
    // Its failures are the baseline's, each of them: its CI passes.
    assert_baseline_holds(summary, &stdout);
    assert!(run.status.success(), "{stdout}");
}

/// A whole-catalogue run's summary: nothing failed beyond the starter's baseline, whose
/// every entry still fails (none stale).
fn assert_baseline_holds(summary: &Value, stdout: &str) {
    for verdict in ["failed", "stale", "drift", "crashed", "timeout", "errors"] {
        assert_eq!(summary[verdict], 0, "{verdict}:\n{stdout}");
    }
    assert_eq!(summary["expected_fail"], 8, "{stdout}");
}

#[test]
fn the_node_starter_is_valid_javascript_with_its_package() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_string_lossy();
    assert_success(&loopcheck(&["init", "node", "--dir", &target]));
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("package.json")).unwrap())
            .unwrap();
    assert_eq!(package["type"], "module");
    match Command::new("node")
        .arg("--check")
        .arg(dir.path().join("loop.mjs"))
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(err) => missing_sdk("node", &err.to_string()),
    }
    let again = loopcheck(&["init", "node", "--dir", &target]);
    assert_eq!(again.status.code(), Some(2), "existing files are kept");
}

/// Runs `loopcheck init LANGUAGE` into a fresh folder, then the `next:` and `then:` lines
/// it prints, verbatim, in a shell whose `loopcheck` is this build (with `filter`, the
/// catalogue narrowed by `LOOPCHECK_FILTER`, as a user's environment may); the folder.
fn init_and_run_the_printed_steps(
    language: &str,
    installer: &str,
    install: &str,
    filter: Option<&str>,
) -> Option<tempfile::TempDir> {
    if let Err(err) = Command::new(installer).arg("--version").output() {
        missing_sdk(installer, &err.to_string());
        return None;
    }
    let parent = tempfile::tempdir().unwrap();
    let init = loopcheck_in(parent.path(), &["init", language, "--dir", "starter"]);
    assert_success(&init);
    let printed = String::from_utf8_lossy(&init.stdout).into_owned();
    let next = printed
        .lines()
        .find_map(|line| line.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("no next step printed:\n{printed}"));
    assert_eq!(next, format!("cd starter && {install} && loopcheck run"));
    let then = printed
        .lines()
        .find_map(|line| line.strip_prefix("then: "))
        .and_then(|line| line.split("   (").next())
        .unwrap_or_else(|| panic!("no second step printed:\n{printed}"));
    assert_eq!(then, "loopcheck run --profile ci");
    // One after the other in one shell, as a user types them.
    let stdout = sh(parent.path(), &format!("{next} && {then}"), filter);
    match filter {
        Some(_) => assert!(stdout.contains("14 runs: 14 passed, 0 failed"), "{stdout}"),
        None => assert!(
            stdout.contains(", 0 failed, 0 non-strict, 8 expected-fail, "),
            "{stdout}"
        ),
    }
    assert!(
        parent
            .path()
            .join("starter/target/loopcheck/junit.xml")
            .exists()
    );
    Some(parent)
}

/// Runs `line` with `sh -c` in `dir`, `loopcheck` on the PATH being this build; its
/// standard output, once it exited 0.
fn sh(dir: &Path, line: &str, filter: Option<&str>) -> String {
    let bin = crate::support::loopcheck_bin();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("LOOPCHECK_FILTER")
        .env_remove("CI");
    if let Some(filter) = filter {
        command.env("LOOPCHECK_FILTER", filter);
    }
    let run = command.output().expect("sh runs");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{line}\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// The starter in `parent/starter` through the workflow `init` wrote, as its action runs
/// it: each shard of its matrix, the controller and partition it names, from the
/// folder, with the reports the action asks for. Each shard passes, and together they
/// ran the whole catalogue with only the baseline's failures.
fn assert_the_workflow_passes(parent: &Path) {
    let dir = parent.join("starter");
    let workflow = std::fs::read_to_string(dir.join(".github/workflows/loopcheck.yml")).unwrap();
    let field = |name: &str| {
        workflow
            .lines()
            .find_map(|line| line.trim().strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} in the workflow:\n{workflow}"))
            .to_owned()
    };
    let controller = field("controller");
    let partition = field("partition");
    let shards = field("shard");
    let shards: Vec<&str> = shards
        .trim_matches(|c| c == '[' || c == ']')
        .split(", ")
        .collect();
    assert_eq!(shards, ["1", "2"], "{workflow}");
    let mut expected_fail = 0;
    for shard in shards {
        let reports = tempfile::tempdir().unwrap();
        let report = reports.path().join("report.json");
        let partition = partition.replace("${{ matrix.shard }}", shard);
        let run = cli::command(&[
            "run",
            "--controller",
            &controller,
            "--partition",
            &partition,
        ])
        .arg("--report-json")
        .arg(&report)
        .arg("--junit")
        .arg(reports.path().join("junit.xml"))
        .arg("--summary-markdown")
        .arg(reports.path().join("summary.md"))
        .current_dir(&dir)
        .env_remove("LOOPCHECK_FILTER")
        .env_remove("CI")
        .output()
        .expect("loopcheck runs");
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "shard {partition}:\n{stdout}");
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert!(
            report["summary"]["passed"].as_u64().unwrap() > 0,
            "{stdout}"
        );
        expected_fail += report["summary"]["expected_fail"].as_u64().unwrap();
    }
    // Between them the shards ran every case run the baseline lists.
    assert_eq!(expected_fail, 8);
}

/// The starter in `parent/starter` run again with a report: every correlation case
/// passes, each served by a persistent worker (a worker's start-up is in the report
/// only when one serves many cases).
fn assert_persistent_passes(parent: &Path, manifest: &str) {
    let dir = parent.join("starter");
    let declared: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(manifest)).unwrap()).unwrap();
    assert!(
        declared["supports"]
            .as_array()
            .unwrap()
            .contains(&Value::from("persistent")),
        "{declared}"
    );
    let report = dir.join("report.json");
    let run = cli::command(&["run", "--filter", "correlation/*", "--jobs", "2"])
        .arg("--report-json")
        .arg(&report)
        .current_dir(&dir)
        .env_remove("CI")
        .output()
        .expect("loopcheck runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["passed"], 14, "{stdout}");
    let cases = report["cases"].as_array().unwrap();
    let started = cases
        .iter()
        .filter(|case| case["startup_ms"].is_u64())
        .count();
    assert!(
        (1..=2).contains(&started),
        "workers started: {started}\n{stdout}"
    );
}

/// `loopcheck fuzz` in the starter fuzzes the starter's own loop, as its
/// `loopcheck.toml` names it, and says so first.
fn assert_fuzz_takes_the_starters_loop(parent: &Path, command: &str) {
    let fuzz = cli::command(&["fuzz", "--seed", "1", "--cases", "5"])
        .current_dir(parent.join("starter"))
        .env_remove("CI")
        .env_remove("LOOPCHECK_CONTROLLER")
        .env_remove("LOOPCHECK_PROFILE")
        .output()
        .expect("loopcheck runs");
    let stderr = String::from_utf8_lossy(&fuzz.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains(command) && first.contains("from loopcheck.toml"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&fuzz.stdout).contains("case(s)"),
        "{}",
        cli::text(&fuzz)
    );
}

#[test]
fn the_node_starter_runs_from_its_printed_steps_and_persists() {
    if let Some(parent) = init_and_run_the_printed_steps("node", "npm", "npm install", None) {
        assert_persistent_passes(parent.path(), "loop.mjs.loopcheck.json");
        assert_the_workflow_passes(parent.path());
        assert_fuzz_takes_the_starters_loop(parent.path(), "node loop.mjs");
    }
}

#[test]
fn the_typescript_starter_runs_from_its_printed_steps_and_persists() {
    if let Some(parent) = init_and_run_the_printed_steps("ts", "npm", "npm install", None) {
        assert_persistent_passes(parent.path(), "loop.ts.loopcheck.json");
        assert_the_workflow_passes(parent.path());
    }
}

#[test]
fn the_python_starter_runs_from_its_printed_steps() {
    let install = "python3 -m venv .venv && . .venv/bin/activate && pip install openai==3.57.0";
    // A Python process per case: the whole catalogue is the test above's.
    init_and_run_the_printed_steps("python", "python3", install, Some("correlation/*"));
}
