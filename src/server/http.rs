//! Serving a session over HTTP on 127.0.0.1 (axum), one free port per case.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::engine::{EngineRequest, Session};

/// Request bodies above this are refused (the real API's own limit is far lower than
/// what a broken controller might stream at us).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A running server; dropping it (or calling [`RunningServer::shutdown`]) stops it.
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// Binds 127.0.0.1 on a free port and serves `session`.
    pub async fn start(session: Arc<Session>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        // Without TCP_NODELAY a keep-alive client stalls ~40 ms per request (Nagle plus
        // delayed ACK).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = Router::new().fallback(serve_request).with_state(session);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            stop: Some(stop),
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

    /// Stops accepting, ends open connections and waits for the server task.
    pub async fn shutdown(mut self) {
        self.stop_now();
        if let Some(task) = self.task.take() {
            // Graceful shutdown waits for idle keep-alive connections; do not wait for a
            // controller that left one open.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(200), task).await;
        }
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop_now();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn serve_request(State(session): State<Arc<Session>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes.to_vec(),
        Err(_) => Vec::new(),
    };
    let engine_request = EngineRequest {
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
    };
    let reply = session.handle(engine_request);
    let mut response = Response::new(Body::from(reply.body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            headers.insert(name, value);
        }
    }
    response
}
