//! loopcheck: a record/replay harness and conformance suite for OpenAI Responses API
//! tool-call loops.
//!
//! Data flows one way: scenario -> server script -> controller traffic -> transcript ->
//! oracle -> verdicts -> reports.

#![warn(missing_docs)]

pub mod allocator;
pub mod ci;
pub mod cli;
pub mod config;
pub mod contract;
pub mod expectations;
pub mod files;
pub mod fuzz;
pub mod init;
pub mod interrupt;
pub mod json_compare;
pub mod oracle;
pub mod record;
pub mod redact;
pub mod report;
pub mod rules;
pub mod runner;
pub mod scenario;
mod secret;
pub mod serve;
pub mod server;
pub mod text;
pub mod toml_text;
pub mod tools;
pub mod transcript;
pub mod wire;
#[cfg(feature = "wiremock")]
pub mod wiremock;
