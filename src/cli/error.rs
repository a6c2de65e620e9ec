//! The command line's one error type: every way a command can stop early, each with its
//! exit code and the line (or lines) it prints on standard error. A hint a user can act
//! on is the message's last line, `(hint: ...)`, as the layer that knows it wrote it.

use std::io;

use crate::config::ConfigError;
use crate::expectations::baseline::BaselineError;
use crate::expectations::pending::PendingError;
use crate::expectations::snapshot::SnapshotError;
use crate::fuzz::FuzzError;
use crate::init::InitError;
use crate::record::RecordError;
use crate::report::merge::MergeError;
use crate::report::writable::Unwritable;
use crate::rules::RulesError;
use crate::scenario::ScenarioError;

use super::controllers::ControllerError;

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

/// Why a command stopped before its verdict.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag's value is out of range.
    #[error("invalid --{flag} {value}: expected {expected}")]
    Flag {
        /// The flag, without its dashes.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A `--filter` glob does not parse.
    #[error("invalid --filter '{glob}': {source}")]
    Filter {
        /// The glob.
        glob: String,
        /// Why not.
        source: globset::Error,
    },
    /// The filters together do not build.
    #[error("invalid --filter: {0}")]
    Filters(globset::Error),
    /// Filters that match no case (each must match at least one).
    #[error("no case matches --filter {}", .0.iter().map(|g| format!("'{g}'")).collect::<Vec<_>>().join(", "))]
    UnmatchedFilters(Vec<String>),
    /// The last run's failures cannot be read for `--last-failed`.
    #[error("cannot read the last run's failures at {}: {why}", .path.display())]
    LastFailed {
        /// Where they are kept.
        path: std::path::PathBuf,
        /// Why not.
        why: String,
    },
    /// The selection is empty.
    #[error("no case matches: nothing to run")]
    NoCase,
    /// No case has the id asked for; `near` holds the ids that contain it.
    #[error("no case '{case}' in the catalogue: {}", did_you_mean(.near))]
    UnknownCase {
        /// The id asked for.
        case: String,
        /// The ids that contain it.
        near: Vec<String>,
    },
    /// The case does not run in the state mode or delivery asked for.
    #[error("{case} does not run in {asked}: it runs in {}", .runs.join(", "))]
    NotRunIn {
        /// The case id.
        case: String,
        /// The state mode, or `delivery` and the delivery.
        asked: String,
        /// What it runs in.
        runs: Vec<&'static str>,
    },
    /// Scenario files that do not load, one line each.
    #[error("{}", lines(.0))]
    Scenarios(Vec<ScenarioError>),
    /// Several mistakes found at once, each printed; the first gives the exit code.
    #[error("{}", lines(.0))]
    Several(Vec<CliError>),
    /// The settings file or the `LOOPCHECK_*` variables.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The controller or its capabilities.
    #[error(transparent)]
    Controller(#[from] ControllerError),
    /// An output that cannot be written, found before anything runs.
    #[error(transparent)]
    Unwritable(#[from] Unwritable),
    /// The baseline.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// The snapshot folder.
    #[error(transparent)]
    Snapshots(#[from] SnapshotError),
    /// Snapshots waiting for review that cannot be listed, accepted or rejected.
    #[error(transparent)]
    Pending(#[from] PendingError),
    /// A command that works on the snapshot folder is given none.
    #[error(
        "no snapshot folder: give --snapshots DIR, or set `snapshots` in the profile of loopcheck.toml"
    )]
    NoSnapshots,
    /// `baseline prune` or `update` is given no baseline.
    #[error(
        "no baseline: give --baseline FILE, or set `baseline` in the profile of loopcheck.toml"
    )]
    NoBaseline,
    /// `baseline prune` or `update` asked to judge only part of the suite's runs.
    #[error(
        "{flag} runs only part of the selection, and `loopcheck baseline` would drop the entries of the rest\n(hint: narrow with --filter or --exclude instead, or run without {flag})"
    )]
    PartialRun {
        /// The flag.
        flag: &'static str,
    },
    /// The shard reports to merge.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The rule registry or the mutants.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// A record or replay.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The fuzzer's folder.
    #[error(transparent)]
    Fuzz(#[from] FuzzError),
    /// The starter files.
    #[error(transparent)]
    Init(#[from] InitError),
    /// `serve` cannot take its port.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Listen {
        /// The port asked for.
        port: u16,
        /// Why not.
        source: io::Error,
    },
    /// Signals cannot be listened for, so a run could not stop cleanly.
    #[error("failed to listen for Ctrl-C: {0}")]
    Signals(io::Error),
    /// A report (or baseline) could not be written after the run.
    #[error("{0}")]
    Write(io::Error),
    /// A listing could not be written to standard output.
    #[error("writing the listing: {0}")]
    Listing(io::Error),
    /// The async runtime does not start.
    #[error("failed to start the async runtime: {0}")]
    Runtime(io::Error),
    /// A run stopped by Ctrl-C or SIGTERM, after writing its reports.
    #[error("interrupted: the reports hold the case runs judged before")]
    Interrupted,
}

/// Where to look for a case id: the ids near it, else the listing.
fn did_you_mean(near: &[String]) -> String {
    if near.is_empty() {
        "see `loopcheck list`".to_owned()
    } else {
        format!("did you mean {}?", near.join(", "))
    }
}

/// Items one per line.
fn lines<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl CliError {
    /// The process's exit code (see [`exit`]).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Several(all) => all.first().map_or(exit::USAGE, CliError::exit_code),
            CliError::Record(RecordError::Interrupted(_)) | CliError::Interrupted => {
                exit::INTERRUPTED
            }
            CliError::Record(err) if !err.is_usage() => exit::FAILURES,
            CliError::Signals(_) | CliError::Write(_) | CliError::Runtime(_) => exit::FAILURES,
            _ => exit::USAGE,
        }
    }

    /// What starts each line printed: `error: ` for a mistake or a failure,
    /// `loopcheck: ` for how loopcheck itself stopped.
    fn prefix(&self) -> &'static str {
        match self {
            CliError::Record(RecordError::Interrupted(_))
            | CliError::Interrupted
            | CliError::Runtime(_) => "loopcheck: ",
            _ => "error: ",
        }
    }

    /// Prints the error on standard error and gives the exit code.
    pub fn report(&self) -> u8 {
        // Nothing is left to tell the user when standard error itself fails.
        let _ = self.write_to(&mut io::stderr().lock());
        self.exit_code()
    }

    /// The lines [`CliError::report`] prints: each prefixed, a hint last where the
    /// message has one.
    fn write_to(&self, out: &mut impl io::Write) -> io::Result<()> {
        match self {
            CliError::Scenarios(errors) => {
                for error in errors {
                    writeln!(out, "{}{error}", self.prefix())?;
                }
            }
            CliError::Several(all) => {
                for error in all {
                    error.write_to(out)?;
                }
            }
            _ => writeln!(out, "{}{self}", self.prefix())?,
        }
        Ok(())
    }
}

/// Both results, or the errors of both: a run with a bad selection and bad settings
/// names both mistakes, not only the first.
pub(super) fn both<A, B>(
    a: Result<A, CliError>,
    b: Result<B, CliError>,
) -> Result<(A, B), CliError> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(a), Err(b)) => Err(CliError::Several(vec![a, b])),
        (Err(err), _) | (_, Err(err)) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(err: &CliError) -> String {
        let mut out = Vec::new();
        err.write_to(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_error_prints_its_lines_with_its_prefix() {
        assert_eq!(
            printed(&CliError::NoCase),
            "error: no case matches: nothing to run\n"
        );
        assert_eq!(
            printed(&CliError::Interrupted),
            "loopcheck: interrupted: the reports hold the case runs judged before\n"
        );
        let both = CliError::Several(vec![
            CliError::NoCase,
            CliError::Flag {
                flag: "jobs",
                value: "0".to_owned(),
                expected: "at least 1",
            },
        ]);
        assert_eq!(
            printed(&both),
            "error: no case matches: nothing to run\nerror: invalid --jobs 0: expected at least 1\n"
        );
    }

    #[test]
    fn exit_codes_keep_their_numbers() {
        assert_eq!(CliError::NoCase.exit_code(), 2);
        assert_eq!(CliError::Write(io::Error::other("x")).exit_code(), 1);
        assert_eq!(CliError::Interrupted.exit_code(), 130);
        let two = CliError::Several(vec![
            CliError::Runtime(io::Error::other("x")),
            CliError::NoCase,
        ]);
        assert_eq!(two.exit_code(), 1);
    }
}
