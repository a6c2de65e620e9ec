//! The Responses wire model: requests, response rendering, ids and errors.
//!
//! Items travel as `serde_json::Value` so that every field a controller sends, known or
//! not, is preserved verbatim in the transcript and in replay comparisons.

pub mod error;
pub mod ids;
pub mod item;
pub mod replay;
pub mod request;
pub mod response;
pub mod write;

pub use error::ApiError;
pub use ids::IdGen;
pub use request::CreateRequest;
