//! The fake Responses API: a transport-free session engine (routing and recording), the
//! store it keeps with its rules, the API handlers over that store, script playback
//! (with the turns a session serves again compiled), strict emulation, server-sent
//! events, and the hyper front that serves it within its limits, with the WebSocket
//! mode (`websocket`) on the same port.
//!
//! Data flows one way: a front end hands the engine a request; the engine routes it to
//! a handler (`api`) or the tool backend, which read and change the `store`; the engine
//! records the exchange (`recorder`) and returns the reply, whose stream progress the
//! front end reports back through an explicit [`StreamProgress`] handle.

mod api;
mod clock;
mod compiled;
mod engine;
mod exchange;
pub(crate) mod http;
pub(crate) mod keyed;
mod limits;
mod recorder;
mod request_limit;
pub(crate) mod script;
mod store;
pub mod stream;
pub(crate) mod validate;
mod webhook;
pub(crate) mod websocket;

pub use engine::{SOCKET_TIME_LIMIT, Session, SessionOptions};
pub use exchange::{EngineReply, EngineRequest, HeaderMap, ReplyBody};
pub use http::RunningServer;
pub use limits::HttpLimits;
pub use recorder::{Observer, Recorded, StreamProgress};
pub use request_limit::RequestLimit;
#[cfg(test)]
pub(crate) use webhook::RUN_TIME as WEBHOOK_RUN_TIME;
