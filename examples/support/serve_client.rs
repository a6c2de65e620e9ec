//! One `loopcheck serve` session driven over HTTP by the Rust reference in process, from
//! creation to verdict: shared by the `serve_soak` example and the serve integration tests
//! (which include this file by path).

use serde_json::{Value, json};

/// GETs `url` and parses its JSON answer; a session's control routes need its `token`.
pub async fn get_json(client: &reqwest::Client, url: &str, token: Option<&str>) -> Value {
    let request = client.get(url);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request
        .send()
        .await
        .unwrap_or_else(|err| panic!("GET {url}: {err}"))
        .json()
        .await
        .unwrap_or_else(|err| panic!("GET {url}: not JSON: {err}"))
}

/// A session's answers, after the reference ran it and posted its result.
pub struct Finished {
    /// The creation answer: ids, URLs, task.
    pub created: Value,
    /// The oracle's verdict.
    pub verdict: Value,
}

impl Finished {
    /// A URL the creation answer names (`url`, `verdict_url`, ...).
    pub fn url(&self, key: &str) -> &str {
        self.created[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key} in {}", self.created))
    }

    /// The token the session's control routes need.
    pub fn token(&self) -> &str {
        self.url("token")
    }
}

/// Creates a session of `case` in `state` on the server at `url`, runs the reference
/// against it, posts the outcome and fetches the verdict.
pub async fn run_reference(
    client: &reqwest::Client,
    url: &str,
    case: &str,
    state: &str,
) -> Finished {
    let created: Value = client
        .post(format!("{url}/loopcheck/sessions"))
        .json(&json!({"case": case, "state": state}))
        .send()
        .await
        .expect("create a session")
        .json()
        .await
        .expect("the created session as JSON");
    let text = |key: &str| {
        created[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key}"))
            .to_owned()
    };
    let env = loopcheck_reference::ControllerEnv {
        base_url: text("base_url"),
        api_key: text("api_key"),
        tools_url: text("tools_url"),
    };
    let task: loopcheck_reference::Task =
        serde_json::from_value(created["task"].clone()).expect("the task parses");
    let outcome = loopcheck_reference::run(&env, &task).await;
    let posted = client
        .post(text("result_url"))
        .bearer_auth(text("token"))
        .json(&outcome)
        .send()
        .await
        .expect("post the result");
    assert_eq!(posted.status(), 200, "{case} {state}: result refused");
    let verdict = get_json(client, &text("verdict_url"), Some(&text("token"))).await;
    Finished { created, verdict }
}

/// Ends a session.
pub async fn delete(client: &reqwest::Client, finished: &Finished) {
    let answer = client
        .delete(finished.url("url"))
        .bearer_auth(finished.token())
        .send()
        .await
        .expect("delete the session");
    assert_eq!(answer.status(), 200, "delete: {}", answer.status());
}
