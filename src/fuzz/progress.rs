//! The fuzzer's progress: on a terminal a bar on standard error with the cases run, the
//! failures, the shrink steps and the cases per second; elsewhere a plain line every
//! hundred cases.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::FuzzEvent;

/// Shows fuzzing progress.
pub struct FuzzProgress {
    bar: Option<ProgressBar>,
    started: Instant,
    cases: u64,
    failures: u64,
    shrink_steps: u64,
}

impl Default for FuzzProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl FuzzProgress {
    /// A bar when standard error is a terminal, plain lines otherwise.
    pub fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} cases · {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Self {
            bar,
            started: Instant::now(),
            cases: 0,
            failures: 0,
            shrink_steps: 0,
        }
    }

    fn line(&self) -> String {
        let rate = self.cases as f64 / self.started.elapsed().as_secs_f64().max(1e-3);
        format!(
            "{} failing · {} shrink steps · {rate:.1} cases/s",
            self.failures, self.shrink_steps
        )
    }

    /// Takes one event.
    pub fn event(&mut self, event: FuzzEvent) {
        match event {
            FuzzEvent::Started(total) => {
                self.started = Instant::now();
                if let Some(bar) = &self.bar {
                    bar.set_length(total as u64);
                }
            }
            FuzzEvent::CaseRun { failed } => {
                self.cases += 1;
                self.failures += u64::from(failed);
                match &self.bar {
                    Some(bar) => {
                        bar.inc(1);
                        bar.set_message(self.line());
                    }
                    None if self.cases.is_multiple_of(100) => {
                        eprintln!("loopcheck fuzz: {} cases · {}", self.cases, self.line());
                    }
                    None => {}
                }
            }
            FuzzEvent::ShrinkStep { .. } => {
                self.shrink_steps += 1;
                match &self.bar {
                    Some(bar) => bar.set_message(self.line()),
                    None if self.shrink_steps % 10 == 1 => {
                        eprintln!("loopcheck fuzz: shrinking · {}", self.line());
                    }
                    None => {}
                }
            }
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
