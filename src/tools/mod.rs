//! The fixture tools: the built-in toolset, the task registry and the backend that
//! executes calls and keeps the execution ledger.

mod backend;

pub use backend::{
    BackendReply, BackendState, CallValidity, Registry, ToolBackend, call_input, rate_limit_rule,
};
