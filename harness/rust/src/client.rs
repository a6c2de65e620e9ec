//! The Responses API over HTTP: model requests (JSON or streamed), background polls and
//! conversations, every request retried like the official SDKs do.

use std::time::{Duration, Instant};

use reqwest::RequestBuilder;
use serde_json::{Value, json};

use crate::{Outcome, retry, sse};

/// How often a background response is polled (the fake answers each poll at once), and
/// for how long at most.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
const POLL_LIMIT: Duration = Duration::from_secs(60);

pub(crate) struct ResponsesClient {
    http: reqwest::Client,
    /// `OPENAI_BASE_URL` without a trailing slash.
    base: String,
    api_key: String,
}

impl ResponsesClient {
    pub(crate) fn new(http: reqwest::Client, base_url: &str, api_key: &str) -> Self {
        ResponsesClient {
            http,
            base: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
        }
    }

    /// `POST /responses`: one model request. With `"stream": true` in `body` the answer is
    /// read as events up to the terminal one, whose response is returned.
    pub(crate) async fn create(&self, body: &Value) -> Result<Value, Outcome> {
        let url = format!("{}/responses", self.base);
        let answer = self.send(|| self.http.post(&url).json(body)).await?;
        if body["stream"] == true {
            sse::read_response(answer).await
        } else {
            read_json(answer).await
        }
    }

    /// `POST /responses/compact`: the compacted response.
    pub(crate) async fn compact(&self, body: &Value) -> Result<Value, Outcome> {
        let url = format!("{}/responses/compact", self.base);
        read_json(self.send(|| self.http.post(&url).json(body)).await?).await
    }

    /// Polls `GET /responses/{id}` until a background response leaves `queued` and
    /// `in_progress`; any other response is returned as it is.
    pub(crate) async fn wait(&self, mut response: Value) -> Result<Value, Outcome> {
        let deadline = Instant::now() + POLL_LIMIT;
        while matches!(response["status"].as_str(), Some("queued" | "in_progress")) {
            if Instant::now() >= deadline {
                return Err(Outcome::failed(
                    "timeout",
                    format!("background response still pending after {POLL_LIMIT:?}"),
                ));
            }
            let id = response["id"]
                .as_str()
                .ok_or_else(|| Outcome::failed("api_error", "response has no id"))?;
            let url = format!("{}/responses/{id}", self.base);
            tokio::time::sleep(POLL_INTERVAL).await;
            response = read_json(self.send(|| self.http.get(&url)).await?).await?;
        }
        Ok(response)
    }

    /// `POST /conversations` with an empty body: the id of a new conversation.
    pub(crate) async fn create_conversation(&self) -> Result<String, Outcome> {
        let url = format!("{}/conversations", self.base);
        let conversation =
            read_json(self.send(|| self.http.post(&url).json(&json!({}))).await?).await?;
        match conversation["id"].as_str() {
            Some(id) => Ok(id.to_string()),
            None => Err(Outcome::failed("api_error", "conversation has no id")),
        }
    }

    /// Sends `request` until it gets a 2xx answer, resending the identical request after a
    /// connection error or a retryable status, at most `retry::MAX_RETRIES` times.
    async fn send(
        &self,
        request: impl Fn() -> RequestBuilder,
    ) -> Result<reqwest::Response, Outcome> {
        let mut retries = 0;
        loop {
            let sent = request()
                .bearer_auth(&self.api_key)
                .header("x-stainless-retry-count", retries)
                .send()
                .await;
            let (detail, delay) = match sent {
                Ok(answer) if answer.status().is_success() => return Ok(answer),
                Ok(answer) => {
                    let status = answer.status();
                    let delay = retry::should_retry(status, answer.headers())
                        .then(|| retry::delay(answer.headers(), retries));
                    let body = answer.text().await.unwrap_or_default();
                    let detail = format!("HTTP {}: {}", status.as_u16(), error_message(&body));
                    (detail, delay)
                }
                // A request that could not even be built would fail the same way again.
                Err(e) => (
                    describe(&e),
                    (!e.is_builder()).then(|| retry::backoff(retries)),
                ),
            };
            match delay {
                Some(delay) if retries < retry::MAX_RETRIES => {
                    eprintln!("{detail}; retrying in {delay:?}");
                    tokio::time::sleep(delay).await;
                    retries += 1;
                }
                _ => return Err(Outcome::failed("api_error", detail)),
            }
        }
    }
}

async fn read_json(answer: reqwest::Response) -> Result<Value, Outcome> {
    answer.json().await.map_err(|e| {
        Outcome::failed(
            "api_error",
            format!("reading the JSON answer: {}", describe(&e)),
        )
    })
}

/// The `error.message` of an API error body, or the body itself when it is not one.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    match parsed.as_ref().and_then(|v| v["error"]["message"].as_str()) {
        Some(message) => message.to_string(),
        None => body.chars().take(500).collect(),
    }
}

/// A reqwest error with its causes; the top-level message alone rarely says what failed.
pub(crate) fn describe(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_unwraps_the_api_envelope() {
        let body = r#"{"error":{"message":"Previous response with id 'resp_x' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}"#;
        assert_eq!(
            error_message(body),
            "Previous response with id 'resp_x' not found."
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
    }

    #[test]
    fn url_joins_without_double_slash() {
        let client = ResponsesClient::new(reqwest::Client::new(), "http://127.0.0.1:1/v1/", "k");
        assert_eq!(client.base, "http://127.0.0.1:1/v1");
    }
}
