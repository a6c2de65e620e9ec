//! `program`: programmatic tool calling. Child calls answered with their `caller`
//! echoed, program items replayed verbatim when stateless, and the loop continued past
//! `program_output` to the model's final message.

use serde_json::Value;

use super::checks;
use super::facts::Facts;
use super::verdict::CheckResult;
use crate::scenario::StateMode;
use crate::wire::request::{item_id, item_type};

/// The `program` checks (cases with program items only).
pub fn check(f: &Facts) -> Vec<CheckResult> {
    let programs: Vec<(usize, &Value)> = f
        .served
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.output
                .iter()
                .filter(|item| item["type"] == "program")
                .map(move |item| (i, item))
        })
        .collect();
    if programs.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();

    let mut echoed = Vec::new();
    let mut judged = 0;
    for (index, served) in f.served.iter().enumerate() {
        let Some((position, request)) = f.request_after(index) else {
            continue;
        };
        for &c in &served.calls {
            let call = &f.calls[c];
            let item = served
                .output
                .iter()
                .find(|i| i["call_id"] == call.call_id.as_str());
            let Some(caller) = item.and_then(|i| i.get("caller")).filter(|c| !c.is_null()) else {
                continue;
            };
            for output in Facts::outputs_for(request, &call.call_id) {
                judged += 1;
                if output.get("caller") != Some(caller) {
                    echoed.push(format!(
                        "{}: the output for {} carries caller {}; expected the call's caller {caller} unchanged",
                        Facts::request_label(position),
                        call.describe(),
                        output.get("caller").map_or("(none)".to_owned(), Value::to_string)
                    ));
                }
            }
        }
    }
    if judged > 0 {
        out.push(checks::PROGRAM_CALLER_ECHOED.judge(
            echoed,
            format!("{judged} output(s) of program-owned calls echo their caller"),
        ));
    }

    if f.state == StateMode::Stateless {
        let mut problems = Vec::new();
        let mut count = 0;
        for (position, request) in f.requests.iter().enumerate() {
            let input = Facts::input_of(request);
            for (served, program) in programs
                .iter()
                .filter(|(s, _)| f.served[*s].request < position)
            {
                count += 1;
                let id = item_id(program).unwrap_or_default();
                match input.iter().find(|i| item_type(i) == "program" && i.get("call_id") == program.get("call_id")) {
                    None => problems.push(format!(
                        "{} does not replay program {id} from {}: in stateless mode the program item travels with its calls",
                        Facts::request_label(position),
                        f.response_label(*served)
                    )),
                    Some(sent) if sent.get("fingerprint") != program.get("fingerprint") || sent.get("code") != program.get("code") => {
                        problems.push(format!(
                            "{} replays program {id} altered (code or fingerprint): expected it verbatim",
                            Facts::request_label(position)
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        if count > 0 {
            out.push(checks::PROGRAM_REPLAYED.judge(
                problems,
                format!("{count} program replay(s), each verbatim"),
            ));
        }
    }

    let pauses: Vec<usize> = (0..f.served.len())
        .filter(|&i| {
            let s = &f.served[i];
            s.status == "completed"
                && s.calls.is_empty()
                && !s.has_message
                && s.output.iter().any(|item| item["type"] == "program_output")
                && !f.is_last_round(i)
        })
        .collect();
    if !pauses.is_empty() {
        let problems = pauses
            .iter()
            .filter(|&&i| f.request_after(i).is_none())
            .map(|&i| {
                format!(
                    "{} ends with a program_output and no message; the controller stopped there: expected it to continue to the model's final message",
                    f.response_label(i)
                )
            })
            .collect();
        out.push(checks::PROGRAM_CONTINUED.judge(
            problems,
            "the loop went on past program_output to the final message",
        ));
    }
    out
}
