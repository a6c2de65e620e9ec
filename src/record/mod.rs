//! Record and replay: capture real model traffic once through a proxy, keep it as a
//! cassette (an ordinary scenario, redacted before anything is written), and replay it
//! offline, reporting drift item by item.
//!
//! `loopcheck record --upstream URL --out FILE -- CMD...` runs `CMD` with
//! `OPENAI_BASE_URL` pointed at the proxy; `loopcheck replay FILE -- CMD...` runs it
//! against the cassette; `loopcheck run FILE --controller CMD` replays a cassette to a
//! contract controller and judges it with the oracle as well.

pub(crate) mod cassette;
mod command;
mod listen;
pub mod proxy;
mod resume;
mod socket;

pub use command::{Finished, Mode, RecordError, RecordOptions, record, replay};
pub use listen::{ListenOutcome, listen};
