//! A fuzz run: cases generated, run and judged, the failing one shrunk and kept.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::plan::Plan;
use super::strategy::{Profile, plans};
use crate::oracle::{CaseVerdict, CheckVerdict};
use crate::report::CaseReport;
use crate::runner::{CaseRunner, Controller, RunOptions};
use crate::scenario::{self, Case};

/// What `loopcheck fuzz` was asked.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    /// The controller and what it supports.
    pub controller: Controller,
    /// Timeout and jobs (cases run at once).
    pub run: RunOptions,
    /// Cases to generate.
    pub cases: usize,
    /// The seed: the same seed generates the same cases.
    pub seed: u64,
    /// Where failures are written, and read back first next time.
    pub out: PathBuf,
    /// Most turns in a case.
    pub max_turns: usize,
    /// Stop generating after this long.
    pub time: Option<Duration>,
    /// Most shrink steps.
    pub max_shrink_steps: usize,
}

/// What happened, for a progress display.
#[derive(Debug, Clone, Copy)]
pub enum FuzzEvent {
    /// Fuzzing starts: at most this many cases.
    Started(usize),
    /// A generated case was run.
    CaseRun {
        /// It failed.
        failed: bool,
    },
    /// A shrink step was run.
    ShrinkStep {
        /// The smaller case still fails.
        failed: bool,
    },
}

/// How fuzzing ended.
#[derive(Debug)]
pub enum FuzzOutcome {
    /// No failure.
    Passed {
        /// Cases run.
        cases: usize,
        /// Wall time.
        elapsed: Duration,
    },
    /// A failure, shrunk and written.
    Failed {
        /// The minimal failing scenario.
        file: PathBuf,
        /// The checks (or verdict) it fails.
        failing: Vec<String>,
        /// Which generated case failed.
        index: usize,
        /// Cases run before it (it included).
        cases: usize,
        /// Shrink steps taken.
        shrink_steps: usize,
        /// Wall time to the failure, and of the shrinking.
        elapsed: Duration,
        /// Wall time of the shrinking.
        shrink_elapsed: Duration,
    },
    /// A failure kept from an earlier run still fails.
    StillFailing {
        /// Its file.
        file: PathBuf,
        /// What it fails.
        failing: Vec<String>,
    },
}

/// Why fuzzing could not run.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// The failures folder cannot be read or written.
    #[error("failed to use the fuzz folder {path}: {why}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
}

/// The checks (or the verdict, for a case that crashed or timed out) a case run fails;
/// empty when it does not fail.
pub fn failing(report: &CaseReport) -> Vec<String> {
    if !report.verdict.is_failure() {
        return Vec::new();
    }
    let checks: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.verdict == CheckVerdict::Fail)
        .map(|c| c.id.clone())
        .collect();
    if checks.is_empty() || matches!(report.verdict, CaseVerdict::Crashed | CaseVerdict::Timeout) {
        vec![report.verdict.as_str().to_owned()]
    } else {
        checks
    }
}

/// The value tree of generated case `index`: its own random stream from (seed, index),
/// so a case does not depend on the ones before it or on how many run at once.
fn tree(
    strategy: &BoxedStrategy<Plan>,
    seed: u64,
    index: usize,
) -> Box<dyn ValueTree<Value = Plan>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(index as u64).to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    Box::new(
        strategy
            .new_tree(&mut runner)
            .expect("plan strategies do not reject"),
    )
}

/// The case of a plan.
fn case(plan: &Plan, id: &str, summary: &str) -> Case {
    Case {
        scenario: plan.scenario(id, summary),
        source: PathBuf::from(format!("{id}.yaml")),
    }
}

/// Runs `cases` on `runners` (one case per runner at a time); reports in order.
async fn run_batch(runners: &mut Vec<CaseRunner>, cases: Vec<Case>) -> Vec<CaseReport> {
    let mut set = tokio::task::JoinSet::new();
    for (slot, case) in cases.into_iter().enumerate() {
        let mut runner = runners.pop().expect("a runner per case");
        set.spawn(async move {
            let state = case.scenario.states[0];
            let report = runner.run(&case, state).await;
            (slot, runner, report)
        });
    }
    let mut reports: Vec<Option<CaseReport>> = Vec::new();
    while let Some(joined) = set.join_next().await {
        let (slot, runner, report) = joined.expect("a fuzz case task does not panic");
        runners.push(runner);
        if reports.len() <= slot {
            reports.resize(slot + 1, None);
        }
        reports[slot] = Some(report);
    }
    reports.into_iter().flatten().collect()
}

/// Failures written by earlier runs, each run again first.
async fn replay_kept(
    options: &FuzzOptions,
    runner: &mut CaseRunner,
) -> Result<Option<FuzzOutcome>, FuzzError> {
    if !options.out.is_dir() {
        return Ok(None);
    }
    let cases = scenario::load_paths(std::slice::from_ref(&options.out)).map_err(|errors| {
        FuzzError::Folder {
            path: options.out.clone(),
            why: errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        }
    })?;
    for case in cases {
        for state in case.scenario.states.clone() {
            let report = runner.run(&case, state).await;
            let failing = failing(&report);
            if !failing.is_empty() {
                return Ok(Some(FuzzOutcome::StillFailing {
                    file: case.source.clone(),
                    failing,
                }));
            }
        }
    }
    Ok(None)
}

/// Fuzzes a controller.
pub async fn fuzz(
    options: &FuzzOptions,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> Result<FuzzOutcome, FuzzError> {
    let started = Instant::now();
    let jobs = options.run.jobs.max(1);
    let mut runners: Vec<CaseRunner> = (0..jobs)
        .map(|_| CaseRunner::new(&options.controller, &options.run))
        .collect();
    if let Some(outcome) = replay_kept(options, &mut runners[0]).await? {
        stop(runners).await;
        return Ok(outcome);
    }
    let strategy = plans(&Profile {
        supports: options.controller.supports.clone(),
        max_turns: options.max_turns,
    });
    progress(FuzzEvent::Started(options.cases));
    let id = |index: usize| format!("fuzz/s{}-c{index}", options.seed);
    let mut index = 0;
    while index < options.cases && options.time.is_none_or(|t| started.elapsed() < t) {
        let batch: Vec<usize> = (index..options.cases.min(index + jobs)).collect();
        let trees: Vec<_> = batch
            .iter()
            .map(|&i| tree(&strategy, options.seed, i))
            .collect();
        let cases = batch
            .iter()
            .zip(&trees)
            .map(|(&i, t)| case(&t.current(), &id(i), "A generated case."))
            .collect();
        let reports = run_batch(&mut runners, cases).await;
        for (position, report) in reports.iter().enumerate() {
            let failed = failing(report);
            progress(FuzzEvent::CaseRun {
                failed: !failed.is_empty(),
            });
            if failed.is_empty() {
                continue;
            }
            let found_at = started.elapsed();
            let case_index = batch[position];
            let mut tree = trees.into_iter().nth(position).expect("a tree per case");
            let shrink_started = Instant::now();
            let (minimal, failing, steps) =
                shrink(options, &mut runners[0], tree.as_mut(), failed, progress).await;
            let file = write(options, case_index, &minimal, &failing, steps)?;
            stop(runners).await;
            return Ok(FuzzOutcome::Failed {
                file,
                failing,
                index: case_index,
                cases: case_index + 1,
                shrink_steps: steps,
                elapsed: found_at,
                shrink_elapsed: shrink_started.elapsed(),
            });
        }
        index += batch.len();
    }
    stop(runners).await;
    Ok(FuzzOutcome::Passed {
        cases: index,
        elapsed: started.elapsed(),
    })
}

async fn stop(runners: Vec<CaseRunner>) {
    for runner in runners {
        runner.stop().await;
    }
}

/// Shrinks a failing case as proptest does: simplify while it still fails the same way,
/// step back (complicate) when a simplification passes. Returns the minimal plan, what
/// it fails, and the steps taken.
async fn shrink(
    options: &FuzzOptions,
    runner: &mut CaseRunner,
    tree: &mut dyn ValueTree<Value = Plan>,
    failed: Vec<String>,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> (Plan, Vec<String>, usize) {
    // The failure to keep, so shrinking does not wander to another: the first finding
    // of the oracle's own, before the API's rejection and the wrong outcome that usually
    // follow from it.
    let consequence = |id: &String| matches!(id.as_str(), "wire/accepted" | "terminal/outcome");
    let target = failed
        .iter()
        .find(|id| !consequence(id))
        .unwrap_or(&failed[0])
        .clone();
    let mut minimal = (tree.current(), failed);
    let mut steps = 0;
    if !tree.simplify() {
        return (minimal.0, minimal.1, steps);
    }
    while steps < options.max_shrink_steps {
        steps += 1;
        let plan = tree.current();
        let candidate = case(&plan, "fuzz/shrinking", "A case being shrunk.");
        let report = runner.run(&candidate, plan.state).await;
        let failing = failing(&report);
        let still = failing.contains(&target);
        progress(FuzzEvent::ShrinkStep { failed: still });
        if still {
            minimal = (plan, failing);
            if !tree.simplify() {
                break;
            }
        } else if !tree.complicate() {
            break;
        }
    }
    (minimal.0, minimal.1, steps)
}

/// Writes a minimal failing case as a scenario file; returns its path.
fn write(
    options: &FuzzOptions,
    index: usize,
    plan: &Plan,
    failing: &[String],
    steps: usize,
) -> Result<PathBuf, FuzzError> {
    let folder = |why: String| FuzzError::Folder {
        path: options.out.clone(),
        why,
    };
    std::fs::create_dir_all(&options.out).map_err(|e| folder(e.to_string()))?;
    let name = format!("s{}-c{index}", options.seed);
    let summary = format!(
        "Found by `loopcheck fuzz --seed {}` (generated case {index}) against `{}`, and shrunk in {steps} step(s): it fails {}.",
        options.seed,
        options.controller.command,
        failing.join(", ")
    );
    let scenario = plan.scenario(&format!("fuzz/{name}"), &summary);
    let text = serde_saphyr::to_string(&scenario).map_err(|e| folder(e.to_string()))?;
    let path = options.out.join(format!("{name}.yaml"));
    crate::files::write_bytes_atomic(&path, text.as_bytes()).map_err(|e| folder(e.to_string()))?;
    Ok(path)
}

/// The command that replays a written failure.
pub fn replay_command(file: &Path, options: &FuzzOptions) -> String {
    let supports: Vec<&str> = options
        .controller
        .supports
        .iter()
        .map(String::as_str)
        .collect();
    format!(
        "loopcheck run {} --controller '{}' --supports {}",
        file.display(),
        options.controller.command.replace('\'', r"'\''"),
        supports.join(",")
    )
}
