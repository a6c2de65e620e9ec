//! The two axes a case run is named by: how the controller carries state (the task's
//! `state`) and how responses reach it (the task's `stream` and `websocket`).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a controller carries state between requests (docs/contract.md).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum StateMode {
    /// Stored responses chained with `previous_response_id`.
    #[serde(rename = "previous_response_id")]
    PreviousResponseId,
    /// `store: false`, every output item replayed.
    #[serde(rename = "stateless")]
    Stateless,
    /// A `conversation` object carries the items.
    #[serde(rename = "conversation")]
    Conversation,
    /// Every item replayed with storage left on: no `previous_response_id`, no
    /// conversation, `store` absent or true. Every case that runs stateless runs so too.
    #[serde(rename = "replay")]
    Replay,
}

impl StateMode {
    /// The contract word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreviousResponseId => "previous_response_id",
            Self::Stateless => "stateless",
            Self::Conversation => "conversation",
            Self::Replay => "replay",
        }
    }

    /// Parses a contract word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "previous_response_id" => Some(Self::PreviousResponseId),
            "stateless" => Some(Self::Stateless),
            "conversation" => Some(Self::Conversation),
            "replay" => Some(Self::Replay),
            _ => None,
        }
    }
}

impl fmt::Display for StateMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a case's responses reach the controller: whole JSON bodies, server-sent events, or
/// events over the Responses API's WebSocket mode. A case runs in every delivery its
/// script allows, as it runs in several state modes.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// `stream` absent or false: each response is one JSON body.
    #[default]
    Json,
    /// `stream: true`: each response arrives as server-sent events.
    Stream,
    /// `websocket: true`: each response is asked for with a `response.create` event on one
    /// connection and arrives as that connection's events.
    #[serde(rename = "websocket")]
    WebSocket,
}

impl Delivery {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Stream => "stream",
            Self::WebSocket => "websocket",
        }
    }

    /// Parses the lowercase word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "json" => Some(Self::Json),
            "stream" => Some(Self::Stream),
            "websocket" => Some(Self::WebSocket),
            _ => None,
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a case run is named in reports: `stateless`, or `stateless, stream` for a
/// streamed run (`stateless, websocket` for one over the socket).
pub fn run_label(state: StateMode, delivery: Delivery) -> String {
    match delivery {
        Delivery::Json => state.to_string(),
        Delivery::Stream | Delivery::WebSocket => format!("{state}, {delivery}"),
    }
}
