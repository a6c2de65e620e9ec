//! `loopcheck record` and `loopcheck replay`: a command's model traffic kept as a
//! cassette, and replayed to it.

use crate::record::{self, Finished, ListenOutcome, RecordError, RecordOptions};
use crate::report::console;

use super::args::{RecordArgs, ReplayArgs};
use super::error::{CliError, exit};

pub(super) async fn record(args: RecordArgs) -> Result<u8, CliError> {
    let options = RecordOptions {
        upstream: args.upstream,
        upstream_ca: args.upstream_ca,
        out: args.out,
        mode: args.mode,
        task: args.task,
        state: args.state,
        redact_json: args.redact_json,
        redact_regex: args.redact_regex,
        match_on: Some(args.match_on),
        listen: args.listen,
        command: args.command,
    };
    if options.listen {
        return listened(record::listen(&options).await);
    }
    finish_recording(record::record(&options).await)
}

/// Prints how a listening recorder ended, as its last JSON line, and gives its exit code.
fn listened(outcome: Result<ListenOutcome, RecordError>) -> Result<u8, CliError> {
    let outcome = outcome?;
    let line = serde_json::to_string(&outcome).unwrap_or_default();
    println!("{line}");
    for change in outcome.drift.iter().chain(&outcome.missing) {
        eprintln!("loopcheck: {change}");
    }
    Ok(if outcome.ok() {
        exit::OK
    } else {
        exit::FAILURES
    })
}

pub(super) async fn replay(args: ReplayArgs) -> Result<u8, CliError> {
    finish_recording(record::replay(&args.cassette, &args.command).await)
}

/// Reports how a record or replay ended and gives its exit code.
fn finish_recording(outcome: Result<Finished, RecordError>) -> Result<u8, CliError> {
    let finished = outcome?;
    if !finished.summary.is_empty() {
        eprintln!("loopcheck: {}", finished.summary);
    }
    if let Some(comparison) = &finished.comparison {
        eprint!("{}", console::replay_report(comparison));
    }
    if !finished.status.success() {
        eprintln!("loopcheck: the command exited with {}", finished.status);
    }
    Ok(if finished.ok() {
        exit::OK
    } else {
        exit::FAILURES
    })
}
