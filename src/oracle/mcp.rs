//! `mcp`: MCP approval requests decided by the approver. The model asks to call a tool of
//! an `mcp` server that requires approval; the controller puts the request to the
//! fixture approver (`POST /approvals`, as for its own tools) and answers the model with
//! an `mcp_approval_response` carrying that decision. The server, never the controller,
//! then runs the tool (`hosted/not-dispatched` judges that).

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::json_compare::json_equal;
use crate::transcript::ToolExchange;
use crate::wire::call_kind::MCP_APPROVAL;
use crate::wire::request::item_type;

/// One approval request the model made.
struct Request<'v> {
    /// Index of the served response that made it.
    served: usize,
    item: &'v Value,
}

impl Request<'_> {
    fn id(&self) -> &str {
        self.item["id"].as_str().unwrap_or_default()
    }

    /// `mcpr_... (github/create_issue {"title":"x"})` for messages.
    fn describe(&self) -> String {
        format!(
            "{} ({}/{} {})",
            self.id(),
            self.item["server_label"].as_str().unwrap_or_default(),
            self.item["name"].as_str().unwrap_or_default(),
            crate::text::clip(self.item["arguments"].as_str().unwrap_or_default(), 80)
        )
    }
}

/// Every approval request the served responses made, in order.
fn requests<'v>(f: &'v Facts) -> Vec<Request<'v>> {
    f.served
        .iter()
        .enumerate()
        .flat_map(|(served, response)| {
            response
                .output
                .iter()
                .filter(|item| item_type(item) == MCP_APPROVAL.call)
                .map(move |item| Request { served, item })
        })
        .collect()
}

/// Whether `id` is the id of an MCP approval request the model made: the approver is
/// asked about it under that id, which is no call's `call_id`.
pub fn is_approval_request(f: &Facts, id: &str) -> bool {
    requests(f).iter().any(|request| request.id() == id)
}

/// The `mcp` checks, judged in runs whose responses make approval requests.
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let requests = requests(f);
    if requests.is_empty() {
        return Vec::new();
    }
    // Only requests a correct controller must answer: a response it goes on from.
    let pending: Vec<&Request> = requests
        .iter()
        .filter(|request| {
            f.served[request.served].status == "completed" && !f.may_stop_after(request.served)
        })
        .collect();
    let mut answered = Vec::new();
    let mut asked = Vec::new();
    let mut decision = Vec::new();
    for request in &pending {
        let Some((position, next)) = f.request_after(request.served) else {
            answered.push(format!(
                "the run ends after {} without answering its approval request {}: expected an mcp_approval_response in a next request",
                f.response_label(request.served),
                request.describe()
            ));
            continue;
        };
        let input = Facts::input_of(next);
        let answers: Vec<&Value> = input
            .iter()
            .filter(|item| {
                item_type(item) == MCP_APPROVAL.answer
                    && item["approval_request_id"].as_str() == Some(request.id())
            })
            .collect();
        let label = f.request_label(position);
        match answers.len() {
            1 => {}
            0 => answered.push(format!(
                "{label}: the approval request {} is never answered: expected an mcp_approval_response with approval_request_id '{}'",
                request.describe(),
                request.id()
            )),
            n => answered.push(format!(
                "{label}: the approval request {} is answered {n} times: expected one mcp_approval_response",
                request.describe()
            )),
        }
        let Some(answer) = answers.first() else {
            continue;
        };
        let approvals: Vec<_> = f
            .approvals_of(request.id())
            .into_iter()
            .filter(|approval| approval.seq < next.seq)
            .collect();
        let Some(approval) = approvals.last() else {
            asked.push(format!(
                "{label}: the approval request {} is answered with approve: {} without asking the approver",
                request.describe(),
                answer["approve"]
            ));
            continue;
        };
        asked.extend(asked_about_other(request, approval));
        let granted = approval.response["approved"] == true;
        match (granted, answer["approve"].as_bool()) {
            (true, Some(true)) => {}
            (true, _) => decision.push(format!(
                "{label}: the approver granted {}, but the mcp_approval_response carries approve: {}: expected true",
                request.describe(),
                answer["approve"]
            )),
            (false, Some(false)) => {
                let said = approval.response["reason"].as_str().unwrap_or_default();
                let reason = answer["reason"].as_str().unwrap_or_default();
                if !said.is_empty() && !reason.contains(said) {
                    decision.push(format!(
                        "{label}: the approver refused {} saying {said:?}, but the mcp_approval_response's reason is {}: expected the approver's reason",
                        request.describe(),
                        if reason.is_empty() { "missing".to_owned() } else { format!("{reason:?}") }
                    ));
                }
            }
            (false, _) => decision.push(format!(
                "{label}: the approver refused {}, but the mcp_approval_response carries approve: {}: expected false",
                request.describe(),
                answer["approve"]
            )),
        }
    }
    let count = pending.len();
    vec![
        checks::MCP_APPROVAL_ANSWERED.judge(
            answered,
            format!("{count} MCP approval request(s) each answered once in the next request"),
        ),
        checks::MCP_APPROVAL_ASKED.judge(
            asked,
            format!("{count} MCP approval request(s) each put to the approver before the answer"),
        ),
        checks::MCP_APPROVAL_DECISION.judge(
            decision,
            format!("{count} MCP approval request(s) each answered with the approver's decision"),
        ),
    ]
}

/// What the approval asked about that is not the request's own tool and arguments.
fn asked_about_other(request: &Request, approval: &ToolExchange) -> Option<String> {
    let name = request.item["name"].as_str().unwrap_or_default();
    let arguments: Option<Value> = request.item["arguments"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok());
    let same_arguments = arguments
        .as_ref()
        .is_some_and(|parsed| json_equal(parsed, &approval.arguments));
    if approval.name != name || !same_arguments {
        return Some(format!(
            "the approval asked for {} names '{}' with {}: expected the request's own tool and arguments",
            request.describe(),
            approval.name,
            approval.arguments
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::oracle::test_support::*;
    use crate::scenario::StateMode::{self, PreviousResponseId, Stateless};

    const GRANTED: &str = "mcp/01-approval-granted";
    const REFUSED: &str = "mcp/02-approval-refused";
    const TWO: &str = "mcp/03-two-approvals-one-refused";
    const CHECKS: [&str; 3] = [
        "mcp/approval-answered",
        "mcp/approval-asked",
        "mcp/approval-decision",
    ];

    /// How a controller answers an approval request: asks the approver or not, then
    /// turns the approver's answer (null when not asked) into its decision.
    type Decide = fn(&Value) -> Value;

    /// The approver's decision as a correct controller sends it.
    fn as_decided(answer: &Value) -> Value {
        if answer["approved"] == true {
            json!({"approve": true})
        } else {
            json!({"approve": false, "reason": answer["reason"]})
        }
    }

    /// Plays `case` through: each approval request put to the approver when `ask`, and
    /// answered with what `decide` makes of its answer.
    fn play(case: &str, state: StateMode, ask: bool, decide: Decide) -> Run {
        let run = Run::case(case, state);
        let first = run.first_body();
        let response = run.create(&first);
        let mut outputs = Vec::new();
        for request in response["output"].as_array().into_iter().flatten() {
            if request["type"] != "mcp_approval_request" {
                continue;
            }
            let answer = if ask {
                let arguments: Value =
                    serde_json::from_str(request["arguments"].as_str().unwrap()).unwrap();
                let body = json!({"call_id": request["id"], "name": request["name"],
                    "arguments": arguments, "server_label": request["server_label"],
                    "principal": "user-1"});
                run.send("POST", "/tools/approvals", Some(&body)).1
            } else {
                Value::Null
            };
            let mut decision =
                json!({"type": "mcp_approval_response", "approval_request_id": request["id"]});
            for (key, value) in decide(&answer).as_object().unwrap() {
                decision[key] = value.clone();
            }
            outputs.push(decision);
        }
        run.create(&run.next_body(&first, &response, &outputs));
        run
    }

    #[test]
    fn a_controller_that_asks_and_sends_the_decision_passes() {
        for case in [GRANTED, REFUSED, TWO] {
            for state in [PreviousResponseId, Stateless] {
                let judgement = play(case, state, true, as_decided).judge_completed();
                assert_all_pass(&judgement, &CHECKS);
                assert_passes(&judgement, "wire/accepted");
            }
        }
    }

    #[test]
    fn approving_without_asking_fails_asked_naming_the_request() {
        let judgement = play(
            GRANTED,
            PreviousResponseId,
            false,
            |_| json!({"approve": true}),
        )
        .judge_completed();
        assert_fails_with(
            &judgement,
            "mcp/approval-asked",
            &["github/create_issue", "without asking the approver"],
        );
    }

    #[test]
    fn a_refusal_answered_approve_true_fails_decision() {
        let judgement = play(TWO, Stateless, true, |_| json!({"approve": true})).judge_completed();
        assert_fails_with(
            &judgement,
            "mcp/approval-decision",
            &["refused", "github/close_issue", "expected false"],
        );
    }

    #[test]
    fn a_refusal_without_the_approvers_reason_fails_decision() {
        let judgement = play(
            REFUSED,
            PreviousResponseId,
            true,
            |_| json!({"approve": false}),
        )
        .judge_completed();
        assert_fails(
            &judgement,
            "mcp/approval-decision",
            "expected the approver's reason",
        );
    }

    #[test]
    fn a_run_that_stops_at_an_approval_request_fails_answered() {
        let run = Run::case(GRANTED, PreviousResponseId);
        run.create(&run.first_body());
        let judgement = run.judge(json!({"status": "completed", "output_text": ""}));
        assert_fails(&judgement, "mcp/approval-answered", "without answering");
    }

    #[test]
    fn a_run_without_approval_requests_is_not_judged() {
        let judgement = Run::played("correlation/01-single-call", Stateless).judge_completed();
        assert_none_judged(&judgement, &CHECKS);
    }
}
