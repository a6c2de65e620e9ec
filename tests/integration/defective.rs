//! A small in-process controller for the family tests: a correct tool loop that can be
//! given exactly one defect, so that each test proves one check catches one mistake.

use loopcheck::runner::ControllerEnv;
use serde_json::{Value, json};

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
        if self.defect != Defect::NoValidation {
            let Some(tool) = self.tool(name) else {
                return json!({"error": format!("unknown tool {name}")}).to_string();
            };
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
                return json!({"error": "approval denied"}).to_string();
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

/// Runs the task with one defect and returns the result object.
pub async fn run(env: ControllerEnv, task: Value, defect: Defect) -> Value {
    let http = reqwest::Client::new();
    let tools = Tools {
        http: &http,
        env: &env,
        task: &task,
        defect,
    };
    let stateless = task["state"] == "stateless";
    let max_rounds = if defect == Defect::NoBudget {
        50
    } else {
        task["max_rounds"].as_u64().unwrap_or(6)
    };
    let mut history: Vec<Value> = match &task["input"] {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        other => other.as_array().cloned().unwrap_or_default(),
    };
    let mut new_items: Vec<Value> = Vec::new();
    let mut previous: Option<String> = None;
    let mut first_response: Option<String> = None;
    let mut first_text: Option<String> = None;
    let mut answered: Option<String> = None;
    for round in 1..=max_rounds {
        let mut body = json!({"model": task["model"], "tools": task["tools"]});
        if round == 1 || defect != Defect::InstructionsOnce {
            body["instructions"] = task["instructions"].clone();
        }
        if stateless {
            body["store"] = json!(defect == Defect::StoreInStateless);
            body["include"] = json!(["reasoning.encrypted_content"]);
            body["input"] = json!(history);
        } else if let Some(previous) = &previous {
            let chained_to = if defect == Defect::StalePreviousResponseId {
                first_response.clone().unwrap_or_default()
            } else {
                previous.clone()
            };
            body["previous_response_id"] = json!(chained_to);
            body["input"] = if defect == Defect::ResendHistory {
                json!(history)
            } else {
                json!(new_items)
            };
        } else {
            body["input"] = json!(history);
        }
        let response = http
            .post(format!("{}/responses", env.base_url))
            .bearer_auth(&env.api_key)
            .json(&body)
            .send()
            .await;
        let Ok(response) = response else {
            return failed("api_error", "request failed");
        };
        let status = response.status();
        let response: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            if let Some(text) = answered {
                return json!({"status": "completed", "output_text": text});
            }
            return failed(
                "api_error",
                response["error"]["message"].as_str().unwrap_or_default(),
            );
        }
        let output = response["output"].as_array().cloned().unwrap_or_default();
        let text = message_text(&output);
        first_text.get_or_insert(text.clone());
        first_response.get_or_insert(response["id"].as_str().unwrap_or_default().to_owned());
        previous = response["id"].as_str().map(str::to_owned);
        match response["status"].as_str() {
            Some("completed") => {}
            Some("incomplete") if defect == Defect::IncompleteAsAnswer => {
                return json!({"status": "completed", "output_text": text});
            }
            Some("incomplete") => return failed("incomplete", ""),
            _ => return failed("response_failed", ""),
        }
        let mut calls: Vec<Value> = output
            .iter()
            .filter(|i| i["type"] == "function_call")
            .cloned()
            .collect();
        if calls.is_empty() || (defect == Defect::MessageBesideCallsAsAnswer && !text.is_empty()) {
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
        let outputs: Vec<Value> = calls
            .iter()
            .zip(results)
            .map(|(call, output)| {
                let id = if defect == Defect::ItemIdAsCallId {
                    &call["id"]
                } else {
                    &call["call_id"]
                };
                json!({"type": "function_call_output", "call_id": id, "output": output})
            })
            .collect();
        for item in &output {
            let mut item = item.clone();
            if item["type"] == "reasoning" {
                match defect {
                    Defect::DropReasoning | Defect::StripIdsAndDropReasoning => continue,
                    Defect::ReasoningWithStatus => item["status"] = json!("completed"),
                    Defect::AlterEncryptedContent => {
                        let content = item["encrypted_content"].as_str().unwrap_or_default();
                        item["encrypted_content"] =
                            json!(format!("{}A", &content[..content.len().saturating_sub(1)]));
                    }
                    _ => {}
                }
            }
            if item["type"] == "function_call"
                && defect == Defect::StripIdsAndDropReasoning
                && let Some(object) = item.as_object_mut()
            {
                object.remove("id");
            }
            history.push(item);
        }
        history.extend(outputs.iter().cloned());
        new_items = outputs;
    }
    failed("max_rounds", "")
}
