//! The Responses wire model: requests, response rendering, ids and errors.
//!
//! Items travel as `serde_json::Value` so that every field a controller sends, known or
//! not, is preserved verbatim in the transcript and in replay comparisons.

pub(crate) mod call_kind;
pub(crate) mod error;
pub(crate) mod hosted;
pub(crate) mod ids;
pub(crate) mod item;
pub(crate) mod replay;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod write;

pub use error::ApiError;
pub use ids::IdGen;
pub use request::CreateRequest;
