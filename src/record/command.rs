//! The `record` and `replay` commands: a controller run through the proxy or against a cassette.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use super::cassette;
use super::cassette::{CassetteError, Previous, TaskFile};
use super::proxy::{Proxy, Upstream};
use super::resume::Resume;
use crate::contract::{var, write_task_file};
use crate::redact::{self, RuleError};
use crate::runner::controller_env;
use crate::scenario::task_json;
use crate::scenario::{
    self, Expectation, Level, Outcome, Recorded, Scenario, ScenarioError, StateMode,
};
use crate::server::{RunningServer, Session};
use crate::transcript::drift::{Comparison, ComparisonStatus};
use crate::transcript::request_key::MatchOn;

/// How `record` treats an existing cassette (as vcrpy's record modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Record a new cassette; refuse to overwrite one.
    Once,
    /// Replay what the cassette holds and record the rest: a cassette matched by key
    /// serves every request it holds and keeps every recorded interaction; one matched
    /// by order serves while the requests match it, then records from the first it does
    /// not hold on, keeping the recorded ones before it.
    New,
    /// Record again, replacing the cassette.
    All,
    /// Replay only: a request the cassette does not hold fails.
    None,
}

/// What `loopcheck record` was asked.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The upstream base URL, e.g. `https://api.openai.com/v1`.
    pub upstream: Option<String>,
    /// More CA certificates to trust for the upstream (PEM).
    pub upstream_ca: Option<PathBuf>,
    /// The cassette.
    pub out: PathBuf,
    /// The record mode.
    pub mode: Mode,
    /// A scenario file whose task (and fixture tools) a contract controller gets.
    pub task: Option<PathBuf>,
    /// The state mode written into that task.
    pub state: StateMode,
    /// JSON pointers to redact in every body.
    pub redact_json: Vec<String>,
    /// Regular expressions to redact in every string.
    pub redact_regex: Vec<String>,
    /// What a new recording's requests are matched on when replayed (default: method,
    /// path, body).
    pub match_on: Option<MatchOn>,
    /// Serve until stdin closes instead of running a command (`--listen`).
    pub listen: bool,
    /// The command and its arguments.
    pub command: Vec<String>,
}

/// Why recording or replaying could not go on; the CLI maps each to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// No command after `--`: exit 2.
    #[error("no command to run: give it after `--`, e.g. `-- python3 app.py`")]
    NoCommand,
    /// `record` without `--upstream`: exit 2.
    #[error("--upstream is required to record (e.g. --upstream https://api.openai.com/v1)")]
    NoUpstream,
    /// `--mode once` and the cassette exists: exit 2.
    #[error(
        "refusing to overwrite {} (--mode once): use --mode all to record it again, --mode new to add to it, or --mode none to replay it",
        .0.display()
    )]
    WouldOverwrite(PathBuf),
    /// The file is a scenario without a recording: exit 2.
    #[error(
        "{} is a scenario, not a recording (it has no `recorded` section): run it with `loopcheck run`",
        .0.display()
    )]
    NotARecording(PathBuf),
    /// The cassette does not load: exit 2.
    #[error(transparent)]
    Cassette(#[from] ScenarioError),
    /// The `--task` file does not load: exit 2.
    #[error(transparent)]
    TaskFile(#[from] CassetteError),
    /// A redaction rule does not compile: exit 2.
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// The upstream cannot be used (its URL or certificates), redacted: exit 2.
    #[error("{0}")]
    Upstream(String),
    /// A step of the run failed with an I/O error: exit 1.
    #[error("failed to {what}: {source}")]
    Io {
        /// What was being done (`write the task file`, `start \`python3\``, ...).
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Requests were made but none reached the upstream: exit 1.
    #[error("no request reached the upstream ({why}); {} was left as it was{}", .cassette.display(), if *.private { "\n(hint: for a private endpoint, --upstream-ca FILE names the certificate to trust)" } else { "" })]
    Unreached {
        /// The first connection failure, redacted.
        why: String,
        /// The cassette, untouched.
        cassette: PathBuf,
        /// Whether the upstream is HTTPS (where a private CA is the likely cause).
        private: bool,
    },
    /// The recording cannot be made into a cassette: exit 1.
    #[error("{0}")]
    Build(String),
    /// The cassette would not read back as a scenario: exit 1.
    #[error("the cassette does not read back as a scenario ({source}); {} was left as it was", .cassette.display())]
    Unreadable {
        /// What the loader says.
        source: ScenarioError,
        /// The cassette, untouched.
        cassette: PathBuf,
    },
    /// `--listen` with a command: exit 2.
    #[error(
        "--listen serves until its stdin closes and runs no command: drop the command after `--`, or --listen"
    )]
    CommandWithListen,
    /// `--listen` on a cassette that does not exist, under CI or `--mode none`: exit 2.
    #[error(
        "{} does not exist{}: record it where the upstream can be reached (`loopcheck record --listen --out {} --upstream URL`, or the test run with record mode `once`) and commit it",
        .cassette.display(),
        if *.ci { " and CI is set, where cassettes are replayed, never recorded" } else { " and --mode none only replays" },
        .cassette.display()
    )]
    MissingCassette {
        /// The cassette.
        cassette: PathBuf,
        /// Whether CI refused it (else `--mode none`).
        ci: bool,
    },
    /// Interrupted (Ctrl-C or SIGTERM): the cassette is left as it was; exit 130.
    #[error("interrupted: {0} was left as it was")]
    Interrupted(PathBuf),
}

impl RecordError {
    /// Whether the command was asked something it cannot do (exit 2), as opposed to a
    /// run that failed (exit 1) or was interrupted.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::NoCommand
                | Self::NoUpstream
                | Self::WouldOverwrite(_)
                | Self::NotARecording(_)
                | Self::Cassette(_)
                | Self::TaskFile(_)
                | Self::Rule(_)
                | Self::Upstream(_)
                | Self::CommandWithListen
                | Self::MissingCassette { .. }
        )
    }

    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}

/// How a record or replay run ended.
#[derive(Debug)]
pub struct Finished {
    /// The command's exit status.
    pub status: ExitStatus,
    /// For a replay: the comparison with the recording.
    pub comparison: Option<Comparison>,
    /// What was written, for a recording.
    pub summary: String,
}

impl Finished {
    /// Exit 0 when the command succeeded and nothing drifted.
    pub fn ok(&self) -> bool {
        self.status.success()
            && self
                .comparison
                .as_ref()
                .is_none_or(|c| c.status == ComparisonStatus::Matched)
    }
}

/// The session that records a proxy's traffic and serves the fixture tool backend: the
/// task's scenario with no script (the upstream answers), or an empty one.
fn recording_session(id: &str, task: Option<&TaskFile>, state: StateMode) -> Scenario {
    Scenario {
        format: scenario::FORMAT_VERSION,
        id: id.to_owned(),
        summary: String::new(),
        level: Level::Must,
        origin: None,
        tags: Vec::new(),
        task: task
            .map(|t| t.task.clone())
            .unwrap_or_else(|| scenario::TaskSpec {
                model: "gpt-5".to_owned(),
                input: serde_json::json!(""),
                instructions: None,
                tools: Vec::new(),
                approval_required: Vec::new(),
                max_rounds: 6,
                principal: "user-1".to_owned(),
                stream: false,
                websocket: false,
                background: false,
                deadline_ms: None,
                max_tool_calls: None,
                tool_timeout_ms: None,
                compact_after_rounds: None,
                context_management: None,
                include: Vec::new(),
                text_format: None,
            }),
        states: vec![state],
        deliveries: None,
        tools: task.map(|t| t.tools.clone()).unwrap_or_default(),
        script: Vec::new(),
        expect: Expectation {
            outcome: Outcome::Completed,
            output_text: Some(String::new()),
            reason: None,
            min_requests: None,
        },
        recorded: None,
    }
}

/// The case id a cassette gets from its file name: `recorded/<stem>`.
fn cassette_id(out: &Path) -> String {
    let stem: String = out
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("recorded/{stem}")
}

/// What a command run against a server keeps of its own environment.
#[derive(Debug, Clone, Copy)]
struct Own {
    /// Its `OPENAI_API_KEY`, which goes through to the upstream.
    key: bool,
    /// Its `LOOPCHECK_TASK` and `LOOPCHECK_TOOLS_URL`, when it has them: recorded without
    /// `--task`, loopcheck has no task to give it, only an empty one.
    task: bool,
}

/// The environment of a command run against a server: the contract's variables, as a
/// run gives them, and the task file, less what the command keeps of its own (`own`)
/// from this process's environment, which it inherits.
fn environment(
    server: &RunningServer,
    session: &Session,
    own: Own,
    task_dir: &Path,
) -> Result<Vec<(String, String)>, RecordError> {
    let scenario = session.scenario();
    let mut vars = controller_env(server, session, &scenario.id).vars();
    let kept = |name: &str| match name {
        var::API_KEY => own.key,
        var::TASK | var::TOOLS_URL => own.task && std::env::var_os(name).is_some(),
        _ => false,
    };
    vars.retain(|(name, _)| !kept(name));
    if !kept(var::TASK) {
        let path = write_task_file(task_dir, &task_json(scenario, session.state()))
            .map_err(RecordError::io("write the task file"))?;
        vars.push((var::TASK.to_owned(), path.to_string_lossy().into_owned()));
    }
    Ok(vars)
}

/// Runs `argv` with `env` added, in its own process group, its output going to this
/// process's; Ctrl-C or SIGTERM kills the whole group (a second one exits at once).
async fn run_command(
    argv: &[String],
    env: &[(String, String)],
    cassette: &Path,
) -> Result<ExitStatus, RecordError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(RecordError::NoCommand);
    };
    let interrupt =
        crate::interrupt::Interrupt::listen().map_err(RecordError::io("listen for Ctrl-C"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(RecordError::io(format!("start `{program}`")))?;
    let group = child.id().map(|pid| pid as i32);
    tokio::select! {
        status = child.wait() => {
            status.map_err(RecordError::io(format!("wait for `{program}`")))
        }
        () = interrupt.first() => {
            crate::runner::kill_group(group);
            let _ = child.wait().await;
            Err(RecordError::Interrupted(cassette.to_owned()))
        }
    }
}

/// A cassette read back, for `--mode new` and replays.
pub(super) fn load_recording(cassette: &Path) -> Result<(Scenario, Recorded), RecordError> {
    let scenario = scenario::load_file(cassette)?;
    match scenario.recorded.clone() {
        Some(recorded) => Ok((scenario, recorded)),
        None => Err(RecordError::NotARecording(cassette.to_owned())),
    }
}

/// `loopcheck record`.
pub async fn record(options: &RecordOptions) -> Result<Finished, RecordError> {
    let out = &options.out;
    match options.mode {
        Mode::Once if out.exists() => return Err(RecordError::WouldOverwrite(out.clone())),
        Mode::None => return replay(out, &options.command).await,
        _ => {}
    }
    if options.command.is_empty() {
        return Err(RecordError::NoCommand);
    }
    let recording = Recording::start(options).await?;
    let dir = tempfile::tempdir().map_err(RecordError::io("create a task folder"))?;
    // The caller's own key goes through to the upstream; nothing here replaces it.
    let own = Own {
        key: true,
        task: recording.task.is_none(),
    };
    let env = environment(&recording.server, &recording.session, own, dir.path())?;
    let status = run_command(&options.command, &env, out).await;
    let saved = recording.finish(out, status.is_ok()).await;
    let status = status?;
    let saved = saved?;
    Ok(Finished {
        status,
        comparison: None,
        summary: format!(
            "recorded {} model request(s){} and {} tool exchange(s) into {}\nreplay it with: loopcheck replay {} -- {}",
            saved.recorded,
            if saved.resumed {
                format!(" after {} replayed from the cassette", saved.replayed)
            } else {
                String::new()
            },
            saved.tools,
            out.display(),
            out.display(),
            saved.redactor.text(&options.command.join(" "))
        ),
    })
}

/// A recording under way: the proxy (serving from the cassette first, for `--mode
/// new`), and what the cassette is built from when it ends.
pub(super) struct Recording {
    pub session: Arc<Session>,
    pub server: RunningServer,
    proxy: Arc<Proxy>,
    /// The task file a contract controller gets, if any.
    pub task: Option<TaskFile>,
    id: String,
    /// The cassette `--mode new` adds to.
    old: Option<(Scenario, Recorded)>,
    rules: (Vec<String>, Vec<String>),
    redactor: redact::Redactor,
    upstream: String,
    match_on: MatchOn,
    /// Whether a recording with no model request at all is no error (`--listen`: a test
    /// that made none), and writes nothing.
    pub allow_empty: bool,
}

/// What a finished recording wrote.
pub(super) struct Saved {
    /// Model requests recorded from the upstream.
    pub recorded: usize,
    /// Model requests served from the cassette (`--mode new`).
    pub replayed: usize,
    /// Tool exchanges.
    pub tools: usize,
    /// Whether it added to a cassette.
    pub resumed: bool,
    /// Whether the cassette was written (a resumed one with nothing new is left as it
    /// was).
    pub written: bool,
    /// The redactor the cassette was written through.
    pub redactor: redact::Redactor,
}

impl Recording {
    /// Starts the proxy to `options.upstream` on 127.0.0.1.
    pub async fn start(options: &RecordOptions) -> Result<Self, RecordError> {
        let out = &options.out;
        let old = match options.mode {
            Mode::New if out.exists() => Some(load_recording(out)?),
            _ => None,
        };
        let Some(upstream_url) = options.upstream.as_deref() else {
            return Err(RecordError::NoUpstream);
        };
        let upstream =
            Upstream::new(upstream_url, options.upstream_ca.as_deref()).map_err(|err| {
                RecordError::Upstream(redact::installed().text(&err.to_string()).into_owned())
            })?;
        // The rules the cassette was recorded with still apply to what is added to it.
        let mut rules = (options.redact_json.clone(), options.redact_regex.clone());
        if let Some((_, recorded)) = &old {
            rules.0.extend(recorded.redact_json.iter().cloned());
            rules.1.extend(recorded.redact_regex.iter().cloned());
        }
        let redactor = redact::installed().with(&rules.0, &rules.1)?;
        let (scenario, task, state) = match &old {
            Some((scenario, recorded)) => (
                scenario.clone(),
                Some(TaskFile {
                    task: scenario.task.clone(),
                    tools: scenario.tools.clone(),
                }),
                recorded.transcript.state,
            ),
            None => {
                let task = options.task.as_deref().map(TaskFile::load).transpose()?;
                let scenario = recording_session(&cassette_id(out), task.as_ref(), options.state);
                (scenario, task, options.state)
            }
        };
        let id = scenario.id.clone();
        let session = Arc::new(Session::new(Arc::new(scenario), state));
        let proxy = Proxy::new(upstream, session.clone());
        let started = match &old {
            Some((_, recorded)) => {
                Resume::new(session.clone(), proxy.clone(), recorded.clone())
                    .start()
                    .await
            }
            None => proxy.start().await,
        };
        let server = started.map_err(RecordError::io("start the proxy"))?;
        Ok(Self {
            session,
            server,
            proxy,
            task,
            id,
            old,
            rules,
            redactor,
            upstream: upstream_url.to_owned(),
            match_on: options.match_on.clone().unwrap_or_default(),
            allow_empty: false,
        })
    }

    /// Stops the proxy and writes the cassette to `out` atomically; `completed` is
    /// false when what used it was interrupted, and then nothing is written.
    pub async fn finish(self, out: &Path, completed: bool) -> Result<Saved, RecordError> {
        self.proxy.settle(Duration::from_secs(10)).await;
        self.server.shutdown().await;
        let transcript = self.session.transcript();
        let creates: Vec<_> = transcript.model.iter().filter(|m| m.is_create()).collect();
        let replayed = creates.iter().filter(|m| m.turn.is_some()).count();
        let keyed = self
            .old
            .as_ref()
            .map(|(_, recorded)| recorded)
            .filter(|recorded| recorded.match_on.is_some());
        let mut saved = Saved {
            recorded: creates.len() - replayed,
            replayed,
            tools: transcript.tools.len(),
            resumed: self.old.is_some(),
            written: false,
            redactor: self.redactor.clone(),
        };
        let nothing = saved.recorded == 0 && (keyed.is_some() || self.allow_empty);
        if !completed || nothing {
            return Ok(saved);
        }
        let unreachable = self.proxy.unreachable();
        // Every create dropped, or none made because no socket could be opened upstream.
        let reached = creates.iter().any(|m| m.status != 0);
        if !reached && (!creates.is_empty() || !unreachable.is_empty()) {
            let why = unreachable
                .first()
                .map_or("connection failed".into(), |why| self.redactor.text(why));
            return Err(RecordError::Unreached {
                why: why.into_owned(),
                cassette: out.to_owned(),
                private: self.upstream.starts_with("https://"),
            });
        }
        let extras = self.proxy.extras();
        let recording = cassette::Recording {
            transcript: &transcript,
            extras: &extras,
            upstream: &self.upstream,
        };
        let previous = Previous {
            turns: self
                .old
                .as_ref()
                .map_or(&[][..], |(scenario, _)| &scenario.script),
            keyed,
        };
        let cassette = cassette::build(
            &self.id,
            &recording,
            self.task.as_ref(),
            &self.redactor,
            (&self.rules.0, &self.rules.1),
            previous,
            // A cassette matched by order stays so when added to.
            self.old.is_none().then(|| self.match_on.clone()),
        )
        .map_err(|err| RecordError::Build(err.to_string()))?;
        write_cassette(out, &cassette)?;
        saved.written = true;
        Ok(saved)
    }
}

/// Writes a cassette atomically, in YAML (or JSON for `.json`), after checking that it
/// reads back as a scenario.
fn write_cassette(out: &Path, cassette: &Scenario) -> Result<(), RecordError> {
    let json = out.extension().is_some_and(|e| e == "json");
    let text = if json {
        serde_json::to_string_pretty(cassette).map_err(|e| e.to_string())
    } else {
        serde_saphyr::to_string(cassette).map_err(|e| e.to_string())
    }
    .map_err(|err| RecordError::Build(format!("failed to write the cassette: {err}")))?;
    scenario::parse(out, &text).map_err(|source| RecordError::Unreadable {
        source,
        cassette: out.to_owned(),
    })?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(RecordError::io(format!("create {}", parent.display())))?;
    }
    crate::files::write_bytes_atomic(out, text.as_bytes())
        .map_err(RecordError::io(format!("write {}", out.display())))
}

/// `loopcheck replay FILE -- CMD`: serves the cassette to any command and compares what
/// it sends with the recording.
pub async fn replay(cassette: &Path, command: &[String]) -> Result<Finished, RecordError> {
    let scenario = scenario::load_file(cassette)?;
    let Some(recorded) = scenario.recorded.clone() else {
        return Err(RecordError::NotARecording(cassette.to_owned()));
    };
    let state = recorded.transcript.state;
    let session = Arc::new(Session::new(Arc::new(scenario), state));
    let server = RunningServer::start(session.clone())
        .await
        .map_err(RecordError::io("start the fake server"))?;
    let dir = tempfile::tempdir().map_err(RecordError::io("create a task folder"))?;
    let own = Own {
        key: false,
        task: false,
    };
    let env = environment(&server, &session, own, dir.path())?;
    let status = run_command(command, &env, cassette).await;
    server.shutdown().await;
    let status = status?;
    let comparison =
        crate::expectations::drift::compare(&recorded, &session.transcript(), cassette);
    Ok(Finished {
        status,
        comparison: Some(comparison),
        summary: String::new(),
    })
}
