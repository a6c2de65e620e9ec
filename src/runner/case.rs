//! One case run: its own fake server, task file, process group and ledger; the
//! controller started (or a persistent one given the task) and its result judged.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::controller::{Controller, RunOptions};
use super::plan::{unsupported, unsupported_by};
use super::{capture, persistent, process};
use crate::contract::ControllerEnv;
use crate::expectations;
use crate::oracle::{self, CaseVerdict};
use crate::report::CaseReport;
use crate::scenario::{Case, Scenario, StateMode};
use crate::server::{Observer, RunningServer, Session, SessionOptions};
use crate::transcript::{ControllerResult, ProcessRecord, Unfinished};

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
        .map(expectations::drift::redactor);
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
        flaky: false,
        failed_tries: Vec::new(),
    };
    report.redact(redactor);
    report
}

/// The result of a process that exited (or was killed at the timeout, or stopped past the
/// request limit of `session`).
fn result_of(
    exited: &process::Exited,
    session: &Session,
    started: Instant,
) -> Result<ControllerResult, Unfinished> {
    // The controller may end on the refusal before it is killed: judged as stopped all
    // the same.
    let (requests, limit) = session.model_requests();
    if exited.stopped || requests > limit.limit {
        return Err(stopped_over_limit(session));
    }
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

/// How a run stopped past its request limit ended.
fn stopped_over_limit(session: &Session) -> Unfinished {
    let (requests, limit) = session.model_requests();
    Unfinished::StoppedOverLimit {
        requests,
        budget: limit.budget,
        limit: limit.limit,
    }
}

/// A fresh session for the case and its server on 127.0.0.1.
pub(super) async fn start_session(
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

async fn prepare(
    case: &Case,
    state: StateMode,
    session: SessionOptions,
) -> Result<Prepared, Box<CaseReport>> {
    let started = Instant::now();
    let (session, server) = start_session(case, state, session).await?;
    let vars = controller_env(&server, &session, &case.scenario.id).vars();
    let task = crate::scenario::task_json(&case.scenario, state);
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
    let task_path = match crate::contract::write_task_file(dir.path(), &prepared.task) {
        Ok(path) => path,
        Err(err) => {
            return error_report(case, state, format!("failed to write the task file: {err}"));
        }
    };
    prepared.vars.push((
        crate::contract::var::TASK.to_owned(),
        task_path.to_string_lossy().into_owned(),
    ));
    let stop = prepared.session.limit_passed();
    let exited = process::run(controller, &prepared.vars, options.timeout, stop).await;
    prepared.server.shutdown().await;
    match exited {
        Ok(exited) => {
            let result = result_of(&exited, &prepared.session, prepared.started);
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
    let answered = tokio::select! {
        biased;
        () = prepared.session.limit_passed() => None,
        answer = running.run(&case.scenario.id, &prepared.vars, &prepared.task, budgets) => Some(answer),
    };
    let Some(answer) = answered else {
        // A loop without a round limit: the worker goes (dropped, its group killed).
        *worker = None;
        prepared.server.shutdown().await;
        return finish(
            &case.scenario,
            state,
            &prepared.session,
            Some(ProcessRecord::default()),
            Err(stopped_over_limit(&prepared.session)),
            prepared.started,
        );
    };
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
        expectations::review(
            &mut report,
            case,
            options.snapshots.as_ref(),
            options.baseline.as_deref(),
        );
        report
    }

    /// Stops a persistent controller's process, if one runs.
    pub async fn stop(self) {
        if let Some(worker) = self.worker {
            worker.stop().await;
        }
    }
}
