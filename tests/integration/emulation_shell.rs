//! Strict emulation of shell, local shell and patch calls over real HTTP: the fake issues
//! a `shell_call`, a `local_shell_call` and an `apply_patch_call` (JSON and streamed),
//! accepts the answer of each one's kind, and answers each broken pairing with the API's
//! error, as for function calls.

use loopcheck::server::RunningServer;
use serde_json::{Value, json};

use crate::support::response_text;
use crate::support::stateless_api::{post_json, serve_stateless, stateless_create as stateless};

/// Turn 1: a shell call, a local shell call and a patch. Turn 2: the final answer.
const SCENARIO: &str = r#"
format: 1
id: emulation/shell
summary: A shell call, a local shell call and a patch in one turn, then the final answer.
level: must
task:
  input:
    - role: user
      content: Count the lines of notes.md, show the branch, and add a CHANGELOG.
  tools:
    - type: shell
    - type: local_shell
    - type: apply_patch
script:
  - output:
      - shell_call: {commands: [wc -l notes.md, ls -la], timeout_ms: 10000}
      - local_shell_call: {command: [git, branch, --show-current], env: {GIT_PAGER: cat}}
      - apply_patch_call: {type: create_file, path: CHANGELOG.md, diff: "+# Changelog\n"}
  - output:
      - message: "12 lines, on main, CHANGELOG added."
expect:
  outcome: completed
"#;

const QUESTION: &str = "Count the lines of notes.md, show the branch, and add a CHANGELOG.";

fn user() -> Value {
    json!({"role": "user", "content": QUESTION})
}

async fn start() -> (RunningServer, String) {
    serve_stateless(SCENARIO).await
}

async fn post(server: &RunningServer, key: &str, body: &Value) -> (u16, Value, String) {
    post_json(server, key, "/v1/responses", body).await
}

/// Turn 1, checked: the three calls, each with its id prefix and input; returns them.
async fn round1(server: &RunningServer, key: &str) -> [Value; 3] {
    let (status, response, _) = post(server, key, &stateless(vec![user()])).await;
    assert_eq!(status, 200, "{response}");
    let output = response["output"].as_array().expect("output").clone();
    assert_eq!(output.len(), 3, "{response}");
    let [shell, local, patch] = [output[0].clone(), output[1].clone(), output[2].clone()];
    for (item, kind, prefix) in [
        (&shell, "shell_call", "sh_"),
        (&local, "local_shell_call", "lsh_"),
        (&patch, "apply_patch_call", "apc_"),
    ] {
        assert_eq!(item["type"], kind, "{item}");
        assert!(item["id"].as_str().unwrap().starts_with(prefix), "{item}");
        assert!(
            item["call_id"].as_str().unwrap().starts_with("call_"),
            "{item}"
        );
        assert_eq!(item["status"], "completed", "{item}");
        assert!(item.get("name").is_none(), "{item}");
    }
    assert_eq!(
        shell["action"],
        json!({"commands": ["wc -l notes.md", "ls -la"], "timeout_ms": 10000})
    );
    assert_eq!(
        local["action"],
        json!({"type": "exec", "command": ["git", "branch", "--show-current"],
               "env": {"GIT_PAGER": "cat"}, "timeout_ms": null, "user": null,
               "working_directory": null})
    );
    assert_eq!(
        patch["operation"],
        json!({"type": "create_file", "path": "CHANGELOG.md", "diff": "+# Changelog\n"})
    );
    [shell, local, patch]
}

fn shell_output(call_id: &Value) -> Value {
    json!({"type": "shell_call_output", "call_id": call_id, "output": [
        {"stdout": "12 notes.md\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
    ]})
}

fn local_output(call_id: &Value) -> Value {
    json!({"type": "local_shell_call_output", "id": call_id, "output": "{\"stdout\":\"main\\n\"}"})
}

fn patch_output(call_id: &Value) -> Value {
    json!({"type": "apply_patch_call_output", "call_id": call_id, "status": "completed",
           "output": "Created CHANGELOG.md"})
}

fn assert_error(reply: &(u16, Value, String), message: &str) {
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert_eq!(
        reply.1,
        json!({"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": null}}),
        "{}",
        reply.2
    );
}

#[tokio::test]
async fn each_call_answered_by_its_own_kind_gets_turn_2() {
    let (server, key) = start().await;
    let [shell, local, patch] = round1(&server, &key).await;
    let input = vec![
        user(),
        shell.clone(),
        local.clone(),
        patch.clone(),
        shell_output(&shell["call_id"]),
        local_output(&local["call_id"]),
        patch_output(&patch["call_id"]),
    ];
    let (status, response, text) = post(&server, &key, &stateless(input)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        response_text(&response),
        "12 lines, on main, CHANGELOG added."
    );
}

#[tokio::test]
async fn a_shell_call_streams_each_command_in_its_own_events() {
    let (server, key) = start().await;
    let mut body = stateless(vec![user()]);
    body["stream"] = json!(true);
    let (status, _, text) = post(&server, &key, &body).await;
    assert_eq!(status, 200, "{text}");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let added = of("response.output_item.added");
    let shell_added = added
        .iter()
        .find(|e| e["item"]["type"] == "shell_call")
        .expect("the shell call is announced");
    // Announced with no commands: the SDKs' accumulators append each added command.
    assert_eq!(shell_added["item"]["action"]["commands"], json!([]));
    assert_eq!(shell_added["item"]["status"], "in_progress");
    let commands_added = of("response.shell_call_command.added");
    assert_eq!(commands_added.len(), 2, "{text}");
    for (index, event) in commands_added.iter().enumerate() {
        assert_eq!(event["command"], "");
        assert_eq!(event["command_index"], index);
        assert_eq!(event["output_index"], 0);
        assert!(event.get("item_id").is_none(), "{event}");
    }
    for (index, command) in ["wc -l notes.md", "ls -la"].into_iter().enumerate() {
        let streamed: String = of("response.shell_call_command.delta")
            .iter()
            .filter(|e| e["command_index"] == index)
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(streamed, command);
        let done: Vec<_> = of("response.shell_call_command.done")
            .into_iter()
            .filter(|e| e["command_index"] == index)
            .collect();
        assert_eq!(done.len(), 1, "{text}");
        assert_eq!(done[0]["command"], command);
    }
    let item_done = of("response.output_item.done");
    assert!(
        item_done.iter().any(|e| e["item"]["type"] == "shell_call"
            && e["item"]["action"]["commands"] == json!(["wc -l notes.md", "ls -la"])
            && e["item"]["status"] == "completed"),
        "{text}"
    );
    // The other two come whole, announced in progress.
    for kind in ["local_shell_call", "apply_patch_call"] {
        let announced = added
            .iter()
            .find(|e| e["item"]["type"] == kind)
            .expect("announced");
        assert_eq!(announced["item"]["status"], "in_progress", "{announced}");
        assert!(
            item_done.iter().any(|e| e["item"]["type"] == kind),
            "{text}"
        );
    }
}

/// Each broken pairing and the API's error for it: an unanswered call of each kind, an
/// answer to a call never issued, and answers of another kind. A rejected request serves
/// no turn, so one first round serves them all.
#[tokio::test]
async fn each_broken_pairing_gets_the_apis_error() {
    let (server, key) = start().await;
    let [shell, local, patch] = round1(&server, &key).await;
    let (shell_id, local_id, patch_id) = (&shell["call_id"], &local["call_id"], &patch["call_id"]);
    let id = |value: &Value| value.as_str().unwrap().to_owned();
    let cases = [
        (
            vec![local_output(local_id), patch_output(patch_id)],
            format!("No tool output found for shell call {}.", id(shell_id)),
        ),
        (
            vec![shell_output(shell_id), patch_output(patch_id)],
            format!(
                "No tool output found for local shell call {}.",
                id(local_id)
            ),
        ),
        (
            vec![shell_output(shell_id), local_output(local_id)],
            format!(
                "No tool output found for apply patch call {}.",
                id(patch_id)
            ),
        ),
        (
            vec![
                shell_output(shell_id),
                local_output(local_id),
                patch_output(patch_id),
                shell_output(&json!("call_never_issued")),
            ],
            "No tool call found for shell call output with call_id call_never_issued.".to_owned(),
        ),
        (
            vec![
                json!({"type": "custom_tool_call_output", "call_id": shell_id, "output": "12"}),
                local_output(local_id),
                patch_output(patch_id),
            ],
            format!(
                "No tool call found for custom tool call output with call_id {}.",
                id(shell_id)
            ),
        ),
        (
            vec![
                shell_output(shell_id),
                local_output(local_id),
                json!({"type": "function_call_output", "call_id": patch_id, "output": "done"}),
            ],
            format!(
                "No tool call found for function call output with call_id {}.",
                id(patch_id)
            ),
        ),
        (
            vec![
                shell_output(shell_id),
                local_output(local_id),
                patch_output(patch_id),
                local_output(shell_id),
            ],
            format!(
                "No tool call found for local shell call output with call_id {}.",
                id(shell_id)
            ),
        ),
    ];
    for (answers, expected) in cases {
        let mut input = vec![user(), shell.clone(), local.clone(), patch.clone()];
        input.extend(answers);
        let reply = post(&server, &key, &stateless(input)).await;
        assert_error(&reply, &expected);
    }
}

/// A local shell call's output names the call in its `id`: one that carries `call_id`,
/// as other kinds' answers do, has a parameter its type does not have.
#[tokio::test]
async fn a_local_shell_output_naming_its_call_in_call_id_is_rejected() {
    let (server, key) = start().await;
    let [shell, local, patch] = round1(&server, &key).await;
    let input = vec![
        user(),
        shell.clone(),
        local.clone(),
        patch.clone(),
        shell_output(&shell["call_id"]),
        json!({"type": "local_shell_call_output", "call_id": local["call_id"], "output": "main"}),
        patch_output(&patch["call_id"]),
    ];
    let reply = post(&server, &key, &stateless(input)).await;
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert_eq!(
        reply.1["error"]["message"], "Unknown parameter: 'input[5].call_id'.",
        "{}",
        reply.2
    );
}

#[tokio::test]
async fn a_replayed_shell_call_with_another_id_prefix_is_rejected() {
    let (server, key) = start().await;
    let [mut shell, local, patch] = round1(&server, &key).await;
    shell["id"] = json!("fc_not_a_shell_id");
    let input = vec![
        user(),
        shell.clone(),
        local.clone(),
        patch.clone(),
        shell_output(&shell["call_id"]),
        local_output(&local["call_id"]),
        patch_output(&patch["call_id"]),
    ];
    let reply = post(&server, &key, &stateless(input)).await;
    assert_eq!(reply.0, 400, "{}", reply.2);
    assert_eq!(
        reply.1["error"]["message"],
        "Invalid 'input[1].id': 'fc_not_a_shell_id'. Expected an ID that begins with 'sh'.",
        "{}",
        reply.2
    );
}
