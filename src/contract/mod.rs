//! The controller contract (docs/contract.md): the words, files and lines through which
//! loopcheck and a controller in any language understand each other. The contract is
//! fixed; everything here is what both sides read, so it depends on nothing else of
//! loopcheck.
//!
//! - `modes`: the state modes and deliveries a case runs in;
//! - `capabilities`: the capability words a controller declares;
//! - `env`: the variables a controller is started with;
//! - `task`: the task file's version and how it is written;
//! - `result`: the result line and the failure reasons it may name.

pub(crate) mod capabilities;
pub(crate) mod env;
pub(crate) mod modes;
pub(crate) mod result;
pub(crate) mod task;

pub use capabilities::{CAPABILITIES, default_capabilities};
pub use env::{ControllerEnv, var};
pub use modes::{Delivery, StateMode, run_label};
pub use result::{ControllerResult, REASON_WORDS, ResultError};
pub use task::{CONTRACT_VERSION, write_task_file};
