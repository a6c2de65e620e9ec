//! A controller to run and the options of a run.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::partition;
use super::process::Direct;
use crate::contract::CAPABILITIES;
use crate::expectations::{Baseline, Snapshots};

/// A controller to run: a shell command and what it supports.
#[derive(Debug, Clone)]
pub struct Controller {
    /// The name shown in reports.
    pub name: String,
    /// The command, run with `sh -c`.
    pub command: String,
    /// Declared capabilities.
    pub supports: BTreeSet<String>,
    /// The same controller started without a shell, when it is a known program (the
    /// built-in reference): `command` is then what reports show and what a replay or a
    /// reproduction runs.
    pub direct: Option<Direct>,
}

impl Controller {
    /// A controller run as a shell command.
    pub fn command(name: &str, command: String, supports: BTreeSet<String>) -> Self {
        Self {
            name: name.to_owned(),
            command,
            supports,
            direct: None,
        }
    }

    /// The built-in Rust reference controller: `loopcheck reference-controller` of the
    /// executable `exe`, which supports everything but the `replay` state mode (a
    /// stateless loop with storage left on, which it has no reason to be) and `webhook`
    /// (it polls). It runs in
    /// persistent mode (a worker per job): a process per case spent more on starting than
    /// on most cases.
    pub fn reference(name: &str, exe: PathBuf) -> Self {
        // Single-quoted for `sh`.
        let quoted = format!("'{}'", exe.to_string_lossy().replace('\'', r"'\''"));
        let supports = CAPABILITIES
            .iter()
            // It polls background runs: it registers no webhook endpoint.
            .filter(|c| !matches!(**c, "replay" | "webhook"))
            .map(|c| c.to_string())
            .collect();
        Self {
            direct: Some(Direct {
                program: exe,
                args: vec!["reference-controller".to_owned()],
                // mimalloc's arenas on transparent huge pages had the kernel zero 2 MB
                // before `main`: a fifth of the CPU time of a process run for one case.
                env: vec![("MIMALLOC_ALLOW_THP".to_owned(), "0".to_owned())],
            }),
            ..Self::command(name, format!("{quoted} reference-controller"), supports)
        }
    }
}

/// How cases are run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Per-case timeout.
    pub timeout: Duration,
    /// A fresh persistent worker's start-up budget: from its start until it reads its
    /// first case line (docs/contract.md, section 9); not counted in `timeout`.
    pub startup_timeout: Duration,
    /// Cases run at once.
    pub jobs: usize,
    /// What the fake server generates (ids, timestamps, every byte) derives from the
    /// case, the state mode and this seed.
    pub seed: u64,
    /// Compare each case run with its snapshot.
    pub snapshots: Option<Snapshots>,
    /// Expected failures.
    pub baseline: Option<Arc<Baseline>>,
    /// Only this shard of the planned case runs.
    pub partition: Option<partition::Partition>,
    /// Only the case runs with these ids (`case [state]`, as [`CaseReport::run_id`]
    /// writes them): the failures of the last run.
    ///
    /// [`CaseReport::run_id`]: crate::report::CaseReport::run_id
    pub only_runs: Option<Arc<std::collections::BTreeSet<String>>>,
    /// Start no case run after the first one that fails the run.
    pub fail_fast: bool,
    /// Run a failing case run again up to this many times; one that then passes is
    /// flaky.
    pub retries: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            seed: 0,
            snapshots: None,
            baseline: None,
            partition: None,
            only_runs: None,
            fail_fast: false,
            retries: 0,
        }
    }
}

/// A persistent worker's start-up budget when nothing sets one: an interpreter importing
/// its SDK took 25 s on a loaded machine.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
