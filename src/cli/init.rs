//! `loopcheck init`: a starter controller, its manifest, a settings file, the baseline it
//! names and a workflow.

use std::path::Path;

use super::args::InitArgs;
use super::error::{CliError, exit};

pub(super) fn init(args: InitArgs) -> Result<u8, CliError> {
    let written = crate::init::write(&args.dir, args.language, args.force)?;
    for path in written {
        println!("wrote {}", path.display());
    }
    println!("next: {}", next_steps(&args.dir, args.language));
    println!("then: loopcheck run --profile ci   (as the workflow does)");
    Ok(exit::OK)
}

/// The one line that takes a fresh folder from the written files to a first run:
/// into the folder, the starter's dependencies installed, `loopcheck run`.
fn next_steps(dir: &Path, language: crate::init::Language) -> String {
    let install = crate::init::install_steps(language);
    if dir == Path::new(".") || dir.as_os_str().is_empty() {
        format!("{install} && loopcheck run")
    } else {
        format!("cd {} && {install} && loopcheck run", shell_word(dir))
    }
}

/// `path` as one POSIX shell word: as it is when it has nothing the shell reads,
/// single-quoted otherwise.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::Language;

    #[test]
    fn the_next_steps_enter_the_folder_install_and_run() {
        assert_eq!(
            next_steps(Path::new("my loop"), Language::Node),
            "cd 'my loop' && npm install && loopcheck run"
        );
        assert_eq!(
            next_steps(Path::new("."), Language::Ts),
            "npm install && loopcheck run"
        );
        let python = next_steps(Path::new("app"), Language::Python);
        assert!(
            python.starts_with("cd app && python3 -m venv .venv && "),
            "{python}"
        );
        assert!(python.ends_with("pip install openai==3.57.0 && loopcheck run"));
    }
}
