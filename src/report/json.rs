//! `--report-json`: the machine-readable report ([`RunReport`]), written atomically when
//! the run finishes, to a file or to standard output (`-`).

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::{CaseReport, Reporter, RunEvent, RunReport};

/// Collects the judged cases and writes the report at the end of the run.
pub struct JsonReporter {
    path: PathBuf,
    cases: Vec<CaseReport>,
}

impl JsonReporter {
    /// Writes to `path`; `-` is standard output.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            cases: Vec::new(),
        }
    }
}

impl Reporter for JsonReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::CaseJudged(report) => self.cases.push((**report).clone()),
            RunEvent::RunFinished {
                controller,
                interrupted,
                summary,
                ..
            } => {
                let mut report = RunReport {
                    interrupted: *interrupted,
                    ..RunReport::new(controller, std::mem::take(&mut self.cases))
                };
                report.summary.not_run = summary.not_run;
                write(&self.path, &report)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Writes a report to `path` (atomically), or to standard output for `-`.
pub fn write(path: &Path, report: &RunReport) -> io::Result<()> {
    let text = serde_json::to_vec_pretty(report).map_err(io::Error::other)?;
    if path.as_os_str() == "-" {
        let mut out = io::stdout().lock();
        out.write_all(&text)?;
        out.write_all(b"\n")
    } else {
        super::write_file("JSON report", path, &text)
    }
}
