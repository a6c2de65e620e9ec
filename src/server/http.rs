//! Serving a session over HTTP/1.1 on 127.0.0.1 with hyper, one free port per case.
//! hyper directly (not a framework) because a fault must be able to close a connection
//! without any answer, and a stream must go out event by event and break off midway.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use super::engine::{EngineReply, EngineRequest, ReplyBody, Session};
use super::recorder::StreamProgress;
use super::stream::{PlannedStream, frame};

/// Request bodies above this are refused.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A running server; dropping it (or calling [`RunningServer::shutdown`]) stops it and
/// every connection it holds.
pub struct RunningServer {
    addr: SocketAddr,
    task: Option<JoinHandle<()>>,
}

/// What answers each request of a server: a future of a response, or of a dropped
/// connection.
pub(crate) type Handler = Arc<
    dyn Fn(Request<Incoming>) -> BoxFuture<'static, Result<Response<ReplyStream>, DropConnection>>
        + Send
        + Sync,
>;

pub(crate) type BoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

impl RunningServer {
    /// Binds 127.0.0.1 on a free port and serves `session`.
    pub async fn start(session: Arc<Session>) -> std::io::Result<Self> {
        Self::serve(Arc::new(move |request| {
            Box::pin(serve(session.clone(), request))
        }))
        .await
    }

    /// Binds 127.0.0.1 on a free port and answers every request with `handler`.
    pub(crate) async fn serve(handler: Handler) -> std::io::Result<Self> {
        Self::serve_on(0, handler).await
    }

    /// Binds 127.0.0.1 on `port` (0: a free one) and answers every request with
    /// `handler`.
    pub(crate) async fn serve_on(port: u16, handler: Handler) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(accept_loop(listener, handler));
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

async fn accept_loop(listener: TcpListener, handler: Handler) {
    // Connections live in the set, so aborting this task closes them all.
    let mut connections = JoinSet::new();
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        // Without TCP_NODELAY a keep-alive client stalls ~40 ms per request (Nagle plus
        // delayed ACK).
        let _ = tcp.set_nodelay(true);
        let handler = handler.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| handler(request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
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

/// Reads a whole request into the engine's transport-neutral form.
pub(crate) async fn read_request(request: Request<Incoming>) -> EngineRequest {
    let (parts, body) = request.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    EngineRequest {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    }
}

async fn serve(
    session: Arc<Session>,
    request: Request<Incoming>,
) -> Result<Response<ReplyStream>, DropConnection> {
    let reply = session.handle(read_request(request).await);
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
        ReplyBody::Json(value) => ("application/json", ReplyStream::full(value.to_string())),
        ReplyBody::Raw { content_type, text } => (content_type, ReplyStream::full(text)),
        ReplyBody::Stream { events, progress } => (
            "text/event-stream; charset=utf-8",
            ReplyStream::events(progress, events),
        ),
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        content_type.parse().expect("a valid header value"),
    );
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::try_from(name),
            hyper::header::HeaderValue::try_from(value),
        ) {
            headers.insert(name, value);
        }
    }
    Ok(response)
}

/// A response body fed through a channel: a whole body at once, or chunks as a task
/// writes them. An `Err` item aborts the connection mid-body (a cut stream).
pub(crate) struct ReplyStream {
    receiver: mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>,
}

/// The writing end of a [`ReplyStream`].
pub(crate) type ChunkSender = mpsc::Sender<Result<Frame<Bytes>, std::io::Error>>;

impl ReplyStream {
    pub(crate) fn full(text: impl Into<Bytes>) -> Self {
        let (sender, receiver) = mpsc::channel(1);
        let _ = sender.try_send(Ok(Frame::data(text.into())));
        Self { receiver }
    }

    /// A body whose chunks a task sends as they come.
    pub(crate) fn channel() -> (ChunkSender, Self) {
        let (sender, receiver) = mpsc::channel(16);
        (sender, Self { receiver })
    }

    fn events(progress: StreamProgress, planned: PlannedStream) -> Self {
        let (sender, receiver) = mpsc::channel(16);
        tokio::spawn(async move {
            let limit = planned.cut_after.unwrap_or(planned.events.len());
            for (index, event) in planned.events.iter().enumerate().take(limit) {
                let pause = planned.pause(index);
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                let bytes = Bytes::from(frame(event));
                let size = planned.chunk_bytes.unwrap_or(bytes.len()).max(1);
                for chunk in bytes.chunks(size) {
                    if sender
                        .send(Ok(Frame::data(Bytes::copy_from_slice(chunk))))
                        .await
                        .is_err()
                    {
                        progress.ended();
                        return;
                    }
                }
                progress.event_sent(index, planned.call_done.get(&index).map(String::as_str));
            }
            if planned.cut_after.is_some() {
                // hyper drops whatever it has not written yet when the body fails, so let
                // it take every queued frame and flush before breaking the connection.
                while sender.capacity() < sender.max_capacity() && !sender.is_closed() {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                let _ = sender
                    .send(Err(std::io::Error::other("stream cut on purpose")))
                    .await;
            }
            progress.ended();
        });
        Self { receiver }
    }
}

impl Body for ReplyStream {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.receiver.poll_recv(cx)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
