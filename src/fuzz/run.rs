//! A fuzz run: kept failures replayed, cases generated, run and judged for the whole
//! budget, failures grouped by the checks they fail, one example of each group shrunk
//! and kept.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::in_process::InProcess;
use super::plan::Plan;
use super::size::Size;
use super::strategy::{Profile, plans};
use super::trim;
use crate::oracle::{CaseVerdict, CheckVerdict};
use crate::report::CaseReport;
use crate::runner::{CaseRunner, Controller, RunOptions, run_in_process};
use crate::scenario::{self, Case, Scenario, StateMode};

/// What `loopcheck fuzz` was asked.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    /// The controller and what it supports (its name and command label what is written).
    pub controller: Controller,
    /// When set, the controller runs in this process instead of as `controller.command`.
    pub in_process: Option<InProcess>,
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
    /// Most shrink steps, for each failure group.
    pub max_shrink_steps: usize,
    /// Stop at the first failure (or kept failure that still fails).
    pub fail_fast: bool,
    /// Also generate dropped connections, after which a client waits its own backoff.
    pub drops: bool,
    /// Delete the kept failures that now pass.
    pub prune: bool,
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
        /// Failure groups so far.
        groups: usize,
    },
    /// A shrink step was run.
    ShrinkStep {
        /// The smaller case still fails.
        failed: bool,
    },
}

/// A failure kept in `--out` from an earlier run, replayed first.
#[derive(Debug, Clone)]
pub struct Kept {
    /// Its file.
    pub file: PathBuf,
    /// What it fails now; empty when it passes.
    pub failing: Vec<String>,
    /// It passed and `--prune` deleted it.
    pub pruned: bool,
}

/// A shrunk example of a failure group.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The minimal failing scenario, written.
    pub file: PathBuf,
    /// What the minimal scenario fails.
    pub failing: Vec<String>,
    /// Shrink steps taken.
    pub steps: usize,
    /// Wall time of the shrinking.
    pub elapsed: Duration,
    /// The size of the generated case.
    pub before: Size,
    /// The size of the minimal one.
    pub after: Size,
}

/// The generated cases whose failures shrink to one failing the same set of checks.
#[derive(Debug, Clone)]
pub struct FailureGroup {
    /// The checks (or verdict) its shrunk case fails (those of its first case, when a
    /// kept failure stands for it).
    pub checks: Vec<String>,
    /// The first generated case of the group.
    pub index: usize,
    /// Wall time from the start to it.
    pub found_after: Duration,
    /// Generated cases in the group.
    pub cases: usize,
    /// Its shrunk example; `None` when a kept failure that still fails the same checks
    /// stands for it.
    pub shrunk: Option<Shrunk>,
    /// That kept failure.
    pub kept: Option<PathBuf>,
}

/// How fuzzing ended.
#[derive(Debug, Clone)]
pub struct FuzzOutcome {
    /// Generated cases run.
    pub cases: usize,
    /// Wall time of the generated cases and their shrinking (not of the kept failures).
    pub elapsed: Duration,
    /// The kept failures, replayed.
    pub kept: Vec<Kept>,
    /// The failure groups, in the order they were found.
    pub groups: Vec<FailureGroup>,
}

impl FuzzOutcome {
    /// Something fails: a generated case, or a kept failure.
    pub fn failed(&self) -> bool {
        !self.groups.is_empty() || self.kept.iter().any(|k| !k.failing.is_empty())
    }
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
        .fold(Vec::new(), |mut ids, id| {
            if !ids.contains(&id) {
                ids.push(id);
            }
            ids
        });
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

/// The case of a scenario.
fn case_of(scenario: Scenario) -> Case {
    let source = PathBuf::from(format!("{}.yaml", scenario.id));
    Case { scenario, source }
}

/// The case of a plan.
fn case(plan: &Plan, id: &str, summary: &str) -> Case {
    case_of(plan.scenario(id, summary))
}

/// One job's controller: a process (kept running when it is persistent), or a closure in
/// this process.
enum Worker {
    Process(Box<CaseRunner>),
    InProcess(InProcess, Duration),
}

impl Worker {
    fn new(options: &FuzzOptions) -> Self {
        match &options.in_process {
            Some(closure) => Self::InProcess(closure.clone(), options.run.timeout),
            None => Self::Process(Box::new(CaseRunner::new(&options.controller, &options.run))),
        }
    }

    async fn run(&mut self, case: &Case, state: StateMode) -> CaseReport {
        match self {
            Self::Process(runner) => runner.run(case, state).await,
            Self::InProcess(closure, timeout) => {
                let closure = closure.0.clone();
                run_in_process(case, state, *timeout, move |env, task| closure(env, task)).await
            }
        }
    }

    async fn stop(self) {
        if let Self::Process(runner) = self {
            runner.stop().await;
        }
    }
}

/// Failures written by earlier runs, each run again first; those that pass are deleted
/// when asked.
async fn replay_kept(options: &FuzzOptions, worker: &mut Worker) -> Result<Vec<Kept>, FuzzError> {
    if !options.out.is_dir() {
        return Ok(Vec::new());
    }
    let folder = |why: String| FuzzError::Folder {
        path: options.out.clone(),
        why,
    };
    let cases = scenario::load_paths(std::slice::from_ref(&options.out)).map_err(|errors| {
        folder(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let mut kept = Vec::new();
    for case in cases {
        let mut failing_now = Vec::new();
        for state in case.scenario.states.clone() {
            failing_now = failing(&worker.run(&case, state).await);
            if !failing_now.is_empty() {
                break;
            }
        }
        let pruned = failing_now.is_empty() && options.prune;
        if pruned {
            std::fs::remove_file(&case.source).map_err(|e| folder(e.to_string()))?;
        }
        let still = !failing_now.is_empty();
        kept.push(Kept {
            file: case.source.clone(),
            failing: failing_now,
            pruned,
        });
        if still && options.fail_fast {
            break;
        }
    }
    Ok(kept)
}

/// Fuzzes a controller: every kept failure, then generated cases for the whole budget.
pub async fn fuzz(
    options: &FuzzOptions,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> Result<FuzzOutcome, FuzzError> {
    let jobs = options.run.jobs.max(1);
    let mut workers: Vec<Worker> = (0..jobs).map(|_| Worker::new(options)).collect();
    let kept = match replay_kept(options, &mut workers[0]).await {
        Ok(kept) => kept,
        Err(err) => {
            stop(workers).await;
            return Err(err);
        }
    };
    let started = Instant::now();
    let mut outcome = FuzzOutcome {
        cases: 0,
        elapsed: Duration::ZERO,
        kept,
        groups: Vec::new(),
    };
    if options.fail_fast && outcome.failed() {
        stop(workers).await;
        return Ok(outcome);
    }
    let result = generate(options, &mut workers, &mut outcome, started, progress).await;
    stop(workers).await;
    outcome.elapsed = started.elapsed();
    result.map(|()| outcome)
}

/// A generated case's run in flight: its index, the worker running it, its report.
type Running = tokio::task::JoinSet<(usize, Worker, CaseReport)>;

/// Waits for every case in flight; their workers back to `free`, their reports to `done`.
async fn drain(
    running: &mut Running,
    free: &mut Vec<Worker>,
    done: &mut BTreeMap<usize, CaseReport>,
) {
    while let Some(joined) = running.join_next().await {
        let (index, worker, report) = joined.expect("a fuzz case task does not panic");
        free.push(worker);
        done.insert(index, report);
    }
}

/// Generated cases until the budget is spent (or the first failure, with `fail_fast`):
/// each worker takes the next case as soon as it is free (a slow case holds up no other),
/// and the reports are judged in the cases' order, so a seed's failure groups do not
/// depend on `--jobs`. Shrinking waits for the cases in flight and uses one worker.
async fn generate(
    options: &FuzzOptions,
    workers: &mut Vec<Worker>,
    outcome: &mut FuzzOutcome,
    started: Instant,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> Result<(), FuzzError> {
    let strategy = plans(&Profile {
        supports: options.controller.supports.clone(),
        max_turns: options.max_turns,
    });
    // Mapped, not filtered: each case draws what it drew before, but a drop.
    let strategy = if options.drops {
        strategy
    } else {
        strategy.prop_map(Plan::without_drops).boxed()
    };
    // Kept failures that still fail stand for the groups of the same checks.
    let kept_by_checks: BTreeMap<Vec<String>, PathBuf> = outcome
        .kept
        .iter()
        .filter(|k| !k.failing.is_empty())
        .map(|k| (group_key(&k.failing), k.file.clone()))
        .collect();
    // Each set of checks a generated case failed, with the group it went to.
    let mut groups_by_checks: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    progress(FuzzEvent::Started(options.cases));
    let id = |index: usize| format!("fuzz/s{}-c{index}", options.seed);
    let mut running = Running::new();
    let mut trees: BTreeMap<usize, Box<dyn ValueTree<Value = Plan>>> = BTreeMap::new();
    let mut done: BTreeMap<usize, CaseReport> = BTreeMap::new();
    let (mut next, mut judged) = (0, 0);
    let result = loop {
        while next < options.cases
            && options.time.is_none_or(|t| started.elapsed() < t)
            && let Some(mut worker) = workers.pop()
        {
            let tree = tree(&strategy, options.seed, next);
            let case = case(&tree.current(), &id(next), "A generated case.");
            trees.insert(next, tree);
            let index = next;
            running.spawn(async move {
                let state = case.scenario.states[0];
                let report = worker.run(&case, state).await;
                (index, worker, report)
            });
            next += 1;
        }
        let Some(joined) = running.join_next().await else {
            break Ok(());
        };
        let (index, worker, report) = joined.expect("a fuzz case task does not panic");
        workers.push(worker);
        done.insert(index, report);
        let mut stop = false;
        while let Some(report) = done.remove(&judged) {
            let case_index = judged;
            judged += 1;
            outcome.cases = judged;
            let mut tree = trees.remove(&case_index).expect("a tree per case");
            let failed = failing(&report);
            let checks = group_key(&failed);
            if let Some(&group) = groups_by_checks.get(&checks) {
                outcome.groups[group].cases += 1;
            } else if !checks.is_empty() {
                let found_after = started.elapsed();
                let group = match kept_by_checks.get(&checks) {
                    Some(kept) => FailureGroup {
                        checks: checks.clone(),
                        index: case_index,
                        found_after,
                        cases: 1,
                        shrunk: None,
                        kept: Some(kept.clone()),
                    },
                    None => {
                        drain(&mut running, workers, &mut done).await;
                        let shrunk = shrink_and_keep(
                            options,
                            &mut workers[0],
                            tree.as_mut(),
                            case_index,
                            failed,
                            progress,
                        )
                        .await?;
                        FailureGroup {
                            checks: group_key(&shrunk.failing),
                            index: case_index,
                            found_after,
                            cases: 1,
                            shrunk: Some(shrunk),
                            kept: None,
                        }
                    }
                };
                // Cases failing different sets of checks often shrink to one failure (the
                // same defect, met beside different others): one group, one file.
                let same = outcome.groups.iter().position(|g| g.checks == group.checks);
                match (same, &group.shrunk) {
                    (Some(earlier), Some(shrunk)) => {
                        outcome.groups[earlier].cases += 1;
                        groups_by_checks.insert(checks.clone(), earlier);
                        std::fs::remove_file(&shrunk.file).map_err(|e| FuzzError::Folder {
                            path: options.out.clone(),
                            why: e.to_string(),
                        })?;
                    }
                    _ => {
                        groups_by_checks.insert(checks.clone(), outcome.groups.len());
                        outcome.groups.push(group);
                    }
                }
            }
            progress(FuzzEvent::CaseRun {
                failed: !checks.is_empty(),
                groups: outcome.groups.len(),
            });
            if options.fail_fast && !outcome.groups.is_empty() {
                stop = true;
                break;
            }
        }
        if stop {
            break Ok(());
        }
    };
    drain(&mut running, workers, &mut done).await;
    result
}

async fn stop(workers: Vec<Worker>) {
    for worker in workers {
        worker.stop().await;
    }
}

/// What a failure group is known by: the set of checks its cases fail.
fn group_key(failed: &[String]) -> Vec<String> {
    let set: BTreeSet<&String> = failed.iter().collect();
    set.into_iter().cloned().collect()
}

/// The failure a shrink keeps, so shrinking does not wander to another: the first
/// finding of the oracle's own, before the API's rejection and the wrong outcome that
/// usually follow from it.
fn target(failed: &[String]) -> String {
    let consequence = |id: &&String| matches!(id.as_str(), "wire/accepted" | "terminal/outcome");
    failed
        .iter()
        .find(|id| !consequence(id))
        .or(failed.first())
        .cloned()
        .unwrap_or_default()
}

/// Shrinks a failing generated case, then writes it; returns what was kept.
async fn shrink_and_keep(
    options: &FuzzOptions,
    worker: &mut Worker,
    tree: &mut dyn ValueTree<Value = Plan>,
    index: usize,
    failed: Vec<String>,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> Result<Shrunk, FuzzError> {
    let shrink_started = Instant::now();
    let target = target(&failed);
    let before = Size::of(&tree.current().scenario("fuzz/found", ""));
    let (plan, failing, plan_steps) =
        shrink(options, worker, tree, failed, &target, progress).await;
    let (scenario, failing, trim_steps) = trim(
        worker,
        plan.scenario("fuzz/shrinking", "A case being shrunk."),
        failing,
        &target,
        options.max_shrink_steps.saturating_sub(plan_steps),
        progress,
    )
    .await;
    let steps = plan_steps + trim_steps;
    let after = Size::of(&scenario);
    let file = write(options, index, scenario, &failing, steps)?;
    Ok(Shrunk {
        file,
        failing,
        steps,
        elapsed: shrink_started.elapsed(),
        before,
        after,
    })
}

/// Shrinks a failing plan as proptest does: simplify while it still fails the same way,
/// step back (complicate) when a simplification passes. Returns the minimal plan, what
/// it fails, and the steps taken.
async fn shrink(
    options: &FuzzOptions,
    worker: &mut Worker,
    tree: &mut dyn ValueTree<Value = Plan>,
    failed: Vec<String>,
    target: &str,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> (Plan, Vec<String>, usize) {
    let mut minimal = (tree.current(), failed);
    let mut steps = 0;
    if !tree.simplify() {
        return (minimal.0, minimal.1, steps);
    }
    while steps < options.max_shrink_steps {
        steps += 1;
        let plan = tree.current();
        let candidate = case(&plan, "fuzz/shrinking", "A case being shrunk.");
        let failing = failing(&worker.run(&candidate, plan.state).await);
        let still = failing.iter().any(|id| id == target);
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

/// Takes out of a shrunk scenario what the failure does not need (unused tools, tool
/// behaviours, policies), one piece at a time, while it still fails `target`.
async fn trim(
    worker: &mut Worker,
    mut scenario: Scenario,
    mut failed: Vec<String>,
    target: &str,
    budget: usize,
    progress: &mut (dyn FnMut(FuzzEvent) + Send),
) -> (Scenario, Vec<String>, usize) {
    let mut rejected = BTreeSet::new();
    let mut steps = 0;
    while steps < budget {
        let Some(candidate) = trim::candidates(&scenario)
            .into_iter()
            .find(|c| !rejected.contains(&c.key))
        else {
            break;
        };
        steps += 1;
        let state = candidate.scenario.states[0];
        let case = case_of(candidate.scenario);
        let failing = failing(&worker.run(&case, state).await);
        let still = failing.iter().any(|id| id == target);
        progress(FuzzEvent::ShrinkStep { failed: still });
        if still {
            scenario = case.scenario;
            failed = failing;
        } else {
            rejected.insert(candidate.key);
        }
    }
    (scenario, failed, steps)
}

/// Writes a minimal failing case as a scenario file; returns its path.
fn write(
    options: &FuzzOptions,
    index: usize,
    mut scenario: Scenario,
    failing: &[String],
    steps: usize,
) -> Result<PathBuf, FuzzError> {
    let folder = |why: String| FuzzError::Folder {
        path: options.out.clone(),
        why,
    };
    std::fs::create_dir_all(&options.out).map_err(|e| folder(e.to_string()))?;
    let name = format!("s{}-c{index}", options.seed);
    scenario.id = format!("fuzz/{name}");
    scenario.summary = format!(
        "Found by `loopcheck fuzz --seed {}` (generated case {index}) against `{}`, and shrunk in {steps} step(s): it fails {}.",
        options.seed,
        options.controller.command,
        failing.join(", ")
    );
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
