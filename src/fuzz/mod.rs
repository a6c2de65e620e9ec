//! `loopcheck fuzz`: property fuzzing of a controller. proptest generates whole cases
//! (rounds of parallel calls to known and unknown tools with valid, malformed or
//! schema-violating arguments, custom tool calls in and out of their grammar, reasoning
//! (with its text) and preambles, citations, denials, transient tool failures and
//! approvals, transport faults, incomplete (content-filtered too), failed and refused
//! turns, streams delivered badly, program pauses), each only where the controller declares the
//! capability; the oracle judges each as it judges a catalogue case. Fuzzing goes on for
//! the whole budget; failures are grouped by the checks they fail, and one case of each
//! group is shrunk, rerunning the real controller at each step, to a minimal scenario
//! (its unused tools, behaviours and policies taken out too) written as an ordinary
//! scenario file that `loopcheck run` replays. Failures kept from earlier runs are
//! replayed first.

mod in_process;
pub(crate) mod plan;
pub(crate) mod progress;
mod run;
mod size;
pub mod strategy;
mod trim;

pub use in_process::InProcess;
pub use run::{
    FailureGroup, FuzzError, FuzzEvent, FuzzOptions, FuzzOutcome, Kept, Shrunk, failing, fuzz,
    replay_command,
};
pub use size::Size;
