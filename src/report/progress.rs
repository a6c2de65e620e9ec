//! A progress bar on standard error, for a person watching a terminal: cases judged out of
//! those planned, failures so far, and exchanges recorded. It prints each case that did
//! not pass above the bar. The CLI shows it only when standard error is a terminal; other
//! output gets plain lines from the console report instead.

use std::io::{self, IsTerminal};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Reporter, RunEvent, Summary};
use crate::oracle::CaseVerdict;

/// The progress bar.
pub struct ProgressReporter {
    bar: ProgressBar,
    summary: Summary,
    exchanges: u64,
}

impl ProgressReporter {
    /// A bar on standard error, or None when standard error is not a terminal.
    pub fn on_terminal() -> Option<Self> {
        // A CI log may still look like a terminal (a pseudo-terminal runner): no bar there.
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        (io::stderr().is_terminal() && !ci).then(|| Self::to(ProgressDrawTarget::stderr()))
    }

    /// A bar drawn to `target`.
    pub fn to(target: ProgressDrawTarget) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} case runs · {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self {
            bar,
            summary: Summary::default(),
            exchanges: 0,
        }
    }

    fn message(&self) -> String {
        let failing =
            self.summary.failed + self.summary.timeout + self.summary.crashed + self.summary.errors;
        format!("{failing} failing · {} exchanges", self.exchanges)
    }
}

impl Reporter for ProgressReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::RunStarted {
                runs,
                controller,
                cases,
                jobs,
            } => {
                self.bar
                    .println(super::console::header(controller, *cases, *runs, *jobs));
                self.bar.set_length(*runs as u64);
                self.bar.set_position(0);
                self.bar.set_prefix(controller.clone());
                self.summary = Summary::default();
            }
            RunEvent::ExchangeRecorded { .. } => {
                self.exchanges += 1;
                if self.exchanges.is_multiple_of(16) {
                    self.bar.set_message(self.message());
                }
            }
            RunEvent::CaseJudged(report) => {
                self.summary.add(report.verdict);
                if !matches!(report.verdict, CaseVerdict::Pass | CaseVerdict::Unsupported) {
                    self.bar.println(super::console::case_line(report));
                }
                self.bar.inc(1);
                self.bar.set_message(self.message());
            }
            RunEvent::RunFinished { .. } => self.bar.finish_and_clear(),
            RunEvent::CaseStarted { .. } => {}
        }
        Ok(())
    }
}
