//! The entry point: parses the arguments, runs the command, and turns its outcome or
//! its error into the exit code.

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use clap::Parser;

use crate::config;
use crate::scenario;

use super::args::{Cli, Command};
use super::error::{CliError, exit};

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // The reference controller runs a case at a time: one thread starts faster than a
    // pool, and its loop awaits one thing at a time (parallel calls run as futures).
    let mut builder = match cli.command {
        Command::ReferenceController => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let code = match builder.enable_all().build() {
        Ok(runtime) => install_redactor(&cli.command)
            .and_then(|()| dispatch(cli.command, &runtime))
            .unwrap_or_else(|err| err.report()),
        Err(err) => CliError::Runtime(err).report(),
    };
    ExitCode::from(code)
}

/// Runs a command; its exit code when it reached its verdict.
fn dispatch(command: Command, runtime: &tokio::runtime::Runtime) -> Result<u8, CliError> {
    match command {
        Command::Run(args) => runtime.block_on(super::run::run(args)),
        Command::List(args) => super::list::list(args),
        Command::Lint(args) => super::lint::lint(args),
        Command::Matrix(args) => runtime.block_on(super::matrix::matrix(args)),
        Command::Record(args) => runtime.block_on(super::record::record(args)),
        Command::Fuzz(args) => runtime.block_on(super::fuzz::fuzz(args)),
        Command::Merge(args) => super::merge::merge(args),
        Command::Task(args) => super::task::task(args),
        Command::Init(args) => super::init::init(args),
        Command::Serve(args) => runtime.block_on(super::serve::serve(args)),
        Command::Schema => {
            print!("{}", scenario::schema::scenario_schema_text());
            Ok(exit::OK)
        }
        Command::Replay(args) => runtime.block_on(super::record::replay(args)),
        Command::Snapshots(command) => super::snapshots::snapshots(command),
        Command::Baseline(command) => runtime.block_on(super::baseline::baseline(command)),
        // A persistent worker is started without the contract's variables and reads its
        // cases from standard input; a person at a terminal gets the one-case mode's
        // error about the variables instead of a wait.
        Command::ReferenceController
            if std::env::var_os(crate::contract::var::TASK).is_none()
                && !io::stdin().is_terminal() =>
        {
            runtime.block_on(loopcheck_reference::run_persistent());
            Ok(exit::OK)
        }
        Command::ReferenceController => {
            let outcome = runtime.block_on(loopcheck_reference::run_from_env());
            println!("{}", loopcheck_reference::result_line(&outcome));
            Ok(exit::OK)
        }
    }
}

/// Installs the one redactor of a command that runs controllers or reports on them:
/// the built-in rules plus the settings file's `[redact]` table.
fn install_redactor(command: &Command) -> Result<(), CliError> {
    let config = match command {
        Command::Run(args) => args.config.as_deref(),
        Command::Record(args) => args.config.as_deref(),
        Command::Baseline(
            super::args::BaselineCommand::Prune(args) | super::args::BaselineCommand::Update(args),
        ) => args.config.as_deref(),
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
