//! The real API's error envelope and the exact messages of the strict-emulation rules
//!.

use serde_json::{Value, json};

/// One API error: HTTP status plus the `{"error": {...}}` envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// Which emulation rule produced it (`E1`..`E13`, `parse`, `route`, `script`), for
    /// the transcript and the oracle; never sent on the wire.
    pub rule: &'static str,
    /// `error.message`.
    pub message: String,
    /// `error.type`.
    pub kind: &'static str,
    /// `error.param`.
    pub param: Option<String>,
    /// `error.code`.
    pub code: Option<&'static str>,
}

const INVALID: &str = "invalid_request_error";

impl ApiError {
    fn invalid(
        status: u16,
        rule: &'static str,
        message: String,
        param: Option<&str>,
        code: Option<&'static str>,
    ) -> Self {
        Self {
            status,
            rule,
            message,
            kind: INVALID,
            param: param.map(str::to_owned),
            code,
        }
    }

    /// The wire body.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }

    /// E1: unknown, deleted or unstored `previous_response_id`.
    pub fn previous_response_not_found(id: &str) -> Self {
        Self::invalid(
            400,
            "E1",
            format!("Previous response with id '{id}' not found."),
            Some("previous_response_id"),
            Some("previous_response_not_found"),
        )
    }

    /// E2: a call in the effective context without its output.
    pub fn no_tool_output(call_id: &str) -> Self {
        Self::invalid(
            400,
            "E2",
            format!("No tool output found for function call {call_id}."),
            Some("input"),
            None,
        )
    }

    /// E2 for a call of another kind (`custom tool call`): the same words with the
    /// kind's name, as the real API answers an unanswered custom tool call.
    pub fn no_tool_output_of(kind: &str, call_id: &str) -> Self {
        Self::invalid(
            400,
            "E2",
            format!("No tool output found for {kind} {call_id}."),
            Some("input"),
            None,
        )
    }

    /// E3 for an answer of another kind (`custom tool call output`). The API pairs an
    /// answer with calls of its own kind only, so an answer of the wrong kind (a
    /// `function_call_output` for a custom tool call) gets this error too; its exact
    /// message for that case is unknown, and this keeps the shape of its other pairing
    /// errors.
    pub fn no_tool_call_of(kind: &str, call_id: &str) -> Self {
        Self::invalid(
            400,
            "E3",
            format!("No tool call found for {kind} output with call_id {call_id}."),
            Some("input"),
            None,
        )
    }

    /// E3 for an `mcp_approval_response` whose `approval_request_id` names no approval
    /// request in the context. The API refuses it; its exact words are not known, and
    /// these keep the shape of its other pairing errors.
    pub fn no_approval_request(approval_request_id: &str) -> Self {
        Self::invalid(
            400,
            "E3",
            format!(
                "No approval request found for mcp_approval_response with approval_request_id {approval_request_id}."
            ),
            Some("input"),
            None,
        )
    }

    /// E3: an output whose call_id matches no call.
    pub fn no_tool_call(call_id: &str) -> Self {
        Self::invalid(
            400,
            "E3",
            format!("No tool call found for function call output with call_id {call_id}."),
            Some("input"),
            None,
        )
    }

    /// E4: a function_call replayed with its `fc_` id but without its reasoning item.
    pub fn call_without_reasoning(item_id: &str, reasoning_id: &str) -> Self {
        Self::invalid(
            400,
            "E4",
            format!(
                "Item '{item_id}' of type 'function_call' was provided without its required 'reasoning' item: '{reasoning_id}'."
            ),
            Some("input"),
            None,
        )
    }

    /// E5: a reasoning item not followed by the item it produced.
    pub fn reasoning_without_follower(reasoning_id: &str) -> Self {
        Self::invalid(
            400,
            "E5",
            format!(
                "Item '{reasoning_id}' of type 'reasoning' was provided without its required following item."
            ),
            Some("input"),
            None,
        )
    }

    /// E6: the same item id twice in `input`.
    pub fn duplicate_item(id: &str) -> Self {
        Self::invalid(
            400,
            "E6",
            format!(
                "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
            ),
            Some("input"),
            None,
        )
    }

    /// A second `function_call_output` for one call_id in the effective context.
    pub fn duplicate_output(call_id: &str) -> Self {
        Self::invalid(
            400,
            "duplicate-output",
            format!(
                "Duplicate function_call_output for call_id '{call_id}'. Each function_call must have exactly one matching function_call_output"
            ),
            Some("input"),
            None,
        )
    }

    /// E7: an item id that was never stored.
    pub fn item_not_found(id: &str) -> Self {
        Self::invalid(
            404,
            "E7",
            format!(
                "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
            ),
            None,
            None,
        )
    }

    /// E8: tampered or foreign `encrypted_content`, of a reasoning item or of a
    /// compaction item (for an altered or unknown compaction item the real message is not
    /// known: it keeps this one's shape).
    pub fn invalid_encrypted_content(content: &str) -> Self {
        Self::invalid(
            400,
            "E8",
            format!(
                "The encrypted content {} could not be verified. Reason: Encrypted content could not be decrypted or parsed.",
                abbreviate(content)
            ),
            None,
            Some("invalid_encrypted_content"),
        )
    }

    /// E9: unknown model.
    pub fn model_not_found(model: &str) -> Self {
        Self::invalid(
            400,
            "E9",
            format!("The requested model '{model}' does not exist."),
            Some("model"),
            Some("model_not_found"),
        )
    }

    /// E10: `model` missing.
    pub fn missing_model() -> Self {
        Self::missing_parameter("E10", "model")
    }

    /// A required parameter missing, by `rule`: the API's one wording for any of them.
    fn missing_parameter(rule: &'static str, param: &str) -> Self {
        Self::invalid(
            400,
            rule,
            format!("Missing required parameter: '{param}'."),
            Some(param),
            Some("missing_required_parameter"),
        )
    }

    /// E11: a key that is not the session's.
    pub fn invalid_api_key(key: &str) -> Self {
        Self::invalid(
            401,
            "E11",
            format!(
                "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
                mask_key(key)
            ),
            None,
            Some("invalid_api_key"),
        )
    }

    /// E12: no key at all.
    pub fn missing_api_key() -> Self {
        Self::invalid(
            401,
            "E12",
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.".to_owned(),
            None,
            None,
        )
    }

    /// E13: an output-only field in input (`param` is e.g. `input[3].status`).
    pub fn unknown_parameter(param: &str) -> Self {
        Self::invalid(
            400,
            "E13",
            format!("Unknown parameter: '{param}'."),
            Some(param),
            Some("unknown_parameter"),
        )
    }

    /// A `function_call_output` whose `output` is neither a string nor content parts
    /// (message inferred from the API's other type errors).
    pub fn output_type(index: usize, output: Option<&serde_json::Value>) -> Self {
        let param = format!("input[{index}].output");
        let got = match output {
            None | Some(serde_json::Value::Null) => "null",
            Some(serde_json::Value::Object(_)) => "an object",
            Some(serde_json::Value::Bool(_)) => "a boolean",
            Some(serde_json::Value::Number(_)) => "a number",
            Some(_) => "another type",
        };
        Self::invalid(
            400,
            "output-type",
            format!(
                "Invalid type for '{param}': expected one of a string or an array of input content items, but got {got} instead."
            ),
            Some(&param),
            Some("invalid_type"),
        )
    }

    /// A `computer_call_output` whose `output` is not a `computer_screenshot` object (the
    /// SDK's `ResponseComputerToolCallOutputScreenshotParam`; message inferred from the
    /// API's other type errors).
    pub fn screenshot_type(index: usize, output: Option<&serde_json::Value>) -> Self {
        let param = format!("input[{index}].output");
        let got = match output {
            None | Some(serde_json::Value::Null) => "null",
            Some(serde_json::Value::String(_)) => "a string",
            Some(serde_json::Value::Array(_)) => "an array",
            Some(serde_json::Value::Object(_)) => "an object of another type",
            Some(_) => "another type",
        };
        Self::invalid(
            400,
            "output-type",
            format!(
                "Invalid type for '{param}': expected an object of type 'computer_screenshot', but got {got} instead."
            ),
            Some(&param),
            Some("invalid_type"),
        )
    }

    /// A `tool_search_output` whose `tools` is not a list of tool definitions (the SDK's
    /// `ResponseToolSearchOutputItemParamParam.tools`, required; message inferred from
    /// the API's other type errors).
    pub fn tools_type(index: usize, tools: Option<&serde_json::Value>) -> Self {
        let param = format!("input[{index}].tools");
        let got = match tools {
            None => {
                return Self::invalid(
                    400,
                    "missing-tools",
                    format!("Missing required parameter: '{param}'."),
                    Some(&param),
                    Some("missing_required_parameter"),
                );
            }
            Some(serde_json::Value::Null) => "null",
            Some(serde_json::Value::String(_)) => "a string",
            Some(serde_json::Value::Object(_)) => "an object",
            Some(_) => "another type",
        };
        Self::invalid(
            400,
            "tools-type",
            format!(
                "Invalid type for '{param}': expected an array of tools, but got {got} instead."
            ),
            Some(&param),
            Some("invalid_type"),
        )
    }

    /// A content part without its `type` (`param` is e.g. `input[0].content[1].type`), in
    /// a message's `content` or a `function_call_output`'s `output`.
    pub fn missing_part_type(param: &str) -> Self {
        Self::missing_parameter("part-type", param)
    }

    /// An input item id with the wrong prefix for its type.
    pub fn invalid_item_id(index: usize, id: &str, prefix: &str) -> Self {
        let param = format!("input[{index}].id");
        Self::invalid(
            400,
            "id-prefix",
            format!("Invalid '{param}': '{id}'. Expected an ID that begins with '{prefix}'."),
            Some(&param),
            Some("invalid_value"),
        )
    }

    /// A body that is not JSON.
    pub fn unparsable_body() -> Self {
        Self::invalid(
            400,
            "parse",
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)".to_owned(),
            None,
            None,
        )
    }

    /// A JSON body of the wrong type or shape (`param` names the offending field).
    pub fn invalid_type(param: &str, expected: &str) -> Self {
        Self::invalid(
            400,
            "shape",
            format!("Invalid type for '{param}': expected {expected}."),
            Some(param),
            Some("invalid_type"),
        )
    }

    /// A request body over the server's limit.
    pub fn body_too_large(limit: usize) -> Self {
        Self::invalid(
            413,
            "transport",
            format!(
                "The request body is too large: this server accepts at most {} bytes.",
                limit
            ),
            None,
            None,
        )
    }

    /// The server holds as many request bytes as it will; the client may retry.
    pub fn overloaded() -> Self {
        Self {
            status: 503,
            rule: "transport",
            message: "The server is overloaded or not ready yet.".to_owned(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }

    /// An unknown route.
    pub fn invalid_url(method: &str, path: &str) -> Self {
        Self::invalid(
            404,
            "route",
            format!("Invalid URL ({method} {path})"),
            None,
            None,
        )
    }

    /// `GET`/`DELETE` of a response that is not stored.
    pub fn response_not_found(id: &str) -> Self {
        Self::invalid(
            404,
            "not-found",
            format!("Response with id '{id}' not found."),
            None,
            None,
        )
    }

    /// `previous_response_id` together with `conversation`.
    pub fn mutually_exclusive(a: &str, b: &str) -> Self {
        Self::invalid(
            400,
            "exclusive",
            format!(
                "Mutually exclusive parameters: Ensure you are only providing one of: '{a}' or '{b}'."
            ),
            Some(b),
            Some("mutually_exclusive_parameters"),
        )
    }

    /// An unknown conversation id (message inferred from the API's other not-found errors).
    pub fn conversation_not_found(id: &str) -> Self {
        Self::invalid(
            404,
            "not-found",
            format!("Conversation with id '{id}' not found."),
            None,
            None,
        )
    }

    /// `background: true` with `store: false`.
    pub fn background_requires_store() -> Self {
        Self::invalid(
            400,
            "background",
            "Background mode requires `store` to be true.".to_owned(),
            Some("background"),
            Some("invalid_value"),
        )
    }

    /// Cancelling a response that was not created in the background.
    pub fn cancel_not_background() -> Self {
        Self::invalid(
            400,
            "cancel",
            "Only responses created with the `background` parameter set to `true` can be cancelled.".to_owned(),
            None,
            None,
        )
    }

    /// A program-owned call's output without the call's `caller` (message inferred).
    pub fn caller_mismatch(index: usize, call_id: &str) -> Self {
        let param = format!("input[{index}].caller");
        Self::invalid(
            400,
            "caller",
            format!(
                "Invalid '{param}': the output for function call {call_id} must carry the same caller as the call."
            ),
            Some(&param),
            Some("invalid_value"),
        )
    }

    /// A program-owned call or output replayed without its program item (message inferred).
    pub fn program_missing(caller_id: &str) -> Self {
        Self::invalid(
            400,
            "program",
            format!(
                "No program item found for caller_id {caller_id}. Include the program item when replaying its calls."
            ),
            Some("input"),
            None,
        )
    }

    /// A replayed program item whose code or fingerprint was altered (message inferred).
    pub fn program_altered(id: &str) -> Self {
        Self::invalid(
            400,
            "program",
            format!("The fingerprint of program item '{id}' could not be verified."),
            Some("input"),
            Some("invalid_program_fingerprint"),
        )
    }

    /// A scripted transport fault's JSON body for `status` (E14 for 429, E16 for 5xx).
    pub fn for_status(status: u16, request_id: &str) -> Self {
        match status {
            429 => Self {
                status,
                rule: "fault",
                message: "Rate limit reached for gpt-5 in organization org-loopcheck on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms. Visit https://platform.openai.com/account/rate-limits to learn more.".to_owned(),
                kind: "tokens",
                param: None,
                code: Some("rate_limit_exceeded"),
            },
            400 => Self::invalid(
                400,
                "fault",
                "Your input exceeds the context window of this model. Please adjust your input and try again.".to_owned(),
                Some("input"),
                Some("context_length_exceeded"),
            ),
            s if s >= 500 => Self {
                status,
                rule: "fault",
                message: format!("An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists. Please include the request ID {request_id} in your message."),
                kind: "server_error",
                param: None,
                code: Some("server_error"),
            },
            _ => Self::invalid(status, "fault", format!("The request failed with status {status}."), None, None),
        }
    }

    /// A second `response.create` on a WebSocket connection (or lane) while its last
    /// response is still streaming. Neither SDK's types nor the API's guide name a code
    /// for it, so it is a plain `invalid_request_error` without one.
    pub fn response_in_flight() -> Self {
        Self::invalid(
            400,
            "socket",
            "A response is already in progress on this connection: wait for its terminal event before sending another response.create, or send each on its own stream_id.".to_owned(),
            None,
            None,
        )
    }

    /// A WebSocket message that is not a client event: not text, not JSON, not an
    /// object with a string `type`.
    pub fn invalid_socket_message(why: &str) -> Self {
        Self::invalid(
            400,
            "socket",
            format!("Invalid WebSocket message: {why}."),
            None,
            None,
        )
    }

    /// A client event of a type the server does not take.
    pub fn unknown_event_type(kind: &str) -> Self {
        Self::invalid(
            400,
            "socket",
            format!(
                "Unsupported client event type '{kind}': this server takes 'response.create' events."
            ),
            Some("type"),
            None,
        )
    }

    /// A WebSocket upgrade without a valid handshake (`Sec-WebSocket-Key`, version 13).
    pub fn bad_handshake() -> Self {
        Self::invalid(
            400,
            "socket",
            "A WebSocket upgrade needs a Sec-WebSocket-Key header and Sec-WebSocket-Version: 13."
                .to_owned(),
            None,
            None,
        )
    }

    /// A request beyond the end of the scenario's script.
    pub fn script_exhausted(case: &str, turns: usize, recording: bool) -> Self {
        let message = if recording {
            format!(
                "loopcheck: this request is not in the recording '{case}': all {turns} recorded model turns were already served (record again to add it)."
            )
        } else {
            format!(
                "loopcheck: the script of scenario '{case}' is exhausted: all {turns} scripted model turns were already served, so this request has no scripted answer (a correct controller stops at the final answer or at max_rounds)."
            )
        };
        Self::invalid(400, "script", message, None, Some("script_exhausted"))
    }

    /// A model request past the run's request limit: the loop has no round limit, and
    /// loopcheck stops the run.
    pub fn request_limit_passed(requests: usize, budget: usize, limit: usize) -> Self {
        let message = format!(
            "loopcheck: this is model request {requests}, past the limit of {limit} for a case whose budget is {budget} request(s) (max_rounds, or the scripted turns): the loop has no round limit, and the run is stopped."
        );
        Self::invalid(400, "script", message, None, Some("request_limit_passed"))
    }
}

/// `gAAA...DQ==`: the first and last four characters, as the real message shows.
fn abbreviate(content: &str) -> String {
    let chars: Vec<char> = content.chars().collect();
    if chars.len() <= 8 {
        return content.to_owned();
    }
    let head: String = chars[..4].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

/// `sk-proj-****MxYA`: the real API shows a prefix and the last four characters.
fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "*".repeat(chars.len());
    }
    let head: String = chars[..chars.len().saturating_sub(4).min(8)]
        .iter()
        .collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}****{tail}")
}
