//! The fake API's state and the rules that keep it consistent: stored responses and the
//! context each one continues, items retrievable by id while a stored response holds
//! them, background runs, conversations, what the server generated (to validate
//! replays), where the script stands and the turns compiled to serve again, and the tool
//! backend's ledger.

use foldhash::{HashMap, HashMapExt};

use bytes::Bytes;
use serde_json::{Value, json};

use super::clock::Clock;
use super::compiled::CompiledTurns;
use super::keyed::KeyedTurns;
use super::script::Issued;
use super::stream::StreamFrames;
use super::webhook::{Timed, Webhooks};
use crate::scenario::Scenario;
use crate::tools::BackendState;
use crate::transcript::LazyJson;
use crate::wire::request::{ItemKeys, item_id};
use crate::wire::{ApiError, IdGen};

/// A stored response and the whole context it continues (for `previous_response_id`).
pub(super) struct StoredResponse {
    /// The Response object as a retrieve returns it now.
    pub response: LazyJson,
    /// Input items of its request, with ids, for `input_items`.
    pub input_items: Vec<Value>,
    /// Chain + input + output: what a request continuing it inherits.
    pub context: Vec<Value>,
}

/// A response running in the background.
pub(super) struct Background {
    /// The terminal response it becomes.
    pub terminal: Value,
    /// Polls left that still see it in progress.
    pub polls_left: u32,
    /// Its events, for `GET ...?stream=true`.
    pub stream: StreamFrames,
    /// Whether a poll or the stream has delivered the terminal state.
    pub done: bool,
    /// With a webhook endpoint registered: the run ends then (polls do not advance
    /// it), and its terminal event is sent with the status it has by then.
    pub timed: Option<Timed>,
}

/// A stored conversation.
pub(super) struct Conversation {
    pub id: String,
    pub created_at: u64,
    pub metadata: Value,
    /// Items in order; responses append their input and output.
    pub items: Vec<Value>,
}

impl Conversation {
    /// The Conversation object.
    pub fn object(&self) -> Value {
        json!({"id": self.id, "object": "conversation", "created_at": self.created_at, "metadata": self.metadata})
    }
}

/// Where the script stands.
#[derive(Default)]
pub(super) struct ScriptCursor {
    /// Index of the next turn to serve.
    pub next_turn: usize,
    /// Attempts already made at `next_turn` (faults are answered per attempt).
    pub attempts: usize,
    /// The body and turn of the last served create, to re-serve an identical retry.
    pub last_served: Option<(Bytes, usize)>,
    /// For a cassette matched by key: its turns' keys, set at the first create.
    keyed: Option<Box<KeyedTurns>>,
}

impl ScriptCursor {
    /// The turn a create is at: in a cassette matched by key, by its key; else the next
    /// turn in order.
    pub fn pick(&mut self, scenario: &Scenario, path: &str, raw: &[u8]) -> usize {
        if scenario
            .recorded
            .as_ref()
            .is_none_or(|recorded| recorded.match_on.is_none())
        {
            return self.next_turn;
        }
        if self.keyed.is_none() {
            self.keyed = KeyedTurns::of(scenario).map(Box::new);
        }
        match &self.keyed {
            Some(keyed) => keyed.pick(path, raw),
            None => self.next_turn,
        }
    }

    /// Counts an attempt at `turn` and gives the attempts made at it before.
    pub fn attempt(&mut self, turn: usize) -> usize {
        match &mut self.keyed {
            Some(keyed) => keyed.attempt(turn),
            None => {
                self.attempts += 1;
                self.attempts - 1
            }
        }
    }

    /// Marks `turn` served: the next in order is the one after it.
    pub fn served(&mut self, turn: usize) {
        if let Some(keyed) = &mut self.keyed {
            keyed.served(turn);
        }
        if turn == self.next_turn {
            self.next_turn += 1;
            self.attempts = 0;
        }
    }
}

pub(super) struct Store {
    pub ids: IdGen,
    pub clock: Clock,
    pub script: ScriptCursor,
    /// The turns compiled for serving again.
    pub compiled: CompiledTurns,
    pub issued: Issued,
    pub backend: BackendState,
    /// The controller's webhook endpoint and the events waiting to be sent.
    pub webhooks: Webhooks,
    responses: HashMap<String, StoredResponse>,
    stored_items: HashMap<String, Value>,
    background: HashMap<String, Background>,
    conversations: HashMap<String, Conversation>,
    /// Responses created with `store: false` over a WebSocket connection: the context
    /// each continues, which only the connection that made it can chain to.
    connection_cache: HashMap<String, Cached>,
}

/// A response only its own WebSocket connection can continue.
struct Cached {
    connection: u32,
    context: Vec<Value>,
}

impl Store {
    pub fn new(ids: IdGen, clock: Clock) -> Self {
        Self {
            ids,
            clock,
            script: ScriptCursor::default(),
            compiled: CompiledTurns::default(),
            issued: Issued::default(),
            backend: BackendState::default(),
            webhooks: Webhooks::default(),
            responses: HashMap::new(),
            stored_items: HashMap::new(),
            background: HashMap::new(),
            conversations: HashMap::new(),
            connection_cache: HashMap::new(),
        }
    }

    /// The context a request with `previous_response_id: id` continues, from
    /// WebSocket connection `connection` if it came on one (E1 when no stored response
    /// has that id, nor one that connection cached).
    pub fn chain(&self, id: &str, connection: Option<u32>) -> Result<Vec<Value>, ApiError> {
        let cached = || {
            self.connection_cache
                .get(id)
                .filter(|cached| Some(cached.connection) == connection)
                .map(|cached| &cached.context)
        };
        self.responses
            .get(id)
            .map(|stored| &stored.context)
            .or_else(cached)
            .cloned()
            .ok_or_else(|| ApiError::previous_response_not_found(id))
    }

    /// Keeps the context of a response created with `store: false` on WebSocket
    /// connection `connection`, for that connection alone to continue.
    pub fn cache_on_connection(&mut self, id: &str, connection: u32, context: Vec<Value>) {
        let cached = Cached {
            connection,
            context,
        };
        self.connection_cache.insert(id.to_owned(), cached);
    }

    /// A WebSocket connection closed: the responses it alone could continue are gone.
    pub fn forget_connection(&mut self, connection: u32) {
        self.connection_cache
            .retain(|_, cached| cached.connection != connection);
    }

    /// Items retrievable by id (`item_reference`, replays without encrypted content).
    pub fn stored_items(&self) -> &HashMap<String, Value> {
        &self.stored_items
    }

    /// Stores a response; every item of its context becomes retrievable by id.
    pub fn store_response(&mut self, id: &str, stored: StoredResponse) {
        for item in &stored.context {
            if let Some(item_id) = item_id(item) {
                self.stored_items.insert(item_id.to_owned(), item.clone());
            }
        }
        self.responses.insert(id.to_owned(), stored);
    }

    pub fn response(&self, id: &str) -> Option<&StoredResponse> {
        self.responses.get(id)
    }

    /// Replaces what a retrieve of a stored response returns (queued, then terminal).
    pub fn set_response(&mut self, id: &str, response: Value) {
        if let Some(stored) = self.responses.get_mut(id) {
            stored.response = response.into();
        }
    }

    /// Deletes a stored response; its items stay retrievable only while another stored
    /// response holds them.
    pub fn delete_response(&mut self, id: &str) -> Result<(), ApiError> {
        if self.responses.remove(id).is_none() {
            return Err(ApiError::response_not_found(id));
        }
        self.background.remove(id);
        self.stored_items = self
            .responses
            .values()
            .flat_map(|stored| stored.context.iter())
            .filter_map(|item| Some((item_id(item)?.to_owned(), item.clone())))
            .collect();
        Ok(())
    }

    pub fn start_background(&mut self, id: &str, run: Background) {
        self.background.insert(id.to_owned(), run);
    }

    pub fn background_mut(&mut self, id: &str) -> Option<&mut Background> {
        self.background.get_mut(id)
    }

    /// A new conversation holding `items` (given ids), as the create endpoint makes it.
    pub fn create_conversation(&mut self, items: &[Value], metadata: Value) -> &Conversation {
        let created_at = self.clock.now();
        let tail = self.ids.tail();
        let id = self.ids.item_id("conv", created_at, &tail);
        let items = items
            .iter()
            .map(|item| with_id(item, &mut self.ids, created_at, &tail))
            .collect();
        let conversation = Conversation {
            id: id.clone(),
            created_at,
            metadata,
            items,
        };
        self.conversations.entry(id).or_insert(conversation)
    }

    pub fn conversation(&self, id: &str) -> Result<&Conversation, ApiError> {
        self.conversations
            .get(id)
            .ok_or_else(|| ApiError::conversation_not_found(id))
    }

    pub fn conversation_mut(&mut self, id: &str) -> Result<&mut Conversation, ApiError> {
        self.conversations
            .get_mut(id)
            .ok_or_else(|| ApiError::conversation_not_found(id))
    }

    pub fn delete_conversation(&mut self, id: &str) -> Result<(), ApiError> {
        self.conversations
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| ApiError::conversation_not_found(id))
    }

    /// Appends items to a conversation, giving each an id; returns them as stored.
    pub fn add_to_conversation(
        &mut self,
        id: &str,
        items: &[Value],
    ) -> Result<Vec<Value>, ApiError> {
        let created_at = self.clock.now();
        let tail = self.ids.tail();
        let conversation = self
            .conversations
            .get_mut(id)
            .ok_or_else(|| ApiError::conversation_not_found(id))?;
        let added: Vec<Value> = items
            .iter()
            .map(|item| with_id(item, &mut self.ids, created_at, &tail))
            .collect();
        conversation.items.extend(added.iter().cloned());
        Ok(added)
    }
}

/// An input item as stored: with an id when it had none (as listings show them).
pub(super) fn with_id(item: &Value, ids: &mut IdGen, created_at: u64, tail: &str) -> Value {
    let mut item = item.clone();
    if let (Some(id), Some(object)) = (new_id(&item, ids, created_at, tail), item.as_object_mut()) {
        object.insert("id".to_owned(), json!(id));
    }
    item
}

/// The id an input item gets when it is stored, if it has none.
fn new_id(item: &Value, ids: &mut IdGen, created_at: u64, tail: &str) -> Option<String> {
    Some(ids.item_id(id_prefix(item)?, created_at, tail))
}

/// Draws the id an input item that is not kept would have got: ids are drawn whether or
/// not the item is kept, so later ids do not depend on what the store keeps.
pub(super) fn skip_new_id(item: &Value, ids: &mut IdGen) {
    if id_prefix(item).is_some() {
        ids.skip_item_id();
    }
}

/// The prefix of the id an input item gets when it is stored, if it has none.
fn id_prefix(item: &Value) -> Option<&'static str> {
    let keys = ItemKeys::of(item);
    if keys.id.is_some() || !item.is_object() {
        return None;
    }
    Some(match keys.kind {
        "message" => "msg",
        "function_call_output" => "fco",
        "function_call" => "fc",
        _ => "item",
    })
}
