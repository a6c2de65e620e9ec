//! A whole run: every planned case, `--jobs` at a time, told as events in order.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::task::JoinSet;

use super::case::{CaseRunner, error_report};
use super::controller::{Controller, RunOptions};
use super::plan::{delivered, plan};
use crate::oracle::CaseVerdict;
use crate::report::{CaseReport, ExchangeNote, RunEvent, Summary, run_id};
use crate::scenario::{Case, StateMode};
use crate::server::Observer;

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

/// A verdict that fails the run, and that a retry may turn.
fn fails_the_run(verdict: CaseVerdict) -> bool {
    matches!(
        verdict,
        CaseVerdict::Fail
            | CaseVerdict::Drift
            | CaseVerdict::Timeout
            | CaseVerdict::Crashed
            | CaseVerdict::Error
    )
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
    if let Some(only) = &options.only_runs {
        plan.retain(|(index, state)| {
            let scenario = &cases[*index].scenario;
            only.contains(&run_id(
                &scenario.id,
                &crate::scenario::run_label(*state, scenario.delivery()),
            ))
        });
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
    // Set by the first failing run under `--fail-fast`: the workers then take no more.
    let stopping = Arc::new(AtomicBool::new(false));
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut set = JoinSet::new();
    // Each of `jobs` workers takes the next case off the queue; a persistent controller
    // keeps one process per worker.
    for _ in 0..jobs {
        let (queue, cases, controller, options, sender, stopping) = (
            queue.clone(),
            cases.clone(),
            controller.clone(),
            options.clone(),
            sender.clone(),
            stopping.clone(),
        );
        set.spawn(async move {
            let mut runner = CaseRunner::new(&controller, &options);
            loop {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
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
                let mut report = runner
                    .run_observed(case, state, Some(observer.clone()))
                    .await;
                // A retry is judged afresh; one that passes makes the run flaky, and
                // keeps the tries that failed before it.
                let mut failed_tries = Vec::new();
                for _ in 0..options.retries {
                    if !fails_the_run(report.verdict) {
                        break;
                    }
                    let retry = runner
                        .run_observed(case, state, Some(observer.clone()))
                        .await;
                    if fails_the_run(retry.verdict) {
                        failed_tries.push(retry);
                    } else {
                        let first = std::mem::replace(&mut report, retry);
                        failed_tries.insert(0, first);
                        report.flaky = true;
                        report.failed_tries = std::mem::take(&mut failed_tries);
                    }
                }
                if options.fail_fast && fails_the_run(report.verdict) {
                    stopping.store(true, Ordering::SeqCst);
                }
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
            // A case cut short by the interruption, or never started after a failure
            // under `--fail-fast`, is not reported at all.
            None if interrupted || stopping.load(Ordering::SeqCst) => None,
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
    let summary = Summary {
        not_run: plan.len() - reports.len(),
        ..Summary::of(&reports)
    };
    emit(&RunEvent::RunFinished {
        controller: controller.name.clone(),
        summary,
        elapsed: started.elapsed(),
        interrupted,
    });
    Ran {
        reports,
        interrupted,
    }
}
