//! `loopcheck init`: a starter controller, its manifest, a settings file and a workflow.

use super::args::InitArgs;
use super::error::{CliError, exit};

pub(super) fn init(args: InitArgs) -> Result<u8, CliError> {
    let written = crate::init::write(&args.dir, args.language, args.force)?;
    for path in written {
        println!("wrote {}", path.display());
    }
    println!("next: loopcheck run   (then loopcheck run --profile ci, as the workflow does)");
    Ok(exit::OK)
}
