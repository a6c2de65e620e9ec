//! The run as a stream of typed events. The runner emits them in order, from every case
//! running at once, and every reporter (console, progress, JSON, matrix) reads only
//! them: no reporter reaches into the runner.

use std::time::Duration;

use super::{CaseReport, Summary};
use crate::scenario::{Delivery, StateMode};
use crate::server::Recorded;

/// One thing that happened during a run.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// A run against one controller begins.
    RunStarted {
        /// The controller's name in reports.
        controller: String,
        /// Cases selected.
        cases: usize,
        /// Case runs planned (a case in two state modes runs twice; streamed, twice more).
        runs: usize,
        /// Case runs at once.
        jobs: usize,
    },
    /// A case run begins.
    CaseStarted {
        /// The case id.
        id: String,
        /// Its state mode.
        state: StateMode,
        /// Its delivery.
        delivery: Delivery,
    },
    /// The fake server or the tool backend recorded an exchange of a running case.
    ExchangeRecorded {
        /// The case id.
        id: String,
        /// Its state mode.
        state: StateMode,
        /// Its delivery.
        delivery: Delivery,
        /// What was recorded.
        exchange: ExchangeNote,
    },
    /// A case run was judged.
    CaseJudged(Box<CaseReport>),
    /// The run against one controller is over.
    RunFinished {
        /// The controller's name in reports.
        controller: String,
        /// Counts by verdict.
        summary: Summary,
        /// Wall time of the whole run.
        elapsed: Duration,
        /// Stopped by Ctrl-C or SIGTERM: only the case runs judged before are reported.
        interrupted: bool,
    },
}

/// A recorded exchange, in brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeNote {
    /// Its order number in the case's transcript.
    pub seq: u64,
    /// `POST /v1/responses`, `call get_stock`, `approval issue_refund`.
    pub what: String,
    /// The HTTP status answered.
    pub status: u16,
}

impl ExchangeNote {
    /// The note for an exchange as the server records it.
    pub fn of(recorded: Recorded<'_>) -> Self {
        match recorded {
            Recorded::Model(m) => Self {
                seq: m.seq,
                what: format!("{} {}", m.method, m.path),
                status: m.status,
            },
            Recorded::Tool(t) => Self {
                seq: t.seq,
                what: format!("{} {}", t.kind.as_str(), t.name),
                status: t.status,
            },
        }
    }
}
