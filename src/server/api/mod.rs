//! The API handlers: plain functions over the store, one per endpoint. Each returns what
//! to answer, or the real API's error for what it rejects; the engine routes requests to
//! them and records every exchange.

mod compact;
mod conversations;
mod responses;
mod route;

use route::list_page;
pub(super) use route::{Answer, Handled, route};
