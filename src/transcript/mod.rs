//! The transcript: every request, response, tool-backend call and the controller's
//! result, in order. It is the one record every later stage (oracle, reports) reads.

pub(crate) mod drift;
mod headers;
mod lazy;
mod model;
pub mod normalize;
pub mod request_key;

pub use crate::contract::ControllerResult;
pub use headers::RecordedHeaders;
pub use lazy::LazyJson;
pub(crate) use lazy::event_data;
pub use model::{
    FaultRecord, ModelExchange, ProcessRecord, SocketEvent, SocketEventKind, StreamRecord,
    ToolExchange, ToolRequestKind, Transcript, Unfinished, WebhookDelivery,
};
