//! `loopcheck snapshots review` and `pending`: the `.snap.new` files a run wrote beside
//! changed or new snapshots, settled without cargo (a Node or Python team has no
//! `cargo insta review`).
//!
//! Exit codes: 0 when nothing selected is left pending; 1 when some is (listed, or skipped
//! at the prompt); 2 for a usage error.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::config;
use crate::expectations::pending::{self, Pending};

use super::args::{PendingArgs, ReviewArgs, SnapshotsCommand};
use super::error::{CliError, exit};

pub(super) fn snapshots(command: SnapshotsCommand) -> Result<u8, CliError> {
    match command {
        SnapshotsCommand::Pending(args) => list(&selected(&args)?),
        SnapshotsCommand::Review(args) => review(&args),
    }
}

/// The folder given, else the profile's.
fn folder(args: &PendingArgs) -> Result<PathBuf, CliError> {
    if let Some(dir) = &args.snapshots {
        return Ok(dir.clone());
    }
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let profile = config::resolve(args.config.as_deref(), args.profile.as_deref(), &env)?;
    profile.snapshots.ok_or(CliError::NoSnapshots)
}

fn globs(filters: &[String]) -> Result<Option<GlobSet>, CliError> {
    if filters.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for glob in filters {
        builder.add(Glob::new(glob).map_err(|source| CliError::Filter {
            glob: glob.clone(),
            source,
        })?);
    }
    builder.build().map(Some).map_err(CliError::Filters)
}

/// The pending snapshots of the cases the filters select.
fn selected(args: &PendingArgs) -> Result<Vec<Pending>, CliError> {
    let dir = folder(args)?;
    let set = globs(&args.filter)?;
    Ok(pending::find(&dir)?
        .into_iter()
        .filter(|p| set.as_ref().is_none_or(|set| set.is_match(&p.case)))
        .collect())
}

/// One line per pending snapshot; exit 1 when there is any.
fn list(pending: &[Pending]) -> Result<u8, CliError> {
    if pending.is_empty() {
        println!("no snapshot is pending review");
        return Ok(exit::OK);
    }
    for p in pending {
        println!("{}  {} ({})", state_word(p), p.label, p.new.display());
    }
    println!(
        "\n{} snapshot(s) pending review: `loopcheck snapshots review` to go through them, or --accept / --reject",
        pending.len()
    );
    Ok(exit::FAILURES)
}

fn state_word(p: &Pending) -> &'static str {
    if p.is_new() { "new    " } else { "changed" }
}

/// What a person answered for one pending snapshot.
enum Answer {
    Accept,
    Reject,
    Skip,
}

fn review(args: &ReviewArgs) -> Result<u8, CliError> {
    let pending = selected(&args.pending)?;
    if args.accept || args.reject {
        for p in &pending {
            if args.accept {
                p.accept()?;
                println!("accepted {}", p.label);
            } else {
                p.reject()?;
                println!("rejected {}", p.label);
            }
        }
        if pending.is_empty() {
            println!("no snapshot is pending review");
        }
        return Ok(exit::OK);
    }
    // Never a prompt off a terminal: a CI job would wait for ever.
    if args.list || !io::stdin().is_terminal() {
        return list(&pending);
    }
    let mut left = 0;
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    for (n, p) in pending.iter().enumerate() {
        println!(
            "\n[{}/{}] {} snapshot {} ({})",
            n + 1,
            pending.len(),
            if p.is_new() { "new" } else { "changed" },
            p.label,
            p.snap.display()
        );
        print!("{}", p.diff()?);
        let answer = loop {
            print!("accept (a), reject (r), skip (s)? ");
            io::stdout().flush().map_err(CliError::Write)?;
            match lines.next() {
                // The input ended: what is left stays pending.
                None => break None,
                Some(line) => match line.map_err(CliError::Write)?.trim() {
                    "a" | "accept" => break Some(Answer::Accept),
                    "r" | "reject" => break Some(Answer::Reject),
                    "s" | "skip" | "" => break Some(Answer::Skip),
                    _ => {}
                },
            }
        };
        match answer {
            Some(Answer::Accept) => {
                p.accept()?;
                println!("accepted");
            }
            Some(Answer::Reject) => {
                p.reject()?;
                println!("rejected");
            }
            Some(Answer::Skip) => left += 1,
            None => {
                left += pending.len() - n;
                break;
            }
        }
    }
    if left > 0 {
        println!("\n{left} snapshot(s) still pending review");
        return Ok(exit::FAILURES);
    }
    Ok(exit::OK)
}
