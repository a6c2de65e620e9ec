//! The command line: `run`, `list`, `lint`, `matrix`, `record`, `replay`, `fuzz`,
//! `merge`, `task`, `init`, `schema`, `serve`, `snapshots` and `baseline`.
//!
//! Each command returns its exit code when it reaches a verdict, or a [`CliError`] that
//! owns its exit code and prints itself in one place ([`CliError::report`]).

mod args;
mod baseline;
mod controllers;
mod dispatch;
mod error;
mod fuzz;
mod init;
mod last_failed;
mod lint;
mod list;
mod matrix;
mod merge;
mod outputs;
mod record;
mod run;
mod selection;
mod serve;
mod snapshots;
mod task;

pub use args::Cli;
pub use controllers::{ControllerError, UnknownCapability};
pub use dispatch::main;
pub use error::{CliError, exit};
