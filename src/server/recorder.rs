//! The transcript as the server writes it: every exchange in arrival order with a global
//! order number, and the progress of streamed answers as a front end reports it through
//! a [`StreamProgress`] handle. Any front end (the hyper server, a wiremock responder)
//! records the same transcript this way.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::stream::StreamFrames;

use crate::transcript::{
    ModelExchange, SocketEvent, StreamRecord, ToolExchange, Transcript, WebhookDelivery,
};

/// Model exchanges per chunk of the recorder's list.
const CHUNK: usize = 32;

/// What was just recorded, as an observer sees it.
#[derive(Debug, Clone, Copy)]
pub enum Recorded<'a> {
    /// A request to the fake Responses API and its answer.
    Model(&'a ModelExchange),
    /// A request to the fixture tool backend and its answer.
    Tool(&'a ToolExchange),
}

/// Called under the recorder's lock with each exchange as it is recorded: keep it cheap
/// (send it on a channel).
pub type Observer = Arc<dyn Fn(Recorded<'_>) + Send + Sync>;

pub(super) struct Recorder {
    /// The transcript but for its model exchanges, which `model` holds.
    transcript: Transcript,
    /// Model exchanges in chunks that stay where they are once allocated: a single
    /// growing list of exchanges this large would copy them all at every doubling.
    model: Vec<Vec<ModelExchange>>,
    seq: u64,
    started: Instant,
    observer: Option<Observer>,
}

impl Recorder {
    pub fn new(observer: Option<Observer>) -> Self {
        Self {
            transcript: Transcript::default(),
            model: Vec::new(),
            seq: 0,
            started: Instant::now(),
            observer,
        }
    }

    /// The next global order number, shared by model and tool exchanges and stream
    /// progress, so the oracle can tell what happened before what.
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Records a model exchange (its `seq` and `at_ms` are set here); returns its index.
    pub fn model(&mut self, mut exchange: ModelExchange) -> usize {
        exchange.seq = self.next_seq();
        exchange.at_ms = self.elapsed_ms();
        if self.model.last().is_none_or(|chunk| chunk.len() == CHUNK) {
            self.model.push(Vec::with_capacity(CHUNK));
        }
        let full_chunks = self.model.len() - 1;
        let chunk = self.model.last_mut().expect("a chunk with room");
        chunk.push(exchange);
        if let (Some(observe), Some(last)) = (&self.observer, chunk.last()) {
            observe(Recorded::Model(last));
        }
        full_chunks * CHUNK + chunk.len() - 1
    }

    /// Records a tool-backend exchange (its `seq` and `at_ms` are set here).
    pub fn tool(&mut self, mut exchange: ToolExchange) {
        exchange.seq = self.next_seq();
        exchange.at_ms = self.elapsed_ms();
        self.transcript.tools.push(exchange);
        if let (Some(observe), Some(last)) = (&self.observer, self.transcript.tools.last()) {
            observe(Recorded::Tool(last));
        }
    }

    /// Records an attempt at delivering a webhook event (its `seq` and `at_ms` are set
    /// here).
    pub fn webhook(&mut self, mut delivery: WebhookDelivery) {
        delivery.seq = self.next_seq();
        delivery.at_ms = self.elapsed_ms();
        self.transcript.webhooks.push(delivery);
    }

    /// Records what happened on a WebSocket connection (its `seq` and `at_ms` are set
    /// here).
    pub fn socket(&mut self, mut event: SocketEvent) {
        event.seq = self.next_seq();
        event.at_ms = self.elapsed_ms();
        self.transcript.sockets.push(event);
    }

    /// Takes the next order number and updates the stream record of an exchange with it.
    fn update_stream(&mut self, exchange: usize, update: impl FnOnce(&mut StreamRecord, u64)) {
        let seq = self.next_seq();
        if let Some(record) = self.stream_record(exchange) {
            update(record, seq);
        }
    }

    /// The stream record of model exchange `exchange`, if it has one.
    fn stream_record(&mut self, exchange: usize) -> Option<&mut StreamRecord> {
        self.model
            .get_mut(exchange / CHUNK)
            .and_then(|chunk| chunk.get_mut(exchange % CHUNK))
            .and_then(|m| m.stream.as_mut())
    }

    pub fn transcript(&self) -> Transcript {
        Transcript {
            model: self.model.concat(),
            ..self.transcript.clone()
        }
    }
}

/// Where a front end reports how far it got in writing a streamed answer: the oracle
/// judges a call executed before its `output_item.done` was written, and a stream that
/// broke off, from these records.
#[derive(Clone)]
pub struct StreamProgress {
    recorder: Arc<Mutex<Recorder>>,
    exchange: usize,
}

impl std::fmt::Debug for StreamProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamProgress")
            .field("exchange", &self.exchange)
            .finish()
    }
}

impl StreamProgress {
    pub(super) fn new(recorder: Arc<Mutex<Recorder>>, exchange: usize) -> Self {
        Self { recorder, exchange }
    }

    fn lock(&self) -> MutexGuard<'_, Recorder> {
        lock(&self.recorder)
    }

    /// Events `sent` of `frames` were written, in order, each taking its own order
    /// number; one lock for all of them (a frame carries every event up to a pause).
    pub fn events_sent(&self, sent: Range<usize>, frames: &StreamFrames) {
        self.record_sent(&mut self.lock(), sent, frames);
    }

    /// Events `sent` of `frames` were written, and the stream ends with them: what
    /// [`StreamProgress::events_sent`] and [`StreamProgress::ended`] record, under one
    /// lock.
    pub fn last_events_sent(&self, sent: Range<usize>, frames: &StreamFrames) {
        let mut recorder = self.lock();
        self.record_sent(&mut recorder, sent, frames);
        recorder.update_stream(self.exchange, |record, seq| record.ended_seq = Some(seq));
    }

    fn record_sent(&self, recorder: &mut Recorder, sent: Range<usize>, frames: &StreamFrames) {
        // Each event takes its own order number, as if reported one by one; the record
        // is found once for all of them.
        let first_seq = recorder.seq + 1;
        recorder.seq += sent.len() as u64;
        let Some(record) = recorder.stream_record(self.exchange) else {
            return;
        };
        if !sent.is_empty() {
            record.sent = record.sent.max(sent.end);
        }
        for (index, call_id) in &frames.call_done {
            if sent.contains(index) {
                let seq = first_seq + (index - sent.start) as u64;
                record.call_done_seq.insert(call_id.clone(), seq);
            }
        }
    }

    /// The stream ended (written whole, cut on purpose, or closed by the client).
    pub fn ended(&self) {
        self.lock()
            .update_stream(self.exchange, |record, seq| record.ended_seq = Some(seq));
    }
}

/// Locks a mutex, going on after a panic elsewhere: losing one case matters less than
/// serving the rest.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
