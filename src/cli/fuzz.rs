//! `loopcheck fuzz`: generated cases against a controller; the first failure shrunk to
//! a scenario file.

use std::time::Duration;

use crate::fuzz::{FuzzOptions, FuzzOutcome, progress::FuzzProgress};
use crate::report::writable;

use super::args::FuzzArgs;
use super::controllers::controller_from;
use super::error::{CliError, exit};

pub(super) async fn fuzz(args: FuzzArgs) -> Result<u8, CliError> {
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
    Ok(match outcome? {
        FuzzOutcome::Passed { cases, elapsed } => {
            println!(
                "no failure in {cases} case(s) ({:.1} cases/s, seed {seed})",
                cases as f64 / elapsed.as_secs_f64().max(1e-3)
            );
            exit::OK
        }
        FuzzOutcome::StillFailing { file, failing } => {
            println!(
                "a failure kept from an earlier run still fails ({}): {}\nreplay: {}",
                failing.join(", "),
                file.display(),
                crate::fuzz::replay_command(&file, &options)
            );
            exit::FAILURES
        }
        FuzzOutcome::Failed {
            file,
            failing,
            index,
            shrink_steps,
            elapsed,
            shrink_elapsed,
            ..
        } => {
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
    })
}
