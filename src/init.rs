//! `loopcheck init [python|node]`: a starter controller on the official SDK, its
//! manifest, a `loopcheck.toml`, and a CI workflow that runs the catalogue and keeps the
//! reports. Existing files are never overwritten without `--force`.

use std::path::{Path, PathBuf};

/// The language of the starter controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    /// `loop.py` on the `openai` Python package.
    Python,
    /// `loop.mjs` on the `openai` npm package.
    Node,
}

const PYTHON_LOOP: &str = include_str!("../templates/init/loop.py");
const NODE_LOOP: &str = include_str!("../templates/init/loop.mjs");

/// The capabilities the starter loops really have: the two state modes, nothing more.
const MANIFEST: &str = "{\"supports\": [\"previous_response_id\", \"stateless\"]}\n";

/// Every file `init` writes, relative to the target folder, with its text.
pub fn files(language: Language) -> Vec<(PathBuf, String)> {
    let (file, source, command, setup) = match language {
        Language::Python => (
            "loop.py",
            PYTHON_LOOP,
            "python3 loop.py",
            "      - uses: actions/setup-python@v5\n        with:\n          python-version: \"3.11\"\n      - run: pip install openai==3.57.0\n",
        ),
        Language::Node => (
            "loop.mjs",
            NODE_LOOP,
            "node loop.mjs",
            "      - uses: actions/setup-node@v4\n        with:\n          node-version: \"20\"\n      - run: npm install\n",
        ),
    };
    let mut files = vec![
        (PathBuf::from(file), source.to_owned()),
        (
            PathBuf::from(format!("{file}.loopcheck.json")),
            MANIFEST.to_owned(),
        ),
        (PathBuf::from("loopcheck.toml"), settings(command)),
        (
            PathBuf::from(".github/workflows/loopcheck.yml"),
            workflow(file, setup),
        ),
    ];
    if language == Language::Node {
        files.push((
            PathBuf::from("package.json"),
            "{\n  \"private\": true,\n  \"type\": \"module\",\n  \"dependencies\": {\n    \"openai\": \"7.59.0\"\n  }\n}\n".to_owned(),
        ));
    }
    files
}

fn settings(command: &str) -> String {
    format!(
        "# loopcheck's settings (`loopcheck run` reads them; `--profile ci` adds the reports).\n\
         [profile.default]\n\
         controller = \"{command}\"\n\
         \n\
         [profile.ci]\n\
         report-json = \"target/loopcheck/report.json\"\n\
         junit = \"target/loopcheck/junit.xml\"\n\
         html = \"target/loopcheck/report.html\"\n\
         # baseline = \"loopcheck-baseline.toml\"   # accepted failures: loopcheck run --write-baseline\n"
    )
}

fn workflow(file: &str, setup: &str) -> String {
    format!(
        "# Runs the tool loop in {file} against loopcheck's conformance catalogue and keeps\n\
         # the JUnit, HTML and JSON reports. Set the repository variable LOOPCHECK_GIT to the\n\
         # git URL loopcheck is installed from.\n\
         name: loopcheck\n\
         on: [push, pull_request]\n\
         jobs:\n\
         \x20 loopcheck:\n\
         \x20   runs-on: ubuntu-latest\n\
         \x20   steps:\n\
         \x20     - uses: actions/checkout@v4\n\
         {setup}\
         \x20     - name: Install loopcheck\n\
         \x20       run: cargo install --locked --git \"${{{{ vars.LOOPCHECK_GIT }}}}\" loopcheck\n\
         \x20     - run: loopcheck run --profile ci\n\
         \x20     - uses: actions/upload-artifact@v4\n\
         \x20       if: always()\n\
         \x20       with:\n\
         \x20         name: loopcheck-reports\n\
         \x20         path: target/loopcheck/\n"
    )
}

/// Why the starter files were not written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// Some exist, and `--force` was not given: nothing was written.
    #[error("not overwriting {} (give --force to replace)", .0.join(", "))]
    Exists(Vec<String>),
    /// A file cannot be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

/// Writes the starter files into `dir`; the paths written. Refuses, writing nothing,
/// when any of them exists and `force` is not given.
pub fn write(dir: &Path, language: Language, force: bool) -> Result<Vec<PathBuf>, InitError> {
    let files = files(language);
    let existing: Vec<String> = files
        .iter()
        .map(|(path, _)| dir.join(path))
        .filter(|path| path.exists())
        .map(|path| path.display().to_string())
        .collect();
    if !existing.is_empty() && !force {
        return Err(InitError::Exists(existing));
    }
    let mut written = Vec::new();
    for (path, text) in files {
        let path = dir.join(path);
        if let Err(source) = crate::files::write_bytes_atomic(&path, text.as_bytes()) {
            return Err(InitError::Write { path, source });
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_and_workflow_are_valid_and_name_the_controller() {
        for language in [Language::Python, Language::Node] {
            let files = files(language);
            let settings = &files
                .iter()
                .find(|(p, _)| p == Path::new("loopcheck.toml"))
                .unwrap()
                .1;
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("loopcheck.toml");
            std::fs::write(&path, settings).unwrap();
            let ci = crate::config::resolve(Some(&path), Some("ci"), &|_| None).unwrap();
            assert!(ci.controller.unwrap().contains("loop."));
            assert!(ci.junit.is_some());
            let workflow = &files
                .iter()
                .find(|(p, _)| p.ends_with("loopcheck.yml"))
                .unwrap()
                .1;
            assert!(workflow.contains("${{ vars.LOOPCHECK_GIT }}"), "{workflow}");
            assert!(workflow.contains("loopcheck run --profile ci"));
        }
    }

    #[test]
    fn existing_files_are_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("loop.py"), "mine").unwrap();
        let err = write(dir.path(), Language::Python, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("loop.py"), "{err}");
        assert!(
            !dir.path().join("loopcheck.toml").exists(),
            "nothing written"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("loop.py")).unwrap(),
            "mine"
        );
        let written = write(dir.path(), Language::Python, true).unwrap();
        assert_eq!(written.len(), 4);
        assert!(dir.path().join(".github/workflows/loopcheck.yml").exists());
    }
}
