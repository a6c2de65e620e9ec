//! `loopcheck fuzz` finds real defects: for each mutant whose defect the generator can
//! reach, fuzzing with a fixed seed finds it within a bounded number of cases, and the
//! scenario it shrinks to still fails the check the mutant's header names when
//! `loopcheck run` replays it. And a controller that passes is fuzzed to the end.

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::mutants::{Lang, interpreter, parse_header};
use crate::support::cli::loopcheck_outside_ci as loopcheck;
use crate::support::controllers::interpreted;
use crate::support::{missing_sdk, root};

/// Mutants whose defect generated cases reach: parallel calls (to one tool or several),
/// rejected calls, denials, incomplete turns, stateless replays of reasoning, a budget
/// that runs out, custom tool calls (their grammar, their answer's kind), reasoning text
/// and the content filter's ending.
const REACHABLE: &[&str] = &[
    "first-call-only.py",
    "results-keyed-by-name.py",
    "item-id-as-call-id.py",
    "unknown-tool-dispatched.py",
    "schema-unchecked.py",
    "denial-retried.py",
    "incomplete-as-answer.py",
    "drop-reasoning.py",
    "execute-on-last-round.py",
    "custom-grammar-unchecked.py",
    "custom-answered-as-function.py",
    "reasoning-text-in-answer.py",
    "content-filter-as-answer.py",
];

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
        &["--max-turns", "3", "--jobs", "1"],
    );
    let text = String::from_utf8_lossy(&fuzz.stdout).into_owned();
    if fuzz.status.code() != Some(1) {
        return Some(format!(
            "{file}: fuzzing did not find it in {CASES} cases: {}\n{text}",
            fuzz.status
        ));
    }
    let found = std::fs::read_dir(&out)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "yaml"));
    let Some(found) = found else {
        return Some(format!("{file}: no scenario was written\n{text}"));
    };
    let scenario = loopcheck::scenario::load_file(&found).expect("the written case loads");
    let turns = scenario.script.len();
    let report = dir.path().join("report.json");
    let run = loopcheck(&[
        "run",
        found.to_str().unwrap(),
        "--controller",
        &controller,
        "--supports",
        &supports,
        "--report-json",
        report.to_str().unwrap(),
    ]);
    let value: Value = serde_json::from_slice(&std::fs::read(&report).ok()?).ok()?;
    let caught = value["cases"][0]["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["id"] == mutant.caught_by.as_str() && c["verdict"] == "fail")
        || (mutant.caught_by == "terminal/result-line"
            && value["cases"][0]["verdict"] == "crashed");
    if !caught || run.status.code() != Some(1) {
        return Some(format!(
            "{file}: the shrunk case ({turns} turns) does not fail {} when replayed:\n{}",
            mutant.caught_by,
            String::from_utf8_lossy(&run.stdout)
        ));
    }
    None
}

#[test]
fn fuzzing_finds_each_reachable_mutant_and_the_shrunk_case_fails_its_check() {
    let python = match interpreter(Lang::Python) {
        Ok(python) => python,
        Err(err) => return missing_sdk("Python SDK", &err),
    };
    let queue = Arc::new(Mutex::new(REACHABLE.to_vec()));
    let problems = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (queue, problems, python) = (queue.clone(), problems.clone(), python.clone());
            std::thread::spawn(move || {
                while let Some(file) = queue.lock().unwrap().pop() {
                    if let Some(problem) = hunt(file, &python) {
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
    let found = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let scenario = loopcheck::scenario::load_file(&found).unwrap();
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
        std::fs::read_to_string(&found).unwrap()
    );
    assert!(
        scenario.summary.contains("--seed 1") && scenario.summary.contains("call-id/answered"),
        "{}",
        scenario.summary
    );

    // Kept failures are replayed first: the next run stops on it at once.
    let again = run_fuzz(&controller, ALL_STATES, "2", "50", &out, &[]);
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
