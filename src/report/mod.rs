//! Reporters: each reads the run's event stream ([`RunEvent`]) and nothing else. The
//! console report, the progress bar, the JSON and JUnit reports and the compliance matrix are all
//! [`Reporter`]s; the CLI picks which ones a run feeds.

mod case;
pub mod console;
pub(crate) mod drift_groups;
mod events;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod matrix;
pub(crate) mod merge;
pub(crate) mod progress;
mod reporter;
pub(crate) mod summary;
pub(crate) mod writable;

pub use case::{CaseReport, REPORT_FORMAT, RunReport, Summary, run_id};
pub use events::{ExchangeNote, RunEvent};
pub use reporter::{Reporter, Reporters, output_tail, write_file};
