//! `background`: background runs requested when the task says so, and read again once
//! they have ended (by polling, or when their webhook event comes) before being used; a
//! queued response is never an answer, and a webhook event that does not verify is
//! never acted on.

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;

const TERMINAL: &[&str] = &["completed", "failed", "incomplete", "cancelled"];

/// The `background` checks (background tasks only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    if !f.scenario.task.background || f.requests.is_empty() {
        return Vec::new();
    }
    let problems = f.requests_lacking(
        |body| body.get("background") == Some(&Value::Bool(true)),
        "does not send `background: true`: the task asks for background mode",
    );
    let mut out =
        vec![checks::BACKGROUND_REQUESTED.judge(problems, "every request runs in the background")];

    let mut problems = Vec::new();
    for (index, served) in f.served.iter().enumerate() {
        if served.exchange.response["status"] != "queued" {
            continue;
        }
        let polls: Vec<_> = f
            .exchanges
            .iter()
            .filter(|m| m.method == "GET" && m.seq > served.exchange.seq)
            .filter(|m| {
                m.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with(&format!("/responses/{}", served.id)))
            })
            .collect();
        let saw_terminal = polls.iter().any(|m| {
            m.response["status"]
                .as_str()
                .is_some_and(|s| TERMINAL.contains(&s))
                || m.stream.is_some()
        });
        if !saw_terminal {
            problems.push(format!(
                "{} was queued; the controller polled it {} time(s) and never saw a terminal status: a queued or in-progress response is not an answer (poll it until it ends, or retrieve it once its webhook event has come)",
                f.response_label(index),
                polls.len()
            ));
        }
    }
    out.push(checks::BACKGROUND_POLLED_TO_TERMINAL.judge(
        problems,
        "every background response was read again once it had ended",
    ));
    out.extend(webhook_verified(f));
    out
}

/// `background/webhook-verified`, once a forged event was delivered: no request names
/// the response only a forged event named (an id the server never issued, so nothing
/// but that event could have told the controller of it).
fn webhook_verified(f: &Facts) -> Option<CheckResult> {
    let forged: Vec<_> = f.webhooks.iter().filter(|d| d.forged).collect();
    if forged.is_empty() {
        return None;
    }
    let mut problems = Vec::new();
    for event in forged {
        let named = |m: &&crate::transcript::ModelExchange| {
            m.path.contains(&event.response_id)
                || m.body.get("previous_response_id").and_then(Value::as_str)
                    == Some(event.response_id.as_str())
        };
        for (index, m) in f.exchanges.iter().enumerate().filter(|(_, m)| named(m)) {
            problems.push(format!(
                "API request {} ({} {}) names {}, a response only the forged webhook event {} ({}, signed with a key the controller was never given) named: verify each event's signature (`client.webhooks.unwrap`) before acting on it",
                index + 1,
                m.method,
                m.path,
                event.response_id,
                event.event_id,
                event.event_type
            ));
        }
    }
    Some(
        checks::BACKGROUND_WEBHOOK_VERIFIED
            .judge(problems, "no request acted on the forged webhook event"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::PreviousResponseId;

    const POLLING: &str = "background/01-polling";

    /// Polls response `id` at most `limit` times, until it ends; the last snapshot.
    fn poll(run: &Run, id: &Value, limit: usize) -> Value {
        let mut response = Value::Null;
        for _ in 0..limit {
            let (status, body) = run.send(
                "GET",
                &format!("/v1/responses/{}", id.as_str().unwrap()),
                None,
            );
            assert_eq!(status, 200, "{body}");
            response = body;
            if !matches!(response["status"].as_str(), Some("queued" | "in_progress")) {
                break;
            }
        }
        response
    }

    /// Plays `case` in the background, polling each response at most `limit` times and
    /// going on from the last snapshot; `background` is what each request sends.
    fn play(case: &str, background: bool, limit: usize) -> Run {
        let run = Run::case(case, PreviousResponseId);
        let mut body = run.first_body();
        body["background"] = json!(background);
        loop {
            let mut response = run.create(&body);
            if response["status"] == "queued" {
                response = poll(&run, &response["id"], limit);
            }
            if response["status"] != "completed" || calls(&response).is_empty() {
                return run;
            }
            let outputs = run.execute(&response);
            body = run.next_body(&body, &response, &outputs);
        }
    }

    #[test]
    fn background_checks_pass_a_run_polled_until_each_response_completes() {
        let judgement = play(POLLING, true, 10).judge_completed();
        assert_all_pass(
            &judgement,
            &["background/requested", "background/polled-to-terminal"],
        );
    }

    #[test]
    fn polled_to_terminal_passes_polling_that_stops_at_a_failed_status() {
        let judgement = play("background/02-failed", true, 10).judge_failed("response_failed");
        assert_all_pass(
            &judgement,
            &["background/requested", "background/polled-to-terminal"],
        );
    }

    #[test]
    fn polled_to_terminal_passes_a_queued_response_resumed_as_a_stream() {
        let run = Run::case(POLLING, PreviousResponseId);
        let mut first = run.first_body();
        first["background"] = json!(true);
        let queued = run.create(&first);
        let path = format!(
            "/v1/responses/{}?stream=true",
            queued["id"].as_str().unwrap()
        );
        let (status, events) = run.send("GET", &path, None);
        assert_eq!(status, 200);
        let response = events.as_array().unwrap().last().unwrap()["response"].clone();
        assert_eq!(response["status"], "completed");
        let outputs = run.execute(&response);
        let second = run.next_body(&first, &response, &outputs);
        let queued = run.create(&second);
        assert_eq!(poll(&run, &queued["id"], 10)["status"], "completed");
        let judgement = run.judge_completed();
        assert_all_pass(
            &judgement,
            &["background/requested", "background/polled-to-terminal"],
        );
    }

    #[test]
    fn requested_fails_requests_without_background() {
        let judgement = play(POLLING, false, 10).judge_completed();
        assert_fails(
            &judgement,
            "background/requested",
            "request 1 does not send `background: true`: the task asks for background mode",
        );
        assert_passes(&judgement, "background/polled-to-terminal");
    }

    #[test]
    fn polled_to_terminal_fails_the_queued_snapshot_taken_as_the_answer() {
        let run = Run::case(POLLING, PreviousResponseId);
        let mut first = run.first_body();
        first["background"] = json!(true);
        let queued = run.create(&first);
        assert_eq!(queued["status"], "queued");
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_passes(&judgement, "background/requested");
        assert_fails(
            &judgement,
            "background/polled-to-terminal",
            "was queued; the controller polled it 0 time(s) and never saw a terminal status",
        );
    }

    #[test]
    fn polled_to_terminal_fails_polling_given_up_while_in_progress() {
        let judgement = play(POLLING, true, 2).judge_failed("timeout");
        assert_fails(
            &judgement,
            "background/polled-to-terminal",
            "the controller polled it 2 time(s) and never saw a terminal status",
        );
    }

    /// Registers a webhook endpoint; the endpoint object the server answers.
    fn register(run: &Run) -> Value {
        let url = json!({"url": "http://127.0.0.1:9/webhook"});
        let (status, endpoint) = run.send("POST", "/tools/webhooks", Some(&url));
        assert_eq!(status, 200, "{endpoint}");
        endpoint
    }

    /// A forged event's delivery naming `response_id`, as the server records it.
    fn forged(response_id: &str) -> crate::transcript::WebhookDelivery {
        crate::transcript::WebhookDelivery {
            seq: 99,
            at_ms: 100,
            event_id: "evt_forged".to_owned(),
            event_type: "response.completed".to_owned(),
            response_id: response_id.to_owned(),
            forged: true,
            attempt: 1,
            status: Some(400),
            error: None,
        }
    }

    #[test]
    fn a_registered_endpoint_gets_a_signing_secret_and_only_loopback_http_is_taken() {
        let run = Run::case(POLLING, PreviousResponseId);
        let endpoint = register(&run);
        assert_eq!(endpoint["object"], "webhook_endpoint");
        assert!(
            endpoint["signing_secret"]
                .as_str()
                .unwrap()
                .starts_with("whsec_")
        );
        for url in ["https://api.example.com/hook", "http://localhost:9/hook"] {
            let (status, error) = run.send("POST", "/tools/webhooks", Some(&json!({ "url": url })));
            assert_eq!(status, 400, "{url}: {error}");
            assert_eq!(error["error"]["param"], "url");
        }
    }

    #[test]
    fn with_an_endpoint_a_background_run_ends_by_time_not_by_polls() {
        let run = Run::case(POLLING, PreviousResponseId);
        register(&run);
        let mut first = run.first_body();
        first["background"] = json!(true);
        let queued = run.create(&first);
        // The script holds this turn for three polls; with an endpoint, polls change nothing.
        assert_eq!(poll(&run, &queued["id"], 5)["status"], "in_progress");
        std::thread::sleep(crate::server::WEBHOOK_RUN_TIME);
        assert_eq!(poll(&run, &queued["id"], 1)["status"], "completed");
        let judgement = run.judge(json!({"status": "failed", "reason": "api_error"}));
        assert_passes(&judgement, "background/polled-to-terminal");
    }

    #[test]
    fn webhook_verified_passes_a_controller_that_never_names_the_forged_response() {
        let judgement = play(POLLING, true, 10)
            .judge_edited(json!({"status": "completed", "output_text": "x"}), |t| {
                t.webhooks.push(forged("resp_forged"))
            });
        assert_passes(&judgement, "background/webhook-verified");
    }

    #[test]
    fn webhook_verified_fails_a_retrieve_of_the_response_a_forged_event_named() {
        let run = play(POLLING, true, 10);
        let (status, _) = run.send("GET", "/v1/responses/resp_forged", None);
        assert_eq!(status, 404);
        let judgement = run.judge_edited(json!({"status": "completed", "output_text": "x"}), |t| {
            t.webhooks.push(forged("resp_forged"))
        });
        assert_fails(
            &judgement,
            "background/webhook-verified",
            "(GET /v1/responses/resp_forged) names resp_forged, a response only the forged webhook event evt_forged",
        );
    }

    #[test]
    fn without_a_forged_delivery_webhook_verified_is_not_judged() {
        let judgement = play(POLLING, true, 10).judge_completed();
        assert_not_judged(&judgement, "background/webhook-verified");
    }

    #[test]
    fn a_foreground_task_gives_the_background_checks_nothing_to_judge() {
        let run = Run::played("correlation/01-single-call", PreviousResponseId);
        let judgement = run.judge_completed();
        assert_none_judged(
            &judgement,
            &["background/requested", "background/polled-to-terminal"],
        );
    }

    #[test]
    fn a_background_task_without_model_requests_gives_its_checks_nothing_to_judge() {
        let judgement = Run::case(POLLING, PreviousResponseId).judge_failed("api_error");
        assert_none_judged(
            &judgement,
            &["background/requested", "background/polled-to-terminal"],
        );
    }
}
