//! `--report-json`: the machine-readable report ([`RunReport`]), written atomically when
//! the run finishes, to a file or to standard output (`-`).

use std::io::{self, Write as _};
use std::path::PathBuf;

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
            RunEvent::RunFinished { controller, .. } => {
                let report = RunReport::new(controller, std::mem::take(&mut self.cases));
                let text = serde_json::to_vec_pretty(&report).map_err(io::Error::other)?;
                if self.path.as_os_str() == "-" {
                    let mut out = io::stdout().lock();
                    out.write_all(&text)?;
                    out.write_all(b"\n")?;
                } else {
                    super::write_file("JSON report", &self.path, &text)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
