//! `loopcheck fuzz` finds real defects: for each mutant whose defect the generator can
//! reach, fuzzing with a fixed seed finds it within a bounded number of cases, and the
//! scenario it shrinks to still fails the check the mutant's header names when
//! `loopcheck run` replays it. And a controller that passes is fuzzed to the end.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use loopcheck::fuzz::{FuzzOptions, InProcess, fuzz};
use loopcheck::runner::{Controller, RunOptions};
use serde_json::Value;

use crate::mutants::{Lang, interpreter, parse_header};
use crate::support::cli::loopcheck_outside_ci as loopcheck;
use crate::support::controllers::interpreted;
use crate::support::{missing_sdk, root};

#[path = "../../examples/support/mutant_header.rs"]
mod mutant_header;

/// Most cases a mutant's defect may take to be found.
const CASES: &str = "60";

/// The state modes a Python mutant supports when it declares them all, as a worker.
const ALL_STATES: &str = "previous_response_id,stateless,persistent";

/// `loopcheck fuzz` of `controller` from `seed`, at most `cases` cases, keeping what it
/// finds in `out`; `extra` appended.
fn run_fuzz(
    controller: &str,
    supports: &str,
    seed: &str,
    cases: &str,
    out: &Path,
    extra: &[&str],
) -> Output {
    let out = out.to_string_lossy();
    let args = [
        "fuzz",
        "--controller",
        controller,
        "--supports",
        supports,
        "--seed",
        seed,
        "--cases",
        cases,
        "--out",
        &out,
    ];
    loopcheck(&[&args[..], extra].concat())
}

/// None when the mutant is found and its shrunk case fails its check; what went wrong
/// otherwise.
fn hunt(file: &str, python: &Path) -> Option<String> {
    let path = root().join("harness/mutants").join(file);
    let mutant = parse_header(&path).unwrap().expect("a mutant header");
    let controller = interpreted(python, &path);
    let supports = format!("{},persistent", mutant.supports);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("found");
    let fuzz = run_fuzz(
        &controller,
        &supports,
        "1",
        CASES,
        &out,
        // The first failure group is enough here, and keeps the test's time as it was.
        &["--max-turns", "3", "--jobs", "1", "--fail-fast"],
    );
    let text = String::from_utf8_lossy(&fuzz.stdout).into_owned();
    if fuzz.status.code() != Some(1) {
        return Some(format!(
            "{file}: fuzzing did not find it in {CASES} cases: {}\n{text}",
            fuzz.status
        ));
    }
    let found = written(&out);
    if found.is_empty() {
        return Some(format!("{file}: no scenario was written\n{text}"));
    }
    // Every failure group is kept; the mutant's defect is one of them.
    let report = dir.path().join("report.json");
    let run = loopcheck(&[
        "run",
        out.to_str().unwrap(),
        "--controller",
        &controller,
        "--supports",
        &supports,
        "--report-json",
        report.to_str().unwrap(),
    ]);
    let value: Value = serde_json::from_slice(&std::fs::read(&report).ok()?).ok()?;
    let caught = value["cases"].as_array().into_iter().flatten().any(|case| {
        case["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["id"] == mutant.caught_by.as_str() && c["verdict"] == "fail")
            || (mutant.caught_by == "terminal/result-line" && case["verdict"] == "crashed")
    });
    if !caught || run.status.code() != Some(1) {
        return Some(format!(
            "{file}: no shrunk case ({} kept) fails {} when replayed:\n{}",
            found.len(),
            mutant.caught_by,
            String::from_utf8_lossy(&run.stdout)
        ));
    }
    None
}

/// The scenario files a fuzz run kept in `out`, sorted.
fn written(out: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn fuzzing_finds_each_reachable_mutant_and_the_shrunk_case_fails_its_check() {
    let python = match interpreter(Lang::Python) {
        Ok(python) => python,
        Err(err) => return missing_sdk("Python SDK", &err),
    };
    // Parallel calls (to one tool or several), rejected calls, denials, incomplete turns,
    // stateless replays of reasoning, a budget that runs out, custom tool calls, reasoning
    // text, the content filter's ending: each mutant whose header says `fuzz: reachable`.
    let reachable = mutant_header::fuzz_reachable(&root().join("harness/mutants"));
    assert!(
        reachable.len() >= 13,
        "the fuzz-reachable mutants: {reachable:?}"
    );
    let queue = Arc::new(Mutex::new(reachable));
    let problems = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (queue, problems, python) = (queue.clone(), problems.clone(), python.clone());
            std::thread::spawn(move || {
                while let Some(file) = queue.lock().unwrap().pop() {
                    if let Some(problem) = hunt(&file, &python) {
                        problems.lock().unwrap().push(problem);
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let problems = problems.lock().unwrap();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_parallel_calls_mutant_shrinks_to_two_turns_and_two_calls() {
    let python = match interpreter(Lang::Python) {
        Ok(python) => python,
        Err(err) => return missing_sdk("Python SDK", &err),
    };
    let path = root().join("harness/mutants/first-call-only.py");
    let controller = interpreted(&python, &path);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("found");
    let fuzz = run_fuzz(&controller, ALL_STATES, "1", "50", &out, &[]);
    assert_eq!(
        fuzz.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&fuzz.stdout)
    );
    let stdout = String::from_utf8_lossy(&fuzz.stdout);
    assert!(stdout.contains("replay: loopcheck run"), "{stdout}");
    let found = written(&out);
    let shrunk: Vec<_> = found
        .iter()
        .map(|file| (file, loopcheck::scenario::load_file(file).unwrap()))
        .filter(|(_, scenario)| scenario.summary.contains("call-id/answered"))
        .collect();
    assert!(!shrunk.is_empty(), "{stdout}");
    for (file, scenario) in shrunk {
        let calls: usize = scenario
            .script
            .iter()
            .map(|t| {
                t.output
                    .iter()
                    .filter(|o| matches!(o, loopcheck::scenario::OutputSpec::Call(_)))
                    .count()
            })
            .sum();
        assert!(
            scenario.script.len() <= 2 && calls <= 2,
            "{} turns, {calls} calls:\n{}",
            scenario.script.len(),
            std::fs::read_to_string(file).unwrap()
        );
        assert!(
            scenario.summary.contains("--seed 1"),
            "{}",
            scenario.summary
        );
    }

    // Kept failures are replayed first: with --fail-fast the next run stops on them.
    let again = run_fuzz(&controller, ALL_STATES, "2", "50", &out, &["--fail-fast"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("still fails"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

#[test]
fn the_rust_reference_is_fuzzed_to_the_end_without_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let fuzz = loopcheck(&[
        "fuzz",
        "--seed",
        "3",
        "--cases",
        "40",
        "--jobs",
        "2",
        "--out",
        dir.path().join("none").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&fuzz.stdout);
    assert!(
        fuzz.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&fuzz.stderr)
    );
    assert!(stdout.contains("no failure in 40 case(s)"), "{stdout}");
    assert!(
        !dir.path().join("none").exists(),
        "nothing is written without a failure"
    );
}

/// A controller with two seeded defects that different generated cases reach: it
/// answers only the first of parallel calls, and retries a backend's 403 denial.
fn two_defects(dir: &Path) -> PathBuf {
    let script = dir.join("two_defects.py");
    let python_dir = root().join("harness/python");
    std::fs::write(
        &script,
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport loop\n\n\
             _pending_calls = loop.pending_calls\n\
             loop.pending_calls = lambda response: _pending_calls(response)[:1]\n\
             loop.Tools.retryable = staticmethod(lambda status: status >= 400)\n\
             loop.main()\n",
            python_dir.to_string_lossy()
        ),
    )
    .unwrap();
    script
}

/// The tool names a scenario's turns call.
fn called_tools(scenario: &loopcheck::scenario::Scenario) -> Vec<String> {
    scenario
        .script
        .iter()
        .flat_map(|t| &t.output)
        .filter_map(|o| match o {
            loopcheck::scenario::OutputSpec::Call(call) => Some(call.name.clone()),
            loopcheck::scenario::OutputSpec::CustomCall(call) => Some(call.name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn two_defects_give_two_failure_groups_each_shrunk_without_unused_tools_or_fixtures() {
    let python = match interpreter(Lang::Python) {
        Ok(python) => python,
        Err(err) => return missing_sdk("Python SDK", &err),
    };
    let dir = tempfile::tempdir().unwrap();
    let controller = interpreted(&python, &two_defects(dir.path()));
    let out = dir.path().join("found");
    let fuzz = run_fuzz(
        &controller,
        ALL_STATES,
        "1",
        "40",
        &out,
        &["--max-turns", "3", "--jobs", "2"],
    );
    let stdout = String::from_utf8_lossy(&fuzz.stdout);
    assert_eq!(fuzz.status.code(), Some(1), "{stdout}");
    let found = written(&out);
    assert_eq!(found.len(), 2, "{stdout}");
    assert!(
        stdout.contains("2 failure group(s) in 40 case(s)"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("replay: loopcheck run").count(),
        2,
        "{stdout}"
    );
    let mut failing = Vec::new();
    for file in &found {
        let scenario = loopcheck::scenario::load_file(file).unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        let called = called_tools(&scenario);
        for tool in &scenario.task.tools {
            let name = match tool {
                loopcheck::scenario::ToolRef::Fixture(name) => name.clone(),
                loopcheck::scenario::ToolRef::Inline(definition) => {
                    definition["name"].as_str().unwrap_or_default().to_owned()
                }
            };
            assert!(called.contains(&name), "unused tool {name}:\n{text}");
        }
        for fixture in scenario.tools.keys() {
            assert!(
                called.contains(fixture),
                "unused fixture {fixture}:\n{text}"
            );
        }
        failing.push(scenario.summary);
    }
    assert!(
        failing.iter().any(|s| s.contains("call-id/answered"))
            && failing.iter().any(|s| s.contains("authz/denial-relayed")),
        "{failing:#?}"
    );
    assert!(stdout.contains("shrunk in"), "{stdout}");
    assert!(
        stdout.contains("fixture(s)"),
        "sizes before and after: {stdout}"
    );
}

#[test]
fn fuzz_runs_the_controller_loopcheck_toml_names_and_says_so() {
    let python = match interpreter(Lang::Python) {
        Ok(python) => python,
        Err(err) => return missing_sdk("Python SDK", &err),
    };
    let dir = tempfile::tempdir().unwrap();
    let mutant = root().join("harness/mutants/first-call-only.py");
    let toml = format!(
        "[profile.default]\ncontroller = {:?}\nsupports = [\"previous_response_id\", \"persistent\"]\n",
        interpreted(&python, &mutant)
    );
    std::fs::write(dir.path().join("loopcheck.toml"), toml).unwrap();
    let fuzz = crate::support::cli::command(&["fuzz", "--seed", "1", "--cases", "30"])
        .current_dir(dir.path())
        .env_remove("CI")
        .env_remove("LOOPCHECK_CONTROLLER")
        .env_remove("LOOPCHECK_PROFILE")
        .env_remove("LOOPCHECK_SUPPORTS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&fuzz.stderr);
    let stdout = String::from_utf8_lossy(&fuzz.stdout);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("first-call-only.py") && first.contains("from loopcheck.toml"),
        "{first}"
    );
    assert!(first.contains("persistent,previous_response_id"), "{first}");
    assert_eq!(fuzz.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("call-id/answered"), "{stdout}");

    // Without a controller anywhere, the first line says the reference is the default.
    let empty = tempfile::tempdir().unwrap();
    let fuzz = crate::support::cli::command(&["fuzz", "--seed", "1", "--cases", "2"])
        .current_dir(empty.path())
        .env_remove("LOOPCHECK_CONTROLLER")
        .env_remove("LOOPCHECK_PROFILE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&fuzz.stderr);
    assert!(
        stderr
            .lines()
            .next()
            .unwrap_or_default()
            .contains("reference")
            && stderr.contains("the default"),
        "{stderr}"
    );
}

#[test]
fn a_kept_failure_that_now_passes_says_so_and_is_deleted_with_prune() {
    let python = match interpreter(Lang::Python) {
        Ok(python) => python,
        Err(err) => return missing_sdk("Python SDK", &err),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("found");
    let mutant = interpreted(&python, &root().join("harness/mutants/first-call-only.py"));
    let fuzz = run_fuzz(&mutant, ALL_STATES, "1", "20", &out, &["--fail-fast"]);
    assert_eq!(fuzz.status.code(), Some(1));
    let kept = written(&out);
    assert_eq!(kept.len(), 1);

    // The fixed loop (the reference) passes it: it says so and how to delete it.
    let fixed = interpreted(&python, &root().join("harness/python/loop.py"));
    let again = run_fuzz(&fixed, ALL_STATES, "2", "3", &out, &[]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{stdout}");
    assert!(stdout.contains("now passes"), "{stdout}");
    assert!(
        stdout.contains(&format!("rm '{}'", kept[0].display())),
        "{stdout}"
    );
    assert!(kept[0].exists());

    let pruned = run_fuzz(&fixed, ALL_STATES, "2", "3", &out, &["--prune"]);
    let stdout = String::from_utf8_lossy(&pruned.stdout);
    assert!(pruned.status.success(), "{stdout}");
    assert!(stdout.contains("deleted"), "{stdout}");
    assert!(!kept[0].exists());
}

fn in_process_options(in_process: loopcheck::fuzz::InProcess, out: PathBuf) -> FuzzOptions {
    let supports = ["previous_response_id", "stateless"]
        .map(str::to_owned)
        .into();
    FuzzOptions {
        controller: Controller::command("in process", "(in process)".to_owned(), supports),
        in_process: Some(in_process),
        run: RunOptions {
            jobs: 2,
            seed: 5,
            ..RunOptions::default()
        },
        cases: 30,
        seed: 5,
        out,
        max_turns: 3,
        time: None,
        max_shrink_steps: 64,
        fail_fast: false,
        prune: false,
        drops: false,
    }
}

#[test]
fn a_rust_loop_is_fuzzed_in_process_and_its_defect_found_and_shrunk() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let reference = in_process_options(InProcess::reference(), dir.path().join("none"));
    let passed = runtime.block_on(fuzz(&reference, &mut |_| {})).unwrap();
    assert_eq!(passed.cases, 30);
    assert!(!passed.failed(), "{:?}", passed.groups);

    let defective = InProcess::new(|env, task| {
        crate::defective::run(env, task, crate::defective::Defect::ItemIdAsCallId)
    });
    let found = runtime
        .block_on(fuzz(
            &in_process_options(defective, dir.path().join("found")),
            &mut |_| {},
        ))
        .unwrap();
    assert!(found.failed());
    let shrunk = found.groups[0].shrunk.as_ref().expect("a shrunk case");
    assert!(
        shrunk.failing.iter().any(|c| c == "call-id/own-id"),
        "{:?}",
        found.groups
    );
    assert!(shrunk.after.calls <= shrunk.before.calls && shrunk.file.is_file());
}
