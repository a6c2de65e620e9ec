//! loopcheck: a record/replay harness and conformance suite for OpenAI Responses API
//! tool-call loops.
//!
//! Data flows one way: scenario -> server script -> controller traffic -> transcript ->
//! oracle -> verdicts -> reports.

#![warn(missing_docs)]

pub mod allocator;
pub(crate) mod ci;
pub mod cli;
pub(crate) mod config;
pub mod contract;
pub mod expectations;
pub(crate) mod files;
pub mod fuzz;
pub(crate) mod init;
pub(crate) mod interrupt;
pub(crate) mod json_compare;
pub mod oracle;
pub mod record;
pub(crate) mod redact;
pub mod report;
pub mod rules;
pub mod runner;
pub mod scenario;
mod secret;
pub mod serve;
pub mod server;
pub(crate) mod text;
pub(crate) mod toml_text;
pub(crate) mod tools;
pub mod transcript;
pub mod wire;
#[cfg(feature = "wiremock")]
pub mod wiremock;
