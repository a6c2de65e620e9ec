//! `loopcheck lint`: scenario files checked without running anything.

use crate::scenario;

use super::args::LintArgs;
use super::error::{CliError, exit};

pub(super) fn lint(args: LintArgs) -> Result<u8, CliError> {
    let cases = scenario::load_paths(&args.paths).map_err(CliError::Scenarios)?;
    println!("{} scenario file(s) OK", cases.len());
    Ok(exit::OK)
}
