//! The compliance matrix: cases by controllers, a verdict per cell, as text, Markdown,
//! JSON and an HTML page. Its reporter collects one column per run and writes the matrix once every
//! run is over.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{CaseReport, Reporter, RunEvent, Summary};
use crate::oracle::CheckVerdict;

/// Collects a column per controller run; at the end prints the table and writes the
/// JSON, Markdown and HTML forms where asked.
pub struct MatrixReporter {
    out: Box<dyn Write + Send>,
    json: Option<PathBuf>,
    markdown: Option<PathBuf>,
    html: Option<PathBuf>,
    columns: Vec<(String, Vec<CaseReport>)>,
}

impl MatrixReporter {
    /// Prints to `out`; writes JSON, Markdown and HTML files when given.
    pub fn new(
        out: Box<dyn Write + Send>,
        json: Option<PathBuf>,
        markdown: Option<PathBuf>,
        html: Option<PathBuf>,
    ) -> Self {
        Self {
            out,
            json,
            markdown,
            html,
            columns: Vec::new(),
        }
    }
}

impl Reporter for MatrixReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::RunStarted { controller, .. } => {
                self.columns.push((controller.clone(), Vec::new()));
            }
            RunEvent::CaseJudged(report) => {
                if let Some((_, reports)) = self.columns.last_mut() {
                    reports.push((**report).clone());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for (_, reports) in &mut self.columns {
            reports.sort_by(CaseReport::order);
        }
        let table = Matrix::new(&self.columns);
        write!(self.out, "{}", table.text())?;
        self.out.flush()?;
        let written = [
            self.json.as_ref().map(|path| {
                let text = serde_json::to_vec_pretty(&table.json()).unwrap_or_default();
                (path, crate::files::write_bytes_atomic(path, &text))
            }),
            self.markdown.as_ref().map(|path| {
                (
                    path,
                    crate::files::write_bytes_atomic(path, table.markdown().as_bytes()),
                )
            }),
            self.html.as_ref().map(|path| {
                (
                    path,
                    crate::files::write_bytes_atomic(path, table.html().as_bytes()),
                )
            }),
        ];
        for (path, result) in written.into_iter().flatten() {
            result.map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("failed to write {}: {err}", path.display()),
                )
            })?;
        }
        Ok(())
    }
}

/// Reports of several controllers over the same cases.
pub struct Matrix<'a> {
    columns: &'a [(String, Vec<CaseReport>)],
}

impl<'a> Matrix<'a> {
    /// A matrix of `(controller name, reports in plan order)` columns.
    pub fn new(columns: &'a [(String, Vec<CaseReport>)]) -> Self {
        Self { columns }
    }

    /// Every run any column has, in plan order: a controller that does not stream has
    /// no streamed runs, so columns are aligned by run, not by position.
    fn runs(&self) -> Vec<&'a CaseReport> {
        let mut runs: Vec<&CaseReport> = self.columns.iter().flat_map(|(_, r)| r).collect();
        runs.sort_by(|a, b| CaseReport::order(a, b));
        runs.dedup_by(|a, b| CaseReport::order(a, b).is_eq());
        runs
    }

    /// Each column's report of `run`, if it has one.
    fn cells(&self, run: &CaseReport) -> impl Iterator<Item = Option<&'a CaseReport>> {
        self.columns
            .iter()
            .map(move |(_, reports)| reports.iter().find(|r| CaseReport::order(r, run).is_eq()))
    }

    fn rows(&self) -> Vec<(String, Vec<&'static str>)> {
        self.runs()
            .into_iter()
            .map(|run| {
                let label = format!("{} [{}]", run.id, run.run_label());
                let cells = self
                    .cells(run)
                    .map(|cell| cell.map_or("-", |r| r.verdict.as_str()))
                    .collect();
                (label, cells)
            })
            .collect()
    }

    /// Aligned columns for the terminal, with a summary row per controller.
    pub fn text(&self) -> String {
        let rows = self.rows();
        let width = rows
            .iter()
            .map(|(label, _)| label.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let widths: Vec<usize> = self
            .columns
            .iter()
            .map(|(name, _)| name.len().max(11))
            .collect();
        let mut out = format!("{:<width$}", "case");
        for ((name, _), w) in self.columns.iter().zip(&widths) {
            let _ = write!(out, "  {name:<w$}");
        }
        out.push('\n');
        for (label, cells) in &rows {
            let _ = write!(out, "{label:<width$}");
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(out, "  {cell:<w$}");
            }
            out.push('\n');
        }
        out.push('\n');
        for (name, reports) in self.columns {
            let _ = writeln!(out, "{name}: {}", Summary::of(reports).line());
        }
        out
    }

    /// A Markdown table, for a README.
    pub fn markdown(&self) -> String {
        let mut out = String::from("| case |");
        for (name, _) in self.columns {
            let _ = write!(out, " {name} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.columns.len()));
        out.push('\n');
        for (label, cells) in self.rows() {
            let _ = write!(out, "| `{label}` |");
            for cell in cells {
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
        out.push_str("| **passed** |");
        for (_, reports) in self.columns {
            let summary = Summary::of(reports);
            let _ = write!(out, " {}/{} |", summary.passed, summary.cases);
        }
        out.push('\n');
        out
    }

    /// A self-contained HTML page: the verdicts colour-coded, the checks that did not
    /// hold in each cell's tooltip, filterable by verdict, area, check and disagreement.
    pub fn html(&self) -> String {
        let controllers: Vec<(String, Summary)> = self
            .columns
            .iter()
            .map(|(name, reports)| (name.clone(), Summary::of(reports)))
            .collect();
        let rows = self.rows();
        let failing: Vec<Vec<Vec<String>>> = self
            .runs()
            .into_iter()
            .map(|run| {
                self.cells(run)
                    .map(|cell| {
                        cell.into_iter()
                            .flat_map(|r| &r.checks)
                            .filter(|c| {
                                matches!(c.verdict, CheckVerdict::Fail | CheckVerdict::NonStrict)
                            })
                            .map(|c| c.id.clone())
                            .collect()
                    })
                    .collect()
            })
            .collect();
        super::html::matrix_page(&controllers, &rows, &failing)
    }

    /// `{"loopcheck", "controllers", "cases": [{"id", "state", "delivery", "verdicts": {name: v},
    /// "failing": {name: [check ids]}}], "summary": {name: counts}}`; `failing` names
    /// only the controllers with a check that did not hold, so a published matrix can
    /// say which check each failure is.
    pub fn json(&self) -> Value {
        let cases: Vec<Value> = self
            .runs()
            .into_iter()
            .map(|run| {
                let mut verdicts = serde_json::Map::new();
                let mut failing = serde_json::Map::new();
                for ((name, _), cell) in self.columns.iter().zip(self.cells(run)) {
                    verdicts.insert(name.clone(), json!(cell.map(|r| r.verdict.as_str())));
                    let ids: Vec<&str> = cell
                        .into_iter()
                        .flat_map(|r| &r.checks)
                        .filter(|c| {
                            matches!(c.verdict, CheckVerdict::Fail | CheckVerdict::NonStrict)
                        })
                        .map(|c| c.id.as_str())
                        .collect();
                    if !ids.is_empty() {
                        failing.insert(name.clone(), json!(ids));
                    }
                }
                json!({
                    "id": run.id,
                    "state": run.state.as_str(),
                    "delivery": run.delivery.as_str(),
                    "verdicts": verdicts,
                    "failing": failing,
                })
            })
            .collect();
        let summary: serde_json::Map<String, Value> = self
            .columns
            .iter()
            .map(|(name, reports)| (name.clone(), json!(Summary::of(reports))))
            .collect();
        json!({
            "loopcheck": env!("CARGO_PKG_VERSION"),
            "controllers": self.columns.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            "cases": cases,
            "summary": summary,
        })
    }
}
