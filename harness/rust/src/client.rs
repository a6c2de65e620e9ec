//! `POST /responses`: the model requests.

use serde_json::Value;

pub(crate) struct ResponsesClient {
    http: reqwest::Client,
    url: String,
    api_key: String,
}

impl ResponsesClient {
    pub(crate) fn new(http: reqwest::Client, base_url: &str, api_key: &str) -> Self {
        ResponsesClient {
            http,
            url: format!("{}/responses", base_url.trim_end_matches('/')),
            api_key: api_key.to_string(),
        }
    }

    /// Creates a response. Any transport failure, non-2xx answer or non-JSON body is an error.
    pub(crate) async fn create(&self, body: &Value) -> Result<Value, String> {
        let answer = self
            .http
            .post(&self.url)
            .bearer_auth(&self.api_key)
            .json(body)
            .send()
            .await
            .map_err(|e| format!("POST {}: {}", self.url, describe(&e)))?;
        let status = answer.status();
        let text = answer
            .text()
            .await
            .map_err(|e| format!("reading the response body: {}", describe(&e)))?;
        if !status.is_success() {
            return Err(format!(
                "HTTP {}: {}",
                status.as_u16(),
                error_message(&text)
            ));
        }
        serde_json::from_str(&text).map_err(|e| format!("the response body is not JSON: {e}"))
    }
}

/// The `error.message` of an API error body, or the body itself when it is not one.
fn error_message(body: &str) -> String {
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
        assert_eq!(client.url, "http://127.0.0.1:1/v1/responses");
    }
}
