//! The task file handed to a controller: its version and how it is written. What goes
//! in it comes from the scenario (`scenario::task_json`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The contract version written into every task file.
pub const CONTRACT_VERSION: u32 = 1;

/// Writes `task` as `task.json` in `dir`, a run's own scratch folder, and returns its
/// path. The file is written whole before the controller starts and goes with the folder
/// after the run, so it is neither renamed into place nor synced to disk as a report is:
/// a sync per case run held a worker thread for about a millisecond.
pub fn write_task_file(dir: &Path, task: &Value) -> std::io::Result<PathBuf> {
    let path = dir.join("task.json");
    let text = serde_json::to_vec_pretty(task).map_err(std::io::Error::other)?;
    std::fs::write(&path, text)?;
    Ok(path)
}
