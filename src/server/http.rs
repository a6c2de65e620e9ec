//! Serving a session over HTTP/1.1 on 127.0.0.1 with hyper, one free port per case.
//! hyper directly (not a framework) because a fault must be able to close a connection
//! without any answer, and a stream must go out event by event and break off midway.
//! Every request's body is read here, within the server's [`HttpLimits`], before its
//! handler sees it. A server of one session also takes the WebSocket upgrade of
//! `/v1/responses`, whose connection the `websocket` module serves.

use std::borrow::Cow;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderName, HeaderValue, UPGRADE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::{JoinHandle, JoinSet};

use super::engine::Session;
use super::exchange::{EngineReply, EngineRequest, ReplyBody};
use super::limits::{Backoff, BodyBudget, HttpLimits, Reservation};
use super::recorder::StreamProgress;
use super::stream::StreamFrames;
use super::websocket;
use crate::wire::error::ApiError;

/// A running server; dropping it (or calling [`RunningServer::shutdown`]) stops it and
/// every connection it holds.
pub struct RunningServer {
    addr: SocketAddr,
    task: Option<JoinHandle<()>>,
}

/// What answers each request of a server, its body read: a future of a response, or of
/// a dropped connection.
pub(crate) type Handler = Arc<
    dyn Fn(EngineRequest) -> BoxFuture<'static, Result<Response<ReplyStream>, DropConnection>>
        + Send
        + Sync,
>;

pub(crate) type BoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// What takes a WebSocket upgrade of `/v1/responses`: it answers the handshake, and on
/// a `101` leaves in the slot the future that serves the connection once hyper lets go
/// of it (the fake's socket, or the record proxy's relay).
pub(crate) type Upgrader = Arc<
    dyn Fn(
            Request<Incoming>,
            UpgradeSlot,
        ) -> BoxFuture<'static, Result<Response<ReplyStream>, DropConnection>>
        + Send
        + Sync,
>;

/// Where an [`Upgrader`] leaves the future that serves an accepted upgrade.
pub(crate) type UpgradeSlot = Arc<Mutex<Option<BoxFuture<'static, ()>>>>;

/// What takes a server's WebSocket upgrades: the paths it takes them on (an upgrade of
/// any other path is answered as HTTP), and how.
#[derive(Clone)]
pub(crate) struct Upgrades {
    pub on_path: fn(&str) -> bool,
    pub upgrader: Upgrader,
}

impl Upgrades {
    /// Upgrades of the Responses path (`/v1/responses`, `/responses`) taken by `upgrader`.
    pub(crate) fn of_responses(upgrader: Upgrader) -> Self {
        Self {
            on_path: websocket::is_socket_path,
            upgrader,
        }
    }
}

impl RunningServer {
    /// Binds 127.0.0.1 on a free port and serves `session`.
    /// WebSocket upgrades of `/v1/responses` open connections to the same session.
    pub async fn start(session: Arc<Session>) -> std::io::Result<Self> {
        let limits = HttpLimits::default();
        let sockets = session.clone();
        let upgrader: Upgrader = Arc::new(move |request, slot| {
            Box::pin(upgrade(sockets.clone(), request, limits, slot))
        });
        let handler: Handler = Arc::new(move |request| Box::pin(serve(session.clone(), request)));
        Self::listen(0, handler, Some(Upgrades::of_responses(upgrader)), limits).await
    }

    /// Binds 127.0.0.1 on a free port, answers every request with `handler` and every
    /// WebSocket upgrade of `/v1/responses` with `upgrader`.
    pub(crate) async fn serve_with_upgrades(
        handler: Handler,
        upgrader: Upgrader,
    ) -> std::io::Result<Self> {
        let upgrades = Upgrades::of_responses(upgrader);
        Self::listen(0, handler, Some(upgrades), HttpLimits::default()).await
    }

    /// Binds 127.0.0.1 on `port` (0: a free one) and answers every request with
    /// `handler`, and every WebSocket upgrade `upgrades` takes with it, within `limits`.
    pub(crate) async fn serve_on_with_upgrades(
        port: u16,
        handler: Handler,
        upgrades: Upgrades,
        limits: HttpLimits,
    ) -> std::io::Result<Self> {
        Self::listen(port, handler, Some(upgrades), limits).await
    }

    /// Binds and serves: requests with `handler`, upgrades `sockets` takes with it.
    async fn listen(
        port: u16,
        handler: Handler,
        sockets: Option<Upgrades>,
        limits: HttpLimits,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(accept_loop(listener, handler, sockets, limits));
        Ok(Self {
            addr,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and closes every connection.
    pub async fn shutdown(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    handler: Handler,
    sockets: Option<Upgrades>,
    limits: HttpLimits,
) {
    // Connections live in the set, so aborting this task closes them all.
    let mut connections = JoinSet::new();
    let open = Arc::new(Semaphore::new(limits.connections.max(1)));
    let budget = BodyBudget::new(limits.body_budget);
    let mut backoff = Backoff::default();
    loop {
        // Past the cap, connections wait in the listen queue until one closes.
        let Ok(permit) = open.clone().acquire_owned().await else {
            return;
        };
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(_) => {
                tokio::time::sleep(backoff.failed()).await;
                continue;
            }
        };
        backoff.succeeded();
        // Without TCP_NODELAY a keep-alive client stalls ~40 ms per request (Nagle plus
        // delayed ACK).
        let _ = tcp.set_nodelay(true);
        let (handler, budget, sockets) = (handler.clone(), budget.clone(), sockets.clone());
        connections.spawn(async move {
            let _permit = permit;
            // An accepted upgrade's connection, served here once hyper lets go of it,
            // so it holds its permit and closes with the server.
            let upgraded: UpgradeSlot = Arc::default();
            let upgrades = upgraded.clone();
            let service = service_fn(move |request: Request<Incoming>| {
                let (handler, budget) = (handler.clone(), budget.clone());
                let (sockets, upgrades) = (sockets.clone(), upgrades.clone());
                async move {
                    if let Some(sockets) = sockets.filter(|sockets| {
                        websocket::wants_upgrade(request.method().as_str(), request.headers())
                            && (sockets.on_path)(request.uri().path())
                    }) {
                        return (sockets.upgrader)(request, upgrades).await;
                    }
                    match read_request(request, &limits, &budget).await {
                        // The body's bytes count against the budget until it is handled.
                        Ok((request, _held)) => handler(request).await,
                        Err(refusal) => refusal.answer().await,
                    }
                }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(tcp), service)
                .with_upgrades()
                .await;
            let socket = upgraded.lock().ok().and_then(|mut slot| slot.take());
            if let Some(socket) = socket {
                socket.await;
            }
        });
        while connections.try_join_next().is_some() {}
    }
}

/// An upgrade request as the engine sees a request: its method, path, query and
/// headers (it has no body).
pub(crate) fn upgrade_head(request: &Request<Incoming>) -> EngineRequest {
    EngineRequest {
        method: request.method().as_str().to_owned(),
        path: request.uri().path().to_owned(),
        query: request.uri().query().map(str::to_owned),
        headers: request.headers().clone(),
        body: Bytes::new(),
    }
}

/// Answers a WebSocket upgrade of `/v1/responses`: refused as HTTP refuses a request
/// without this session's key, 400 without a valid handshake, else 101 with the
/// connection left in `slot` for the connection's task to serve.
pub(crate) async fn upgrade(
    session: Arc<Session>,
    mut request: Request<Incoming>,
    limits: HttpLimits,
    slot: UpgradeSlot,
) -> Result<Response<ReplyStream>, DropConnection> {
    let head = upgrade_head(&request);
    if let Some(refusal) = session.refuse_upgrade(&head) {
        return send(refusal).await;
    }
    let accept = match websocket::accept_key(&head.headers) {
        Ok(accept) => accept,
        Err(error) => return send(front_refusal(&error)).await,
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    if let Ok(mut slot) = slot.lock() {
        *slot = Some(Box::pin(websocket::serve(
            session, on_upgrade, head, limits,
        )));
    }
    let mut response = Response::new(ReplyStream::full(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    if let Ok(accept) = HeaderValue::try_from(accept) {
        headers.insert("sec-websocket-accept", accept);
    }
    Ok(response)
}

/// Returned to hyper to close the connection without an answer.
#[derive(Debug)]
pub(crate) struct DropConnection;

impl std::fmt::Display for DropConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for DropConnection {}

/// Why a request's body was not read.
enum Refusal {
    /// Larger than [`HttpLimits::max_body`] (announced or sent): 413.
    TooLarge(usize),
    /// The budget of bytes in flight is spent: 503.
    Busy,
    /// It broke off, or stalled past [`HttpLimits::body_idle`]: the connection goes.
    Broken,
}

impl Refusal {
    async fn answer(self) -> Result<Response<ReplyStream>, DropConnection> {
        let error = match self {
            Self::TooLarge(limit) => ApiError::body_too_large(limit),
            Self::Busy => ApiError::overloaded(),
            Self::Broken => return Err(DropConnection),
        };
        send(front_refusal(&error)).await
    }
}

/// An API error answered by the front itself, before any session sees the request: no
/// session headers, no delay.
pub(crate) fn front_refusal(error: &ApiError) -> EngineReply {
    EngineReply {
        status: error.status,
        headers: Vec::new(),
        body: ReplyBody::Json(error.body().to_string().into()),
        delay: Duration::ZERO,
    }
}

/// Reads a whole request into the engine's transport-neutral form; the reservation
/// holds its body's bytes against the budget.
async fn read_request(
    request: Request<Incoming>,
    limits: &HttpLimits,
    budget: &Arc<BodyBudget>,
) -> Result<(EngineRequest, Reservation), Refusal> {
    let (parts, mut body) = request.into_parts();
    let (body, held) = read_body(&mut body, limits, budget).await?;
    let request = EngineRequest {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers,
        body,
    };
    Ok((request, held))
}

/// The whole body, copied into a buffer of its own: hyper's chunks share their whole
/// read buffer, which a transcript would otherwise keep alive for every request it
/// records. The buffer grows as bytes arrive, never to more than has come (doubled) or
/// was announced: reserving an announced size up front let a client that sends one
/// byte hold 64 MiB.
async fn read_body(
    body: &mut Incoming,
    limits: &HttpLimits,
    budget: &Arc<BodyBudget>,
) -> Result<(Bytes, Reservation), Refusal> {
    let max = limits.max_body;
    let announced = body.size_hint().lower();
    if announced > max as u64 {
        return Err(Refusal::TooLarge(max));
    }
    let announced = announced as usize;
    let mut held = budget.reservation();
    let mut buffer = Vec::new();
    loop {
        let frame = match tokio::time::timeout(limits.body_idle, body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => break,
            Ok(Some(Err(_))) | Err(_) => return Err(Refusal::Broken),
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let needed = buffer.len() + data.len();
        if needed > max {
            return Err(Refusal::TooLarge(max));
        }
        if needed > buffer.capacity() {
            // Doubling, up to the announced length (the whole limit for a body of no
            // length, or one longer than it said).
            let ceiling = if announced >= needed { announced } else { max };
            let grown = needed.max(buffer.capacity() * 2).min(ceiling);
            if !held.hold(grown) {
                return Err(Refusal::Busy);
            }
            buffer.reserve_exact(grown - buffer.len());
        }
        buffer.extend_from_slice(&data);
    }
    // A body without a length may have grown past what it holds.
    buffer.shrink_to_fit();
    Ok((Bytes::from(buffer), held))
}

async fn serve(
    session: Arc<Session>,
    request: EngineRequest,
) -> Result<Response<ReplyStream>, DropConnection> {
    let reply = session.handle_async(request).await;
    send(reply).await
}

/// Sends an engine's reply: after its delay, as JSON, raw text, events, or a dropped
/// connection.
pub(crate) async fn send(reply: EngineReply) -> Result<Response<ReplyStream>, DropConnection> {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let (content_type, body) = match reply.body {
        ReplyBody::Drop => return Err(DropConnection),
        ReplyBody::Json(bytes) => ("application/json", ReplyStream::full(bytes)),
        ReplyBody::Raw { content_type, text } => (content_type, ReplyStream::full(text)),
        ReplyBody::Stream {
            events, progress, ..
        } => (
            "text/event-stream; charset=utf-8",
            ReplyStream::events(progress, events),
        ),
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.reserve(reply.headers.len() + 1);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    for (name, value) in reply.headers {
        let value = match value {
            Cow::Borrowed(text) => Ok(HeaderValue::from_static(text)),
            Cow::Owned(text) => HeaderValue::try_from(text),
        };
        if let Ok(value) = value {
            headers.insert(header_name(name), value);
        }
    }
    Ok(response)
}

/// The name of a header the engine sends: its usual ones are built once (`from_static`
/// checks each byte of a name, on every reply).
fn header_name(name: &'static str) -> HeaderName {
    static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
    static OPENAI_VERSION: HeaderName = HeaderName::from_static("openai-version");
    static PROCESSING_MS: HeaderName = HeaderName::from_static("openai-processing-ms");
    match name {
        "x-request-id" => X_REQUEST_ID.clone(),
        "openai-version" => OPENAI_VERSION.clone(),
        "openai-processing-ms" => PROCESSING_MS.clone(),
        other => HeaderName::from_static(other),
    }
}

/// A response body: a whole body at once, events as the engine planned their delivery,
/// or chunks as a task writes them. An `Err` frame aborts the connection mid-body (a cut
/// stream).
pub(crate) struct ReplyStream {
    inner: Inner,
}

enum Inner {
    /// A whole body, not yet taken.
    Full(Option<Bytes>),
    /// A stream's events, written as hyper asks for them.
    Events(Box<EventWriter>),
    /// Chunks a task sends.
    Channel(mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>),
}

/// The writing end of a [`ReplyStream`].
pub(crate) type ChunkSender = mpsc::Sender<Result<Frame<Bytes>, std::io::Error>>;

impl ReplyStream {
    pub(crate) fn full(text: impl Into<Bytes>) -> Self {
        Self {
            inner: Inner::Full(Some(text.into())),
        }
    }

    /// A body whose chunks a task sends as they come.
    pub(crate) fn channel() -> (ChunkSender, Self) {
        let (sender, receiver) = mpsc::channel(16);
        let inner = Inner::Channel(receiver);
        (sender, Self { inner })
    }

    fn events(progress: StreamProgress, frames: StreamFrames) -> Self {
        Self {
            inner: Inner::Events(Box::new(EventWriter {
                frames,
                progress,
                next: 0,
                offset: 0,
                waited: false,
                sleep: None,
                state: WriterState::Writing,
            })),
        }
    }
}

impl Body for ReplyStream {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match &mut self.inner {
            Inner::Full(body) => Poll::Ready(body.take().map(|bytes| Ok(Frame::data(bytes)))),
            Inner::Events(writer) => writer.poll_frame(cx),
            Inner::Channel(receiver) => receiver.poll_recv(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(body) => SizeHint::with_exact(body.as_ref().map_or(0, |b| b.len() as u64)),
            _ => SizeHint::default(),
        }
    }
}

/// Writes a stream's events in the body's own polls (no task, no channel): every event
/// up to the next scripted pause goes out as one frame, or in `chunk_bytes` pieces; a cut
/// stream breaks off after its last event. Each event is reported to the progress handle
/// as it is handed to hyper, and the end once, however the stream ends.
struct EventWriter {
    frames: StreamFrames,
    progress: StreamProgress,
    /// The next event to write.
    next: usize,
    /// How much of event `next` is written (chunked delivery).
    offset: usize,
    /// Whether the pause before event `next` is over.
    waited: bool,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    state: WriterState,
}

#[derive(PartialEq)]
enum WriterState {
    Writing,
    /// Every event before the cut is written; breaking off once hyper had time to flush.
    Breaking,
    Ended,
}

impl EventWriter {
    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        loop {
            if let Some(sleep) = &mut self.sleep {
                std::task::ready!(sleep.as_mut().poll(cx));
                self.sleep = None;
            }
            match self.state {
                WriterState::Ended => return Poll::Ready(None),
                WriterState::Breaking => {
                    self.end();
                    let cut = std::io::Error::other("stream cut on purpose");
                    return Poll::Ready(Some(Err(cut)));
                }
                WriterState::Writing => {}
            }
            let limit = self.frames.written();
            if self.next >= limit {
                if self.frames.cut_after.is_some() {
                    // hyper drops whatever it has not written yet when the body fails, so
                    // it gets time to flush the last events before the connection breaks.
                    self.state = WriterState::Breaking;
                    self.wait(Duration::from_millis(20));
                    continue;
                }
                self.end();
                return Poll::Ready(None);
            }
            let pause = self.frames.pause(self.next);
            if self.offset == 0 && !self.waited && !pause.is_zero() {
                self.waited = true;
                self.wait(pause);
                continue;
            }
            let data = match self.frames.chunk_bytes {
                None => {
                    // Every event up to the next pause, as one frame.
                    let mut end = self.next + 1;
                    while end < limit && self.frames.pause(end).is_zero() {
                        end += 1;
                    }
                    let data = self.frames.frames(self.next, end);
                    if end == limit && self.frames.cut_after.is_none() {
                        // The last events: the stream ends with them.
                        self.progress.last_events_sent(self.next..end, &self.frames);
                        self.next = end;
                        self.state = WriterState::Ended;
                    } else {
                        self.events_written(end);
                    }
                    data
                }
                Some(size) => {
                    let frame = self.frames.frame(self.next);
                    let end = (self.offset + size.max(1)).min(frame.len());
                    let data = frame.slice(self.offset..end);
                    self.offset = end;
                    if end == frame.len() {
                        self.events_written(self.next + 1);
                    }
                    data
                }
            };
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
    }

    fn wait(&mut self, pause: Duration) {
        self.sleep = Some(Box::pin(tokio::time::sleep(pause)));
    }

    /// Every event before `end` is handed to hyper.
    fn events_written(&mut self, end: usize) {
        self.progress.events_sent(self.next..end, &self.frames);
        self.next = end;
        self.offset = 0;
        self.waited = false;
    }

    fn end(&mut self) {
        if self.state != WriterState::Ended {
            self.state = WriterState::Ended;
            self.progress.ended();
        }
    }
}

impl Drop for EventWriter {
    /// A client that went away ends the stream where it was.
    fn drop(&mut self) {
        self.end();
    }
}
