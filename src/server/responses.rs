//! `POST /v1/responses` and the response endpoints: validation, script playback with
//! scripted transport faults, storage, background runs, retrieval, cancel and delete.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::engine::{
    Background, EngineRequest, Handled, Inner, ReplyBody, Session, StoredResponse,
};
use super::script;
use super::stream::{self, PlannedStream};
use super::validate;
use crate::scenario::Fault;
use crate::transcript::FaultRecord;
use crate::wire::request::{item_id, item_type};
use crate::wire::response::{self, ResponseParts};
use crate::wire::{ApiError, CreateRequest, IdGen};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Session {
    pub(super) fn create(
        &self,
        inner: &mut Inner,
        body: &Value,
        retry: bool,
    ) -> Result<Handled, ApiError> {
        let request = CreateRequest::parse(body)?;
        validate::check_model(request.model.as_deref(), &self.scenario.task.model)?;
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
                match inner.responses.get(id) {
                    Some(stored) => stored.context.clone(),
                    None => return Err(ApiError::previous_response_not_found(id)),
                }
            }
            (None, Some(id)) => match inner.conversations.get(id) {
                Some(conversation) => conversation.items.clone(),
                None => return Err(ApiError::conversation_not_found(id)),
            },
            (None, None) => Vec::new(),
        };
        if request.background && !request.store {
            return Err(ApiError::background_requires_store());
        }
        let input = validate::resolve_input(&request.input, &inner.stored_items, &inner.issued)?;
        validate::check_context(&chain, &input, &inner.issued)?;
        validate::check_programs(&chain, &input, &inner.issued)?;

        // An SDK retry (`x-stainless-retry-count` > 0) of the last served request, whose
        // answer the client lost, gets the same turn again; anything else is an attempt
        // at the next turn.
        let script = &self.scenario.script;
        let (index, fault) = match &inner.last_served {
            Some((last, turn)) if retry && last == body => (*turn, None),
            _ => {
                let index = inner.next_turn;
                let turn = match script.get(index) {
                    Some(turn) => turn,
                    None => match script.last() {
                        Some(last) if last.endless => last,
                        _ => {
                            return Err(ApiError::script_exhausted(
                                &self.scenario.id,
                                script.len(),
                            ));
                        }
                    },
                };
                let fault = turn.faults.get(inner.attempts).cloned();
                inner.attempts += 1;
                if let Some(fault) = fault.as_ref().filter(|f| !f.is_delay_only()) {
                    // An SDK retry of this attempt retries the fault, not the last turn.
                    inner.last_served = None;
                    return Ok(fault_reply(fault, &mut inner.ids));
                }
                (index, fault)
            }
        };
        let turn = script
            .get(index)
            .or(script.last())
            .expect("the script has a turn");

        let created_at = now();
        let tail = inner.ids.tail();
        let id = inner.ids.item_id("resp", created_at, &tail);
        let expanded = script::expand(turn, &mut inner.ids, created_at, &tail, &mut inner.issued);
        let output = expanded.output.clone();
        let mut rendered = response::render(ResponseParts {
            id: &id,
            created_at,
            status: expanded.status,
            output: expanded.output,
            request: &request,
            incomplete_reason: expanded.incomplete_reason.as_deref(),
            error: expanded.error,
        });
        if let Some(conversation) = &conversation {
            rendered["conversation"] = json!({"id": conversation});
        }
        let input_items: Vec<Value> = input
            .iter()
            .map(|item| with_id(item, &mut inner.ids, created_at, &tail))
            .collect();
        if request.store {
            let mut context = chain;
            context.extend(input_items.iter().cloned());
            context.extend(output.iter().cloned());
            for item in &context {
                if let Some(item_id) = item_id(item) {
                    inner.stored_items.insert(item_id.to_owned(), item.clone());
                }
            }
            inner.responses.insert(
                id.clone(),
                StoredResponse {
                    response: rendered.clone(),
                    input_items: input_items.clone(),
                    context,
                },
            );
        }
        if let Some(conversation) = conversation
            .as_ref()
            .and_then(|c| inner.conversations.get_mut(c))
        {
            conversation.items.extend(input_items);
            conversation.items.extend(output);
        }
        if index == inner.next_turn {
            inner.next_turn += 1;
            inner.attempts = 0;
        }
        inner.last_served = Some((body.clone(), index));

        let obfuscate = request
            .extra
            .get("stream_options")
            .and_then(|o| o.get("include_obfuscation"))
            .and_then(Value::as_bool)
            .unwrap_or(true);
        // Only streams and background runs (which can be resumed as a stream) need events.
        let planned = if request.stream || request.background {
            stream::plan(&rendered, &turn.stream, &mut inner.ids, obfuscate)
        } else {
            PlannedStream::default()
        };
        let (body, final_response) = if request.background {
            let polls = if request.stream {
                0
            } else {
                turn.polls.unwrap_or(2)
            };
            inner.background.insert(
                id.clone(),
                Background {
                    terminal: rendered.clone(),
                    polls_left: polls,
                    stream: planned.clone(),
                    done: request.stream,
                },
            );
            let queued = stream::snapshot(&rendered, "queued");
            if let Some(stored) = inner.responses.get_mut(&id) {
                stored.response = queued.clone();
            }
            let body = if request.stream {
                ReplyBody::Stream(planned)
            } else {
                ReplyBody::Json(queued)
            };
            (body, Some(rendered))
        } else if request.stream {
            (ReplyBody::Stream(planned), Some(rendered))
        } else {
            (ReplyBody::Json(rendered), None)
        };
        Ok(Handled {
            status: 200,
            body,
            headers: Vec::new(),
            delay: Duration::from_millis(fault.map_or(0, |f| f.delay_ms)),
            turn: Some(index),
            fault: None,
            final_response,
            request_id: None,
        })
    }

    pub(super) fn retrieve(
        &self,
        inner: &mut Inner,
        id: &str,
        request: &EngineRequest,
    ) -> Result<Handled, ApiError> {
        if !inner.responses.contains_key(id) {
            return Err(ApiError::response_not_found(id));
        }
        if let Some(background) = inner.background.get_mut(id) {
            if request.query_param("stream") == Some("true") {
                let after: Option<usize> = request
                    .query_param("starting_after")
                    .and_then(|n| n.parse().ok());
                let mut planned = background.stream.clone();
                let start = after.map_or(0, |n| n + 1).min(planned.events.len());
                planned.events.drain(..start);
                planned.call_done = planned
                    .call_done
                    .into_iter()
                    .filter(|(i, _)| *i >= start)
                    .map(|(i, c)| (i - start, c))
                    .collect();
                planned.cut_after = planned.cut_after.map(|n| n.saturating_sub(start));
                background.done = true;
                let terminal = background.terminal.clone();
                if let Some(stored) = inner.responses.get_mut(id) {
                    stored.response = terminal;
                }
                return Ok(Handled {
                    body: ReplyBody::Stream(planned),
                    ..Handled::json(200, Value::Null)
                });
            }
            if background.polls_left > 0 {
                background.polls_left -= 1;
                return Ok(Handled::json(
                    200,
                    stream::snapshot(&background.terminal, "in_progress"),
                ));
            }
            background.done = true;
            let terminal = background.terminal.clone();
            if let Some(stored) = inner.responses.get_mut(id) {
                stored.response = terminal;
            }
        }
        Ok(Handled::json(200, inner.responses[id].response.clone()))
    }

    pub(super) fn cancel(&self, inner: &mut Inner, id: &str) -> Result<Handled, ApiError> {
        let Some(stored) = inner.responses.get_mut(id) else {
            return Err(ApiError::response_not_found(id));
        };
        let Some(background) = inner.background.get_mut(id) else {
            return Err(ApiError::cancel_not_background());
        };
        if !background.done {
            background.done = true;
            background.polls_left = 0;
            background.terminal = stream::snapshot(&background.terminal, "cancelled");
            stored.response = background.terminal.clone();
        }
        Ok(Handled::json(200, stored.response.clone()))
    }

    pub(super) fn delete(&self, inner: &mut Inner, id: &str) -> Result<Handled, ApiError> {
        if inner.responses.remove(id).is_none() {
            return Err(ApiError::response_not_found(id));
        }
        inner.background.remove(id);
        // Items stay retrievable only while a stored response holds them.
        inner.stored_items = inner
            .responses
            .values()
            .flat_map(|stored| stored.context.iter())
            .filter_map(|item| Some((item_id(item)?.to_owned(), item.clone())))
            .collect();
        Ok(Handled::json(
            200,
            json!({"id": id, "object": "response", "deleted": true}),
        ))
    }
}

/// An input item as stored: with an id when it had none (as listings show them).
pub(super) fn with_id(item: &Value, ids: &mut IdGen, created_at: u64, tail: &str) -> Value {
    if item_id(item).is_some() || !item.is_object() {
        return item.clone();
    }
    let prefix = match item_type(item) {
        "message" => "msg",
        "function_call_output" => "fco",
        "function_call" => "fc",
        _ => "item",
    };
    let mut item = item.clone();
    if let Some(object) = item.as_object_mut() {
        object.insert(
            "id".to_owned(),
            json!(ids.item_id(prefix, created_at, tail)),
        );
    }
    item
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
        headers.push(("retry-after-ms".to_owned(), ms.to_string()));
    }
    if let Some(seconds) = fault.retry_after {
        headers.push(("retry-after".to_owned(), seconds.to_string()));
    }
    if let Some(retry) = fault.should_retry {
        headers.push(("x-should-retry".to_owned(), retry.to_string()));
    }
    let status = fault.status.unwrap_or(500);
    // The E16 message names the request id, so the reply's `x-request-id` is this one.
    let request_id = ids.request_id();
    let body = if fault.drop {
        ReplyBody::Drop
    } else if let Some(text) = &fault.body {
        ReplyBody::Raw {
            content_type: "text/html",
            text: text.clone(),
        }
    } else {
        match status {
            503 => ReplyBody::Raw {
                content_type: "text/html",
                text: "<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>\n".to_owned(),
            },
            _ => ReplyBody::Json(ApiError::for_status(status, &request_id).body()),
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
