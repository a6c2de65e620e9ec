//! Running cases: each case and state mode gets its own fake server, task file, process
//! group and ledger (docs/contract.md); `--jobs` of them at a time. Also a
//! library API that runs a case against an in-process async closure.

mod capture;
mod case;
mod controller;
mod group;
mod in_process;
pub(crate) mod partition;
mod persistent;
mod plan;
mod process;
mod run;

pub use case::{CaseRunner, run_case};
pub(crate) use case::{controller_env, error_report, finish};
pub use controller::{Controller, DEFAULT_STARTUP_TIMEOUT, RunOptions};
pub(crate) use group::kill_group;
pub use in_process::{reference_controller, run_in_process};
pub use plan::{delivered, plan, required_capabilities};
pub use process::Direct;
pub use run::{Ran, run_all, run_all_until};

pub use crate::contract::{CAPABILITIES, ControllerEnv, default_capabilities};
