//! The command line's arguments: a struct per command, as clap reads them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::runner::partition::Partition;
use crate::scenario::{Delivery, StateMode};

/// loopcheck: a conformance suite for OpenAI Responses API tool-call loops.
#[derive(Debug, Parser)]
#[command(name = "loopcheck", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Run scenarios against a controller and judge it.
    Run(RunArgs),
    /// Print the embedded catalogue.
    List(ListArgs),
    /// Check scenario files without running anything.
    Lint(LintArgs),
    /// Run the cases against several controllers and print a compliance table.
    Matrix(MatrixArgs),
    /// Record a command's model traffic through a proxy into a cassette (a scenario).
    Record(RecordArgs),
    /// Replay a cassette to any command and report drift from the recording.
    Replay(ReplayArgs),
    /// Fuzz a controller with generated cases; shrink a failure of each group to a scenario.
    Fuzz(FuzzArgs),
    /// Merge the JSON reports of a partitioned run's shards into one report.
    Merge(MergeArgs),
    /// Show a case as a controller meets it: its task file, the tool backend's answers
    /// and the model's turns.
    Task(TaskArgs),
    /// Write a starter controller on the official SDK, its manifest, a loopcheck.toml
    /// and a CI workflow.
    Init(InitArgs),
    /// Print the JSON Schema of the scenario format (for editors and validators).
    Schema,
    /// Serve sessions of the cases on one fake server, for a test framework to drive a
    /// tool loop that lives in its own process (docs/serve.md).
    Serve(ServeArgs),
    /// Review the snapshots a run wrote as `.snap.new` (changed or new): accept, reject
    /// or list them, without cargo.
    #[command(subcommand)]
    Snapshots(SnapshotsCommand),
    /// Keep a baseline current from a run: drop what passes now, or rewrite it.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Run the built-in Rust reference controller (contract v1): the case the environment
    /// names, or, without the contract's variables, persistent mode on standard input.
    #[command(hide = true)]
    ReferenceController,
}

/// Which cases to run.
#[derive(Debug, Args)]
pub(super) struct Selection {
    /// Scenario files or directories (default: the embedded catalogue).
    pub(super) paths: Vec<PathBuf>,
    /// Only cases whose id matches one of these globs (e.g. `dispatch/*`).
    #[arg(long)]
    pub(super) filter: Vec<String>,
    /// Leave out cases whose id matches one of these globs (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub(super) exclude: Vec<String>,
}

/// How cases run.
#[derive(Debug, Args)]
pub(super) struct Settings {
    /// Per-case timeout in seconds [default: 30].
    #[arg(long)]
    pub(super) timeout: Option<f64>,
    /// A persistent controller's start-up budget in seconds, from its start until it
    /// reads its first case line; not counted in --timeout [default: 60].
    #[arg(long, value_name = "SECS")]
    pub(super) startup_timeout: Option<f64>,
    /// Cases run at once (default: the number of cores).
    #[arg(long)]
    pub(super) jobs: Option<usize>,
    /// Seed of what the fake server generates: ids, timestamps, every byte it sends
    /// derive from the case, the state mode and this number (default 0; for `fuzz`, the
    /// seed of the generated cases too, a new one when not given).
    #[arg(long)]
    pub(super) seed: Option<u64>,
}

#[derive(Debug, Args)]
pub(super) struct RunArgs {
    #[command(flatten)]
    pub(super) selection: Selection,
    /// The controller command, run with `sh -c` (default: the Rust reference controller).
    #[arg(long)]
    pub(super) controller: Option<String>,
    /// Comma-separated capabilities the controller supports.
    #[arg(long, value_delimiter = ',')]
    pub(super) supports: Option<Vec<String>>,
    #[command(flatten)]
    pub(super) settings: Settings,
    #[command(flatten)]
    pub(super) reports: ReportPaths,
    /// Expected failures (TOML): a case run it lists fails as `expected-fail` without
    /// failing the run; one that now passes is `stale` and fails it.
    #[arg(long, value_name = "FILE")]
    pub(super) baseline: Option<PathBuf>,
    /// Write the run's failures here as a baseline (TOML), to adopt the suite as it is.
    #[arg(long, value_name = "FILE")]
    pub(super) write_baseline: Option<PathBuf>,
    /// The settings file (default: `loopcheck.toml` in the working directory, if any).
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// The profile of the settings file to use (default: `LOOPCHECK_PROFILE`, else
    /// `default`); a profile inherits what it leaves unset from `default`.
    #[arg(long, value_name = "NAME")]
    pub(super) profile: Option<String>,
    /// Run only one shard of the planned case runs: `slice:K/N` (every N-th) or
    /// `hash:K/N` (by a stable hash of the case and state mode), for a CI matrix;
    /// `loopcheck merge` joins the shards' JSON reports.
    #[arg(long, value_name = "SCHEME:K/N")]
    pub(super) partition: Option<Partition>,
    /// Compare what the controller sends in each case with its snapshot in this folder
    /// (one file per case and state mode); a difference is the verdict `drift`.
    #[arg(long, value_name = "DIR")]
    pub(super) snapshots: Option<PathBuf>,
    /// Write every case run as its snapshot, accepting all changes (refused under CI).
    #[arg(long, requires = "snapshots")]
    pub(super) update_snapshots: bool,
    /// Print only the case runs that did not pass (unsupported ones left out too), the
    /// failures and the summary.
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Start no case run after the first one that fails; the runs in flight finish.
    #[arg(long)]
    pub(super) fail_fast: bool,
    /// Run only the case runs that failed the last run (kept in
    /// target/loopcheck/last-failed.json).
    #[arg(long)]
    pub(super) last_failed: bool,
    /// Run a failing case run again up to N times; one that then passes is `flaky`.
    #[arg(long, value_name = "N")]
    pub(super) retries: Option<u32>,
}

#[derive(Debug, Args)]
pub(super) struct MergeArgs {
    /// The shards' JSON reports (`loopcheck run --partition hash:K/N --report-json FILE`).
    #[arg(required = true, value_name = "REPORTS")]
    pub(super) shards: Vec<PathBuf>,
    #[command(flatten)]
    pub(super) reports: ReportPaths,
}

/// Where a run's reports go (`run`, and `merge` for the merged shards).
#[derive(Debug, Args)]
pub(super) struct ReportPaths {
    /// Write the JSON report here (`-`: standard output, and the console report goes to
    /// standard error).
    #[arg(long)]
    pub(super) report_json: Option<PathBuf>,
    /// Write a JUnit XML report here (a test suite per area, a test case per case and
    /// state mode), for a CI's test tab.
    #[arg(long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// Write a self-contained HTML report here: the summary, filters, and per case run
    /// its checks, drift and a sequence diagram of the exchange (none for merged shards:
    /// JSON reports hold no transcripts).
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,
    /// Write a Markdown summary here: the counts and every failing check, for a CI's job
    /// summary (`$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE")]
    pub(super) summary_markdown: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct MatrixArgs {
    #[command(flatten)]
    pub(super) selection: Selection,
    /// A controller as `NAME=COMMAND` (repeatable); `reference` alone is the built-in one.
    #[arg(long = "controller", required = true)]
    pub(super) controllers: Vec<String>,
    /// Capabilities of one controller as `NAME=LIST` (repeatable; default: its manifest,
    /// else previous_response_id,stateless).
    #[arg(long)]
    pub(super) supports: Vec<String>,
    #[command(flatten)]
    pub(super) settings: Settings,
    /// Write the matrix as JSON here.
    #[arg(long)]
    pub(super) report_json: Option<PathBuf>,
    /// Write the matrix as a Markdown table here.
    #[arg(long)]
    pub(super) markdown: Option<PathBuf>,
    /// Write the matrix as a self-contained HTML page here.
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct RecordArgs {
    /// The real API's base URL (e.g. https://api.openai.com/v1); the command's requests
    /// go there through the proxy, with the key from its own environment.
    #[arg(long)]
    pub(super) upstream: Option<String>,
    /// More CA certificates (PEM) to trust for the upstream, for a private endpoint.
    #[arg(long, value_name = "FILE")]
    pub(super) upstream_ca: Option<PathBuf>,
    /// The cassette to write (YAML, or JSON for `.json`).
    #[arg(long, value_name = "FILE")]
    pub(super) out: PathBuf,
    /// once: refuse to overwrite (with --listen: replay an existing cassette); new: replay
    /// what matches, record the rest; all: record again; none: replay only.
    #[arg(long, value_enum, default_value = "once")]
    pub(super) mode: crate::record::Mode,
    /// What a replay matches requests on, written into a new cassette: comma-separated
    /// method, path, body, or body.<field> (e.g. body.model,body.input).
    #[arg(long, value_name = "KEYS", default_value = "method,path,body")]
    pub(super) match_on: crate::transcript::request_key::MatchOn,
    /// Run no command: serve until stdin closes, printing `{"base_url": ...}` first and
    /// the outcome (recorded, replayed, drift, missing) last, as JSON lines.
    #[arg(long)]
    pub(super) listen: bool,
    /// A scenario file whose `task` (and `tools`) a contract controller gets: the task file
    /// is written and the fixture tool backend served, so tool calls are recorded too.
    #[arg(long, value_name = "FILE")]
    pub(super) task: Option<PathBuf>,
    /// The state mode written into the task.
    #[arg(long, default_value = "previous_response_id", value_parser = parse_state)]
    pub(super) state: StateMode,
    /// A JSON pointer to redact in every request and response body (repeatable).
    #[arg(long, value_name = "POINTER")]
    pub(super) redact_json: Vec<String>,
    /// A regular expression to redact in every string recorded (repeatable).
    #[arg(long, value_name = "RE")]
    pub(super) redact_regex: Vec<String>,
    /// The settings file whose `[redact]` table applies (default: `loopcheck.toml` in the
    /// working directory, if any).
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// The command to record, after `--`.
    #[arg(last = true, required_unless_present = "listen")]
    pub(super) command: Vec<String>,
}

#[derive(Debug, Args)]
pub(super) struct FuzzArgs {
    /// The controller command, run with `sh -c` (default: the Rust reference controller).
    #[arg(long)]
    pub(super) controller: Option<String>,
    /// Comma-separated capabilities the controller supports (default: its manifest, or
    /// previous_response_id,stateless); the generator uses only these.
    #[arg(long, value_delimiter = ',')]
    pub(super) supports: Option<Vec<String>>,
    /// Cases to generate.
    #[arg(long, default_value_t = 100)]
    pub(super) cases: usize,
    /// Where a failure is written as a scenario file; failures there are replayed first.
    #[arg(long, value_name = "DIR", default_value = "loopcheck-fuzz")]
    pub(super) out: PathBuf,
    /// Most model turns in a generated case.
    #[arg(long, default_value_t = 4)]
    pub(super) max_turns: usize,
    /// Stop generating after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub(super) time: Option<f64>,
    /// Most shrink steps.
    #[arg(long, default_value_t = 256)]
    pub(super) max_shrink_steps: usize,
    /// Stop at the first failure (or kept failure that still fails) instead of fuzzing
    /// on for the whole budget.
    #[arg(long)]
    pub(super) fail_fast: bool,
    /// Delete the kept failures in --out that now pass.
    #[arg(long)]
    pub(super) prune: bool,
    /// Also generate dropped connections (made 503s otherwise): after one a client waits
    /// its own backoff, 0.5 s in the SDKs, so cases run several times slower.
    #[arg(long)]
    pub(super) drops: bool,
    /// The settings file whose controller, supports, timeouts and jobs are used (default:
    /// `loopcheck.toml` in the working directory, if any), as `run` reads it.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// The profile of the settings file to use (default: `LOOPCHECK_PROFILE`, else
    /// `default`).
    #[arg(long, value_name = "NAME")]
    pub(super) profile: Option<String>,
    #[command(flatten)]
    pub(super) settings: Settings,
}

#[derive(Debug, Args)]
pub(super) struct ReplayArgs {
    /// The cassette.
    pub(super) cassette: PathBuf,
    /// The command to replay it to, after `--`.
    #[arg(last = true, required = true)]
    pub(super) command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(super) enum SnapshotsCommand {
    /// Show each pending snapshot's diff and ask to accept, reject or skip it; with
    /// --accept or --reject, settle the filtered ones without asking. Without either, off
    /// a terminal, list them and exit 1 if there are any.
    Review(ReviewArgs),
    /// List the pending snapshots; exit 1 if there are any.
    Pending(PendingArgs),
}

#[derive(Debug, Args)]
pub(super) struct PendingArgs {
    /// The snapshot folder (default: the profile's `snapshots`).
    #[arg(long, value_name = "DIR")]
    pub(super) snapshots: Option<PathBuf>,
    /// Only the snapshots of cases whose id matches one of these globs (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub(super) filter: Vec<String>,
    /// The settings file (default: `loopcheck.toml` in the working directory, if any).
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// The profile of the settings file to use.
    #[arg(long, value_name = "NAME")]
    pub(super) profile: Option<String>,
}

#[derive(Debug, Args)]
pub(super) struct ReviewArgs {
    #[command(flatten)]
    pub(super) pending: PendingArgs,
    /// Accept every pending snapshot selected, without asking.
    #[arg(long, conflicts_with_all = ["reject", "list"])]
    pub(super) accept: bool,
    /// Delete every pending snapshot selected, without asking.
    #[arg(long, conflicts_with = "list")]
    pub(super) reject: bool,
    /// Only list them (as `loopcheck snapshots pending`).
    #[arg(long)]
    pub(super) list: bool,
}

#[derive(Debug, Subcommand)]
pub(super) enum BaselineCommand {
    /// Run the suite as `run` would and drop the baseline's entries whose case runs pass
    /// now or that match no case run; print what was dropped.
    Prune(RunArgs),
    /// Run the suite as `run` would and rewrite the baseline as the run's failures,
    /// keeping each entry's reason.
    Update(RunArgs),
}

/// A word a flag does not take; clap prints it after the flag's name.
#[derive(Debug, thiserror::Error)]
#[error("unknown {what} '{word}': expected {expected}")]
pub(super) struct UnknownWord {
    what: &'static str,
    word: String,
    expected: &'static str,
}

fn parse_state(word: &str) -> Result<StateMode, UnknownWord> {
    StateMode::parse(word).ok_or_else(|| UnknownWord {
        what: "state mode",
        word: word.to_owned(),
        expected: "previous_response_id, stateless or conversation",
    })
}

fn parse_delivery(word: &str) -> Result<Delivery, UnknownWord> {
    Delivery::parse(word).ok_or_else(|| UnknownWord {
        what: "delivery",
        word: word.to_owned(),
        expected: "json, stream or websocket",
    })
}

#[derive(Debug, Args)]
pub(super) struct ListArgs {
    /// List the checks (id, level, rule) instead of the cases.
    #[arg(long)]
    pub(super) checks: bool,
    /// List the catalogue's areas with their case counts instead of the cases.
    #[arg(long, conflicts_with = "checks")]
    pub(super) areas: bool,
    /// List the tool loop's rules with their checks, cases, mutants and status.
    #[arg(long, conflicts_with_all = ["checks", "areas"])]
    pub(super) rules: bool,
    /// The mutants' folder `--rules` reads (covered or partial).
    #[arg(long, value_name = "DIR", requires = "rules", default_value = crate::rules::MUTANTS_DIR)]
    pub(super) mutants: PathBuf,
    /// Print a JSON array instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    pub(super) json: bool,
    /// Print a Markdown table (as the docs' own tables).
    #[arg(long)]
    pub(super) markdown: bool,
}

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    pub(super) selection: Selection,
    /// The port on 127.0.0.1 (default: a free one; the first line printed names it).
    #[arg(long, default_value_t = 0)]
    pub(super) port: u16,
    /// Seconds a session may go unused before it is dropped.
    #[arg(long, default_value_t = 600)]
    pub(super) session_idle: u64,
    /// Sessions alive at once; creating one more is refused until one ends.
    #[arg(long, default_value_t = 1_000)]
    pub(super) max_sessions: usize,
    /// Requests one session answers before it stops (a loop that never ends).
    #[arg(long, default_value_t = 1_000)]
    pub(super) max_requests: usize,
    /// Seed of what the fake server generates, unless a session names its own.
    #[arg(long, default_value_t = 0)]
    pub(super) seed: u64,
    /// Stop when standard input closes: a test helper that starts the server keeps a pipe
    /// open to it, so the server ends with the helper even when the helper is killed.
    #[arg(long)]
    pub(super) stop_on_eof: bool,
    /// Hold each session's verdict to its snapshot in this folder, as `run --snapshots`
    /// does (a session may name its snapshot; default: the case run's name).
    #[arg(long, value_name = "DIR")]
    pub(super) snapshots: Option<PathBuf>,
    /// Write every judged session as its snapshot, accepting all changes (refused under CI).
    #[arg(long, requires = "snapshots")]
    pub(super) update_snapshots: bool,
    /// The settings file whose `[snapshots] redactions` apply (default: `loopcheck.toml`
    /// in the working directory, if any).
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct InitArgs {
    /// The controller's language.
    #[arg(value_enum)]
    pub(super) language: crate::init::Language,
    /// The folder to write into.
    #[arg(long, default_value = ".")]
    pub(super) dir: PathBuf,
    /// Replace files that exist.
    #[arg(long)]
    pub(super) force: bool,
}

#[derive(Debug, Args)]
pub(super) struct TaskArgs {
    /// The case id (see `loopcheck list`).
    pub(super) case: String,
    /// The state mode (default: the case's first).
    #[arg(long, value_parser = parse_state)]
    pub(super) state: Option<StateMode>,
    /// The delivery, `json`, `stream` or `websocket` (default: the case's first).
    #[arg(long, value_parser = parse_delivery)]
    pub(super) delivery: Option<Delivery>,
    /// Print only the task file's JSON (to save as $LOOPCHECK_TASK).
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Args)]
pub(super) struct LintArgs {
    /// Scenario files or directories.
    #[arg(required = true)]
    pub(super) paths: Vec<PathBuf>,
}
