//! `loopcheck lint`: scenario files checked without running anything. A task file (the
//! `task` and `tools` sections alone, as `record --task` reads it) is checked as
//! `record` reads it.

use std::path::{Path, PathBuf};

use crate::record::cassette::TaskFile;
use crate::scenario::{self, ScenarioError};

use super::args::LintArgs;
use super::error::{CliError, exit};

pub(super) fn lint(args: LintArgs) -> Result<u8, CliError> {
    let (files, mut errors) = scenario::scenario_files(&args.paths);
    let (tasks, scenarios): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|path| is_task_file(path));
    for path in &tasks {
        if let Err(err) = lint_task(path) {
            errors.push(err);
        }
    }
    let cases = match scenario::load_paths(&scenarios) {
        Ok(cases) => cases,
        Err(mut more) => {
            errors.append(&mut more);
            Vec::new()
        }
    };
    if !errors.is_empty() {
        errors.sort_by(|a, b| a.path.cmp(&b.path));
        return Err(CliError::Scenarios(errors));
    }
    match (cases.len(), tasks.len()) {
        (cases, 0) => println!("{cases} scenario file(s) OK"),
        (0, tasks) => println!("{tasks} task file(s) OK"),
        (cases, tasks) => println!("{cases} scenario file(s) and {tasks} task file(s) OK"),
    }
    Ok(exit::OK)
}

fn is_task_file(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| TaskFile::is_task_only(path, &text))
}

/// Reads a task file as `record --task` does.
fn lint_task(path: &Path) -> Result<TaskFile, ScenarioError> {
    TaskFile::parse(path, &crate::scenario::read_text(path)?)
}
