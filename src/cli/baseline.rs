//! `loopcheck baseline prune` and `update`: a baseline kept current from a run of the
//! suite, the same controller, profile and selection as `run`, instead of by hand.
//!
//! Exit codes: 0 when the baseline was written and the run fails nothing beyond it; 1 when
//! the run has failures the baseline does not expect (`prune` only: `update` expects them
//! all); 2 for a usage error; 130 when interrupted (nothing written).

use crate::expectations::Baseline;
use crate::expectations::baseline::{Entry, describe};
use crate::oracle::CaseVerdict;

use super::args::{BaselineCommand, RunArgs};
use super::error::{CliError, exit};
use super::run::{execute, with_settings};

pub(super) async fn baseline(command: BaselineCommand) -> Result<u8, CliError> {
    match command {
        BaselineCommand::Prune(args) => prune(args).await,
        BaselineCommand::Update(args) => update(args).await,
    }
}

/// The baseline split into the entries this run can judge and those of cases that its
/// `--filter` and `--exclude` leave out, kept as they are: narrowing a run never drops
/// the entry of a case that still exists.
fn split(args: &RunArgs, baseline: Baseline) -> Result<(Baseline, Vec<Entry>), CliError> {
    let left_out = args.selection.left_out()?;
    let (outside, inside) = baseline
        .expected
        .into_iter()
        .partition(|e| left_out.contains(&e.case));
    Ok((Baseline { expected: inside }, outside))
}

/// The settings resolved, and the baseline file; a run of only part of the selection is
/// refused, since what it did not run would be dropped.
fn prepare(args: RunArgs) -> Result<(RunArgs, std::path::PathBuf), CliError> {
    let args = with_settings(args)?;
    if args.partition.is_some() {
        return Err(CliError::PartialRun {
            flag: "--partition",
        });
    }
    if args.last_failed {
        return Err(CliError::PartialRun {
            flag: "--last-failed",
        });
    }
    let path = args.baseline.clone().ok_or(CliError::NoBaseline)?;
    Ok((args, path))
}

fn write(path: &std::path::Path, baseline: &Baseline) -> Result<(), CliError> {
    crate::report::write_file("baseline", path, baseline.to_toml().as_bytes())
        .map_err(CliError::Write)
}

async fn prune(args: RunArgs) -> Result<u8, CliError> {
    let (args, path) = prepare(args)?;
    let (before, outside) = split(&args, Baseline::load(&path)?)?;
    let Some(reports) = execute(&args, Some(before.clone()), false).await? else {
        return Ok(exit::OK);
    };
    let mut pruned = before.prune(&reports);
    pruned.baseline.expected.extend(outside);
    write(&path, &pruned.baseline)?;
    println!();
    for (entry, why) in &pruned.dropped {
        println!("dropped {}: {why}", describe(entry));
    }
    for (entry, why) in &pruned.narrowed {
        println!("narrowed {}: {why}", describe(entry));
    }
    println!(
        "baseline {}: {} entr{} kept, {} dropped, {} narrowed",
        path.display(),
        pruned.baseline.expected.len(),
        if pruned.baseline.expected.len() == 1 {
            "y"
        } else {
            "ies"
        },
        pruned.dropped.len(),
        pruned.narrowed.len()
    );
    // A stale entry is what pruning removed; any other failure the baseline does not
    // expect is still a failure.
    let unexpected = reports
        .iter()
        .any(|r| r.verdict.is_failure() && r.verdict != CaseVerdict::Stale);
    Ok(if unexpected { exit::FAILURES } else { exit::OK })
}

async fn update(args: RunArgs) -> Result<u8, CliError> {
    let (args, path) = prepare(args)?;
    let (before, outside) = split(
        &args,
        if path.exists() {
            Baseline::load(&path)?
        } else {
            Baseline::default()
        },
    )?;
    let Some(reports) = execute(&args, Some(before.clone()), false).await? else {
        return Ok(exit::OK);
    };
    let mut after = before.updated(&reports);
    after.expected.extend(outside.iter().cloned());
    write(&path, &after)?;
    println!();
    for entry in before
        .expected
        .iter()
        .filter(|e| !after.expected.contains(e))
    {
        println!("removed {}", describe(entry));
    }
    for entry in after
        .expected
        .iter()
        .filter(|e| !before.expected.contains(e) && !outside.contains(e))
    {
        println!("added {}", describe(entry));
    }
    println!(
        "baseline {}: {} entr{} (was {})",
        path.display(),
        after.expected.len(),
        if after.expected.len() == 1 {
            "y"
        } else {
            "ies"
        },
        before.expected.len() + outside.len()
    );
    Ok(exit::OK)
}
