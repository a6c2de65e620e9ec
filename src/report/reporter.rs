//! The reporter interface, the set of reporters a run feeds, and what they share.

use super::RunEvent;
use std::io;

/// The end of a process's output (where a traceback ends): at most `max_lines` lines and
/// `max_bytes` bytes, cut at a character boundary, saying how much came before.
pub fn output_tail(text: &str, max_lines: usize, max_bytes: usize) -> String {
    let text = text.trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.len().saturating_sub(max_lines);
    let kept = lines[first..].join("\n");
    let mut start = kept.len().saturating_sub(max_bytes);
    while !kept.is_char_boundary(start) {
        start += 1;
    }
    let shown = &kept[start..];
    if first > 0 || start > 0 {
        format!(
            "[... {} bytes before]\n{shown}",
            text.len().saturating_sub(shown.len())
        )
    } else {
        shown.to_owned()
    }
}

/// Writes a report file atomically, naming the report and the file in the error.
pub fn write_file(what: &str, path: &std::path::Path, bytes: &[u8]) -> io::Result<()> {
    crate::files::write_bytes_atomic(path, bytes).map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("failed to write the {what} to {}: {err}", path.display()),
        )
    })
}

/// A consumer of run events.
pub trait Reporter: Send {
    /// Sees one event, in the order the run emits them.
    fn event(&mut self, event: &RunEvent) -> io::Result<()>;

    /// Called once after the last run (a matrix spans several): write what is left.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Several reporters fed the same events, in order; the first error is kept and the
/// others still see every event.
#[derive(Default)]
pub struct Reporters {
    reporters: Vec<Box<dyn Reporter>>,
    error: Option<io::Error>,
}

impl Reporters {
    /// No reporter yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a reporter.
    pub fn push(&mut self, reporter: impl Reporter + 'static) {
        self.reporters.push(Box::new(reporter));
    }

    /// Feeds one event to every reporter.
    pub fn event(&mut self, event: &RunEvent) {
        for reporter in &mut self.reporters {
            if let Err(err) = reporter.event(event) {
                self.error.get_or_insert(err);
            }
        }
    }

    /// Finishes every reporter; the first error any reporter met, if any.
    pub fn finish(mut self) -> io::Result<()> {
        for reporter in &mut self.reporters {
            if let Err(err) = reporter.finish() {
                self.error.get_or_insert(err);
            }
        }
        self.error.map_or(Ok(()), Err)
    }
}
