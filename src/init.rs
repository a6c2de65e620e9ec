//! `loopcheck init [python|node|ts]`: a starter controller on the official SDK, its
//! manifest, a `loopcheck.toml`, a baseline of the checks the starter leaves to its user,
//! and a CI workflow that runs the catalogue in shards through loopcheck's GitHub Action
//! and keeps the reports. Existing files are never overwritten without `--force`.

use std::path::{Path, PathBuf};

/// The language of the starter controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    /// `loop.py` on the `openai` Python package.
    Python,
    /// `loop.mjs` on the `openai` npm package.
    Node,
    /// `loop.ts` on the `openai` npm package, run by `tsx`.
    Ts,
}

const PYTHON_LOOP: &str = include_str!("../templates/init/loop.py");
const NODE_LOOP: &str = include_str!("../templates/init/loop.mjs");
const TS_LOOP: &str = include_str!("../templates/init/loop.ts");

/// The capabilities the Python starter really has: the two state modes, nothing more.
const MANIFEST: &str = "{\"supports\": [\"previous_response_id\", \"stateless\"]}\n";

/// The Node and TypeScript starters also serve many cases from one process (contract
/// section 9): starting Node and importing the SDK per case is most of a case's time.
const PERSISTENT_MANIFEST: &str =
    "{\"supports\": [\"previous_response_id\", \"stateless\", \"persistent\"]}\n";

/// The `openai` Python package the Python starter installs (the version its types follow).
const PYTHON_SDK: &str = "openai==3.57.0";

/// The Node starter's package: the SDK pinned to the version the Node reference runs on.
const NODE_PACKAGE: &str = "{\n  \"private\": true,\n  \"type\": \"module\",\n  \"dependencies\": {\n    \"openai\": \"7.59.0\"\n  }\n}\n";

/// The TypeScript starter's package. `tsx` runs `loop.ts` without a build step: Node 20,
/// which the workflow sets up, cannot strip types itself (`--experimental-strip-types`
/// came in Node 22.6), and a `tsc` build would leave a second file to keep current.
const TS_PACKAGE: &str = "{\n  \"private\": true,\n  \"type\": \"module\",\n  \"dependencies\": {\n    \"openai\": \"7.59.0\"\n  },\n  \"devDependencies\": {\n    \"tsx\": \"4.23.15\"\n  }\n}\n";

/// The baseline the settings name: the case runs every starter fails by design, the two
/// checks its TODOs leave to its user (arguments validated against the tool's schema, a
/// refusal reported as one). With it the starter passes its own CI from the start and
/// still prints each of them; one fixed fails the run as `stale` until its entries go.
/// The `init` tests run each npm starter over the whole catalogue against it.
const STARTER_BASELINE: &str = r#"# loopcheck baseline: expected failures (`loopcheck run --baseline FILE`).
# What the starter leaves to you (its TODOs): validating arguments against the tool's
# schema before dispatch (dispatch/schema-valid), and reporting a refusal as a failure
# with reason "refusal" (terminal/outcome). CI passes on them until you fix one; an
# entry whose case run now passes fails the run as stale: `loopcheck baseline prune`
# drops it.

[[expected]]
case = "dispatch/09-schema-violation"
delivery = "json"
checks = ["dispatch/schema-valid"]

[[expected]]
case = "dispatch/11-exact-arguments"
delivery = "json"
checks = ["dispatch/schema-valid"]

[[expected]]
case = "terminal/09-refusal"
delivery = "json"
checks = ["terminal/outcome"]

[[expected]]
case = "terminal/12-refusal-beside-text"
delivery = "json"
checks = ["terminal/outcome"]
"#;

/// Where the settings find the baseline, relative to the target folder.
pub const BASELINE_FILE: &str = "loopcheck-baseline.toml";

/// The Node workflow's set-up steps: Node 20 and the locked packages.
const NODE_SETUP: &str = "      - uses: actions/setup-node@a0853c24544627f65ddf259abe73b1d18a591444 # v5.0.0\n        with:\n          node-version: \"20\"\n      - run: npm install\n";

/// How each starter is written and run.
struct Starter {
    /// The loop's file name.
    file: &'static str,
    /// Its text.
    source: &'static str,
    /// Its manifest's text.
    manifest: &'static str,
    /// The command that runs it, from the target folder.
    command: &'static str,
    /// The workflow's set-up steps before loopcheck's action.
    setup: &'static str,
    /// Its `package.json`, for the npm starters.
    package: Option<&'static str>,
}

fn starter(language: Language) -> Starter {
    match language {
        Language::Python => Starter {
            file: "loop.py",
            source: PYTHON_LOOP,
            manifest: MANIFEST,
            command: "python3 loop.py",
            setup: "      - uses: actions/setup-python@e797f83bcb11b83ae66e0230d6156d7c80228e7c # v6.0.0\n        with:\n          python-version: \"3.11\"\n      - run: pip install openai==3.57.0\n",
            package: None,
        },
        Language::Node => Starter {
            file: "loop.mjs",
            source: NODE_LOOP,
            manifest: PERSISTENT_MANIFEST,
            command: "node loop.mjs",
            setup: NODE_SETUP,
            package: Some(NODE_PACKAGE),
        },
        Language::Ts => Starter {
            file: "loop.ts",
            source: TS_LOOP,
            manifest: PERSISTENT_MANIFEST,
            // `--import tsx` keeps one Node process (no npx, no second process in between).
            command: "node --import tsx loop.ts",
            setup: NODE_SETUP,
            package: Some(TS_PACKAGE),
        },
    }
}

/// The shell commands, run in the folder `init` wrote, that install the starter's
/// dependencies: what a fresh folder needs before `loopcheck run`.
pub fn install_steps(language: Language) -> String {
    match language {
        Language::Python => {
            format!("python3 -m venv .venv && . .venv/bin/activate && pip install {PYTHON_SDK}")
        }
        Language::Node | Language::Ts => "npm install".to_owned(),
    }
}

/// The repository of loopcheck's GitHub Action (`action.yml` at its root), as a
/// workflow's `uses:` names it.
pub const ACTION_REPOSITORY: &str = "loopcheck/loopcheck";

/// This loopcheck's version: the action's tag and the package the workflow installs,
/// so a project starts on the loopcheck that wrote it.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The shards the workflow's matrix splits the catalogue into.
const SHARDS: usize = 2;

/// Every file `init` writes, relative to the target folder, with its text.
pub fn files(language: Language) -> Vec<(PathBuf, String)> {
    let starter = starter(language);
    let mut files = vec![
        (PathBuf::from(starter.file), starter.source.to_owned()),
        (
            PathBuf::from(format!("{}.loopcheck.json", starter.file)),
            starter.manifest.to_owned(),
        ),
        (PathBuf::from("loopcheck.toml"), settings(starter.command)),
        (PathBuf::from(BASELINE_FILE), STARTER_BASELINE.to_owned()),
        (
            PathBuf::from(".github/workflows/loopcheck.yml"),
            workflow(starter.file, starter.command, starter.setup),
        ),
    ];
    if let Some(package) = starter.package {
        files.push((PathBuf::from("package.json"), package.to_owned()));
    }
    files
}

fn settings(command: &str) -> String {
    format!(
        "# loopcheck's settings (`loopcheck run` reads them; `--profile ci` adds the reports).\n\
         [profile.default]\n\
         controller = \"{command}\"\n\
         # The failures accepted for now: delete an entry once its case run passes.\n\
         baseline = \"{BASELINE_FILE}\"\n\
         \n\
         [profile.ci]\n\
         report-json = \"target/loopcheck/report.json\"\n\
         junit = \"target/loopcheck/junit.xml\"\n\
         html = \"target/loopcheck/report.html\"\n"
    )
}

/// The CI workflow: loopcheck's action on each shard of the catalogue, its reports kept
/// as artifacts and its counts and failing checks in the job summary.
fn workflow(file: &str, command: &str, setup: &str) -> String {
    let shards = (1..=SHARDS)
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "# Runs the tool loop in {file} against loopcheck's conformance catalogue, in\n\
         # {SHARDS} shards, and keeps each shard's JUnit and HTML reports (docs: installing).\n\
         name: loopcheck\n\
         on: [push, pull_request]\n\
         permissions:\n\
         \x20 contents: read\n\
         jobs:\n\
         \x20 loopcheck:\n\
         \x20   runs-on: ubuntu-latest\n\
         \x20   strategy:\n\
         \x20     fail-fast: false\n\
         \x20     matrix:\n\
         \x20       shard: [{shards}]\n\
         \x20   steps:\n\
         \x20     - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0\n\
         \x20       with:\n\
         \x20         persist-credentials: false\n\
         {setup}\
         \x20     # The release this workflow was written for; pin it to that tag's commit once\n\
         \x20     # you have checked it, as the actions above are.\n\
         \x20     - uses: {ACTION_REPOSITORY}@v{VERSION} # zizmor: ignore[unpinned-uses]\n\
         \x20       with:\n\
         \x20         controller: {command}\n\
         \x20         partition: hash:${{{{ matrix.shard }}}}/{SHARDS}\n\
         \x20         version: \"{VERSION}\"\n"
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
        for language in [Language::Python, Language::Node, Language::Ts] {
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
            assert_eq!(ci.baseline, Some(dir.path().join(BASELINE_FILE)));
            let baseline = &files
                .iter()
                .find(|(p, _)| p == Path::new(BASELINE_FILE))
                .unwrap()
                .1;
            let written = dir.path().join(BASELINE_FILE);
            std::fs::write(&written, baseline).unwrap();
            let entries = crate::expectations::Baseline::load(&written)
                .unwrap()
                .expected;
            assert_eq!(entries.len(), 4);
            let workflow = &files
                .iter()
                .find(|(p, _)| p.ends_with("loopcheck.yml"))
                .unwrap()
                .1;
            let action = format!("uses: {ACTION_REPOSITORY}@v{VERSION}");
            assert!(workflow.contains(&action), "{workflow}");
            assert!(
                workflow.contains("partition: hash:${{ matrix.shard }}/2"),
                "{workflow}"
            );
            assert!(workflow.contains("controller: ") && workflow.contains("loop."));
        }
    }

    #[test]
    fn the_readme_names_each_starters_manifest() {
        let readme = include_str!("../README.md");
        for language in [Language::Python, Language::Node, Language::Ts] {
            let manifest = format!("{}.loopcheck.json", starter(language).file);
            assert!(readme.contains(&format!("`{manifest}`")), "{manifest}");
        }
    }

    #[test]
    fn the_npm_starters_declare_persistent_and_pin_their_packages() {
        for language in [Language::Node, Language::Ts] {
            let files = files(language);
            let text = |name: &str| {
                let (_, text) = files
                    .iter()
                    .find(|(p, _)| p.to_string_lossy().ends_with(name))
                    .unwrap();
                serde_json::from_str::<serde_json::Value>(text).unwrap()
            };
            let manifest = text(".loopcheck.json");
            assert!(
                manifest["supports"]
                    .as_array()
                    .unwrap()
                    .contains(&"persistent".into())
            );
            let package = text("package.json");
            assert_eq!(package["dependencies"]["openai"], "7.59.0");
            assert_eq!(install_steps(language), "npm install");
        }
        let python = files(Language::Python);
        assert!(!python.iter().any(|(_, text)| text.contains("persistent")));
        assert!(install_steps(Language::Python).contains(".venv/bin/activate"));
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
        assert_eq!(written.len(), 5);
        assert!(dir.path().join(".github/workflows/loopcheck.yml").exists());
    }
}
