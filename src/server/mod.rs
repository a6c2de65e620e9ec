//! The fake Responses API: a transport-free session engine (routing, state store,
//! strict emulation, script playback, fixture tool backend) and its HTTP front.

mod engine;
mod http;
pub mod script;
pub mod validate;

pub use engine::{EngineReply, EngineRequest, Session};
pub use http::RunningServer;
