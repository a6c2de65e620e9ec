//! Server-sent events: the exact event sequence the Responses API streams for a response
//! (`plan`), from a scripted or a recorded response (`source`), and the scripted ways to
//! deliver it badly (hostile delta boundaries, byte-sized chunks, delays, a cut before the
//! terminal event, an in-stream `error` in either shape). Events are written straight to
//! the bytes that go out; the transcript parses them only when it is read.

mod frames;
mod plan;
mod source;

pub use frames::{StreamFrames, frame, recorded_type, replay, snapshot, terminal_type};
pub use plan::plan;
pub(super) use plan::plan_padded;
pub use source::{Items, Prerendered, StreamedItem, StreamedResponse};
