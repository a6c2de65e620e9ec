//! The command line: `run`, `list`, `lint`.

use std::collections::BTreeSet;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use globset::{Glob, GlobSetBuilder};

use crate::baseline::Baseline;
use crate::config;
use crate::interrupt::Interrupt;
use crate::report::console::{self, ConsoleReporter};
use crate::report::html::{self, HtmlReporter};
use crate::report::json::{self, JsonReporter};
use crate::report::junit::{self, JunitReporter};
use crate::report::matrix::MatrixReporter;
use crate::report::merge;
use crate::report::progress::ProgressReporter;
use crate::report::{Reporters, Summary};
use crate::runner::partition::Partition;
use crate::runner::{self, CAPABILITIES, Controller, RunOptions};
use crate::scenario::{self, Case, ScenarioError};
use crate::snapshot::Snapshots;

/// Exit codes.
pub mod exit {
    /// No case failed, timed out, crashed or errored.
    pub const OK: u8 = 0;
    /// Some case did.
    pub const FAILURES: u8 = 1;
    /// Usage or scenario-file errors.
    pub const USAGE: u8 = 2;
    /// Stopped by Ctrl-C or SIGTERM (after writing what it had).
    pub const INTERRUPTED: u8 = crate::interrupt::EXIT_CODE;
}

/// loopcheck: a conformance suite for OpenAI Responses API tool-call loops.
#[derive(Debug, Parser)]
#[command(name = "loopcheck", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    /// Fuzz a controller with generated cases; shrink the first failure to a scenario.
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
    /// Run the built-in Rust reference controller (contract v1): the case the environment
    /// names, or, without the contract's variables, persistent mode on standard input.
    #[command(hide = true)]
    ReferenceController,
}

/// Which cases to run.
#[derive(Debug, Args)]
struct Selection {
    /// Scenario files or directories (default: the embedded catalogue).
    paths: Vec<PathBuf>,
    /// Only cases whose id matches one of these globs (e.g. `dispatch/*`).
    #[arg(long)]
    filter: Vec<String>,
}

/// How cases run.
#[derive(Debug, Args)]
struct Settings {
    /// Per-case timeout in seconds [default: 30].
    #[arg(long)]
    timeout: Option<f64>,
    /// A persistent controller's start-up budget in seconds, from its start until it
    /// reads its first case line; not counted in --timeout [default: 60].
    #[arg(long, value_name = "SECS")]
    startup_timeout: Option<f64>,
    /// Cases run at once (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seed of what the fake server generates: ids, timestamps, every byte it sends
    /// derive from the case, the state mode and this number (default 0; for `fuzz`, the
    /// seed of the generated cases too, a new one when not given).
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    selection: Selection,
    /// The controller command, run with `sh -c` (default: the Rust reference controller).
    #[arg(long)]
    controller: Option<String>,
    /// Comma-separated capabilities the controller supports.
    #[arg(long, value_delimiter = ',')]
    supports: Option<Vec<String>>,
    #[command(flatten)]
    settings: Settings,
    #[command(flatten)]
    reports: ReportPaths,
    /// Expected failures (TOML): a case run it lists fails as `expected-fail` without
    /// failing the run; one that now passes is `stale` and fails it.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write the run's failures here as a baseline (TOML), to adopt the suite as it is.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// The settings file (default: `loopcheck.toml` in the working directory, if any).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The profile of the settings file to use (default: `LOOPCHECK_PROFILE`, else
    /// `default`); a profile inherits what it leaves unset from `default`.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// Run only one shard of the planned case runs: `slice:K/N` (every N-th) or
    /// `hash:K/N` (by a stable hash of the case and state mode), for a CI matrix;
    /// `loopcheck merge` joins the shards' JSON reports.
    #[arg(long, value_name = "SCHEME:K/N")]
    partition: Option<Partition>,
    /// Compare what the controller sends in each case with its snapshot in this folder
    /// (one file per case and state mode); a difference is the verdict `drift`.
    #[arg(long, value_name = "DIR")]
    snapshots: Option<PathBuf>,
    /// Write every case run as its snapshot, accepting all changes (refused under CI).
    #[arg(long, requires = "snapshots")]
    update_snapshots: bool,
}

#[derive(Debug, Args)]
struct MergeArgs {
    /// The shards' JSON reports (`loopcheck run --partition hash:K/N --report-json FILE`).
    #[arg(required = true, value_name = "REPORTS")]
    shards: Vec<PathBuf>,
    #[command(flatten)]
    reports: ReportPaths,
}

/// Where a run's reports go (`run`, and `merge` for the merged shards).
#[derive(Debug, Args)]
struct ReportPaths {
    /// Write the JSON report here (`-`: standard output, and the console report goes to
    /// standard error).
    #[arg(long)]
    report_json: Option<PathBuf>,
    /// Write a JUnit XML report here (a test suite per area, a test case per case and
    /// state mode), for a CI's test tab.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write a self-contained HTML report here: the summary, filters, and per case run
    /// its checks, drift and a sequence diagram of the exchange (none for merged shards:
    /// JSON reports hold no transcripts).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

impl ReportPaths {
    /// Checks, before anything runs, that each report asked for can be written.
    fn check(&self) -> Result<(), String> {
        let json = self.report_json.as_deref().filter(|p| *p != Path::new("-"));
        check_files(&[
            ("JSON report", json),
            ("JUnit report", self.junit.as_deref()),
            ("HTML report", self.html.as_deref()),
        ])
    }
}

/// Checks that each file given can be written, naming the first that cannot.
fn check_files(files: &[(&str, Option<&Path>)]) -> Result<(), String> {
    files
        .iter()
        .filter_map(|(what, path)| Some((what, (*path)?)))
        .try_for_each(|(what, path)| crate::report::writable::check_file(what, path))
}

#[derive(Debug, Args)]
struct MatrixArgs {
    #[command(flatten)]
    selection: Selection,
    /// A controller as `NAME=COMMAND` (repeatable); `reference` alone is the built-in one.
    #[arg(long = "controller", required = true)]
    controllers: Vec<String>,
    /// Capabilities of one controller as `NAME=LIST` (repeatable; default: its manifest,
    /// else previous_response_id,stateless).
    #[arg(long)]
    supports: Vec<String>,
    #[command(flatten)]
    settings: Settings,
    /// Write the matrix as JSON here.
    #[arg(long)]
    report_json: Option<PathBuf>,
    /// Write the matrix as a Markdown table here.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Write the matrix as a self-contained HTML page here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct RecordArgs {
    /// The real API's base URL (e.g. https://api.openai.com/v1); the command's requests
    /// go there through the proxy, with the key from its own environment.
    #[arg(long)]
    upstream: Option<String>,
    /// More CA certificates (PEM) to trust for the upstream, for a private endpoint.
    #[arg(long, value_name = "FILE")]
    upstream_ca: Option<PathBuf>,
    /// The cassette to write (YAML, or JSON for `.json`).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// once: refuse to overwrite; new: replay what matches, record from the first unseen
    /// request; all: record again; none: replay only.
    #[arg(long, value_enum, default_value = "once")]
    mode: crate::record::Mode,
    /// A scenario file whose `task` (and `tools`) a contract controller gets: the task file
    /// is written and the fixture tool backend served, so tool calls are recorded too.
    #[arg(long, value_name = "FILE")]
    task: Option<PathBuf>,
    /// The state mode written into the task.
    #[arg(long, default_value = "previous_response_id", value_parser = parse_state)]
    state: crate::scenario::StateMode,
    /// A JSON pointer to redact in every request and response body (repeatable).
    #[arg(long, value_name = "POINTER")]
    redact_json: Vec<String>,
    /// A regular expression to redact in every string recorded (repeatable).
    #[arg(long, value_name = "RE")]
    redact_regex: Vec<String>,
    /// The settings file whose `[redact]` table applies (default: `loopcheck.toml` in the
    /// working directory, if any).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The command to record, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Debug, Args)]
struct FuzzArgs {
    /// The controller command, run with `sh -c` (default: the Rust reference controller).
    #[arg(long)]
    controller: Option<String>,
    /// Comma-separated capabilities the controller supports (default: its manifest, or
    /// previous_response_id,stateless); the generator uses only these.
    #[arg(long, value_delimiter = ',')]
    supports: Option<Vec<String>>,
    /// Cases to generate.
    #[arg(long, default_value_t = 100)]
    cases: usize,
    /// Where a failure is written as a scenario file; failures there are replayed first.
    #[arg(long, value_name = "DIR", default_value = "loopcheck-fuzz")]
    out: PathBuf,
    /// Most model turns in a generated case.
    #[arg(long, default_value_t = 4)]
    max_turns: usize,
    /// Stop generating after this many seconds.
    #[arg(long, value_name = "SECS")]
    time: Option<f64>,
    /// Most shrink steps.
    #[arg(long, default_value_t = 256)]
    max_shrink_steps: usize,
    #[command(flatten)]
    settings: Settings,
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// The cassette.
    cassette: PathBuf,
    /// The command to replay it to, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

fn parse_state(word: &str) -> Result<crate::scenario::StateMode, String> {
    crate::scenario::StateMode::parse(word).ok_or_else(|| {
        format!(
            "unknown state mode '{word}': expected previous_response_id, stateless or conversation"
        )
    })
}

fn parse_delivery(word: &str) -> Result<crate::scenario::Delivery, String> {
    crate::scenario::Delivery::parse(word)
        .ok_or_else(|| format!("unknown delivery '{word}': expected json or stream"))
}

#[derive(Debug, Args)]
struct ListArgs {
    /// List the checks (id, level, rule) instead of the cases.
    #[arg(long)]
    checks: bool,
    /// List the catalogue's areas with their case counts instead of the cases.
    #[arg(long, conflicts_with = "checks")]
    areas: bool,
    /// List the tool loop's rules with their checks, cases, mutants and status.
    #[arg(long, conflicts_with_all = ["checks", "areas"])]
    rules: bool,
    /// The mutants' folder `--rules` reads (covered or partial).
    #[arg(long, value_name = "DIR", requires = "rules", default_value = crate::rules::MUTANTS_DIR)]
    mutants: PathBuf,
    /// Print a JSON array instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print a Markdown table (as the README's).
    #[arg(long)]
    markdown: bool,
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    selection: Selection,
    /// The port on 127.0.0.1 (default: a free one; the first line printed names it).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Seconds a session may go unused before it is dropped.
    #[arg(long, default_value_t = 600)]
    session_idle: u64,
    /// Sessions alive at once; creating one more is refused until one ends.
    #[arg(long, default_value_t = 1_000)]
    max_sessions: usize,
    /// Requests one session answers before it stops (a loop that never ends).
    #[arg(long, default_value_t = 1_000)]
    max_requests: usize,
    /// Seed of what the fake server generates, unless a session names its own.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop when standard input closes: a test helper that starts the server keeps a pipe
    /// open to it, so the server ends with the helper even when the helper is killed.
    #[arg(long)]
    stop_on_eof: bool,
}

#[derive(Debug, Args)]
struct InitArgs {
    /// The controller's language.
    #[arg(value_enum)]
    language: crate::init::Language,
    /// The folder to write into.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Replace files that exist.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
struct TaskArgs {
    /// The case id (see `loopcheck list`).
    case: String,
    /// The state mode (default: the case's first).
    #[arg(long, value_parser = parse_state)]
    state: Option<scenario::StateMode>,
    /// The delivery, `json` or `stream` (default: the case's first).
    #[arg(long, value_parser = parse_delivery)]
    delivery: Option<scenario::Delivery>,
    /// Print only the task file's JSON (to save as $LOOPCHECK_TASK).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct LintArgs {
    /// Scenario files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // The reference controller runs a case at a time: one thread starts faster than a
    // pool, and its loop awaits one thing at a time (parallel calls run as futures).
    let mut builder = match cli.command {
        Command::ReferenceController => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("loopcheck: failed to start the async runtime: {err}");
            return ExitCode::from(exit::FAILURES);
        }
    };
    if let Err(message) = install_redactor(&cli.command) {
        return ExitCode::from(usage_error(message));
    }
    let code = match cli.command {
        Command::Run(args) => runtime.block_on(run(args)),
        Command::List(args) => list(args),
        Command::Lint(args) => lint(args),
        Command::Matrix(args) => runtime.block_on(matrix(args)),
        Command::Record(args) => runtime.block_on(record(args)),
        Command::Fuzz(args) => runtime.block_on(fuzz(args)),
        Command::Merge(args) => merge(args),
        Command::Task(args) => task(args),
        Command::Init(args) => match crate::init::write(&args.dir, args.language, args.force) {
            Ok(written) => {
                for path in written {
                    println!("wrote {}", path.display());
                }
                println!(
                    "next: loopcheck run   (then loopcheck run --profile ci, as the workflow does)"
                );
                exit::OK
            }
            Err(message) => usage_error(message),
        },
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Schema => {
            print!("{}", scenario::schema::scenario_schema_text());
            exit::OK
        }
        Command::Replay(args) => runtime.block_on(finish_recording(crate::record::replay(
            &args.cassette,
            &args.command,
        ))),
        // A persistent worker is started without the contract's variables and reads its
        // cases from standard input; a person at a terminal gets the one-case mode's
        // error about the variables instead of a wait.
        Command::ReferenceController
            if std::env::var_os(runner::task::var::TASK).is_none()
                && !io::stdin().is_terminal() =>
        {
            runtime.block_on(loopcheck_reference::run_persistent());
            exit::OK
        }
        Command::ReferenceController => {
            let outcome = runtime.block_on(loopcheck_reference::run_from_env());
            println!("{}", loopcheck_reference::result_line(&outcome));
            exit::OK
        }
    };
    ExitCode::from(code)
}

fn print_scenario_errors(errors: &[ScenarioError]) {
    for error in errors {
        eprintln!("error: {error}");
    }
}

fn load(paths: &[PathBuf]) -> Result<Vec<Case>, Vec<ScenarioError>> {
    if paths.is_empty() {
        scenario::catalogue()
    } else {
        scenario::load_paths(paths)
    }
}

/// Installs the one redactor of a command that runs controllers or reports on them:
/// the built-in rules plus the settings file's `[redact]` table.
fn install_redactor(command: &Command) -> Result<(), String> {
    let config = match command {
        Command::Run(args) => args.config.as_deref(),
        Command::Record(args) => args.config.as_deref(),
        Command::Replay(_)
        | Command::Matrix(_)
        | Command::Fuzz(_)
        | Command::Merge(_)
        | Command::Serve(_) => None,
        _ => return Ok(()),
    };
    crate::redact::install(config::redactor(config)?);
    Ok(())
}

fn usage_error(message: String) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}

/// Parses a comma-separated capability list.
fn parse_capabilities<S: AsRef<str>>(words: &[S]) -> Result<BTreeSet<String>, String> {
    let words: BTreeSet<String> = words
        .iter()
        .flat_map(|w| w.as_ref().split(','))
        .map(|w| w.trim().to_owned())
        .filter(|w| !w.is_empty())
        .collect();
    match words.iter().find(|w| !CAPABILITIES.contains(&w.as_str())) {
        Some(unknown) => Err(format!(
            "unknown capability '{unknown}': expected some of {}",
            CAPABILITIES.join(", ")
        )),
        None => Ok(words),
    }
}

/// The built-in Rust reference controller: this executable.
fn reference_controller(name: &str) -> Result<Controller, String> {
    let exe = std::env::current_exe()
        .map_err(|err| format!("failed to find the loopcheck executable: {err}"))?;
    Ok(Controller::reference(name, exe))
}

/// The capabilities in a controller manifest next to a file the command names
/// (`<file>.loopcheck.json`, else `loopcheck.json` in its folder: `{"supports": [...]}`);
/// the interpreter in `python3 loop.py` has none, the script may.
fn manifest_capabilities(command: &str) -> Result<Option<BTreeSet<String>>, String> {
    let manifest = command
        .split_whitespace()
        .map(std::path::Path::new)
        .filter(|p| p.is_file())
        .flat_map(|file| {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            [
                file.with_file_name(format!("{name}.loopcheck.json")),
                file.with_file_name("loopcheck.json"),
            ]
        })
        .find(|p| p.is_file());
    let Some(manifest) = manifest else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&manifest)
        .map_err(|err| format!("failed to read {}: {err}", manifest.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| format!("{}: {err}", manifest.display()))?;
    let words: Vec<String> = value["supports"]
        .as_array()
        .ok_or_else(|| {
            format!(
                "{}: expected {{\"supports\": [capabilities]}}",
                manifest.display()
            )
        })?
        .iter()
        .map(|w| {
            w.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{}: capabilities are strings", manifest.display()))
        })
        .collect::<Result<_, _>>()?;
    parse_capabilities(&words)
        .map(Some)
        .map_err(|err| format!("{}: {err}", manifest.display()))
}

/// A controller given by command, with its capabilities from its manifest, if any.
fn command_controller(name: &str, command: &str) -> Result<Controller, String> {
    // `sh -c ""` runs nothing and prints nothing: every case would be `crashed`.
    if command.trim().is_empty() {
        return Err(format!(
            "the controller command is empty{}: give the command that runs your controller, e.g. --controller \"python3 my_loop.py\" (or leave it out for the built-in reference)",
            if name.trim().is_empty() || name == command {
                String::new()
            } else {
                format!(" for '{name}'")
            }
        ));
    }
    let supports = manifest_capabilities(command)?.unwrap_or_else(runner::default_capabilities);
    Ok(Controller::command(name, command.to_owned(), supports))
}

/// The controller a command names (the Rust reference when none), with what it
/// supports: `--supports` when given, else its manifest.
fn controller_from(
    command: Option<&str>,
    supports: Option<&[String]>,
) -> Result<Controller, String> {
    let mut controller = match command {
        Some(command) => command_controller(command, command)?,
        None => reference_controller("reference (rust)")?,
    };
    if let Some(words) = supports {
        controller.supports = parse_capabilities(words)?;
    }
    Ok(controller)
}

fn filter_cases(cases: Vec<Case>, globs: &[String]) -> Result<Vec<Case>, String> {
    if globs.is_empty() {
        return Ok(cases);
    }
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(Glob::new(glob).map_err(|err| format!("invalid --filter '{glob}': {err}"))?);
    }
    let set = builder
        .build()
        .map_err(|err| format!("invalid --filter: {err}"))?;
    Ok(cases
        .into_iter()
        .filter(|c| set.is_match(&c.scenario.id))
        .collect())
}

impl Selection {
    /// The selected cases, or the exit code after printing why there are none.
    fn cases(&self) -> Result<Vec<Case>, u8> {
        let cases = load(&self.paths).map_err(|errors| {
            print_scenario_errors(&errors);
            exit::USAGE
        })?;
        let cases = filter_cases(cases, &self.filter).map_err(usage_error)?;
        if cases.is_empty() {
            return Err(usage_error("no case matches: nothing to run".to_owned()));
        }
        Ok(cases)
    }
}

/// The per-case timeout when nothing sets one.
const DEFAULT_TIMEOUT_SECS: f64 = 30.0;

impl Settings {
    /// The run options, or the exit code after printing what is wrong.
    fn options(&self) -> Result<RunOptions, u8> {
        let seconds = |value: f64, flag: &str| {
            if value.is_finite() && value > 0.0 {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(usage_error(format!(
                    "invalid --{flag} {value}: expected a positive number of seconds"
                )))
            }
        };
        let timeout = seconds(self.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS), "timeout")?;
        let startup_timeout = match self.startup_timeout {
            Some(value) => seconds(value, "startup-timeout")?,
            None => runner::DEFAULT_STARTUP_TIMEOUT,
        };
        let mut options = RunOptions {
            timeout,
            startup_timeout,
            seed: self.seed.unwrap_or(0),
            ..RunOptions::default()
        };
        match self.jobs {
            Some(0) => {
                return Err(usage_error(
                    "invalid --jobs 0: expected at least 1".to_owned(),
                ));
            }
            Some(jobs) => options.jobs = jobs,
            None => {}
        }
        Ok(options)
    }
}

/// Fills what the command line leaves unset from the resolved settings (environment,
/// then profile).
fn with_settings(mut args: RunArgs) -> Result<RunArgs, String> {
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let profile = config::resolve(args.config.as_deref(), args.profile.as_deref(), &env)?;
    if args.selection.paths.is_empty() {
        args.selection.paths = profile.paths.unwrap_or_default();
    }
    if args.selection.filter.is_empty() {
        args.selection.filter = profile.filter.unwrap_or_default();
    }
    args.controller = args.controller.or(profile.controller);
    args.supports = args.supports.or(profile.supports);
    args.settings.timeout = args.settings.timeout.or(profile.timeout);
    args.settings.startup_timeout = args.settings.startup_timeout.or(profile.startup_timeout);
    args.settings.jobs = args.settings.jobs.or(profile.jobs);
    args.settings.seed = args.settings.seed.or(profile.seed);
    args.reports.report_json = args.reports.report_json.or(profile.report_json);
    args.reports.junit = args.reports.junit.or(profile.junit);
    args.reports.html = args.reports.html.or(profile.html);
    args.baseline = args.baseline.or(profile.baseline);
    args.snapshots = args.snapshots.or(profile.snapshots);
    args.partition = args.partition.or(profile.partition);
    Ok(args)
}

async fn run(args: RunArgs) -> u8 {
    let args = match with_settings(args) {
        Ok(args) => args,
        Err(message) => return usage_error(message),
    };
    let (cases, mut options) = match (args.selection.cases(), args.settings.options()) {
        (Ok(cases), Ok(options)) => (cases, options),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let outputs = args
        .reports
        .check()
        .and_then(|()| check_files(&[("baseline", args.write_baseline.as_deref())]));
    if let Err(message) = outputs {
        return usage_error(message);
    }
    if let Some(dir) = &args.snapshots {
        match Snapshots::open(dir, args.update_snapshots) {
            Ok(snapshots) => options.snapshots = Some(snapshots),
            Err(err) => return usage_error(err.to_string()),
        }
    }
    let controller = match controller_from(args.controller.as_deref(), args.supports.as_deref()) {
        Ok(controller) => controller,
        Err(message) => return usage_error(message),
    };
    options.partition = args.partition;
    if let Some(path) = &args.baseline {
        let baseline = match Baseline::load(path) {
            Ok(baseline) => baseline,
            Err(message) => return usage_error(message),
        };
        let ids = cases.iter().map(|c| c.scenario.id.as_str()).collect();
        for entry in baseline.unmatched(&ids) {
            eprintln!(
                "note: the baseline's entry for '{}' matches no case of this run",
                entry.case
            );
        }
        options.baseline = Some(Arc::new(baseline));
    }
    let json_to_stdout = args.reports.report_json.as_deref() == Some(Path::new("-"));
    let mut reporters = Reporters::new();
    // The bar first: at the end it clears itself before the details are printed.
    let progress = ProgressReporter::on_terminal();
    // Case lines go wherever the console report goes, unless that is the terminal the
    // bar is drawn on.
    let console_on_terminal = if json_to_stdout {
        true
    } else {
        io::stdout().is_terminal()
    };
    let live = progress.is_none() || !console_on_terminal;
    if let Some(progress) = progress {
        reporters.push(progress);
    }
    let console: Box<dyn Write + Send> = if json_to_stdout {
        Box::new(io::stderr())
    } else {
        Box::new(io::stdout())
    };
    reporters.push(ConsoleReporter::new(console, live));
    if let Some(path) = &args.reports.report_json {
        reporters.push(JsonReporter::new(path.clone()));
    }
    if let Some(path) = &args.reports.junit {
        reporters.push(JunitReporter::new(path.clone()));
    }
    if let Some(path) = &args.reports.html {
        reporters.push(HtmlReporter::new(path.clone()));
    }
    // Listening before the first case starts: a signal from then on stops the run
    // cleanly, with a partial report.
    let interrupt = match Interrupt::listen() {
        Ok(interrupt) => interrupt,
        Err(err) => {
            eprintln!("error: failed to listen for Ctrl-C: {err}");
            return exit::FAILURES;
        }
    };
    let ran = runner::run_all_until(
        &cases,
        &controller,
        &options,
        &mut |event| reporters.event(event),
        interrupt.first(),
    )
    .await;
    if let Err(err) = reporters.finish() {
        eprintln!("error: {err}");
        return exit::FAILURES;
    }
    if ran.interrupted {
        // A partial run's failures are no baseline.
        eprintln!("loopcheck: interrupted: the reports hold the case runs judged before");
        return exit::INTERRUPTED;
    }
    let reports = ran.reports;
    if let Some(path) = &args.write_baseline {
        let text = Baseline::of_failures(&reports).to_toml();
        if let Err(err) = crate::report::write_file("baseline", path, text.as_bytes()) {
            eprintln!("error: {err}");
            return exit::FAILURES;
        }
    }
    if Summary::of(&reports).ok() {
        exit::OK
    } else {
        exit::FAILURES
    }
}

fn merge(args: MergeArgs) -> u8 {
    if let Err(message) = args.reports.check() {
        return usage_error(message);
    }
    let mut shards = Vec::new();
    for path in &args.shards {
        match merge::read(path) {
            Ok(report) => shards.push(report),
            Err(message) => return usage_error(message),
        }
    }
    let mut merged = match merge::merge(shards) {
        Ok(merged) => merged,
        Err(message) => return usage_error(message),
    };
    let json_to_stdout = args.reports.report_json.as_deref() == Some(Path::new("-"));
    let console = console::details(&merged.cases);
    if json_to_stdout {
        eprint!("{console}");
    } else {
        print!("{console}");
    }
    let mut written = Ok(());
    if let Some(path) = &args.reports.report_json {
        written = json::write(path, &merged);
    }
    if let Some(path) = &args.reports.junit {
        written = written.and(junit::write(path, &merged.controller, &mut merged.cases));
    }
    if let Some(path) = &args.reports.html {
        let page = html::run_page(&html::RunPage {
            controller: &merged.controller,
            version: &merged.loopcheck,
            elapsed: None,
            cases: &merged.cases,
            transcripts: false,
            note: Some(format!(
                "Merged from {} shard report(s). JSON reports hold no transcripts: no sequence diagrams.",
                args.shards.len()
            )),
        });
        written = written.and(html::write(path, &page));
    }
    if let Err(err) = written {
        eprintln!("error: {err}");
        return exit::FAILURES;
    }
    if merged.summary.ok() {
        exit::OK
    } else {
        exit::FAILURES
    }
}

fn task(args: TaskArgs) -> u8 {
    let cases = match scenario::catalogue() {
        Ok(cases) => cases,
        Err(errors) => {
            print_scenario_errors(&errors);
            return exit::USAGE;
        }
    };
    let Some(case) = cases.iter().find(|c| c.scenario.id == args.case) else {
        let near: Vec<&str> = cases
            .iter()
            .map(|c| c.scenario.id.as_str())
            .filter(|id| id.contains(args.case.as_str()))
            .collect();
        let hint = match near.as_slice() {
            [] => "see `loopcheck list`".to_owned(),
            ids => format!("did you mean {}?", ids.join(", ")),
        };
        return usage_error(format!("no case '{}' in the catalogue: {hint}", args.case));
    };
    let states = &case.scenario.run_states();
    let state = match args.state {
        Some(state) if states.contains(&state) => state,
        Some(state) => {
            let runs: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
            return usage_error(format!(
                "{} does not run in {state}: it runs in {}",
                args.case,
                runs.join(", ")
            ));
        }
        None => states
            .first()
            .copied()
            .unwrap_or(scenario::StateMode::PreviousResponseId),
    };
    let deliveries = case.scenario.run_deliveries();
    let scenario = match args.delivery {
        None => case.scenario.delivered(deliveries[0]),
        Some(delivery) if deliveries.contains(&delivery) => case.scenario.delivered(delivery),
        Some(delivery) => {
            let runs: Vec<&str> = deliveries.iter().map(|d| d.as_str()).collect();
            return usage_error(format!(
                "{} does not run in delivery {delivery}: it runs in {}",
                args.case,
                runs.join(", ")
            ));
        }
    };
    let text = if args.json {
        serde_json::to_string_pretty(&runner::task::task_json(&scenario, state)).unwrap_or_default()
            + "\n"
    } else {
        scenario::preview::preview(&scenario, state)
    };
    print_listing(&text)
}

async fn serve(args: ServeArgs) -> u8 {
    let cases = match args.selection.cases() {
        Ok(cases) => cases,
        Err(code) => return code,
    };
    let count = cases.len();
    let options = crate::serve::ServeOptions {
        port: args.port,
        limits: crate::serve::Limits {
            idle: std::time::Duration::from_secs(args.session_idle),
            sessions: args.max_sessions,
            requests: args.max_requests,
            ..crate::serve::Limits::default()
        },
        seed: args.seed,
        http: crate::server::HttpLimits::default(),
    };
    let server = match crate::serve::SessionServer::start(cases, options).await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("error: cannot listen on 127.0.0.1:{}: {err}", args.port);
            return exit::USAGE;
        }
    };
    // The first line names the URL, for the test helpers that start this command.
    println!("loopcheck serve: listening on {}", server.url());
    println!("{count} cases; create a session with POST /loopcheck/sessions; Ctrl-C stops");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = stdin_closed(), if args.stop_on_eof => {}
    }
    server.shutdown().await;
    exit::OK
}

/// Resolves once standard input reaches its end (whatever is written to it is ignored).
/// Read on a plain thread: a blocking read in the runtime's pool would hold up its
/// shutdown.
async fn stdin_closed() {
    let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 256];
        let mut stdin = std::io::stdin().lock();
        while matches!(std::io::Read::read(&mut stdin, &mut buffer), Ok(n) if n > 0) {}
        let _ = closed.send(());
    });
    let _ = on_close.await;
}

fn list(args: ListArgs) -> u8 {
    if args.checks {
        return print_listing(&list_checks(&args));
    }
    let cases = match scenario::catalogue() {
        Ok(cases) => cases,
        Err(errors) => {
            print_scenario_errors(&errors);
            return exit::USAGE;
        }
    };
    if args.areas {
        return print_listing(&list_areas(&args, &cases));
    }
    if args.rules {
        return match list_rules(&args, &cases) {
            Ok(text) => print_listing(&text),
            Err(err) => usage_error(err),
        };
    }
    print_listing(&list_cases(&args, &cases))
}

/// The rule-coverage table; an error when the registry names a check or a case that does
/// not exist, or the mutants cannot be read.
fn list_rules(args: &ListArgs, cases: &[scenario::Case]) -> Result<String, String> {
    use crate::rules;
    let registry = rules::registry()?;
    let case_ids: Vec<String> = cases.iter().map(|c| c.scenario.id.clone()).collect();
    let problems = rules::problems(&registry, &case_ids);
    if !problems.is_empty() {
        return Err(format!(
            "{} is stale:\n  {}",
            rules::REGISTRY_PATH,
            problems.join("\n  ")
        ));
    }
    let mutants = rules::read_mutants(&args.mutants)?;
    let table = rules::coverage(&registry, &case_ids, &mutants)?;
    Ok(if args.markdown {
        rules::markdown(&table, &registry)
    } else if args.json {
        serde_json::to_string_pretty(&rules::json(&table)).unwrap_or_default() + "\n"
    } else {
        rules::text(&table)
    })
}

/// Writes a listing to standard output; a closed pipe (`loopcheck list | head`) ends the
/// listing quietly instead of panicking as `print!` would.
fn print_listing(text: &str) -> u8 {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: writing the listing: {err}");
            exit::USAGE
        }
        _ => exit::OK,
    }
}

/// The catalogue's cases as a table, Markdown or JSON, each with its origin.
fn list_cases(args: &ListArgs, cases: &[scenario::Case]) -> String {
    let origin = |c: &scenario::Case| c.scenario.origin.clone().unwrap_or_default();
    let mut out = String::new();
    if args.markdown {
        out.push_str("| case | level | origin | summary |\n|---|---|---|---|\n");
        for c in cases {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                c.scenario.id,
                c.scenario.level.as_str(),
                origin(c),
                c.scenario.summary.trim()
            ));
        }
    } else if args.json {
        let rows: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.scenario.id,
                    "level": c.scenario.level.as_str(),
                    "area": c.scenario.area(),
                    "origin": c.scenario.origin,
                    "summary": c.scenario.summary,
                })
            })
            .collect();
        out = serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
    } else {
        let width = cases.iter().map(|c| c.scenario.id.len()).max().unwrap_or(0);
        for c in cases {
            out.push_str(&format!(
                "{:<width$}  {:<6}  {:<12}  {}\n",
                c.scenario.id,
                c.scenario.level.as_str(),
                c.scenario.area(),
                c.scenario.summary.trim()
            ));
            if let Some(origin) = &c.scenario.origin {
                out.push_str(&format!("{:<width$}  from: {origin}\n", ""));
            }
        }
    }
    out
}

fn list_areas(args: &ListArgs, cases: &[scenario::Case]) -> String {
    let counts = scenario::area_counts(cases);
    if args.json {
        let rows: Vec<serde_json::Value> = counts
            .iter()
            .map(|(area, n)| serde_json::json!({"area": area, "cases": n}))
            .collect();
        return serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
    }
    if args.markdown {
        let mut out = String::from("| area | cases |\n|---|---|\n");
        for (area, n) in &counts {
            out.push_str(&format!("| `{area}` | {n} |\n"));
        }
        return out;
    }
    counts
        .iter()
        .map(|(area, n)| format!("{area:<12}  {n}\n"))
        .collect()
}

/// Every check as declared, as a table, Markdown or JSON.
fn list_checks(args: &ListArgs) -> String {
    use crate::oracle::checks::ALL;
    if args.json {
        let rows: Vec<serde_json::Value> = ALL
            .iter()
            .map(|c| {
                serde_json::json!({"id": c.id, "level": c.level.as_str(), "family": c.family(), "rule": c.rule})
            })
            .collect();
        return serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
    }
    if args.markdown {
        let mut out = String::from("| id | level | the controller must |\n|---|---|---|\n");
        for c in ALL {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                c.id,
                c.level.as_str().to_uppercase(),
                c.rule
            ));
        }
        return out;
    }
    let width = ALL.iter().map(|c| c.id.len()).max().unwrap_or(0);
    ALL.iter()
        .map(|c| format!("{:<width$}  {:<6}  {}\n", c.id, c.level.as_str(), c.rule))
        .collect()
}

fn lint(args: LintArgs) -> u8 {
    match scenario::load_paths(&args.paths) {
        Ok(cases) => {
            println!("{} scenario file(s) OK", cases.len());
            exit::OK
        }
        Err(errors) => {
            print_scenario_errors(&errors);
            exit::USAGE
        }
    }
}

/// Parses `--controller NAME=CMD` (or `reference`) and `--supports NAME=LIST` options.
fn matrix_controllers(args: &MatrixArgs) -> Result<Vec<Controller>, String> {
    let mut controllers = Vec::new();
    for spec in &args.controllers {
        let controller = match spec.split_once('=') {
            Some((name, command)) if !name.trim().is_empty() && !command.trim().is_empty() => {
                command_controller(name.trim(), command)?
            }
            None if spec.trim() == "reference" => reference_controller("reference")?,
            _ => {
                return Err(format!(
                    "invalid --controller '{spec}': expected NAME=COMMAND, or `reference`"
                ));
            }
        };
        if controllers
            .iter()
            .any(|c: &Controller| c.name == controller.name)
        {
            return Err(format!("two controllers are named '{}'", controller.name));
        }
        controllers.push(controller);
    }
    for spec in &args.supports {
        let Some((name, list)) = spec.split_once('=') else {
            return Err(format!("invalid --supports '{spec}': expected NAME=LIST"));
        };
        let Some(controller) = controllers.iter_mut().find(|c| c.name == name.trim()) else {
            return Err(format!(
                "--supports names '{name}', which no --controller defines"
            ));
        };
        controller.supports = parse_capabilities(&[list])?;
    }
    Ok(controllers)
}

async fn matrix(args: MatrixArgs) -> u8 {
    let (cases, options) = match (args.selection.cases(), args.settings.options()) {
        (Ok(cases), Ok(options)) => (cases, options),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let controllers = match matrix_controllers(&args) {
        Ok(controllers) => controllers,
        Err(message) => return usage_error(message),
    };
    let outputs = check_files(&[
        ("matrix JSON", args.report_json.as_deref()),
        ("matrix Markdown", args.markdown.as_deref()),
        ("matrix HTML", args.html.as_deref()),
    ]);
    if let Err(message) = outputs {
        return usage_error(message);
    }
    let mut reporters = Reporters::new();
    if let Some(progress) = ProgressReporter::on_terminal() {
        reporters.push(progress);
    }
    reporters.push(MatrixReporter::new(
        Box::new(io::stdout()),
        args.report_json.clone(),
        args.markdown.clone(),
        args.html.clone(),
    ));
    let mut errors = false;
    for controller in &controllers {
        eprintln!(
            "loopcheck matrix: running {} case(s) against {}",
            cases.len(),
            controller.name
        );
        let reports = runner::run_all(&cases, controller, &options, &mut |event| {
            reporters.event(event)
        })
        .await;
        errors |= reports
            .iter()
            .any(|r| r.verdict == crate::oracle::CaseVerdict::Error);
    }
    if let Err(err) = reporters.finish() {
        eprintln!("error: {err}");
        return exit::FAILURES;
    }
    // A matrix compares controllers; their failures are its content, not an error. Only
    // cases loopcheck itself could not run make it fail.
    if errors { exit::FAILURES } else { exit::OK }
}

async fn record(args: RecordArgs) -> u8 {
    let options = crate::record::RecordOptions {
        upstream: args.upstream,
        upstream_ca: args.upstream_ca,
        out: args.out,
        mode: args.mode,
        task: args.task,
        state: args.state,
        redact_json: args.redact_json,
        redact_regex: args.redact_regex,
        command: args.command,
    };
    finish_recording(crate::record::record(&options)).await
}

/// Reports how a record or replay ended and gives its exit code.
async fn finish_recording(
    outcome: impl std::future::Future<
        Output = Result<crate::record::Finished, crate::record::RecordError>,
    >,
) -> u8 {
    use crate::record::RecordError;
    match outcome.await {
        Ok(finished) => {
            if !finished.summary.is_empty() {
                eprintln!("loopcheck: {}", finished.summary);
            }
            if let Some(comparison) = &finished.comparison {
                eprint!("{}", console::replay_report(comparison));
            }
            if !finished.status.success() {
                eprintln!("loopcheck: the command exited with {}", finished.status);
            }
            if finished.ok() {
                exit::OK
            } else {
                exit::FAILURES
            }
        }
        Err(err @ RecordError::Usage(_)) => usage_error(err.to_string()),
        Err(err @ RecordError::Interrupted(_)) => {
            eprintln!("loopcheck: {err}");
            exit::INTERRUPTED
        }
        Err(err) => {
            eprintln!("error: {err}");
            exit::FAILURES
        }
    }
}

async fn fuzz(args: FuzzArgs) -> u8 {
    use crate::fuzz::{FuzzOptions, FuzzOutcome, progress::FuzzProgress};
    let mut run = match args.settings.options() {
        Ok(run) => run,
        Err(code) => return code,
    };
    let controller = match controller_from(args.controller.as_deref(), args.supports.as_deref()) {
        Ok(controller) => controller,
        Err(message) => return usage_error(message),
    };
    if args.max_turns == 0 {
        return usage_error("invalid --max-turns 0: expected at least 1".to_owned());
    }
    if let Err(message) = crate::report::writable::check_folder("fuzz failures", &args.out) {
        return usage_error(message);
    }
    let seed = args.settings.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 % 1_000_000_007)
    });
    run.seed = seed;
    let options = FuzzOptions {
        controller,
        run,
        cases: args.cases,
        seed,
        out: args.out,
        max_turns: args.max_turns,
        time: args.time.map(Duration::from_secs_f64),
        max_shrink_steps: args.max_shrink_steps,
    };
    eprintln!(
        "loopcheck fuzz: seed {seed}, up to {} case(s) against {} (supports {})",
        options.cases,
        options.controller.name,
        options
            .controller
            .supports
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut progress = FuzzProgress::new();
    let outcome = crate::fuzz::fuzz(&options, &mut |event| progress.event(event)).await;
    progress.finish();
    match outcome {
        Err(err) => usage_error(err.to_string()),
        Ok(FuzzOutcome::Passed { cases, elapsed }) => {
            println!(
                "no failure in {cases} case(s) ({:.1} cases/s, seed {seed})",
                cases as f64 / elapsed.as_secs_f64().max(1e-3)
            );
            exit::OK
        }
        Ok(FuzzOutcome::StillFailing { file, failing }) => {
            println!(
                "a failure kept from an earlier run still fails ({}): {}\nreplay: {}",
                failing.join(", "),
                file.display(),
                crate::fuzz::replay_command(&file, &options)
            );
            exit::FAILURES
        }
        Ok(FuzzOutcome::Failed {
            file,
            failing,
            index,
            shrink_steps,
            elapsed,
            shrink_elapsed,
            ..
        }) => {
            println!(
                "generated case {index} (seed {seed}) fails {} after {:.1} s; shrunk in {shrink_steps} step(s) ({:.1} s) to {}\nreplay: {}",
                failing.join(", "),
                elapsed.as_secs_f64(),
                shrink_elapsed.as_secs_f64(),
                file.display(),
                crate::fuzz::replay_command(&file, &options)
            );
            exit::FAILURES
        }
    }
}
