//! `POST /v1/responses` and the response endpoints: validation, script playback with
//! scripted transport faults, storage, background runs, retrieval, cancel and delete.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Answer, Handled, list_page};
use crate::scenario::{Fault, Scenario, StreamSpec, TurnStatus};
use crate::server::compiled::{self, CompiledTurn};
use crate::server::exchange::{EngineRequest, SocketCreate};
use crate::server::script;
use crate::server::script::ExpandedTurn;
use crate::server::store::{Background, Store, StoredResponse, skip_new_id, with_id};
use crate::server::stream::{self, Prerendered, StreamFrames, StreamedResponse};
use crate::server::validate;
use crate::transcript::{FaultRecord, LazyJson};
use crate::wire::item::OutputItem;
use crate::wire::response::{ResponseParts, ResponseStatus, WriteOutput};
use crate::wire::{ApiError, CreateRequest, IdGen};

/// `POST /v1/responses` (or a WebSocket's `response.create`, `socket`): validates the
/// request as the real API does, then answers the next scripted turn (or the fault
/// scripted for this attempt).
pub(super) fn create(
    scenario: &Scenario,
    store: &mut Store,
    path: &str,
    raw: &Bytes,
    retry: bool,
    socket: Option<SocketCreate>,
) -> Result<Handled, ApiError> {
    // An SDK retry (`x-stainless-retry-count` > 0) of the last served request, whose
    // answer the client lost, gets the same turn again, and so does the same request
    // sent again after its response failed (the API's failure message invites a retry);
    // anything else is an attempt at the next turn.
    let repeats_last = store
        .script
        .last_served
        .as_ref()
        .is_some_and(|(last, turn)| {
            let failed = scenario
                .script
                .get(*turn)
                .is_some_and(|t| t.status == TurnStatus::Failed);
            (retry || failed)
                && (last == raw || {
                    let parse = |body: &[u8]| serde_json::from_slice::<Value>(body).ok();
                    parse(raw).is_some_and(|body| parse(last) == Some(body))
                })
        });
    let request = CreateRequest::from_json(raw)?;
    validate::check_model(request.model.as_deref(), &scenario.task.model)?;
    let conversation = match request.extra.get("conversation") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(value) => match value.get("id").and_then(Value::as_str) {
            Some(id) => Some(id.to_owned()),
            None => {
                return Err(ApiError::invalid_type(
                    "conversation",
                    "a string or an object with an `id`",
                ));
            }
        },
    };
    let chain: Vec<Value> = match (&request.previous_response_id, &conversation) {
        (Some(_), Some(_)) => {
            return Err(ApiError::mutually_exclusive(
                "previous_response_id",
                "conversation",
            ));
        }
        (Some(id), None) => {
            validate::check_id_chars("previous_response_id", id)?;
            store.chain(id, socket.map(|socket| socket.connection))?
        }
        (None, Some(id)) => store.conversation(id)?.items.clone(),
        (None, None) => Vec::new(),
    };
    if request.background && !request.store {
        return Err(ApiError::background_requires_store());
    }
    let input = validate::resolve_input(&request.input, store.stored_items(), &store.issued)?;
    let context = validate::Context::new(&chain, input.iter().map(|item| &**item));
    validate::check_context(&context, &store.issued)?;
    validate::check_programs(&context, &store.issued)?;
    // Over a WebSocket, only the connection that made a `store: false` response can
    // continue it.
    let cached_on = socket
        .map(|socket| socket.connection)
        .filter(|_| !request.store);
    if socket.is_some_and(|socket| !socket.generate) {
        return warm_up(store, &request, chain, &input, conversation, cached_on);
    }

    let script = &scenario.script;
    let (index, fault) = match &store.script.last_served {
        Some((_, turn)) if repeats_last => (*turn, None),
        _ => {
            let index = store.script.pick(scenario, path, raw);
            let turn = match script.get(index) {
                Some(turn) => turn,
                None => match script.last() {
                    Some(last) if last.endless => last,
                    _ => {
                        return Err(ApiError::script_exhausted(
                            &scenario.id,
                            script.len(),
                            scenario.recorded.is_some(),
                        ));
                    }
                },
            };
            let fault = turn.faults.get(store.script.attempt(index)).cloned();
            if let Some(fault) = fault.as_ref().filter(|f| !f.is_delay_only()) {
                // An SDK retry of this attempt retries the fault, not the last turn.
                store.script.last_served = None;
                return Ok(fault_reply(fault, &mut store.ids));
            }
            (index, fault)
        }
    };
    // An endless turn is served past the script's end: its position is the last.
    let position = index.min(script.len().saturating_sub(1));
    let turn = script.get(position).expect("the script has a turn");

    let created_at = match &turn.recorded {
        Some(recorded) => recorded.response["created_at"]
            .as_u64()
            .unwrap_or_else(|| store.clock.now()),
        None => store.clock.now(),
    };
    let tail = store.ids.tail();
    // A stream's padding is on unless the request turns it off.
    let obfuscate = request
        .extra
        .get("stream_options")
        .and_then(|o| o.get("include_obfuscation"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let served = match &turn.recorded {
        // A recorded response goes out as it was recorded, ids and all.
        Some(recorded) => {
            let mut response = recorded.response.clone();
            let id = match response["id"].as_str() {
                Some(id) => id.to_owned(),
                None => store.ids.item_id("resp", created_at, &tail),
            };
            script::register(&response.output(), &mut store.issued);
            if let Some(conversation) = &conversation {
                response["conversation"] = json!({"id": conversation});
            }
            Served::Recorded { id, response }
        }
        None => {
            let id = store.ids.item_id("resp", created_at, &tail);
            let mut expanded =
                script::expand(turn, &mut store.ids, created_at, &tail, &mut store.issued);
            // Log probabilities only for a request that asks for them; a compiled turn
            // is written without them.
            let compiled = if wants_logprobs(&request) {
                for item in &mut expanded.output {
                    if let OutputItem::Message { logprobs, .. } = item {
                        *logprobs = true;
                    }
                }
                None
            } else {
                store.compiled.serve(position, turn, &expanded.output)
            };
            Served::Scripted {
                id,
                expanded,
                compiled,
            }
        }
    };
    let events_needed = request.stream || request.background;
    let mut json = Vec::with_capacity(2048);
    let (parts, write_output);
    let (response, layout): (&dyn StreamedResponse, _) = match &served {
        Served::Scripted {
            id,
            expanded,
            compiled,
        } => {
            // A compiled turn fills in its items, unless its stream is still to be
            // compiled: the planner copies each item's fields from where they were written.
            write_output = compiled
                .as_deref()
                .filter(|c| !events_needed || c.stream(request.background, obfuscate).is_some())
                .map(|c| move |out: &mut Vec<u8>| c.write_output(&expanded.output, out));
            parts = ResponseParts {
                id,
                created_at,
                status: expanded.status,
                output: &expanded.output,
                write_output: write_output.as_ref().map(|w| w as WriteOutput),
                request: &request,
                incomplete_reason: expanded.incomplete_reason.as_deref(),
                error: expanded.error.as_ref(),
                conversation: conversation.as_deref(),
            };
            let layout = parts.write_spanned(&mut json);
            (&parts as &dyn StreamedResponse, Some(layout))
        }
        Served::Recorded { response, .. } => {
            response.write(&mut json, None);
            (response as &dyn StreamedResponse, None)
        }
    };
    let json = Bytes::from(json);
    let id = served.id();
    let kept = Kept {
        id,
        created_at,
        tail: &tail,
        json: &json,
        conversation: conversation.as_deref(),
        cached_on,
    };
    let output: Vec<Value> = match kept.anywhere(&request) {
        true => response.output().into_owned(),
        false => Vec::new(),
    };
    kept.keep(store, &request, chain, &input, output)?;
    store.script.served(index);
    store.script.last_served = Some((raw.clone(), index));

    // Only streams and background runs (which can be resumed as a stream) need events;
    // a recorded stream is replayed event by event.
    let frames = match &turn.recorded {
        Some(recorded) if request.stream && !recorded.events.is_empty() => {
            stream::replay(&recorded.events)
        }
        _ if events_needed => {
            let response = Prerendered {
                response,
                json: &json,
                layout: layout.as_ref(),
            };
            let mut frames = match &served {
                Served::Scripted {
                    expanded, compiled, ..
                } => compiled::scripted_stream(
                    compiled.as_deref(),
                    turn,
                    &response,
                    &expanded.output,
                    obfuscate,
                    &mut store.ids,
                ),
                Served::Recorded { .. } => {
                    stream::plan(&response, &turn.stream, &mut store.ids, obfuscate)
                }
            };
            let millis = |ms: Option<u64>| ms.map(Duration::from_millis);
            let (calls, terminal) = (
                millis(turn.stream.done_delay_ms),
                millis(turn.stream.terminal_delay_ms),
            );
            if calls.is_some() || terminal.is_some() {
                hold_open(&mut frames, calls, terminal);
            }
            frames
        }
        _ => StreamFrames::default(),
    };
    // A stream's final response is the one its terminal event carries: the same bytes,
    // kept once.
    let terminal = frames.terminal_response();
    debug_assert!(terminal.as_ref().is_none_or(|terminal| *terminal == json));
    let final_response = LazyJson::json(terminal.unwrap_or_else(|| json.clone()));
    let (answer, final_response) = if request.background {
        let polls = if request.stream {
            0
        } else {
            turn.polls.unwrap_or(2)
        };
        let terminal: Value = serde_json::from_slice(&json).expect("rendered as JSON");
        let queued = stream::snapshot(&terminal, "queued");
        // With a webhook endpoint registered the run ends by time, and says so there.
        let timed = store.webhooks.schedule(&mut store.ids, &terminal);
        store.start_background(
            id,
            Background {
                terminal,
                polls_left: polls,
                stream: frames.clone(),
                done: request.stream,
                timed,
            },
        );
        store.set_response(id, queued.clone());
        let answer = if request.stream {
            Answer::Stream(frames)
        } else {
            Answer::Json(queued.into())
        };
        (answer, Some(final_response))
    } else if request.stream {
        (Answer::Stream(frames), Some(final_response))
    } else {
        (Answer::Json(final_response), None)
    };
    Ok(Handled {
        status: 200,
        body: answer,
        headers: Vec::new(),
        delay: Duration::from_millis(fault.map_or(0, |f| f.delay_ms)),
        turn: Some(index),
        fault: None,
        final_response,
        request_id: None,
    })
}

/// Whether a create asks for its output text's log probabilities: `include` has
/// `message.output_text.logprobs`, or `top_logprobs` is 1 or more.
fn wants_logprobs(request: &CreateRequest) -> bool {
    request
        .include
        .iter()
        .any(|include| include == "message.output_text.logprobs")
        || request
            .extra
            .get("top_logprobs")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 0)
}

/// A response being kept, and where: its conversation, the store (`store: true`), or
/// the cache of the WebSocket connection that made it (`store: false` over a socket).
struct Kept<'a> {
    id: &'a str,
    created_at: u64,
    tail: &'a str,
    json: &'a Bytes,
    conversation: Option<&'a str>,
    cached_on: Option<u32>,
}

impl Kept<'_> {
    /// Whether its items are kept anywhere.
    fn anywhere(&self, request: &CreateRequest) -> bool {
        self.conversation.is_some() || request.store || self.cached_on.is_some()
    }

    /// Keeps its input (given ids, which are drawn whether or not they are kept) and
    /// `output` where later requests find them.
    fn keep(
        &self,
        store: &mut Store,
        request: &CreateRequest,
        chain: Vec<Value>,
        input: &[Cow<'_, Value>],
        output: Vec<Value>,
    ) -> Result<(), ApiError> {
        let input_items: Vec<Value> = match self.anywhere(request) {
            true => input
                .iter()
                .map(|item| with_id(item, &mut store.ids, self.created_at, self.tail))
                .collect(),
            false => {
                for item in input {
                    skip_new_id(item, &mut store.ids);
                }
                Vec::new()
            }
        };
        if let Some(conversation) = self.conversation {
            let items = &mut store.conversation_mut(conversation)?.items;
            items.extend(input_items.iter().cloned());
            items.extend(output.iter().cloned());
        }
        if request.store {
            let mut context = chain;
            context.extend(input_items.iter().cloned());
            context.extend(output);
            store.store_response(
                self.id,
                StoredResponse {
                    response: LazyJson::json(self.json.clone()),
                    input_items,
                    context,
                },
            );
        } else if let Some(connection) = self.cached_on {
            let mut context = chain;
            context.extend(input_items);
            context.extend(output);
            store.cache_on_connection(self.id, connection, context);
        }
        Ok(())
    }
}

/// A WebSocket `response.create` with `generate: false`: a completed response without
/// output, kept as any response is so a later create can chain to it, that serves no
/// script turn.
fn warm_up(
    store: &mut Store,
    request: &CreateRequest,
    chain: Vec<Value>,
    input: &[Cow<'_, Value>],
    conversation: Option<String>,
    cached_on: Option<u32>,
) -> Result<Handled, ApiError> {
    let created_at = store.clock.now();
    let tail = store.ids.tail();
    let id = store.ids.item_id("resp", created_at, &tail);
    let parts = ResponseParts {
        id: &id,
        created_at,
        status: ResponseStatus::Completed,
        output: &[],
        write_output: None,
        request,
        incomplete_reason: None,
        error: None,
        conversation: conversation.as_deref(),
    };
    let mut json = Vec::with_capacity(1024);
    let layout = parts.write_spanned(&mut json);
    let json = Bytes::from(json);
    let kept = Kept {
        id: &id,
        created_at,
        tail: &tail,
        json: &json,
        conversation: conversation.as_deref(),
        cached_on,
    };
    kept.keep(store, request, chain, input, Vec::new())?;
    let response = Prerendered {
        response: &parts,
        json: &json,
        layout: Some(&layout),
    };
    let frames = stream::plan(&response, &StreamSpec::default(), &mut store.ids, true);
    Ok(Handled {
        body: Answer::Stream(frames),
        final_response: Some(LazyJson::json(json)),
        ..Handled::json(200, Value::Null)
    })
}

/// The Response object a turn is served as.
enum Served<'a> {
    /// Expanded from the script: rendered straight to bytes, or filled in from the
    /// turn's compiled form.
    Scripted {
        id: String,
        expanded: ExpandedTurn<'a>,
        compiled: Option<Arc<CompiledTurn>>,
    },
    /// A recorded response, as it was recorded.
    Recorded { id: String, response: Value },
}

impl Served<'_> {
    fn id(&self) -> &str {
        match self {
            Served::Scripted { id, .. } | Served::Recorded { id, .. } => id,
        }
    }
}

/// Holds a stream's events open: each function call's `output_item.done` by `calls`, the
/// terminal event by `terminal`, when given; every other event waits the stream's delay.
fn hold_open(frames: &mut StreamFrames, calls: Option<Duration>, terminal: Option<Duration>) {
    let terminal_at = frames
        .terminal_response
        .as_ref()
        .and_then(|_| frames.len().checked_sub(1));
    frames.pauses = (0..frames.len())
        .map(|index| match (calls, terminal) {
            (Some(hold), _) if frames.call_done(index).is_some() => hold,
            (_, Some(hold)) if Some(index) == terminal_at => hold,
            _ => frames.delay,
        })
        .collect();
}

/// `GET /v1/responses/{id}`: a background run advances one poll at a time (or, with a
/// webhook endpoint registered, ends when its time is up); with
/// `?stream=true&starting_after=N` its events after N are replayed.
pub(super) fn retrieve(
    store: &mut Store,
    id: &str,
    request: &EngineRequest,
) -> Result<Handled, ApiError> {
    let Some(stored) = store.response(id) else {
        return Err(ApiError::response_not_found(id));
    };
    let current = stored.response.clone();
    let Some(background) = store.background_mut(id) else {
        return Ok(Handled::json(200, current));
    };
    if request.query_param("stream") == Some("true") {
        let after: Option<usize> = request
            .query_param("starting_after")
            .and_then(|n| n.parse().ok());
        let planned = background.stream.resumed_after(after.map_or(0, |n| n + 1));
        background.done = true;
        let terminal = background.terminal.clone();
        store.set_response(id, terminal);
        return Ok(Handled {
            body: Answer::Stream(planned),
            ..Handled::json(200, Value::Null)
        });
    }
    let running = match &background.timed {
        Some(timed) => !background.done && Instant::now() < timed.ready_at,
        None if background.polls_left > 0 => {
            background.polls_left -= 1;
            true
        }
        None => false,
    };
    if running {
        return Ok(Handled::json(
            200,
            stream::snapshot(&background.terminal, "in_progress"),
        ));
    }
    background.done = true;
    let terminal = background.terminal.clone();
    store.set_response(id, terminal.clone());
    Ok(Handled::json(200, terminal))
}

/// `POST /v1/responses/{id}/cancel`: idempotent, and only for background responses.
pub(super) fn cancel(store: &mut Store, id: &str) -> Result<Handled, ApiError> {
    if store.response(id).is_none() {
        return Err(ApiError::response_not_found(id));
    }
    let Some(background) = store.background_mut(id) else {
        return Err(ApiError::cancel_not_background());
    };
    if !background.done {
        background.done = true;
        background.polls_left = 0;
        background.terminal = stream::snapshot(&background.terminal, "cancelled");
        if let Some(timed) = &background.timed {
            *crate::server::recorder::lock(&timed.status) = "cancelled".to_owned();
        }
        let cancelled = background.terminal.clone();
        store.set_response(id, cancelled);
    }
    let current = store.response(id).map(|s| s.response.clone());
    Ok(Handled::json(200, current.unwrap_or_default()))
}

/// `DELETE /v1/responses/{id}`.
pub(super) fn delete(store: &mut Store, id: &str) -> Result<Handled, ApiError> {
    store.delete_response(id)?;
    Ok(Handled::json(
        200,
        json!({"id": id, "object": "response", "deleted": true}),
    ))
}

/// `GET /v1/responses/{id}/input_items`.
pub(super) fn input_items(
    store: &Store,
    id: &str,
    request: &EngineRequest,
) -> Result<Handled, ApiError> {
    match store.response(id) {
        Some(stored) => Ok(Handled::json(200, list_page(&stored.input_items, request))),
        None => Err(ApiError::response_not_found(id)),
    }
}

/// The answer to an attempt that meets a scripted fault.
fn fault_reply(fault: &Fault, ids: &mut IdGen) -> Handled {
    let retry_after_ms = fault
        .retry_after_ms
        .or(fault.retry_after.map(|s| (s * 1000.0) as u64));
    let record = FaultRecord {
        status: (!fault.drop).then_some(fault.status).flatten(),
        retry_after_ms,
        should_retry: fault.should_retry,
        dropped: fault.drop,
        delay_ms: fault.delay_ms,
    };
    let mut headers = Vec::new();
    if let Some(ms) = fault.retry_after_ms {
        headers.push(("retry-after-ms", ms.to_string().into()));
    }
    if let Some(seconds) = fault.retry_after {
        headers.push(("retry-after", seconds.to_string().into()));
    }
    if let Some(retry) = fault.should_retry {
        headers.push(("x-should-retry", retry.to_string().into()));
    }
    let status = fault.status.unwrap_or(500);
    // The E16 message names the request id, so the reply's `x-request-id` is this one.
    let request_id = ids.request_id();
    let body = if fault.drop {
        Answer::Drop
    } else if let Some(text) = &fault.body {
        // A recorded error body is JSON; a scripted edge page is not.
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Answer::Json(LazyJson::from(value)),
            Err(_) => Answer::Raw {
                content_type: "text/html",
                text: text.clone(),
            },
        }
    } else {
        match status {
            503 => Answer::Raw {
                content_type: "text/html",
                text: "<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>\n".to_owned(),
            },
            _ => Answer::Json(ApiError::for_status(status, &request_id).body().into()),
        }
    };
    Handled {
        status,
        body,
        headers,
        delay: Duration::from_millis(fault.delay_ms),
        turn: None,
        fault: Some(record),
        final_response: None,
        request_id: Some(request_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::StreamSpec;

    #[test]
    fn done_delay_holds_only_each_calls_output_item_done() {
        let call = |n: u32| json!({"id": format!("fc_{n}"), "type": "function_call", "status": "completed", "arguments": "{\"sku\":\"A7\"}", "call_id": format!("call_{n}"), "name": "f"});
        let response = json!({"id": "resp_1", "status": "completed", "background": false, "output": [call(1), call(2)]});
        let spec = StreamSpec {
            delay_ms: 2,
            ..StreamSpec::default()
        };
        let mut planned = stream::plan(&response, &spec, &mut IdGen::new(1), false);
        hold_open(&mut planned, Some(Duration::from_millis(150)), None);
        let events = planned.events();
        let held: Vec<&str> = (0..planned.len())
            .filter(|&i| planned.pause(i) == Duration::from_millis(150))
            .map(|i| events[i]["item"]["call_id"].as_str().unwrap())
            .collect();
        assert_eq!(held, ["call_1", "call_2"]);
        for (i, event) in events.iter().enumerate() {
            if planned.call_done(i).is_none() {
                assert_eq!(planned.pause(i), Duration::from_millis(2), "{event}");
            } else {
                assert_eq!(event["type"], "response.output_item.done");
            }
        }
    }

    #[test]
    fn terminal_delay_holds_only_the_terminal_event() {
        let response =
            json!({"id": "resp_1", "status": "completed", "background": false, "output": []});
        let mut planned =
            stream::plan(&response, &StreamSpec::default(), &mut IdGen::new(1), false);
        hold_open(&mut planned, None, Some(Duration::from_millis(900)));
        let last = planned.len() - 1;
        assert_eq!(planned.events()[last]["type"], "response.completed");
        for i in 0..planned.len() {
            let want = if i == last { 900 } else { 0 };
            assert_eq!(planned.pause(i), Duration::from_millis(want), "event {i}");
        }
    }
}
