//! What a controller is given for a case: its environment variables.

/// The names of the variables a controller is given for a case (docs/contract.md,
/// section 1), defined once for every way loopcheck starts or serves a controller.
pub mod var {
    /// The fake Responses API's base URL.
    pub const BASE_URL: &str = "OPENAI_BASE_URL";
    /// The session's API key.
    pub const API_KEY: &str = "OPENAI_API_KEY";
    /// The fixture tool backend's URL.
    pub const TOOLS_URL: &str = "LOOPCHECK_TOOLS_URL";
    /// The case's id.
    pub const CASE: &str = "LOOPCHECK_CASE";
    /// The task file's path (a persistent controller gets the task inline instead).
    pub const TASK: &str = "LOOPCHECK_TASK";
}

/// The environment a controller gets for one case.
#[derive(Debug, Clone)]
pub struct ControllerEnv {
    /// `OPENAI_BASE_URL`.
    pub base_url: String,
    /// `OPENAI_API_KEY`.
    pub api_key: String,
    /// `LOOPCHECK_TOOLS_URL`.
    pub tools_url: String,
    /// `LOOPCHECK_CASE`.
    pub case: String,
}

impl ControllerEnv {
    /// The variables, by name, as a controller process gets them.
    pub fn vars(self) -> Vec<(String, String)> {
        [
            (var::BASE_URL, self.base_url),
            (var::API_KEY, self.api_key),
            (var::TOOLS_URL, self.tools_url),
            (var::CASE, self.case),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
    }
}
