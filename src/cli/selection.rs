//! What every running command shares: the cases selected and the run options.

use std::path::PathBuf;
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::runner::{self, RunOptions};
use crate::scenario::{self, Case, ScenarioError};

use super::args::{Selection, Settings};
use super::error::CliError;

/// The per-case timeout when nothing sets one.
const DEFAULT_TIMEOUT_SECS: f64 = 30.0;

/// The scenario files given, or the embedded catalogue.
fn load(paths: &[PathBuf]) -> Result<Vec<Case>, Vec<ScenarioError>> {
    if paths.is_empty() {
        scenario::catalogue()
    } else {
        scenario::load_paths(paths)
    }
}

fn glob_set(globs: &[String]) -> Result<GlobSet, CliError> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(Glob::new(glob).map_err(|source| CliError::Filter {
            glob: glob.clone(),
            source,
        })?);
    }
    builder.build().map_err(CliError::Filters)
}

fn filter_cases(cases: Vec<Case>, globs: &[String]) -> Result<Vec<Case>, CliError> {
    if globs.is_empty() {
        return Ok(cases);
    }
    let set = glob_set(globs)?;
    // Every filter must select something: a typo in one of several would otherwise pass
    // silently with the others' cases.
    let mut used = vec![false; globs.len()];
    let mut selected = Vec::new();
    for case in cases {
        let matches = set.matches(&case.scenario.id);
        for &index in &matches {
            used[index] = true;
        }
        if !matches.is_empty() {
            selected.push(case);
        }
    }
    let unmatched: Vec<String> = globs
        .iter()
        .zip(used)
        .filter(|(_, used)| !used)
        .map(|(glob, _)| glob.clone())
        .collect();
    if !unmatched.is_empty() {
        return Err(CliError::UnmatchedFilters(unmatched));
    }
    Ok(selected)
}

/// The cases whose id matches none of `globs`.
fn exclude_cases(cases: Vec<Case>, globs: &[String]) -> Result<Vec<Case>, CliError> {
    let set = glob_set(globs)?;
    Ok(cases
        .into_iter()
        .filter(|c| !set.is_match(&c.scenario.id))
        .collect())
}

impl Selection {
    /// The selected cases; none is an error.
    pub(super) fn cases(&self) -> Result<Vec<Case>, CliError> {
        let cases = load(&self.paths).map_err(CliError::Scenarios)?;
        let cases = filter_cases(cases, &self.filter)?;
        let cases = exclude_cases(cases, &self.exclude)?;
        if cases.is_empty() {
            return Err(CliError::NoCase);
        }
        Ok(cases)
    }

    /// The ids of the cases the scenario files hold that `--filter` and `--exclude`
    /// leave out: what a narrowed run did not run on purpose.
    pub(super) fn left_out(&self) -> Result<std::collections::BTreeSet<String>, CliError> {
        let all = load(&self.paths).map_err(CliError::Scenarios)?;
        let selected: std::collections::BTreeSet<String> =
            exclude_cases(filter_cases(all.clone(), &self.filter)?, &self.exclude)?
                .into_iter()
                .map(|c| c.scenario.id)
                .collect();
        Ok(all
            .into_iter()
            .map(|c| c.scenario.id)
            .filter(|id| !selected.contains(id))
            .collect())
    }
}

impl Settings {
    /// The run options.
    pub(super) fn options(&self) -> Result<RunOptions, CliError> {
        let seconds = |value: f64, flag: &'static str| {
            if value.is_finite() && value > 0.0 {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(CliError::Flag {
                    flag,
                    value: value.to_string(),
                    expected: "a positive number of seconds",
                })
            }
        };
        let timeout = seconds(self.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS), "timeout")?;
        let startup_timeout = match self.startup_timeout {
            Some(value) => seconds(value, "startup-timeout")?,
            None => runner::DEFAULT_STARTUP_TIMEOUT,
        };
        let mut options = RunOptions {
            timeout,
            startup_timeout,
            seed: self.seed.unwrap_or(0),
            ..RunOptions::default()
        };
        match self.jobs {
            Some(0) => {
                return Err(CliError::Flag {
                    flag: "jobs",
                    value: "0".to_owned(),
                    expected: "at least 1",
                });
            }
            Some(jobs) => options.jobs = jobs,
            None => {}
        }
        Ok(options)
    }
}
