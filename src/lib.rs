//! loopcheck: a record/replay harness and conformance suite for OpenAI Responses API
//! tool-call loops.
//!
//! Data flows one way: scenario -> server script -> controller traffic -> transcript ->
//! oracle -> verdicts -> reports (ARCHITECTURE.md maps the modules to it and gives their
//! layers).
//!
//! The library is what a Rust test suite needs beside the `loopcheck` binary:
//!
//! - [`runner::run_in_process`] runs a catalogue case against an async closure, and
//!   [`runner::run_all`] runs cases against a controller command;
//! - [`wiremock`] (feature `wiremock`) serves a case on a test's own wiremock server;
//! - [`scenario`] loads cases (the embedded [`scenario::catalogue`] or files), and
//!   [`report::CaseReport`] with [`oracle::CaseVerdict`] is what a run gives back;
//! - [`serve::SessionServer`] holds many sessions on one port, [`fuzz::fuzz`] generates
//!   and shrinks cases, [`record`] records and replays real traffic;
//! - [`server::Session`] is the fake API of one case without HTTP, for benches.
//!
//! What only the binary uses (settings, the tool backend, atomic writes, redaction) is
//! private to the crate.

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
