//! The one HTTP client of the tests: requests to a server under test, with its API key as
//! a bearer token, and each answer read whole (status, headers, text).

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// A client that reaches the local servers under test directly, whatever proxy the
/// environment names.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// A whole answer.
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Reply {
    /// Reads `response` to its end.
    pub async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("a whole body");
        Self {
            status,
            headers,
            text,
        }
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// One header's value, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `content-type` header, or "".
    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or_default()
    }
}

/// Requests to one server: its base URL and the bearer key sent with every request
/// (none when `key` is `None`).
#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    base_url: String,
    key: Option<String>,
}

impl Api {
    pub fn new(base_url: &str, key: Option<&str>) -> Self {
        Self {
            client: client(),
            base_url: base_url.to_owned(),
            key: key.map(str::to_owned),
        }
    }

    /// A request to `path` (below the base URL), with the key.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let request = self
            .client
            .request(method, format!("{}{path}", self.base_url));
        match &self.key {
            Some(key) => request.header("authorization", format!("Bearer {key}")),
            None => request,
        }
    }

    /// A POST of `body` as it is, labelled JSON (it may be broken JSON on purpose).
    pub fn post_text(&self, path: &str, body: String) -> reqwest::RequestBuilder {
        self.request(Method::POST, path)
            .header("content-type", "application/json")
            .body(body)
    }

    /// A POST of `body` as JSON.
    pub fn post_json(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.post_text(path, body.to_string())
    }

    /// Sends `request` and reads the whole answer.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        Reply::read(request.send().await.expect("the server answers")).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(self.request(Method::GET, path)).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.send(self.post_json(path, body)).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(self.request(Method::DELETE, path)).await
    }
}
