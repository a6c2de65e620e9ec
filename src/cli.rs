//! The command line: `run`, `list`, `lint`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use globset::{Glob, GlobSetBuilder};

use crate::report::{Summary, console, json};
use crate::runner::{self, CAPABILITIES, Controller, RunOptions};
use crate::scenario::{self, Case, ScenarioError};

/// Exit codes.
pub mod exit {
    /// No case failed, timed out, crashed or errored.
    pub const OK: u8 = 0;
    /// Some case did.
    pub const FAILURES: u8 = 1;
    /// Usage or scenario-file errors.
    pub const USAGE: u8 = 2;
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
    /// Run the built-in Rust reference controller (contract v1, from the environment).
    #[command(hide = true)]
    ReferenceController,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Scenario files or directories (default: the embedded catalogue).
    paths: Vec<PathBuf>,
    /// The controller command, run with `sh -c` (default: the Rust reference controller).
    #[arg(long)]
    controller: Option<String>,
    /// Comma-separated capabilities the controller supports.
    #[arg(long, value_delimiter = ',')]
    supports: Option<Vec<String>>,
    /// Per-case timeout in seconds.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// Cases run at once (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write the JSON report here.
    #[arg(long)]
    report_json: Option<PathBuf>,
    /// Only cases whose id matches one of these globs (e.g. `dispatch/*`).
    #[arg(long)]
    filter: Vec<String>,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Print a JSON array instead of a table.
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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("loopcheck: failed to start the async runtime: {err}");
            return ExitCode::from(exit::FAILURES);
        }
    };
    let code = match cli.command {
        Command::Run(args) => runtime.block_on(run(args)),
        Command::List(args) => list(args),
        Command::Lint(args) => lint(args),
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

fn usage_error(message: String) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}

fn controller_from(args: &RunArgs) -> Result<Controller, String> {
    let supports = match &args.supports {
        Some(words) => {
            let words: BTreeSet<String> = words
                .iter()
                .map(|w| w.trim().to_owned())
                .filter(|w| !w.is_empty())
                .collect();
            if let Some(unknown) = words.iter().find(|w| !CAPABILITIES.contains(&w.as_str())) {
                return Err(format!(
                    "unknown capability '{unknown}' in --supports: expected some of {}",
                    CAPABILITIES.join(", ")
                ));
            }
            words
        }
        None if args.controller.is_none() => CAPABILITIES
            .iter()
            .filter(|c| **c != "persistent")
            .map(|s| s.to_string())
            .collect(),
        None => runner::default_capabilities(),
    };
    match &args.controller {
        Some(command) => Ok(Controller {
            name: command.clone(),
            command: command.clone(),
            supports,
        }),
        None => {
            let exe = std::env::current_exe()
                .map_err(|err| format!("failed to find the loopcheck executable: {err}"))?;
            Ok(Controller {
                name: "reference (rust)".to_owned(),
                command: format!(
                    "{} reference-controller",
                    shell_quote(&exe.to_string_lossy())
                ),
                supports,
            })
        }
    }
}

/// Single-quotes a word for `sh`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
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

async fn run(args: RunArgs) -> u8 {
    let cases = match load(&args.paths) {
        Ok(cases) => cases,
        Err(errors) => {
            print_scenario_errors(&errors);
            return exit::USAGE;
        }
    };
    let cases = match filter_cases(cases, &args.filter) {
        Ok(cases) => cases,
        Err(message) => return usage_error(message),
    };
    if cases.is_empty() {
        return usage_error("no case matches: nothing to run".to_owned());
    }
    let controller = match controller_from(&args) {
        Ok(controller) => controller,
        Err(message) => return usage_error(message),
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return usage_error(format!(
            "invalid --timeout {}: expected a positive number of seconds",
            args.timeout
        ));
    }
    let mut options = RunOptions {
        timeout: Duration::from_secs_f64(args.timeout),
        ..RunOptions::default()
    };
    if let Some(jobs) = args.jobs {
        if jobs == 0 {
            return usage_error("invalid --jobs 0: expected at least 1".to_owned());
        }
        options.jobs = jobs;
    }
    let runs = runner::plan(&cases).len();
    println!(
        "loopcheck {}: {} case(s), {runs} run(s) against {} ({} at a time)",
        env!("CARGO_PKG_VERSION"),
        cases.len(),
        controller.name,
        options.jobs
    );
    let started = Instant::now();
    let reports = runner::run_all(&cases, &controller, &options, |report| {
        println!("{}", console::case_line(report))
    })
    .await;
    print!("{}", console::details(&reports));
    println!("finished in {:.1} s", started.elapsed().as_secs_f64());
    if let Some(path) = &args.report_json {
        let document = json::render(&controller.name, &reports);
        if let Err(err) = runner::write_atomic(path, &document) {
            eprintln!(
                "error: failed to write the JSON report to {}: {err}",
                path.display()
            );
            return exit::FAILURES;
        }
    }
    if Summary::of(&reports).ok() {
        exit::OK
    } else {
        exit::FAILURES
    }
}

fn list(args: ListArgs) -> u8 {
    let cases = match scenario::catalogue() {
        Ok(cases) => cases,
        Err(errors) => {
            print_scenario_errors(&errors);
            return exit::USAGE;
        }
    };
    if args.json {
        let rows: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.scenario.id,
                    "level": c.scenario.level.as_str(),
                    "area": c.scenario.area(),
                    "summary": c.scenario.summary,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
    } else {
        let width = cases.iter().map(|c| c.scenario.id.len()).max().unwrap_or(0);
        for c in &cases {
            println!(
                "{:<width$}  {:<6}  {:<12}  {}",
                c.scenario.id,
                c.scenario.level.as_str(),
                c.scenario.area(),
                c.scenario.summary.trim()
            );
        }
    }
    exit::OK
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
