//! `loopcheck merge`: the JSON reports of a partitioned run's shards, as one run's.

use std::path::Path;

use crate::report::{console, html, json, junit, merge, summary};

use super::args::MergeArgs;
use super::error::{CliError, exit};

pub(super) fn merge(args: MergeArgs) -> Result<u8, CliError> {
    args.reports.check()?;
    let shards = args
        .shards
        .iter()
        .map(|path| merge::read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let mut merged = merge::merge(shards)?;
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
        written = written.and(junit::write(
            path,
            &merged.controller,
            &mut merged.cases,
            None,
        ));
    }
    if let Some(path) = &args.reports.summary_markdown {
        written = written.and(summary::write(path, &merged.controller, &merged.cases));
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
    written.map_err(CliError::Write)?;
    Ok(if merged.summary.ok() {
        exit::OK
    } else {
        exit::FAILURES
    })
}
