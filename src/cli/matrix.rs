//! `loopcheck matrix`: the cases against several controllers, as a compliance table.

use std::io;

use crate::report::Reporters;
use crate::report::matrix::MatrixReporter;
use crate::report::progress::ProgressReporter;
use crate::runner;

use super::args::MatrixArgs;
use super::controllers::matrix_controllers;
use super::error::{CliError, both, exit};
use super::outputs::check_files;

pub(super) async fn matrix(args: MatrixArgs) -> Result<u8, CliError> {
    let (cases, options) = both(args.selection.cases(), args.settings.options())?;
    let controllers = matrix_controllers(&args)?;
    check_files(&[
        ("matrix JSON", args.report_json.as_deref()),
        ("matrix Markdown", args.markdown.as_deref()),
        ("matrix HTML", args.html.as_deref()),
    ])?;
    let mut reporters = Reporters::new();
    if let Some(progress) = ProgressReporter::on_terminal() {
        reporters.push(progress);
    }
    reporters.push(MatrixReporter::new(
        Box::new(io::stdout()),
        args.report_json.clone(),
        args.markdown.clone(),
        args.html.clone(),
    ));
    let mut errors = false;
    for controller in &controllers {
        eprintln!(
            "loopcheck matrix: running {} case(s) against {}",
            cases.len(),
            controller.name
        );
        let reports = runner::run_all(&cases, controller, &options, &mut |event| {
            reporters.event(event)
        })
        .await;
        errors |= reports
            .iter()
            .any(|r| r.verdict == crate::oracle::CaseVerdict::Error);
    }
    reporters.finish().map_err(CliError::Write)?;
    // A matrix compares controllers; their failures are its content, not an error. Only
    // cases loopcheck itself could not run make it fail.
    Ok(if errors { exit::FAILURES } else { exit::OK })
}
