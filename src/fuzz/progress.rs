//! The fuzzer's progress: on a terminal a bar on standard error with the cases run, the
//! failure groups, the shrink steps and the cases per second; elsewhere (a CI log, a
//! pipe) the same as a plain line every few seconds, so a long run shows it is alive.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::FuzzEvent;

/// How often a plain progress line is printed.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// Shows fuzzing progress.
pub struct FuzzProgress {
    bar: Option<ProgressBar>,
    started: Instant,
    last_line: Instant,
    every: Duration,
    total: usize,
    cases: u64,
    groups: usize,
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
        Self::with_bar(bar, LINE_EVERY)
    }

    fn with_bar(bar: Option<ProgressBar>, every: Duration) -> Self {
        Self {
            bar,
            started: Instant::now(),
            last_line: Instant::now(),
            every,
            total: 0,
            cases: 0,
            groups: 0,
            shrink_steps: 0,
        }
    }

    /// The progress as a line's tail: failure groups, shrink steps, rate.
    fn line(&self) -> String {
        let rate = self.cases as f64 / self.started.elapsed().as_secs_f64().max(1e-3);
        format!(
            "{} failure group(s) · {} shrink steps · {rate:.1} cases/s",
            self.groups, self.shrink_steps
        )
    }

    /// The plain line, when one is due.
    fn due_line(&mut self) -> Option<String> {
        if self.bar.is_some() || self.last_line.elapsed() < self.every {
            return None;
        }
        self.last_line = Instant::now();
        Some(format!(
            "loopcheck fuzz: {}/{} cases · {}",
            self.cases,
            self.total,
            self.line()
        ))
    }

    /// Takes one event; returns the plain line it printed, if any.
    pub fn event(&mut self, event: FuzzEvent) -> Option<String> {
        match event {
            FuzzEvent::Started(total) => {
                self.started = Instant::now();
                self.last_line = Instant::now();
                self.total = total;
                if let Some(bar) = &self.bar {
                    bar.set_length(total as u64);
                }
            }
            FuzzEvent::CaseRun { groups, .. } => {
                self.cases += 1;
                self.groups = groups;
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                    bar.set_message(self.line());
                }
            }
            FuzzEvent::ShrinkStep { .. } => {
                self.shrink_steps += 1;
                if let Some(bar) = &self.bar {
                    bar.set_message(self.line());
                }
            }
        }
        let line = self.due_line();
        if let Some(line) = &line {
            eprintln!("{line}");
        }
        line
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_a_line_with_cases_rate_and_groups_is_printed_when_due() {
        let mut progress = FuzzProgress::with_bar(None, Duration::ZERO);
        progress.event(FuzzEvent::Started(10));
        let line = progress
            .event(FuzzEvent::CaseRun {
                failed: true,
                groups: 1,
            })
            .expect("a line is due");
        assert!(line.contains("1/10 cases"), "{line}");
        assert!(line.contains("1 failure group(s)"), "{line}");
        assert!(line.contains("cases/s"), "{line}");
    }

    #[test]
    fn lines_are_not_printed_more_often_than_asked() {
        let mut progress = FuzzProgress::with_bar(None, Duration::from_secs(3600));
        progress.event(FuzzEvent::Started(10));
        let printed = (0..5)
            .filter_map(|_| {
                progress.event(FuzzEvent::CaseRun {
                    failed: false,
                    groups: 0,
                })
            })
            .count();
        assert_eq!(printed, 0);
    }
}
