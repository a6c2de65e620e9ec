//! Stand-ins for the real API in record tests: a wiremock `MockServer` whose answers come
//! from loopcheck's own engine for a catalogue case (so it behaves like the Responses
//! API, streams included as whole SSE bodies), optionally behind TLS with a certificate
//! authority made in the test.

use std::net::SocketAddr;
use std::sync::Arc;

use loopcheck::scenario::StateMode;
use loopcheck::server::{EngineRequest, ReplyBody, Session};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate, matchers::any};

use crate::support::case;

/// Answers every request with the engine of one session.
pub struct EngineResponder(pub Arc<Session>);

impl Respond for EngineResponder {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let reply = self.0.handle(EngineRequest {
            method: request.method.as_str().to_owned(),
            path: request.url.path().to_owned(),
            query: request.url.query().map(str::to_owned),
            headers: request
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        v.to_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect(),
            body: request.body.clone(),
        });
        let mut template = ResponseTemplate::new(reply.status);
        for (name, value) in &reply.headers {
            template = template.insert_header(name.as_str(), value.as_str());
        }
        match reply.body {
            ReplyBody::Json(bytes) => template.set_body_raw(bytes.to_vec(), "application/json"),
            ReplyBody::Raw { content_type, text } => template.set_body_raw(text, content_type),
            ReplyBody::Stream { events, progress } => {
                let written = events.written();
                for index in 0..written {
                    progress.event_sent(index, events.call_done(index));
                }
                progress.ended();
                template.set_body_raw(events.frames(0, written).to_vec(), "text/event-stream")
            }
            ReplyBody::Drop => ResponseTemplate::new(502),
        }
    }
}

/// A wiremock server answering as the fake API of catalogue case `id` in `state`, and
/// that session (its API key is what the recorded command must send).
pub async fn engine_upstream(id: &str, state: StateMode) -> (MockServer, Arc<Session>) {
    let session = Arc::new(Session::new(Arc::new(case(id).scenario), state));
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(EngineResponder(session.clone()))
        .mount(&server)
        .await;
    (server, session)
}

/// A TLS front on 127.0.0.1 that forwards each connection to `target` in plain text.
pub struct TlsFront {
    /// `https://localhost:PORT`.
    pub url: String,
    /// The certificate authority that signed its certificate (PEM).
    pub ca_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a TLS front for `target` with a certificate for `localhost` signed by a CA
/// made here.
pub async fn tls_front(target: SocketAddr) -> TlsFront {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(target).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsFront {
        url: format!("https://localhost:{port}"),
        ca_pem: ca.pem(),
        task,
    }
}
