//! The oracle: checks over a transcript, by family. Each family judges what the
//! controller sent and executed, not only what the fake server rejected.

mod authz;
mod background;
mod budget;
pub mod checks;
mod compaction;
mod correlation;
mod dispatch;
mod effects;
mod error_output;
pub(crate) mod facts;
mod hosted;
mod judge;
mod mcp;
#[cfg(test)]
mod newcomer_messages;
mod program;
mod reached;
mod reasoning;
mod safety;
mod state;
mod stream;
mod terminal;
#[cfg(test)]
mod test_support;
mod tool_search;
mod transport;
mod verdict;
mod websocket;

pub use judge::{Judgement, judge};
pub use verdict::{CaseVerdict, CheckResult, CheckVerdict, Diff};
