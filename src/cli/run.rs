//! `loopcheck run`: the cases against one controller, judged and reported.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use crate::config::{self, ConfigError};
use crate::expectations::Baseline;
use crate::expectations::Snapshots;
use crate::interrupt::Interrupt;
use crate::report::console::ConsoleReporter;
use crate::report::html::HtmlReporter;
use crate::report::json::JsonReporter;
use crate::report::junit::JunitReporter;
use crate::report::progress::ProgressReporter;
use crate::report::summary::SummaryReporter;
use crate::report::{CaseReport, Reporters, Summary};
use crate::runner;

use super::args::{RunArgs, Settings};
use super::controllers::controller_from;
use super::error::{CliError, both, exit};
use super::last_failed;
use super::outputs::check_files;

/// Fills what the command line leaves unset from the resolved settings (environment,
/// then profile).
pub(super) fn with_settings(mut args: RunArgs) -> Result<RunArgs, ConfigError> {
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let profile = config::resolve(args.config.as_deref(), args.profile.as_deref(), &env)?;
    controller_settings(
        &profile,
        &mut args.controller,
        &mut args.supports,
        &mut args.settings,
    );
    if args.selection.paths.is_empty() {
        args.selection.paths = profile.paths.unwrap_or_default();
    }
    if args.selection.filter.is_empty() {
        args.selection.filter = profile.filter.unwrap_or_default();
    }
    args.settings.seed = args.settings.seed.or(profile.seed);
    args.reports.report_json = args.reports.report_json.or(profile.report_json);
    args.reports.junit = args.reports.junit.or(profile.junit);
    args.reports.html = args.reports.html.or(profile.html);
    args.reports.summary_markdown = args.reports.summary_markdown.or(profile.summary_markdown);
    args.baseline = args.baseline.or(profile.baseline);
    args.snapshots = args.snapshots.or(profile.snapshots);
    args.partition = args.partition.or(profile.partition);
    if args.selection.exclude.is_empty() {
        args.selection.exclude = profile.exclude.unwrap_or_default();
    }
    args.retries = args.retries.or(profile.retries);
    args.fail_fast |= profile.fail_fast.unwrap_or(false);
    Ok(args)
}

/// Fills the controller, its capabilities, timeouts and jobs the command line leaves
/// unset from the resolved settings: what every command that runs a controller shares.
pub(super) fn controller_settings(
    profile: &config::Profile,
    controller: &mut Option<String>,
    supports: &mut Option<Vec<String>>,
    settings: &mut Settings,
) {
    if controller.is_none() {
        controller.clone_from(&profile.controller);
    }
    if supports.is_none() {
        supports.clone_from(&profile.supports);
    }
    settings.timeout = settings.timeout.or(profile.timeout);
    settings.startup_timeout = settings.startup_timeout.or(profile.startup_timeout);
    settings.jobs = settings.jobs.or(profile.jobs);
}

pub(super) async fn run(args: RunArgs) -> Result<u8, CliError> {
    let args = with_settings(args)?;
    let baseline = match &args.baseline {
        Some(path) => Some(Baseline::load(path)?),
        None => None,
    };
    let Some(reports) = execute(&args, baseline, true).await? else {
        return Ok(exit::OK);
    };
    if let Some(path) = &args.write_baseline {
        let text = Baseline::of_failures(&reports).to_toml();
        crate::report::write_file("baseline", path, text.as_bytes()).map_err(CliError::Write)?;
    }
    Ok(if Summary::of(&reports).ok() {
        exit::OK
    } else {
        exit::FAILURES
    })
}

/// Runs the selected cases as `run` does, `baseline` applied (its entries that match no
/// case named on standard error when `note_unmatched`), and reports them; the case
/// reports, or `None` when `--last-failed` finds nothing to rerun.
pub(super) async fn execute(
    args: &RunArgs,
    baseline: Option<Baseline>,
    note_unmatched: bool,
) -> Result<Option<Vec<CaseReport>>, CliError> {
    let (cases, mut options) = both(args.selection.cases(), args.settings.options())?;
    args.reports
        .check()
        .and_then(|()| check_files(&[("baseline", args.write_baseline.as_deref())]))?;
    if let Some(dir) = &args.snapshots {
        let redactions = config::snapshot_redactions(args.config.as_deref())?;
        options.snapshots = Some(Snapshots::open(dir, args.update_snapshots, redactions)?);
    }
    let controller = controller_from(args.controller.as_deref(), args.supports.as_deref())?;
    options.partition = args.partition;
    options.fail_fast = args.fail_fast;
    options.retries = args.retries.unwrap_or(0);
    let last_failed_path = last_failed::default_path();
    if args.last_failed {
        let runs = last_failed::load(&last_failed_path)?;
        if runs.is_empty() {
            println!("loopcheck: the last run had no failing case run: nothing to rerun");
            return Ok(None);
        }
        options.only_runs = Some(Arc::new(runs));
    }
    if let Some(baseline) = baseline {
        let ids = cases.iter().map(|c| c.scenario.id.as_str()).collect();
        if note_unmatched {
            for case in baseline.unmatched(&ids) {
                eprintln!("note: the baseline's entry for '{case}' matches no case of this run");
            }
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
    reporters.push(ConsoleReporter::new(console, live).quiet(args.quiet));
    if let Some(path) = &args.reports.report_json {
        reporters.push(JsonReporter::new(path.clone()));
    }
    if let Some(path) = &args.reports.junit {
        reporters.push(JunitReporter::new(path.clone()));
    }
    if let Some(path) = &args.reports.html {
        reporters.push(HtmlReporter::new(path.clone()));
    }
    if let Some(path) = &args.reports.summary_markdown {
        reporters.push(SummaryReporter::new(path.clone()));
    }
    // Listening before the first case starts: a signal from then on stops the run
    // cleanly, with a partial report.
    let interrupt = Interrupt::listen().map_err(CliError::Signals)?;
    let ran = runner::run_all_until(
        &cases,
        &controller,
        &options,
        &mut |event| reporters.event(event),
        interrupt.first(),
    )
    .await;
    reporters.finish().map_err(CliError::Write)?;
    if ran.interrupted {
        // A partial run's failures are no baseline.
        return Err(CliError::Interrupted);
    }
    let reports = ran.reports;
    // The next `--last-failed` reruns what failed here; a run goes on without it.
    if let Err(err) = last_failed::save(&last_failed_path, &reports) {
        eprintln!("note: {err}");
    }
    if let Some(snapshots) = &options.snapshots
        && reports.iter().any(|r| r.snapshot.is_some())
    {
        // A typo in a selector would otherwise redact nothing, silently.
        for selector in snapshots.unmatched_redactions() {
            eprintln!("note: the snapshot redaction '{selector}' matched nothing in this run");
        }
    }
    Ok(Some(reports))
}
