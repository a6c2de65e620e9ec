//! `loopcheck fuzz`: generated cases against a controller (the one `run` would run:
//! the flags, else `loopcheck.toml`, else the reference); every failure group shrunk to
//! a scenario file.

use std::time::Duration;

use crate::config;
use crate::fuzz::{FuzzOptions, FuzzOutcome, progress::FuzzProgress};
use crate::report::writable;

use super::args::FuzzArgs;
use super::controllers::controller_from;
use super::error::{CliError, exit};
use super::run::controller_settings;

/// Where the fuzzed controller was named, for the first line: a CI step that fuzzes the
/// reference instead of the team's loop must say so.
fn controller_origin(args: &FuzzArgs, env: &dyn Fn(&str) -> Option<String>) -> String {
    if args.controller.is_some() {
        return "from --controller".to_owned();
    }
    if env("LOOPCHECK_CONTROLLER").is_some() {
        return "from LOOPCHECK_CONTROLLER".to_owned();
    }
    let file = args
        .config
        .as_ref()
        .map_or_else(|| config::FILE_NAME.to_owned(), |p| p.display().to_string());
    let profile = args
        .profile
        .clone()
        .or_else(|| env("LOOPCHECK_PROFILE"))
        .unwrap_or_else(|| config::DEFAULT_PROFILE.to_owned());
    format!("from {file}, profile {profile}")
}

pub(super) async fn fuzz(mut args: FuzzArgs) -> Result<u8, CliError> {
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let profile = config::resolve(args.config.as_deref(), args.profile.as_deref(), &env)?;
    let origin = match (&args.controller, &profile.controller) {
        (None, None) => "the default: no --controller and none in loopcheck.toml".to_owned(),
        _ => controller_origin(&args, &env),
    };
    controller_settings(
        &profile,
        &mut args.controller,
        &mut args.supports,
        &mut args.settings,
    );
    let mut run = args.settings.options()?;
    let controller = controller_from(args.controller.as_deref(), args.supports.as_deref())?;
    if args.max_turns == 0 {
        return Err(CliError::Flag {
            flag: "max-turns",
            value: "0".to_owned(),
            expected: "at least 1",
        });
    }
    writable::check_folder("fuzz failures", &args.out)?;
    let seed = args.settings.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 % 1_000_000_007)
    });
    run.seed = seed;
    let options = FuzzOptions {
        controller,
        in_process: None,
        run,
        cases: args.cases,
        seed,
        out: args.out,
        max_turns: args.max_turns,
        time: args.time.map(Duration::from_secs_f64),
        max_shrink_steps: args.max_shrink_steps,
        fail_fast: args.fail_fast,
        drops: args.drops,
        prune: args.prune,
    };
    let shown = if args.controller.is_some() {
        format!("`{}`", options.controller.command)
    } else {
        options.controller.name.clone()
    };
    eprintln!(
        "loopcheck fuzz: seed {seed}, up to {} case(s) against {shown} ({origin}; supports {})",
        options.cases,
        options
            .controller
            .supports
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut progress = FuzzProgress::new();
    let outcome = crate::fuzz::fuzz(&options, &mut |event| {
        progress.event(event);
    })
    .await;
    progress.finish();
    let outcome = outcome?;
    print!("{}", summary(&outcome, &options));
    Ok(if outcome.failed() {
        exit::FAILURES
    } else {
        exit::OK
    })
}

/// What a fuzz run found, as printed: the kept failures, each failure group with its
/// checks, its shrunk file and the command that replays it, and the counts.
fn summary(outcome: &FuzzOutcome, options: &FuzzOptions) -> String {
    let mut out = String::new();
    let seed = options.seed;
    for kept in &outcome.kept {
        let file = kept.file.display();
        if !kept.failing.is_empty() {
            out += &format!(
                "a failure kept from an earlier run still fails ({}): {file}\n  replay: {}\n",
                kept.failing.join(", "),
                crate::fuzz::replay_command(&kept.file, options)
            );
        } else if kept.pruned {
            out += &format!("a failure kept from an earlier run now passes: deleted {file}\n");
        } else {
            out += &format!(
                "a failure kept from an earlier run now passes: {file}\n  delete it: rm '{}' (or fuzz with --prune)\n",
                kept.file.to_string_lossy().replace('\'', r"'\''")
            );
        }
    }
    for (number, group) in outcome.groups.iter().enumerate() {
        out += &format!(
            "failure group {}: fails {} ({} generated case(s), the first case {} after {:.1} s)\n",
            number + 1,
            group.checks.join(", "),
            group.cases,
            group.index,
            group.found_after.as_secs_f64()
        );
        if let Some(shrunk) = &group.shrunk {
            out += &format!(
                "  shrunk in {} step(s) ({:.1} s) from {} to {}\n  kept: {}\n  replay: {}\n",
                shrunk.steps,
                shrunk.elapsed.as_secs_f64(),
                shrunk.before,
                shrunk.after,
                shrunk.file.display(),
                crate::fuzz::replay_command(&shrunk.file, options)
            );
        } else if let Some(kept) = &group.kept {
            out += &format!(
                "  the kept failure {} fails the same checks: not shrunk again\n",
                kept.display()
            );
        }
    }
    let rate = outcome.cases as f64 / outcome.elapsed.as_secs_f64().max(1e-3);
    if outcome.groups.is_empty() {
        out += &format!(
            "no failure in {} case(s) ({rate:.1} cases/s, seed {seed})\n",
            outcome.cases
        );
    } else {
        out += &format!(
            "{} failure group(s) in {} case(s) ({:.1} s, seed {seed})\n",
            outcome.groups.len(),
            outcome.cases,
            outcome.elapsed.as_secs_f64()
        );
    }
    out
}
