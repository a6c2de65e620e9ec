//! The controller a command runs: the built-in reference, or a command with its
//! capabilities from `--supports`, else from its manifest.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::runner::{self, CAPABILITIES, Controller};

use super::args::MatrixArgs;

/// A capability word loopcheck does not know.
#[derive(Debug, thiserror::Error)]
#[error("unknown capability '{word}': expected some of {}", CAPABILITIES.join(", "))]
pub struct UnknownCapability {
    /// The word.
    word: String,
}

/// Why the controller cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// `--supports` names an unknown capability.
    #[error(transparent)]
    Capability(#[from] UnknownCapability),
    /// This executable cannot be found, to run it as the reference.
    #[error("failed to find the loopcheck executable: {0}")]
    Executable(std::io::Error),
    /// The manifest cannot be read.
    #[error("failed to read {}: {source}", .path.display())]
    ReadManifest {
        /// The manifest.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The manifest is not JSON.
    #[error("{}: {source}", .path.display())]
    ManifestJson {
        /// The manifest.
        path: PathBuf,
        /// Where and what.
        source: serde_json::Error,
    },
    /// The manifest has no `supports` list.
    #[error("{}: expected {{\"supports\": [capabilities]}}", .path.display())]
    ManifestShape {
        /// The manifest.
        path: PathBuf,
    },
    /// The manifest's `supports` holds something other than strings.
    #[error("{}: capabilities are strings", .path.display())]
    ManifestWords {
        /// The manifest.
        path: PathBuf,
    },
    /// The manifest names an unknown capability.
    #[error("{}: {source}", .path.display())]
    ManifestCapability {
        /// The manifest.
        path: PathBuf,
        /// The word.
        source: UnknownCapability,
    },
    /// `sh -c ""` runs nothing and prints nothing: every case would be `crashed`.
    #[error(
        "the controller command is empty{}: give the command that runs your controller, e.g. --controller \"python3 my_loop.py\" (or leave it out for the built-in reference)",
        .name.as_ref().map(|name| format!(" for '{name}'")).unwrap_or_default()
    )]
    EmptyCommand {
        /// The controller's name, when it has one besides its command.
        name: Option<String>,
    },
    /// A `matrix --controller` that is neither `NAME=COMMAND` nor `reference`.
    #[error("invalid --controller '{0}': expected NAME=COMMAND, or `reference`")]
    Spec(String),
    /// Two matrix controllers of one name.
    #[error("two controllers are named '{0}'")]
    SameName(String),
    /// A `matrix --supports` that is not `NAME=LIST`.
    #[error("invalid --supports '{0}': expected NAME=LIST")]
    SupportsSpec(String),
    /// A `matrix --supports` naming no controller.
    #[error("--supports names '{0}', which no --controller defines")]
    SupportsName(String),
}

/// Parses a comma-separated capability list.
pub(super) fn parse_capabilities<S: AsRef<str>>(
    words: &[S],
) -> Result<BTreeSet<String>, UnknownCapability> {
    let words: BTreeSet<String> = words
        .iter()
        .flat_map(|w| w.as_ref().split(','))
        .map(|w| w.trim().to_owned())
        .filter(|w| !w.is_empty())
        .collect();
    match words.iter().find(|w| !CAPABILITIES.contains(&w.as_str())) {
        Some(unknown) => Err(UnknownCapability {
            word: unknown.clone(),
        }),
        None => Ok(words),
    }
}

/// The built-in Rust reference controller: this executable.
pub(super) fn reference_controller(name: &str) -> Result<Controller, ControllerError> {
    let exe = std::env::current_exe().map_err(ControllerError::Executable)?;
    Ok(Controller::reference(name, exe))
}

/// The capabilities in a controller manifest next to a file the command names
/// (`<file>.loopcheck.json`, else `loopcheck.json` in its folder: `{"supports": [...]}`);
/// the interpreter in `python3 loop.py` has none, the script may.
pub(super) fn manifest_capabilities(
    command: &str,
) -> Result<Option<BTreeSet<String>>, ControllerError> {
    let manifest = command
        .split_whitespace()
        .map(std::path::Path::new)
        .filter(|p| p.is_file())
        .flat_map(|file| {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            [
                file.with_file_name(format!("{name}.loopcheck.json")),
                file.with_file_name("loopcheck.json"),
            ]
        })
        .find(|p| p.is_file());
    let Some(path) = manifest else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ControllerError::ReadManifest {
        path: path.clone(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ControllerError::ManifestJson {
            path: path.clone(),
            source,
        })?;
    let words: Vec<String> = value["supports"]
        .as_array()
        .ok_or_else(|| ControllerError::ManifestShape { path: path.clone() })?
        .iter()
        .map(|w| {
            w.as_str()
                .map(str::to_owned)
                .ok_or_else(|| ControllerError::ManifestWords { path: path.clone() })
        })
        .collect::<Result<_, _>>()?;
    parse_capabilities(&words)
        .map(Some)
        .map_err(|source| ControllerError::ManifestCapability { path, source })
}

/// A controller given by command, with its capabilities from its manifest, if any.
pub(super) fn command_controller(name: &str, command: &str) -> Result<Controller, ControllerError> {
    if command.trim().is_empty() {
        let named = !(name.trim().is_empty() || name == command);
        return Err(ControllerError::EmptyCommand {
            name: named.then(|| name.to_owned()),
        });
    }
    let supports = manifest_capabilities(command)?.unwrap_or_else(runner::default_capabilities);
    Ok(Controller::command(name, command.to_owned(), supports))
}

/// The controller a command names (the Rust reference when none), with what it
/// supports: `--supports` when given, else its manifest.
pub(super) fn controller_from(
    command: Option<&str>,
    supports: Option<&[String]>,
) -> Result<Controller, ControllerError> {
    let mut controller = match command {
        Some(command) => command_controller(command, command)?,
        None => reference_controller("reference (rust)")?,
    };
    if let Some(words) = supports {
        controller.supports = parse_capabilities(words)?;
    }
    Ok(controller)
}

/// Parses `--controller NAME=CMD` (or `reference`) and `--supports NAME=LIST` options.
pub(super) fn matrix_controllers(args: &MatrixArgs) -> Result<Vec<Controller>, ControllerError> {
    let mut controllers = Vec::new();
    for spec in &args.controllers {
        let controller = match spec.split_once('=') {
            Some((name, command)) if !name.trim().is_empty() && !command.trim().is_empty() => {
                command_controller(name.trim(), command)?
            }
            None if spec.trim() == "reference" => reference_controller("reference")?,
            _ => return Err(ControllerError::Spec(spec.clone())),
        };
        if controllers
            .iter()
            .any(|c: &Controller| c.name == controller.name)
        {
            return Err(ControllerError::SameName(controller.name));
        }
        controllers.push(controller);
    }
    for spec in &args.supports {
        let Some((name, list)) = spec.split_once('=') else {
            return Err(ControllerError::SupportsSpec(spec.clone()));
        };
        let Some(controller) = controllers.iter_mut().find(|c| c.name == name.trim()) else {
            return Err(ControllerError::SupportsName(name.to_owned()));
        };
        controller.supports = parse_capabilities(&[list])?;
    }
    Ok(controllers)
}
