//! `loopcheck serve`: one long-running fake server on 127.0.0.1 holding many isolated
//! sessions, so a team's own test framework (pytest, vitest, any HTTP client) can run
//! catalogue cases against a tool loop that lives inside its application.
//!
//! A test creates a session of a case, points its loop at the session's base URL, posts
//! the loop's result, and asks for the oracle's verdict. The control routes live under
//! `/loopcheck/`; a session's fake API and tool backend under `/s/{id}/`. A session's
//! control routes need the token its creation answered, its API the API key. With a snapshot folder, each verdict is
//! also held to the session's snapshot, as `loopcheck run --snapshots` holds a case run.

mod front;
pub(crate) mod registry;
mod snapshots;

pub use front::{ServeOptions, SessionServer};
pub use registry::{Limits, Registry, SessionError};
