//! The capability words a controller declares (`supports` in its manifest or
//! `loopcheck.toml`): a case needing one the controller lacks is reported `unsupported`.

use std::collections::BTreeSet;

/// Capability words of docs/contract.md.
pub const CAPABILITIES: &[&str] = &[
    "previous_response_id",
    "stateless",
    "conversation",
    "replay",
    "stream",
    "websocket",
    "background",
    "programmatic",
    "approvals",
    "persistent",
    "budgets",
    "webhook",
    "custom",
    "mcp",
    "shell",
    "apply_patch",
    "compaction",
    "text_format",
    "computer",
    "namespaces",
    "tool_search",
];

/// The capabilities of a controller that declares none.
pub fn default_capabilities() -> BTreeSet<String> {
    ["previous_response_id", "stateless"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}
