//! What a judged case run is held to besides the oracle's checks, applied in one step
//! after judging ([`review()`]): its snapshot (what it sent last time it was accepted), a
//! replayed recording's drift (what it sent when recorded), and the baseline (the
//! failures a team has accepted for now). Beside them, their upkeep: snapshots waiting
//! for review ([`pending`]) and a baseline pruned or rewritten from a run
//! (`Baseline::prune`, `Baseline::updated`).

pub(crate) mod baseline;
pub(crate) mod drift;
pub mod pending;
pub mod redaction;
mod review;
pub(crate) mod snapshot;

pub use baseline::Baseline;
pub use redaction::{Redactions, Selector, SelectorError};
pub use review::review;
pub use snapshot::Snapshots;
