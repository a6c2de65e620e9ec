//! A small in-process controller for the family tests: a correct tool loop that can be
//! given exactly one defect, so that each test proves one check catches one mistake.

use loopcheck::runner::ControllerEnv;
use serde_json::{Value, json};

use crate::support::sse;

/// One deliberate mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// None: the control run, which must pass.
    None,
    /// Answers with the `fc_` item id instead of the call_id.
    ItemIdAsCallId,
    /// Pairs results with calls in reverse order (results keyed by position).
    ResultsReversed,
    /// Stateless replay without reasoning items, `fc_` ids kept (the API rejects it).
    DropReasoning,
    /// Stateless replay without reasoning items and without `fc_` ids (the API accepts it).
    StripIdsAndDropReasoning,
    /// Replays reasoning items with a `status` field.
    ReasoningWithStatus,
    /// Replays reasoning items with the encrypted content altered.
    AlterEncryptedContent,
    /// Dispatches calls without validating them.
    NoValidation,
    /// Never stops on the round budget.
    NoBudget,
    /// Executes the calls of the last round before stopping.
    ExecuteOnLastRound,
    /// Takes an incomplete response's text as the answer.
    IncompleteAsAnswer,
    /// Takes a message as the answer even when calls arrive beside it.
    MessageBesideCallsAsAnswer,
    /// Retries a call the backend denied.
    RetryDenied,
    /// Answers a denied call as if it had succeeded with nothing.
    SwallowDenial,
    /// Never asks for approvals.
    SkipApproval,
    /// Executes even when the approver refused.
    IgnoreApprovalRefusal,
    /// Answers only the first of several calls.
    FirstCallOnly,
    /// Chains every request to the first response.
    StalePreviousResponseId,
    /// Sends instructions on the first request only.
    InstructionsOnce,
    /// Executes every call twice.
    ExecuteTwice,
    /// Sends `store: true` in stateless mode.
    StoreInStateless,
    /// Resends the whole history along with previous_response_id.
    ResendHistory,
    /// Reports the final answer text of the wrong message (the first one ever seen).
    WrongAnswerText,
    /// Keeps going after the final answer.
    ContinueAfterAnswer,
    /// Asks the model again after an incomplete or failed response, as after any step.
    AskAgainAfterUnfinished,
    /// Executes a streamed call as soon as its first argument delta arrives.
    ExecuteOnDeltas,
    /// Takes whatever text a broken stream delivered as the answer.
    BrokenStreamAsAnswer,
    /// Never retries a failed model request.
    NoRetry,
    /// Retries client errors (400) too.
    RetryClientErrors,
    /// Retries at once, ignoring retry-after.
    IgnoreRetryAfter,
    /// Retries until it succeeds, without a bound.
    RetryForever,
    /// Re-executes the round's tools when the follow-up request fails, then retries.
    ReexecuteOnRetry,
    /// Takes a queued background response as the answer.
    QueuedAsAnswer,
    /// Drops `caller` from the outputs of program-owned calls.
    DropCaller,
    /// Stops at a program_output as though it were the answer.
    ProgramOutputAsEnd,
    /// Leaves program items out of a stateless replay.
    StripProgram,
    /// Names the conversation on the first request only, then chains responses instead.
    ConversationDropped,
}

fn failed(reason: &str, detail: &str) -> Value {
    json!({"status": "failed", "reason": reason, "detail": detail})
}

fn message_text(output: &[Value]) -> String {
    output
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

struct Tools<'a> {
    http: &'a reqwest::Client,
    env: &'a ControllerEnv,
    task: &'a Value,
    defect: Defect,
}

impl Tools<'_> {
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        match self
            .http
            .post(format!("{}{path}", self.env.tools_url))
            .json(&body)
            .send()
            .await
        {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            }
            Err(err) => (0, json!({"error": {"message": err.to_string()}})),
        }
    }

    fn tool(&self, name: &str) -> Option<&Value> {
        self.task["tools"]
            .as_array()?
            .iter()
            .find(|t| t["name"] == name)
    }

    /// The output string for one call.
    async fn handle(&self, call: &Value) -> String {
        let name = call["name"].as_str().unwrap_or_default();
        let call_id = call["call_id"].as_str().unwrap_or_default();
        let raw = call["arguments"].as_str().unwrap_or_default();
        let parsed: Option<Value> = serde_json::from_str(raw).ok().filter(Value::is_object);
        if !matches!(self.defect, Defect::NoValidation | Defect::ExecuteOnDeltas) {
            let Some(tool) = self.tool(name) else {
                return json!({"error": format!("unknown tool {name}")}).to_string();
            };
            let kind = if call["caller"]["type"] == "program" {
                "programmatic"
            } else {
                "direct"
            };
            let allowed = match tool["allowed_callers"].as_array() {
                Some(callers) => callers.iter().any(|c| c == kind),
                None => kind == "direct",
            };
            if !allowed {
                return json!({"error": "Function caller is excluded by allowed_callers."})
                    .to_string();
            }
            let Some(arguments) = &parsed else {
                return json!({"error": "arguments are not a JSON object"}).to_string();
            };
            let valid =
                jsonschema::validator_for(&tool["parameters"]).map(|v| v.is_valid(arguments));
            if !matches!(valid, Ok(true)) {
                return json!({"error": "arguments violate the schema"}).to_string();
            }
        }
        let arguments = parsed.unwrap_or_else(|| json!(raw));
        let principal = self.task["principal"].clone();
        let mut body = json!({"call_id": call_id, "arguments": arguments, "principal": principal});
        let gated = self.task["approval_required"]
            .as_array()
            .is_some_and(|a| a.iter().any(|n| n == name));
        if gated && self.defect != Defect::SkipApproval {
            let (_, decision) = self
                .post("/approvals", json!({"call_id": call_id, "name": name, "arguments": arguments, "principal": principal}))
                .await;
            if decision["approved"] == true {
                body["approval"] = decision["approval"].clone();
            } else if self.defect != Defect::IgnoreApprovalRefusal {
                // The contract's error output for a refusal carries the approver's reason.
                let reason = decision["reason"].as_str().unwrap_or("no reason given");
                return json!({"error": format!("approval denied: {reason}")}).to_string();
            }
        }
        let (mut status, mut answer) = self.post(&format!("/call/{name}"), body.clone()).await;
        if self.defect == Defect::ExecuteTwice
            || (self.defect == Defect::RetryDenied && status == 403)
        {
            (status, answer) = self.post(&format!("/call/{name}"), body).await;
        }
        match status {
            200 => answer["result"].to_string(),
            403 if self.defect == Defect::SwallowDenial => "null".to_owned(),
            _ => json!({"error": answer["error"]["message"]}).to_string(),
        }
    }
}

/// How one model request ended.
enum Answer {
    /// A response object (terminal, or queued when background polling was skipped).
    Response(Value),
    /// An error, with the text the controller saw so far (for a broken stream).
    Failed(String, String),
}

struct Model<'a> {
    http: &'a reqwest::Client,
    env: &'a ControllerEnv,
    tools: &'a Tools<'a>,
    defect: Defect,
    stream: bool,
    background: bool,
}

impl Model<'_> {
    /// Sends one request with retries, as the SDKs do unless a defect says otherwise.
    async fn request(&self, body: &Value, previous_calls: &[Value]) -> Answer {
        let max_attempts = match self.defect {
            Defect::NoRetry => 1,
            Defect::RetryForever => 20,
            _ => 3,
        };
        let mut last = Answer::Failed("api_error".into(), String::new());
        for attempt in 0..max_attempts {
            if attempt > 0 && self.defect == Defect::ReexecuteOnRetry {
                for call in previous_calls {
                    let _ = self.tools.handle(call).await;
                }
            }
            let sent = self
                .http
                .post(format!("{}/responses", self.env.base_url))
                .bearer_auth(&self.env.api_key)
                .header("x-stainless-retry-count", attempt.to_string())
                .json(body)
                .send()
                .await;
            let Ok(response) = sent else {
                last = Answer::Failed("api_error".into(), String::new());
                continue;
            };
            let status = response.status().as_u16();
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let wait_ms = header("retry-after-ms")
                .and_then(|v| v.parse::<u64>().ok())
                .or_else(|| {
                    header("retry-after")
                        .and_then(|v| v.parse::<f64>().ok())
                        .map(|s| (s * 1000.0) as u64)
                });
            if status >= 400 {
                let transient = matches!(status, 408 | 409 | 429) || status >= 500;
                last = Answer::Failed("api_error".into(), String::new());
                if !transient && self.defect != Defect::RetryClientErrors {
                    return last;
                }
                if self.defect != Defect::IgnoreRetryAfter {
                    tokio::time::sleep(std::time::Duration::from_millis(wait_ms.unwrap_or(20)))
                        .await;
                }
                continue;
            }
            let answer = if self.stream {
                self.read_stream(response).await
            } else {
                Answer::Response(response.json().await.unwrap_or(Value::Null))
            };
            return match answer {
                Answer::Response(r)
                    if self.background && !self.stream && self.defect != Defect::QueuedAsAnswer =>
                {
                    self.poll(r).await
                }
                other => other,
            };
        }
        last
    }

    async fn poll(&self, mut response: Value) -> Answer {
        for _ in 0..200 {
            if !matches!(response["status"].as_str(), Some("queued" | "in_progress")) {
                return Answer::Response(response);
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let url = format!(
                "{}/responses/{}",
                self.env.base_url,
                response["id"].as_str().unwrap_or_default()
            );
            match self
                .http
                .get(url)
                .bearer_auth(&self.env.api_key)
                .send()
                .await
            {
                Ok(answer) => response = answer.json().await.unwrap_or(Value::Null),
                Err(_) => return Answer::Failed("api_error".into(), String::new()),
            }
        }
        Answer::Failed("timeout".into(), String::new())
    }

    /// Reads events as they arrive; the terminal event's response is the answer.
    async fn read_stream(&self, mut response: reqwest::Response) -> Answer {
        let mut buffer = Vec::new();
        let mut text = String::new();
        let mut executed = std::collections::HashSet::new();
        let mut items: Vec<Value> = Vec::new();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) | Err(_) => return Answer::Failed("api_error".into(), text),
            };
            buffer.extend_from_slice(&chunk);
            while let Some(block) = sse::next_block(&mut buffer) {
                let Some(event) = sse::data_event(&block) else {
                    continue;
                };
                match event["type"].as_str().unwrap_or_default() {
                    "response.output_item.added" => items.push(event["item"].clone()),
                    "response.output_text.delta" => {
                        text.push_str(event["delta"].as_str().unwrap_or_default())
                    }
                    "response.function_call_arguments.delta"
                        if self.defect == Defect::ExecuteOnDeltas =>
                    {
                        let id = event["item_id"].clone();
                        if let Some(item) = items.iter().find(|i| i["id"] == id)
                            && executed.insert(id.to_string())
                        {
                            let mut partial = item.clone();
                            partial["arguments"] = event["delta"].clone();
                            let _ = self.tools.handle(&partial).await;
                        }
                    }
                    "response.completed" | "response.incomplete" | "response.failed" => {
                        return Answer::Response(event["response"].clone());
                    }
                    "error" => return Answer::Failed("api_error".into(), text),
                    _ => {}
                }
            }
        }
    }
}

/// Runs the task with one defect and returns the result object.
pub async fn run(env: ControllerEnv, task: Value, defect: Defect) -> Value {
    let http = crate::support::http::client();
    let tools = Tools {
        http: &http,
        env: &env,
        task: &task,
        defect,
    };
    let model = Model {
        http: &http,
        env: &env,
        tools: &tools,
        defect,
        stream: task["stream"] == true,
        background: task["background"] == true,
    };
    let state = task["state"].as_str().unwrap_or_default().to_owned();
    let max_rounds = if defect == Defect::NoBudget {
        50
    } else {
        task["max_rounds"].as_u64().unwrap_or(6)
    };
    let mut history: Vec<Value> = match &task["input"] {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        other => other.as_array().cloned().unwrap_or_default(),
    };
    let conversation = if state == "conversation" {
        let created = http
            .post(format!("{}/conversations", env.base_url))
            .bearer_auth(&env.api_key)
            .json(&json!({}))
            .send()
            .await;
        match created {
            Ok(answer) => answer.json::<Value>().await.unwrap_or(Value::Null)["id"].clone(),
            Err(_) => return failed("api_error", "conversation"),
        }
    } else {
        Value::Null
    };
    let mut new_items: Vec<Value> = history.clone();
    let mut previous: Option<String> = None;
    let mut first_response: Option<String> = None;
    let mut first_text: Option<String> = None;
    let mut answered: Option<String> = None;
    let mut last_calls: Vec<Value> = Vec::new();
    for round in 1..=max_rounds {
        let mut body = json!({"model": task["model"], "tools": task["tools"]});
        if round == 1 || defect != Defect::InstructionsOnce {
            body["instructions"] = task["instructions"].clone();
        }
        if model.stream {
            body["stream"] = json!(true);
        }
        if model.background {
            body["background"] = json!(true);
        }
        match state.as_str() {
            "stateless" => {
                body["store"] = json!(defect == Defect::StoreInStateless);
                body["include"] = json!(["reasoning.encrypted_content"]);
                body["input"] = json!(history);
            }
            "conversation" => {
                match (&previous, defect) {
                    (Some(previous), Defect::ConversationDropped) => {
                        body["previous_response_id"] = json!(previous)
                    }
                    _ => body["conversation"] = conversation.clone(),
                }
                body["input"] = json!(new_items);
            }
            _ => {
                if let Some(previous) = &previous {
                    let chained_to = if defect == Defect::StalePreviousResponseId {
                        first_response.clone().unwrap_or_default()
                    } else {
                        previous.clone()
                    };
                    body["previous_response_id"] = json!(chained_to);
                }
                body["input"] = if defect == Defect::ResendHistory {
                    json!(history)
                } else {
                    json!(new_items)
                };
            }
        }
        let response = match model.request(&body, &last_calls).await {
            Answer::Response(response) => response,
            Answer::Failed(reason, text) => {
                if let Some(text) = answered {
                    return json!({"status": "completed", "output_text": text});
                }
                if defect == Defect::BrokenStreamAsAnswer {
                    return json!({"status": "completed", "output_text": text});
                }
                return failed(&reason, "");
            }
        };
        let output = response["output"].as_array().cloned().unwrap_or_default();
        let text = message_text(&output);
        first_text.get_or_insert(text.clone());
        first_response.get_or_insert(response["id"].as_str().unwrap_or_default().to_owned());
        previous = response["id"].as_str().map(str::to_owned);
        match response["status"].as_str() {
            Some("completed") => {}
            Some("incomplete" | "failed") if defect == Defect::AskAgainAfterUnfinished => {
                new_items.clear();
                continue;
            }
            Some("queued" | "in_progress") if defect == Defect::QueuedAsAnswer => {
                return json!({"status": "completed", "output_text": text});
            }
            Some("incomplete") if defect == Defect::IncompleteAsAnswer => {
                return json!({"status": "completed", "output_text": text});
            }
            Some("incomplete") => return failed("incomplete", ""),
            _ => return failed("response_failed", ""),
        }
        // The refusal's text, reported in `detail` (`terminal/refusal-text`).
        let refused: Option<String> = output
            .iter()
            .filter_map(|i| i["content"].as_array())
            .flatten()
            .find(|p| p["type"] == "refusal")
            .map(|p| p["refusal"].as_str().unwrap_or_default().to_owned());
        let mut calls: Vec<Value> = output
            .iter()
            .filter(|i| i["type"] == "function_call")
            .cloned()
            .collect();
        let program_pause = calls.is_empty()
            && text.is_empty()
            && output.iter().any(|i| i["type"] == "program_output");
        if calls.is_empty() && !(program_pause && defect != Defect::ProgramOutputAsEnd)
            || (defect == Defect::MessageBesideCallsAsAnswer && !text.is_empty())
        {
            if let Some(refusal) = refused.filter(|_| text.is_empty()) {
                return failed("refusal", &refusal);
            }
            if defect == Defect::ContinueAfterAnswer && answered.is_none() {
                answered = Some(text);
                new_items.clear();
                continue;
            }
            let text = if defect == Defect::WrongAnswerText {
                first_text.unwrap_or_default()
            } else {
                text
            };
            return json!({"status": "completed", "output_text": text});
        }
        if round == max_rounds && defect != Defect::ExecuteOnLastRound {
            return failed("max_rounds", "");
        }
        if defect == Defect::FirstCallOnly {
            calls.truncate(1);
        }
        let mut results = Vec::new();
        for call in &calls {
            results.push(tools.handle(call).await);
        }
        if defect == Defect::ResultsReversed {
            results.reverse();
        }
        if round == max_rounds {
            return failed("max_rounds", "");
        }
        last_calls = calls.clone();
        let outputs: Vec<Value> = calls
            .iter()
            .zip(results)
            .map(|(call, output)| {
                let id = if defect == Defect::ItemIdAsCallId {
                    &call["id"]
                } else {
                    &call["call_id"]
                };
                let mut item =
                    json!({"type": "function_call_output", "call_id": id, "output": output});
                if let Some(caller) = call
                    .get("caller")
                    .filter(|c| !c.is_null() && defect != Defect::DropCaller)
                {
                    item["caller"] = caller.clone();
                }
                item
            })
            .collect();
        for item in &output {
            let mut item = item.clone();
            match (item["type"].as_str(), defect) {
                (Some("reasoning"), Defect::DropReasoning | Defect::StripIdsAndDropReasoning) => {
                    continue;
                }
                (Some("program"), Defect::StripProgram) => continue,
                (Some("reasoning"), Defect::ReasoningWithStatus) => {
                    item["status"] = json!("completed")
                }
                (Some("reasoning"), Defect::AlterEncryptedContent) => {
                    let content = item["encrypted_content"].as_str().unwrap_or_default();
                    item["encrypted_content"] =
                        json!(format!("{}A", &content[..content.len().saturating_sub(1)]));
                }
                (Some("function_call"), Defect::StripIdsAndDropReasoning) => {
                    if let Some(object) = item.as_object_mut() {
                        object.remove("id");
                    }
                }
                _ => {}
            }
            history.push(item);
        }
        history.extend(outputs.iter().cloned());
        new_items = outputs;
    }
    failed("max_rounds", "")
}
