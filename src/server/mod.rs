//! The fake Responses API: a transport-free session engine (routing, state store,
//! strict emulation, script playback, faults, background runs, conversations, fixture
//! tool backend), its server-sent events, and its HTTP front.

mod conversations;
mod engine;
mod http;
mod responses;
pub mod script;
pub mod stream;
pub mod validate;

pub use engine::{EngineReply, EngineRequest, ReplyBody, Session};
pub use http::RunningServer;
