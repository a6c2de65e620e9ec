//! Running cases: each case and state mode gets its own fake server, task file, process
//! group and ledger (docs/contract.md); `--jobs` of them at a time. Also a
//! library API that runs a case against an in-process async closure.

mod capture;
pub mod events;
mod group;
pub mod partition;
mod persistent;
mod process;

pub(crate) use group::kill_group;
pub mod task;

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::task::JoinSet;

use crate::baseline::Baseline;
use crate::oracle::{self, CaseVerdict};
use crate::report::{CaseReport, Summary};
use crate::scenario::{Case, Delivery, OutputSpec, Scenario, StateMode, ToolRef};
use crate::server::{Observer, RunningServer, Session, SessionOptions};
use crate::snapshot::Snapshots;
use crate::transcript::{ControllerResult, ProcessRecord, Transcript, Unfinished};
use events::{ExchangeNote, RunEvent};
pub use process::Direct;

/// Capability words of docs/contract.md.
pub const CAPABILITIES: &[&str] = &[
    "previous_response_id",
    "stateless",
    "conversation",
    "replay",
    "stream",
    "background",
    "programmatic",
    "approvals",
    "persistent",
    "budgets",
    "webhook",
];

/// The capabilities of a controller that declares none.
pub fn default_capabilities() -> BTreeSet<String> {
    ["previous_response_id", "stateless"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A controller to run: a shell command and what it supports.
#[derive(Debug, Clone)]
pub struct Controller {
    /// The name shown in reports.
    pub name: String,
    /// The command, run with `sh -c`.
    pub command: String,
    /// Declared capabilities.
    pub supports: BTreeSet<String>,
    /// The same controller started without a shell, when it is a known program (the
    /// built-in reference): `command` is then what reports show and what a replay or a
    /// reproduction runs.
    pub direct: Option<Direct>,
}

impl Controller {
    /// A controller run as a shell command.
    pub fn command(name: &str, command: String, supports: BTreeSet<String>) -> Self {
        Self {
            name: name.to_owned(),
            command,
            supports,
            direct: None,
        }
    }

    /// The built-in Rust reference controller: `loopcheck reference-controller` of the
    /// executable `exe`, which supports everything but the `replay` state mode (a
    /// stateless loop with storage left on, which it has no reason to be) and `webhook`
    /// (it polls). It runs in
    /// persistent mode (a worker per job): a process per case spent more on starting than
    /// on most cases.
    pub fn reference(name: &str, exe: PathBuf) -> Self {
        // Single-quoted for `sh`.
        let quoted = format!("'{}'", exe.to_string_lossy().replace('\'', r"'\''"));
        let supports = CAPABILITIES
            .iter()
            // It polls background runs: it registers no webhook endpoint.
            .filter(|c| !matches!(**c, "replay" | "webhook"))
            .map(|c| c.to_string())
            .collect();
        Self {
            direct: Some(Direct {
                program: exe,
                args: vec!["reference-controller".to_owned()],
                // mimalloc's arenas on transparent huge pages had the kernel zero 2 MB
                // before `main`: a fifth of the CPU time of a process run for one case.
                env: vec![("MIMALLOC_ALLOW_THP".to_owned(), "0".to_owned())],
            }),
            ..Self::command(name, format!("{quoted} reference-controller"), supports)
        }
    }
}

/// How cases are run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Per-case timeout.
    pub timeout: Duration,
    /// A fresh persistent worker's start-up budget: from its start until it reads its
    /// first case line (docs/contract.md, section 9); not counted in `timeout`.
    pub startup_timeout: Duration,
    /// Cases run at once.
    pub jobs: usize,
    /// What the fake server generates (ids, timestamps, every byte) derives from the
    /// case, the state mode and this seed.
    pub seed: u64,
    /// Compare each case run with its snapshot.
    pub snapshots: Option<Snapshots>,
    /// Expected failures.
    pub baseline: Option<Arc<Baseline>>,
    /// Only this shard of the planned case runs.
    pub partition: Option<partition::Partition>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            seed: 0,
            snapshots: None,
            baseline: None,
            partition: None,
        }
    }
}

/// A persistent worker's start-up budget when nothing sets one: an interpreter importing
/// its SDK took 25 s on a loaded machine.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment a controller gets for one case.
#[derive(Debug, Clone)]
pub struct ControllerEnv {
    /// `OPENAI_BASE_URL`.
    pub base_url: String,
    /// `OPENAI_API_KEY`.
    pub api_key: String,
    /// `LOOPCHECK_TOOLS_URL`.
    pub tools_url: String,
    /// `LOOPCHECK_CASE`.
    pub case: String,
}

impl ControllerEnv {
    /// The variables, by name, as a controller process gets them.
    pub fn vars(self) -> Vec<(String, String)> {
        [
            (task::var::BASE_URL, self.base_url),
            (task::var::API_KEY, self.api_key),
            (task::var::TOOLS_URL, self.tools_url),
            (task::var::CASE, self.case),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
    }
}

/// The capabilities a case needs in a state mode.
pub fn required_capabilities(scenario: &Scenario, state: StateMode) -> Vec<&'static str> {
    let mut needed = vec![state.as_str()];
    let task = &scenario.task;
    if task.stream {
        needed.push("stream");
    }
    if task.background {
        needed.push("background");
    }
    if !task.approval_required.is_empty() {
        needed.push("approvals");
    }
    if task.has_budgets() {
        needed.push("budgets");
    }
    // A task that offers programmatic tool calling (or bounds its tools' callers) needs
    // it even when the model only calls directly.
    let offers_programs = task.tools.iter().any(|tool| match tool {
        ToolRef::Inline(def) => {
            def["type"] == "programmatic_tool_calling" || def.get("allowed_callers").is_some()
        }
        ToolRef::Fixture(_) => false,
    });
    let programmatic = offers_programs
        || scenario.script.iter().any(|turn| {
            turn.output
                .iter()
                .any(|item| matches!(item, OutputSpec::Program(_)))
                || turn.recorded.as_ref().is_some_and(|r| {
                    r.response["output"]
                        .as_array()
                        .is_some_and(|items| items.iter().any(|i| i["type"] == "program"))
                })
        });
    if programmatic {
        needed.push("programmatic");
    }
    needed
}

fn unsupported(case: &Case, state: StateMode, missing: &[&str]) -> CaseReport {
    CaseReport {
        id: case.scenario.id.clone(),
        summary: case.scenario.summary.clone(),
        level: case.scenario.level,
        state,
        delivery: case.scenario.delivery(),
        verdict: CaseVerdict::Unsupported,
        duration_ms: 0,
        startup_ms: None,
        checks: Vec::new(),
        snapshot: None,
        recording: None,
        baseline: None,
        detail: Some(format!(
            "the controller does not declare: {}",
            missing.join(", ")
        )),
        transcript: Transcript::default(),
    }
}

pub(crate) fn error_report(case: &Case, state: StateMode, detail: String) -> CaseReport {
    CaseReport {
        verdict: CaseVerdict::Error,
        detail: Some(detail),
        ..unsupported(case, state, &[])
    }
}

/// Judges a finished run: the oracle gives the checks and the verdict. Every front end
/// (a controller process, an in-process closure, a serve session, the wiremock plug-in)
/// ends here.
pub(crate) fn finish(
    scenario: &Scenario,
    state: StateMode,
    session: &Session,
    process: Option<ProcessRecord>,
    result: Result<ControllerResult, Unfinished>,
    started: Instant,
) -> CaseReport {
    let mut transcript = session.transcript();
    match result {
        Ok(result) => transcript.result = Some(result),
        Err(unfinished) => transcript.unfinished = Some(unfinished),
    }
    transcript.process = process;
    // A replayed recording is judged redacted as it was recorded (compare redacted to
    // redacted); any run's output is redacted before a reporter sees it.
    let recorded = scenario
        .recorded
        .as_ref()
        .map(crate::record::replay::redactor);
    let redactor = recorded.as_ref().unwrap_or(crate::redact::installed());
    transcript.redact(redactor, recorded.is_some());
    let judgement = oracle::judge(scenario, state, &transcript);
    let mut report = CaseReport {
        id: scenario.id.clone(),
        summary: scenario.summary.clone(),
        level: scenario.level,
        state,
        delivery: scenario.delivery(),
        verdict: judgement.verdict,
        duration_ms: started.elapsed().as_millis() as u64,
        startup_ms: None,
        checks: judgement.checks,
        snapshot: None,
        recording: None,
        baseline: None,
        detail: judgement.detail,
        transcript,
    };
    report.redact(redactor);
    report
}

/// The result of a process that exited (or was killed at the timeout).
fn result_of(exited: &process::Exited, started: Instant) -> Result<ControllerResult, Unfinished> {
    if exited.timed_out {
        return Err(Unfinished::TimedOut {
            after_ms: started.elapsed().as_millis() as u64,
        });
    }
    ControllerResult::from_stdout(&exited.record.stdout).map_err(|err| {
        let mut why = err.to_string();
        if exited.last_line_cut {
            why.push_str(&format!(
                "; the line was cut: standard output passed the {} MiB capture cap, of which loopcheck keeps the first and the last {} KiB",
                capture::OUTPUT_CAP >> 20,
                capture::OUTPUT_CAP >> 11
            ));
        }
        Unfinished::NoResult { why }
    })
}

/// A fresh session for the case and its server on 127.0.0.1.
async fn start_session(
    case: &Case,
    state: StateMode,
    options: SessionOptions,
) -> Result<(Arc<Session>, RunningServer), Box<CaseReport>> {
    let session = Arc::new(Session::with_options(
        Arc::new(case.scenario.clone()),
        state,
        options,
    ));
    match RunningServer::start(session.clone()).await {
        Ok(server) => Ok((session, server)),
        Err(err) => Err(Box::new(error_report(
            case,
            state,
            format!("failed to start the fake server: {err}"),
        ))),
    }
}

/// A case ready to run: its server is up, its task and environment are built.
struct Prepared {
    session: Arc<Session>,
    server: RunningServer,
    task: Value,
    /// The contract's environment, without `LOOPCHECK_TASK` (persistent controllers get
    /// the task inline).
    vars: Vec<(String, String)>,
    started: Instant,
}

/// The `unsupported` report when the controller lacks a capability the case needs.
fn unsupported_by(case: &Case, state: StateMode, controller: &Controller) -> Option<CaseReport> {
    let missing: Vec<&str> = required_capabilities(&case.scenario, state)
        .into_iter()
        .filter(|c| !controller.supports.contains(*c))
        .collect();
    (!missing.is_empty()).then(|| unsupported(case, state, &missing))
}

async fn prepare(
    case: &Case,
    state: StateMode,
    session: SessionOptions,
) -> Result<Prepared, Box<CaseReport>> {
    let started = Instant::now();
    let (session, server) = start_session(case, state, session).await?;
    let vars = controller_env(&server, &session, &case.scenario.id).vars();
    let task = task::task_json(&case.scenario, state);
    Ok(Prepared {
        session,
        server,
        task,
        vars,
        started,
    })
}

/// Runs one case in one state mode against a controller process.
pub async fn run_case(
    case: &Case,
    state: StateMode,
    controller: &Controller,
    options: &RunOptions,
) -> CaseReport {
    let session = SessionOptions {
        seed: options.seed,
        observer: None,
    };
    run_case_with(case, state, controller, options, session).await
}

async fn run_case_with(
    case: &Case,
    state: StateMode,
    controller: &Controller,
    options: &RunOptions,
    session: SessionOptions,
) -> CaseReport {
    if let Some(report) = unsupported_by(case, state, controller) {
        return report;
    }
    let mut prepared = match prepare(case, state, session).await {
        Ok(prepared) => prepared,
        Err(report) => return *report,
    };
    let dir = match tempfile::Builder::new().prefix("loopcheck-case-").tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            return error_report(
                case,
                state,
                format!("failed to create the task directory: {err}"),
            );
        }
    };
    let task_path = match task::write_task_file(dir.path(), &prepared.task) {
        Ok(path) => path,
        Err(err) => {
            return error_report(case, state, format!("failed to write the task file: {err}"));
        }
    };
    prepared.vars.push((
        task::var::TASK.to_owned(),
        task_path.to_string_lossy().into_owned(),
    ));
    let exited = process::run(controller, &prepared.vars, options.timeout).await;
    prepared.server.shutdown().await;
    match exited {
        Ok(exited) => {
            let result = result_of(&exited, prepared.started);
            finish(
                &case.scenario,
                state,
                &prepared.session,
                Some(exited.record),
                result,
                prepared.started,
            )
        }
        Err(err) => error_report(
            case,
            state,
            format!(
                "failed to start the controller `{}`: {err}",
                controller.command
            ),
        ),
    }
}

/// Runs one case on a persistent worker, starting one if needed; the worker is dropped
/// when the case leaves it unusable. A worker started for the case (the first, or one
/// replacing a killed one) has the start-up budget before the case's clock starts.
async fn run_case_persistent(
    case: &Case,
    state: StateMode,
    controller: &Controller,
    options: &RunOptions,
    session: SessionOptions,
    worker: &mut Option<persistent::Worker>,
) -> CaseReport {
    if let Some(report) = unsupported_by(case, state, controller) {
        return report;
    }
    let prepared = match prepare(case, state, session).await {
        Ok(prepared) => prepared,
        Err(report) => return *report,
    };
    if worker.is_none() {
        match persistent::Worker::start(controller).await {
            Ok(started) => *worker = Some(started),
            Err(err) => {
                prepared.server.shutdown().await;
                return error_report(
                    case,
                    state,
                    format!(
                        "failed to start the controller `{}`: {err}",
                        controller.command
                    ),
                );
            }
        }
    }
    let Some(running) = worker.as_mut() else {
        return error_report(case, state, "no persistent worker".to_owned());
    };
    let budgets = persistent::Budgets {
        startup: options.startup_timeout,
        case: options.timeout,
    };
    let answer = running
        .run(&case.scenario.id, &prepared.vars, &prepared.task, budgets)
        .await;
    if !answer.healthy {
        *worker = None;
    }
    prepared.server.shutdown().await;
    let result = match answer.late {
        Some(persistent::Late::Startup) => Err(Unfinished::StartupTimedOut {
            after_ms: answer.startup_ms.unwrap_or_default(),
        }),
        Some(persistent::Late::Case) => Err(Unfinished::TimedOut {
            after_ms: answer.case_started.elapsed().as_millis() as u64,
        }),
        None => ControllerResult::from_stdout(&answer.record.stdout).map_err(|err| {
            Unfinished::NoResult {
                why: err.to_string(),
            }
        }),
    };
    let report = finish(
        &case.scenario,
        state,
        &prepared.session,
        Some(answer.record),
        result,
        answer.case_started,
    );
    CaseReport {
        startup_ms: answer.startup_ms,
        ..report
    }
}

/// What a controller of `session`, served by `server`, is given for `case`.
pub(crate) fn controller_env(
    server: &RunningServer,
    session: &Session,
    case: &str,
) -> ControllerEnv {
    ControllerEnv {
        base_url: format!("{}/v1", server.base_url()),
        api_key: session.api_key().to_owned(),
        tools_url: format!("{}/tools", server.base_url()),
        case: case.to_owned(),
    }
}

/// Writes bytes to a temporary file beside `path`, then renames it into place, so a
/// reader never sees a half-written file. Missing folders are created (a report path in
/// a CI config often names one the checkout lacks).
pub fn write_bytes_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    // A temporary file is private (0600); what is written is an ordinary file to share
    // (a report as a CI artifact, a starter controller), so it gets the usual 0644.
    {
        use std::os::unix::fs::PermissionsExt;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// Each case as it runs in each of its deliveries, for a controller that supports
/// `supports`: a controller that does not declare `stream` gets only each case as its
/// file asks, so its report gains no `unsupported` streamed runs.
pub fn delivered(cases: &[Case], supports: &BTreeSet<String>) -> Vec<Case> {
    let streams = supports.contains("stream");
    let mut runs = Vec::with_capacity(cases.len() * 2);
    for case in cases {
        let deliveries = case.scenario.run_deliveries();
        let as_written = case.scenario.delivery();
        let mut planned: Vec<Delivery> = deliveries
            .iter()
            .copied()
            .filter(|delivery| streams || *delivery == as_written)
            .collect();
        if planned.is_empty() {
            // Streamed only, for a controller that does not stream: reported unsupported.
            planned.push(deliveries[0]);
        }
        runs.extend(planned.into_iter().map(|delivery| case.delivered(delivery)));
    }
    runs
}

/// The (case, state) pairs a run covers, in report order. The `replay` runs a stateless
/// case adds are planned only for a controller that declares `replay`, so no other
/// controller's report gains `unsupported` runs.
pub fn plan(cases: &[Case], supports: &BTreeSet<String>) -> Vec<(usize, StateMode)> {
    let replays = supports.contains(StateMode::Replay.as_str());
    cases
        .iter()
        .enumerate()
        .flat_map(|(index, case)| {
            let listed = &case.scenario.states;
            case.scenario
                .run_states()
                .into_iter()
                .filter(move |state| {
                    *state != StateMode::Replay || replays || listed.contains(state)
                })
                .map(move |state| (index, state))
        })
        .collect()
}

/// Runs cases one after another against one controller, keeping a persistent
/// controller's process from case to case (docs/contract.md), and judges each:
/// the oracle, then the snapshot and the recording when there is one.
pub struct CaseRunner {
    controller: Controller,
    options: RunOptions,
    worker: Option<persistent::Worker>,
}

impl CaseRunner {
    /// A runner for `controller` with `options`.
    pub fn new(controller: &Controller, options: &RunOptions) -> Self {
        Self {
            controller: controller.clone(),
            options: options.clone(),
            worker: None,
        }
    }

    /// Runs and judges one case in one state mode.
    pub async fn run(&mut self, case: &Case, state: StateMode) -> CaseReport {
        self.run_observed(case, state, None).await
    }

    /// [`CaseRunner::run`], with `observer` seeing each exchange as it is recorded.
    pub async fn run_observed(
        &mut self,
        case: &Case,
        state: StateMode,
        observer: Option<Observer>,
    ) -> CaseReport {
        let session = SessionOptions {
            seed: self.options.seed,
            observer,
        };
        let (controller, options) = (&self.controller, &self.options);
        let mut report = if controller.supports.contains("persistent") {
            run_case_persistent(case, state, controller, options, session, &mut self.worker).await
        } else {
            run_case_with(case, state, controller, options, session).await
        };
        if let Some(snapshots) = &options.snapshots {
            let cut_by_clock = case.scenario.task.deadline_ms.is_some();
            snapshots.check(&mut report, cut_by_clock);
        }
        if let Some(recorded) = &case.scenario.recorded
            && report.verdict != CaseVerdict::Unsupported
        {
            let comparison =
                crate::record::replay::compare(recorded, &report.transcript, &case.source);
            report.fold_recording(comparison);
        }
        if let Some(baseline) = &options.baseline {
            baseline.apply(&mut report);
        }
        report
    }

    /// Stops a persistent controller's process, if one runs.
    pub async fn stop(self) {
        if let Some(worker) = self.worker {
            worker.stop().await;
        }
    }
}

/// What case workers tell the run's loop.
enum Message {
    /// An event to pass on as it is.
    Event(RunEvent),
    /// The report of the run in plan slot `slot`.
    Judged(usize, Box<CaseReport>),
}

/// Runs every case in every state mode, `options.jobs` at a time, and tells `emit` what
/// happens as it happens: the run's start, each case's start, every exchange recorded,
/// each case judged, the run's end. Reports come back in plan order.
pub async fn run_all(
    cases: &[Case],
    controller: &Controller,
    options: &RunOptions,
    emit: &mut (dyn FnMut(&RunEvent) + Send),
) -> Vec<CaseReport> {
    run_all_until(cases, controller, options, emit, std::future::pending())
        .await
        .reports
}

/// What [`run_all_until`] ran.
pub struct Ran {
    /// The judged case runs, in plan order: all of them, unless interrupted.
    pub reports: Vec<CaseReport>,
    /// `stop` resolved before the run's end.
    pub interrupted: bool,
}

/// [`run_all`], stopped early when `stop` resolves (Ctrl-C): no case starts after it, the
/// running ones are dropped with every controller process they started (their groups
/// are killed when dropped), and only the case runs judged before are reported.
pub async fn run_all_until(
    cases: &[Case],
    controller: &Controller,
    options: &RunOptions,
    emit: &mut (dyn FnMut(&RunEvent) + Send),
    stop: impl Future<Output = ()>,
) -> Ran {
    let started = Instant::now();
    let selected = cases.len();
    let cases = delivered(cases, &controller.supports);
    let mut plan = plan(&cases, &controller.supports);
    if let Some(partition) = options.partition {
        plan = plan
            .into_iter()
            .enumerate()
            .filter(|(position, (index, state))| {
                let scenario = &cases[*index].scenario;
                partition.keeps(*position, &scenario.id, *state, scenario.delivery())
            })
            .map(|(_, run)| run)
            .collect();
    }
    let jobs = options.jobs.max(1).min(plan.len().max(1));
    emit(&RunEvent::RunStarted {
        controller: controller.name.clone(),
        cases: selected,
        runs: plan.len(),
        jobs: options.jobs,
    });
    let queue: Arc<std::sync::Mutex<std::collections::VecDeque<(usize, usize, StateMode)>>> =
        Arc::new(std::sync::Mutex::new(
            plan.iter()
                .copied()
                .enumerate()
                .map(|(slot, (index, state))| (slot, index, state))
                .collect(),
        ));
    let cases = Arc::new(cases);
    let controller = Arc::new(controller.clone());
    let options = Arc::new(options.clone());
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut set = JoinSet::new();
    // Each of `jobs` workers takes the next case off the queue; a persistent controller
    // keeps one process per worker.
    for _ in 0..jobs {
        let (queue, cases, controller, options, sender) = (
            queue.clone(),
            cases.clone(),
            controller.clone(),
            options.clone(),
            sender.clone(),
        );
        set.spawn(async move {
            let mut runner = CaseRunner::new(&controller, &options);
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some((slot, index, state)) = next else {
                    break;
                };
                let case = &cases[index];
                let id = case.scenario.id.clone();
                let delivery = case.scenario.delivery();
                let _ = sender.send(Message::Event(RunEvent::CaseStarted {
                    id: id.clone(),
                    state,
                    delivery,
                }));
                let exchanges = sender.clone();
                let observer: Observer = Arc::new(move |recorded| {
                    let _ = exchanges.send(Message::Event(RunEvent::ExchangeRecorded {
                        id: id.clone(),
                        state,
                        delivery,
                        exchange: ExchangeNote::of(recorded),
                    }));
                });
                let report = runner.run_observed(case, state, Some(observer)).await;
                let _ = sender.send(Message::Judged(slot, Box::new(report)));
            }
            runner.stop().await;
        });
    }
    drop(sender);
    let mut reports: Vec<Option<CaseReport>> = vec![None; plan.len()];
    let mut stop = std::pin::pin!(stop);
    let mut interrupted = false;
    let mut take = |message: Message, reports: &mut Vec<Option<CaseReport>>| match message {
        Message::Event(event) => emit(&event),
        Message::Judged(slot, report) => {
            emit(&RunEvent::CaseJudged(report.clone()));
            reports[slot] = Some(*report);
        }
    };
    loop {
        tokio::select! {
            message = receiver.recv() => match message {
                Some(message) => take(message, &mut reports),
                None => break,
            },
            () = &mut stop => {
                interrupted = true;
                set.abort_all();
                break;
            }
        }
    }
    // An aborted worker is gone once its join ends: its case, and the controller
    // processes with it, have been dropped.
    while let Some(joined) = set.join_next().await {
        if let Err(err) = joined
            && !err.is_cancelled()
        {
            eprintln!("loopcheck: a case worker failed: {err}");
        }
    }
    while let Ok(message) = receiver.try_recv() {
        take(message, &mut reports);
    }
    let reports: Vec<CaseReport> = reports
        .into_iter()
        .enumerate()
        .filter_map(|(slot, report)| match report {
            Some(report) => Some(report),
            // A case cut short by the interruption is not reported at all.
            None if interrupted => None,
            None => {
                let (index, state) = plan[slot];
                Some(error_report(
                    &cases[index],
                    state,
                    "the case's task ended without a report".to_owned(),
                ))
            }
        })
        .collect();
    emit(&RunEvent::RunFinished {
        controller: controller.name.clone(),
        summary: Summary::of(&reports),
        elapsed: started.elapsed(),
        interrupted,
    });
    Ran {
        reports,
        interrupted,
    }
}

/// Runs one case against an in-process controller: `controller` gets the environment and
/// the task JSON and returns the result object (docs/contract.md) as JSON. For
/// `#[tokio::test]`s of Rust tool loops.
pub async fn run_in_process<F, Fut>(
    case: &Case,
    state: StateMode,
    timeout: Duration,
    controller: F,
) -> CaseReport
where
    F: FnOnce(ControllerEnv, Value) -> Fut,
    Fut: Future<Output = Value>,
{
    let started = Instant::now();
    let (session, server) = match start_session(case, state, SessionOptions::default()).await {
        Ok(started) => started,
        Err(report) => return *report,
    };
    let env = controller_env(&server, &session, &case.scenario.id);
    let task = task::task_json(&case.scenario, state);
    let outcome = tokio::time::timeout(timeout, controller(env, task)).await;
    server.shutdown().await;
    let result = match outcome {
        Ok(value) => ControllerResult::from_value(&value).map_err(|err| Unfinished::NoResult {
            why: err.to_string(),
        }),
        Err(_) => Err(Unfinished::TimedOut {
            after_ms: started.elapsed().as_millis() as u64,
        }),
    };
    finish(&case.scenario, state, &session, None, result, started)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::catalogue;

    fn supports(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn runs_of(id: &str, words: &[&str]) -> Vec<Delivery> {
        let cases = catalogue().expect("the catalogue loads");
        let case: Vec<Case> = cases.into_iter().filter(|c| c.scenario.id == id).collect();
        delivered(&case, &supports(words))
            .iter()
            .map(|c| c.scenario.delivery())
            .collect()
    }

    #[test]
    fn a_json_case_runs_streamed_too_for_a_controller_that_streams() {
        let id = "authz/03-approval-granted";
        assert_eq!(
            runs_of(id, &["stateless", "stream"]),
            [Delivery::Json, Delivery::Stream]
        );
        assert_eq!(runs_of(id, &["stateless"]), [Delivery::Json]);
    }

    #[test]
    fn a_streamed_case_a_background_case_and_a_pinned_case_run_as_written() {
        for words in [&["stream"][..], &[]] {
            assert_eq!(runs_of("stream/01-single-call", words), [Delivery::Stream]);
            assert_eq!(runs_of("background/01-polling", words), [Delivery::Json]);
        }
        let mut case = crate::scenario::catalogue_scenario("correlation/01-single-call");
        case.deliveries = Some(vec![Delivery::Json]);
        let cases = [Case {
            scenario: case,
            source: PathBuf::new(),
        }];
        assert_eq!(delivered(&cases, &supports(&["stream"])).len(), 1);
    }

    #[test]
    fn a_streamed_run_asks_the_controller_for_a_stream() {
        let case = crate::scenario::catalogue_scenario("budget/01-endless-tool-calls");
        let streamed = case.delivered(Delivery::Stream);
        assert!(streamed.task.stream);
        assert_eq!(
            task::task_json(&streamed, StateMode::Stateless)["stream"],
            true
        );
        assert!(required_capabilities(&streamed, StateMode::Stateless).contains(&"stream"));
        assert_eq!(streamed.script, case.script);
    }
}
