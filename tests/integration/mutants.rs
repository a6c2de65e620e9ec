//! Every deliberately defective controller in `harness/mutants/` is caught by the check
//! it names. A mutant is a file whose header starts with `loopcheck-mutant` (Python `# `,
//! Node `// `):
//!
//! ```text
//! # loopcheck-mutant
//! # defect: <one line: what is wrong>
//! # caught-by: <check id expected to fail>
//! # cases: <comma-separated case-id globs to run it on>
//! # supports: <comma-separated capabilities>
//! # passes: none            (optional: no case may pass or be non-strict)
//! ```
//!
//! Shell mutants (`.sh`, run by `sh`) are the canned-result controllers: they make no
//! request and print one fixed result line; each carries `passes: none` and runs on the
//! whole catalogue, so a verdict a do-nothing controller could earn fails the suite.
//!
//! Each one is run with `loopcheck run --filter <glob>... --supports <caps>`, a few at a
//! time, and must have at least one case where the named check fails (`fail`, or
//! `non-strict` when the case or the check is a SHOULD). `terminal/result-line` is caught
//! by a `crashed` case. docs/mutants.md must list every mutant (and every documented
//! gap, `loopcheck-gap`) in a table with its caught-by check, so the table cannot drift.
//!
//! `harness/equivalents/` holds the other side: correct controllers that reach the right
//! result by another valid route (instructions as a system message, messages replayed
//! without ids, results in an envelope). Their header starts with `loopcheck-equivalent`
//! and has `form:` instead of `defect:` and `caught-by:`; every case they run on must
//! pass, so the judge is held to the property, not one mechanism.
//!
//! Python mutants run on the Python the SDK test uses (`LOOPCHECK_PYTHON`, else
//! `.venv/bin/python`); Node mutants on `node`, when `harness/node/node_modules` exists.
//! A missing interpreter skips its mutants with a note, except under `CI`, where it fails.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{loopcheck_bin, python, root, shell_quote};

/// loopcheck processes at once (each runs its cases with `--jobs 2`).
const PARALLEL: usize = 3;

const MUTANTS: &str = "harness/mutants";
const EQUIVALENTS: &str = "harness/equivalents";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Node,
    Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Must be caught by its check.
    Mutant,
    /// A documented defect the suite does not catch yet: listed in docs/mutants.md, not run.
    Gap,
    /// A correct controller in another form: must pass every case it runs.
    Equivalent,
}

#[derive(Debug, Clone)]
pub(crate) struct Mutant {
    pub(crate) file: String,
    pub(crate) path: PathBuf,
    pub(crate) lang: Lang,
    kind: Kind,
    /// The check that must catch a mutant; the form of an equivalent.
    pub(crate) caught_by: String,
    cases: Vec<String>,
    pub(crate) supports: String,
    /// `passes: none`: besides being caught, the mutant passes no case at all.
    passes_none: bool,
}

/// The header of a mutant file, or None for a file without the marker; a file with the
/// marker but a broken header is an error.
pub(crate) fn parse_header(path: &Path) -> Result<Option<Mutant>, String> {
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let (lang, prefix) = match path.extension().and_then(|e| e.to_str()) {
        Some("py") => (Lang::Python, "#"),
        Some("mjs") => (Lang::Node, "//"),
        Some("sh") => (Lang::Shell, "#"),
        _ => return Ok(None),
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let mut lines = text.lines().map(|line| {
        line.strip_prefix(prefix)
            .map(|rest| rest.strip_prefix(' ').unwrap_or(rest).trim_end())
    });
    let kind = match lines.next().flatten() {
        Some("loopcheck-mutant") => Kind::Mutant,
        Some("loopcheck-gap") => Kind::Gap,
        Some("loopcheck-equivalent") => Kind::Equivalent,
        _ => return Ok(None),
    };
    let mut fields = BTreeMap::new();
    for line in lines {
        let Some(line) = line else { break };
        let Some((key, value)) = line.split_once(':') else {
            break;
        };
        fields.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    let field = |key: &str| -> Result<String, String> {
        fields
            .get(key)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| format!("{file}: the header has no `{prefix} {key}: ...` line"))
    };
    let split = |value: String| -> Vec<String> {
        value
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let caught_by = if kind == Kind::Equivalent {
        field("form")?
    } else {
        field("defect")?;
        field("caught-by")?
    };
    let cases = split(field("cases")?);
    let supports = split(field("supports")?).join(",");
    let passes_none = match fields.get("passes").map(String::as_str) {
        None => false,
        Some("none") => true,
        Some(other) => {
            return Err(format!(
                "{file}: `passes: {other}`: the only value is `none`"
            ));
        }
    };
    Ok(Some(Mutant {
        file,
        path: path.to_owned(),
        lang,
        kind,
        caught_by,
        cases,
        supports,
        passes_none,
    }))
}

fn discover() -> Vec<Mutant> {
    let mut paths: Vec<PathBuf> = [MUTANTS, EQUIVALENTS]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root().join(dir)).expect("the harness folder exists"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    let (mutants, errors): (Vec<_>, Vec<_>) = paths
        .iter()
        .map(|path| parse_header(path))
        .partition(Result::is_ok);
    let errors: Vec<String> = errors.into_iter().map(Result::unwrap_err).collect();
    assert!(
        errors.is_empty(),
        "broken mutant headers:\n{}",
        errors.join("\n")
    );
    mutants.into_iter().filter_map(Result::unwrap).collect()
}

/// Whether `program args...` runs and exits 0; the reason otherwise.
fn runs(program: &Path, args: &[&str]) -> Result<(), String> {
    match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
    {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// The interpreter for a language, or why it is unusable.
pub(crate) fn interpreter(lang: Lang) -> Result<PathBuf, String> {
    match lang {
        Lang::Python => {
            let python = python();
            runs(&python, &["-c", "import openai, jsonschema"])
                .map(|()| python.clone())
                .map_err(|err| {
                    format!(
                        "{} cannot import openai and jsonschema ({err}); create .venv as \
                         harness/python/README.md says or set LOOPCHECK_PYTHON",
                        python.display()
                    )
                })
        }
        Lang::Node => {
            let modules = root().join("harness/node/node_modules");
            if !modules.is_dir() {
                return Err(format!(
                    "{} is missing (npm ci in harness/node)",
                    modules.display()
                ));
            }
            let node = PathBuf::from("node");
            runs(&node, &["--version"])
                .map(|()| node)
                .map_err(|err| format!("node does not run: {err}"))
        }
        Lang::Shell => Ok(PathBuf::from("sh")),
    }
}

/// What one mutant run found.
struct Outcome {
    mutant: Mutant,
    elapsed: Duration,
    /// None when caught; what went wrong otherwise.
    problem: Option<String>,
}

fn run_mutant(mutant: &Mutant, interpreter: &Path) -> Outcome {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report_path = dir.path().join("report.json");
    let controller = format!(
        "{} {}",
        shell_quote(&interpreter.to_string_lossy()),
        shell_quote(&mutant.path.to_string_lossy())
    );
    let mut command = Command::new(loopcheck_bin());
    command
        .arg("run")
        .args(["--controller", &controller])
        .args(["--supports", &mutant.supports])
        .args(["--jobs", "2"])
        .arg("--report-json")
        .arg(&report_path)
        .current_dir(root())
        .stdin(Stdio::null());
    if mutant.kind == Kind::Equivalent {
        // A correct controller must pass on what it does, not on how fast a loaded
        // machine runs it: six Python controllers at once on two cores can outlast the
        // default 30 s. A hanging equivalent still fails, only later.
        command.args(["--timeout", "120"]);
    }
    for glob in &mutant.cases {
        command.args(["--filter", glob]);
    }
    let output = command.output().expect("loopcheck runs");
    let problem = match std::fs::read(&report_path) {
        Err(err) => Some(format!(
            "no JSON report ({err}); loopcheck exited with {}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )),
        Ok(bytes) => {
            let report: Value = serde_json::from_slice(&bytes).expect("the JSON report parses");
            judge(mutant, &report)
        }
    };
    Outcome {
        mutant: mutant.clone(),
        elapsed: started.elapsed(),
        problem,
    }
}

/// None when some case failed the mutant's check (for an equivalent: when every case
/// that ran passed); otherwise what the run did.
fn judge(mutant: &Mutant, report: &Value) -> Option<String> {
    let cases = report["cases"].as_array().cloned().unwrap_or_default();
    let ran = cases.iter().any(|c| c["verdict"] != "unsupported");
    let (held, what) = if mutant.kind == Kind::Equivalent {
        let passed = cases
            .iter()
            .all(|c| matches!(c["verdict"].as_str(), Some("pass" | "unsupported")));
        (
            passed,
            format!("(a correct controller: {}) did not pass", mutant.caught_by),
        )
    } else {
        let caught = cases.iter().any(|case| {
            (mutant.caught_by == "terminal/result-line" && case["verdict"] == "crashed")
                || case["checks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|check| {
                        check["id"] == mutant.caught_by.as_str()
                            && matches!(check["verdict"].as_str(), Some("fail" | "non-strict"))
                    })
        });
        let passed: Vec<String> = cases
            .iter()
            .filter(|c| {
                mutant.passes_none && matches!(c["verdict"].as_str(), Some("pass" | "non-strict"))
            })
            .map(|c| {
                format!(
                    "{} [{}]",
                    c["id"].as_str().unwrap_or("?"),
                    c["state"].as_str().unwrap_or("?")
                )
            })
            .collect();
        if caught && !passed.is_empty() {
            return Some(format!(
                "{} makes no request, yet {} case run(s) passed: {}",
                mutant.file,
                passed.len(),
                passed.join(", ")
            ));
        }
        (caught, format!("was not caught by {} on", mutant.caught_by))
    };
    if held && ran {
        return None;
    }
    Some(format!(
        "{} {what} {} (--supports {}){}:\n{}",
        mutant.file,
        mutant.cases.join(", "),
        mutant.supports,
        if ran {
            ""
        } else {
            "; no case ran, check its cases and supports"
        },
        describe_cases(&cases)
    ))
}

/// Each case's verdict, and each check that did not pass.
fn describe_cases(cases: &[Value]) -> String {
    let mut lines = Vec::new();
    for case in cases {
        lines.push(format!(
            "  {} [{}]: {}",
            case["id"].as_str().unwrap_or("?"),
            case["state"].as_str().unwrap_or("?"),
            case["verdict"].as_str().unwrap_or("?")
        ));
        for check in case["checks"].as_array().into_iter().flatten() {
            if !matches!(check["verdict"].as_str(), Some("pass" | "info")) {
                lines.push(format!(
                    "      {} ({}): {}",
                    check["id"].as_str().unwrap_or("?"),
                    check["verdict"].as_str().unwrap_or("?"),
                    check["message"].as_str().unwrap_or("")
                ));
            }
        }
    }
    if lines.is_empty() {
        "  (no case matched)".to_owned()
    } else {
        lines.join("\n")
    }
}

/// Mutants and equivalents run in one queue, a few at a time, so the machine is shared
/// evenly; each kind is then judged on its own.
#[test]
fn every_mutant_is_caught_and_every_equivalent_passes() {
    let started = Instant::now();
    let all = discover();
    let runnable: Vec<Mutant> = all
        .iter()
        .filter(|m| m.kind != Kind::Gap)
        .cloned()
        .collect();
    assert!(
        runnable.iter().any(|m| m.kind == Kind::Mutant),
        "no mutant found in {MUTANTS}"
    );
    assert!(
        runnable.iter().any(|m| m.kind == Kind::Equivalent),
        "no equivalent found in {EQUIVALENTS}"
    );

    let mut queue = VecDeque::new();
    for lang in [Lang::Python, Lang::Node] {
        let of_lang: Vec<&Mutant> = runnable.iter().filter(|m| m.lang == lang).collect();
        if of_lang.is_empty() {
            continue;
        }
        match interpreter(lang) {
            Ok(program) => queue.extend(of_lang.into_iter().map(|m| (m.clone(), program.clone()))),
            Err(err) if std::env::var_os("CI").is_some() => {
                panic!("CI must run the {lang:?} mutants and equivalents: {err}")
            }
            Err(err) => {
                eprintln!(
                    "note: skipping {} {lang:?} mutant(s) and equivalent(s): {err}",
                    of_lang.len()
                );
            }
        }
    }

    let total = queue.len();
    let queue = Arc::new(Mutex::new(queue));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..PARALLEL)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let outcomes = Arc::clone(&outcomes);
            std::thread::spawn(move || {
                loop {
                    let Some((mutant, program)) = queue.lock().unwrap().pop_front() else {
                        break;
                    };
                    let outcome = run_mutant(&mutant, &program);
                    let word = match (outcome.mutant.kind, outcome.problem.is_none()) {
                        (Kind::Equivalent, true) => "passed",
                        (Kind::Equivalent, false) => "FAILED",
                        (_, true) => "caught",
                        (_, false) => "MISSED",
                    };
                    eprintln!(
                        "{word} {:<40} {:<34} {:>5.1} s",
                        outcome.mutant.file,
                        crate::support::clip(&outcome.mutant.caught_by, 34),
                        outcome.elapsed.as_secs_f64()
                    );
                    outcomes.lock().unwrap().push(outcome);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a mutant worker");
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    eprintln!(
        "{total} mutant(s) and equivalent(s) run in {:.1} s ({} gap(s) documented, not run)",
        started.elapsed().as_secs_f64(),
        all.iter().filter(|m| m.kind == Kind::Gap).count()
    );
    let problems = |kind: Kind| -> Vec<&str> {
        outcomes
            .iter()
            .filter(|o| o.mutant.kind == kind)
            .filter_map(|o| o.problem.as_deref())
            .collect()
    };
    let (missed, failed) = (problems(Kind::Mutant), problems(Kind::Equivalent));
    assert!(
        missed.is_empty() && failed.is_empty(),
        "{} mutant(s) escaped their check, {} equivalent form(s) failed:\n\n{}",
        missed.len(),
        failed.len(),
        missed
            .iter()
            .chain(&failed)
            .copied()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// The cells of a markdown table row, without the outer pipes.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(
        inner
            .split('|')
            .map(|cell| {
                let cell = cell.trim().trim_matches('`');
                // `[file](file)` links name the file by their text.
                cell.strip_prefix('[')
                    .and_then(|rest| rest.split_once(']'))
                    .map_or(cell, |(text, _)| text.trim_matches('`'))
                    .to_owned()
            })
            .collect(),
    )
}

/// `file -> <column>` from every table of the page with a `file` and a `<column>` column.
fn table_rows(page: &str, column: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut columns: Option<(usize, usize)> = None;
    for line in page.lines() {
        let Some(row) = cells(line) else {
            columns = None;
            continue;
        };
        if row
            .iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        {
            continue; // the separator row
        }
        let header = |name: &str| row.iter().position(|c| c.eq_ignore_ascii_case(name));
        if let (Some(file), Some(check)) = (header("file"), header(column)) {
            columns = Some((file, check));
            continue;
        }
        if let Some((file, check)) = columns
            && let (Some(f), Some(c)) = (row.get(file), row.get(check))
        {
            rows.push((f.clone(), c.clone()));
        }
    }
    rows
}

#[test]
fn the_mutants_page_lists_every_mutant_and_equivalent() {
    let path = root().join("docs/mutants.md");
    let page = std::fs::read_to_string(&path).expect("docs/mutants.md exists");
    let all = discover();
    let mut problems = Vec::new();
    // Mutants and gaps are listed with the check that catches them; equivalents with the
    // cases they pass.
    for (column, kinds) in [
        ("caught-by", &[Kind::Mutant, Kind::Gap][..]),
        ("passes", &[Kind::Equivalent][..]),
    ] {
        let rows = table_rows(&page, column);
        let listed: Vec<&Mutant> = all.iter().filter(|m| kinds.contains(&m.kind)).collect();
        for mutant in &listed {
            let expected = if mutant.kind == Kind::Equivalent {
                mutant.cases.join(", ")
            } else {
                mutant.caught_by.clone()
            };
            match rows.iter().find(|(file, _)| *file == mutant.file) {
                None => problems.push(format!(
                    "{} is not in the table with a {column} column (expected a row `| {} | ... | {expected} |`)",
                    mutant.file, mutant.file
                )),
                Some((_, value)) if *value != expected => problems.push(format!(
                    "{}: the table's {column} says {value}, its header says {expected}",
                    mutant.file
                )),
                Some(_) => {}
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (file, _) in &rows {
            if !listed.iter().any(|m| m.file == *file) {
                problems.push(format!(
                    "the {column} table lists {file}, which is not a file in {MUTANTS} or {EQUIVALENTS} of that kind"
                ));
            }
            if !seen.insert(file) {
                problems.push(format!("the page lists {file} twice"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} is out of date:\n{}",
        path.display(),
        problems.join("\n")
    );
}
