//! Cases: a loaded scenario and its file, the embedded catalogue, and scenario files loaded from paths.

use super::{Delivery, Scenario, ScenarioError, load_file, parse};
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));
}

/// A loaded scenario and where it came from.
#[derive(Debug, Clone)]
pub struct Case {
    /// The scenario.
    pub scenario: Scenario,
    /// Its file (a repository-relative path for embedded cases).
    pub source: PathBuf,
}

impl Case {
    /// The case as run with `delivery` ([`Scenario::delivered`]), from the same file.
    pub fn delivered(&self, delivery: Delivery) -> Self {
        Self {
            scenario: self.scenario.delivered(delivery),
            source: self.source.clone(),
        }
    }
}

/// The embedded catalogue, sorted by id.
pub fn catalogue() -> Result<Vec<Case>, Vec<ScenarioError>> {
    collect(embedded::FILES.iter().map(|(path, text)| {
        let path = PathBuf::from(path);
        parse(&path, text).map(|scenario| Case {
            scenario,
            source: path,
        })
    }))
}

/// The embedded catalogue's case `id`, for tests; panics when there is none.
#[cfg(test)]
pub fn catalogue_scenario(id: &str) -> Scenario {
    catalogue()
        .expect("the catalogue loads")
        .into_iter()
        .find(|c| c.scenario.id == id)
        .unwrap_or_else(|| panic!("no catalogue case {id}"))
        .scenario
}

/// Loads scenario files and directories (recursively, `.yaml`, `.yml`, `.json`).
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Case>, Vec<ScenarioError>> {
    let (files, mut errors) = scenario_files(paths);
    let loaded = collect(files.iter().map(|path| {
        load_file(path).map(|scenario| Case {
            scenario,
            source: path.clone(),
        })
    }));
    match loaded {
        Ok(cases) if errors.is_empty() => Ok(cases),
        Ok(_) => Err(errors),
        Err(mut more) => {
            errors.append(&mut more);
            Err(errors)
        }
    }
}

/// The files `paths` name, directories walked (recursively, `.yaml`, `.yml`, `.json`),
/// sorted; and an error for each path that does not exist.
pub fn scenario_files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<ScenarioError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        if path.is_dir() {
            collect_files(path, &mut files);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            errors.push(ScenarioError {
                path: path.clone(),
                line: 0,
                column: 0,
                message: "no such file or directory".to_owned(),
            });
        }
    }
    files.sort();
    (files, errors)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(path);
        }
    }
}

/// Gathers every result; all errors if any, plus duplicate-id errors.
fn collect(
    results: impl Iterator<Item = Result<Case, ScenarioError>>,
) -> Result<Vec<Case>, Vec<ScenarioError>> {
    let mut cases: Vec<Case> = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(case) => {
                if let Some(first) = cases.iter().find(|c| c.scenario.id == case.scenario.id) {
                    errors.push(ScenarioError {
                        path: case.source.clone(),
                        line: 1,
                        column: 1,
                        message: format!(
                            "duplicate case id '{}': already defined in {}",
                            case.scenario.id,
                            first.source.display()
                        ),
                    });
                } else {
                    cases.push(case);
                }
            }
            Err(err) => errors.push(err),
        }
    }
    if errors.is_empty() {
        cases.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
        Ok(cases)
    } else {
        Err(errors)
    }
}

/// The catalogue's areas in catalogue order, each with its number of cases.
pub fn area_counts(cases: &[Case]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for c in cases {
        let area = c.scenario.area();
        match counts.iter_mut().find(|(name, _)| name == area) {
            Some((_, n)) => *n += 1,
            None => counts.push((area.to_owned(), 1)),
        }
    }
    counts
}
