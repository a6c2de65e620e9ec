//! `loopcheck.toml`: a run's settings kept in a file, by profile, resolved once. A setting
//! comes from, in order: the command line, a `LOOPCHECK_*` environment variable, the
//! chosen profile, the `default` profile, loopcheck's own default.
//!
//! ```toml
//! [profile.default]
//! controller = "python3 my_loop.py"
//! supports = ["previous_response_id", "stateless", "stream"]
//! jobs = 4
//!
//! [profile.ci]
//! junit = "target/loopcheck/junit.xml"
//! baseline = "loopcheck-baseline.toml"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file looked for in the working directory when no `--config` is given.
pub const FILE_NAME: &str = "loopcheck.toml";

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// Settings of `loopcheck run`; every one optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Profile {
    /// The controller command.
    pub controller: Option<String>,
    /// Its capabilities.
    pub supports: Option<Vec<String>>,
    /// Cases at once.
    pub jobs: Option<usize>,
    /// Per-case timeout, seconds.
    pub timeout: Option<f64>,
    /// A persistent controller's start-up budget, seconds.
    pub startup_timeout: Option<f64>,
    /// The fake server's seed.
    pub seed: Option<u64>,
    /// Case id globs.
    pub filter: Option<Vec<String>>,
    /// Scenario files or directories instead of the embedded catalogue.
    pub paths: Option<Vec<PathBuf>>,
    /// The JSON report's path.
    pub report_json: Option<PathBuf>,
    /// The JUnit report's path.
    pub junit: Option<PathBuf>,
    /// The HTML report's path.
    pub html: Option<PathBuf>,
    /// The expected failures.
    pub baseline: Option<PathBuf>,
    /// The snapshot folder.
    pub snapshots: Option<PathBuf>,
    /// The shard, `slice:K/N` or `hash:K/N`.
    pub partition: Option<String>,
}

impl Profile {
    /// `self`, with what it leaves unset taken from `base`.
    fn over(self, base: Profile) -> Profile {
        Profile {
            controller: self.controller.or(base.controller),
            supports: self.supports.or(base.supports),
            jobs: self.jobs.or(base.jobs),
            timeout: self.timeout.or(base.timeout),
            startup_timeout: self.startup_timeout.or(base.startup_timeout),
            seed: self.seed.or(base.seed),
            filter: self.filter.or(base.filter),
            paths: self.paths.or(base.paths),
            report_json: self.report_json.or(base.report_json),
            junit: self.junit.or(base.junit),
            html: self.html.or(base.html),
            baseline: self.baseline.or(base.baseline),
            snapshots: self.snapshots.or(base.snapshots),
            partition: self.partition.or(base.partition),
        }
    }

    /// Paths written in the file are relative to the file's folder.
    fn relative_to(mut self, dir: &Path) -> Profile {
        let at = |path: PathBuf| {
            if path.is_absolute() {
                path
            } else {
                dir.join(path)
            }
        };
        self.paths = self.paths.map(|paths| paths.into_iter().map(at).collect());
        self.report_json = self.report_json.map(at);
        self.junit = self.junit.map(at);
        self.html = self.html.map(at);
        self.baseline = self.baseline.map(at);
        self.snapshots = self.snapshots.map(at);
        self
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    profile: BTreeMap<String, Profile>,
}

/// The environment variables that override a profile, and the setting each one sets.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("LOOPCHECK_PROFILE", "the profile"),
    ("LOOPCHECK_CONTROLLER", "controller"),
    ("LOOPCHECK_SUPPORTS", "supports (comma-separated)"),
    ("LOOPCHECK_JOBS", "jobs"),
    ("LOOPCHECK_TIMEOUT", "timeout"),
    ("LOOPCHECK_STARTUP_TIMEOUT", "startup-timeout"),
    ("LOOPCHECK_SEED", "seed"),
    ("LOOPCHECK_FILTER", "filter (comma-separated)"),
    ("LOOPCHECK_REPORT_JSON", "report-json"),
    ("LOOPCHECK_JUNIT", "junit"),
    ("LOOPCHECK_HTML", "html"),
    ("LOOPCHECK_BASELINE", "baseline"),
    ("LOOPCHECK_SNAPSHOTS", "snapshots"),
    ("LOOPCHECK_PARTITION", "partition"),
];

/// Resolves the settings: the profile `name` (or `LOOPCHECK_PROFILE`, or `default`) of
/// the file at `path` (or `loopcheck.toml` here, when it exists), under the environment.
/// `env` reads a variable (the process environment, or a test's).
pub fn resolve(
    path: Option<&Path>,
    name: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Profile, String> {
    let file = match path {
        Some(path) => Some(load(path)?),
        None if Path::new(FILE_NAME).exists() => Some(load(Path::new(FILE_NAME))?),
        None => None,
    };
    let named = name.map(str::to_owned).or_else(|| env("LOOPCHECK_PROFILE"));
    let from_file = match (&file, &named) {
        (Some((file, dir, shown)), named) => {
            let name = named.as_deref().unwrap_or(DEFAULT_PROFILE);
            let chosen = match file.profile.get(name) {
                Some(profile) => profile.clone(),
                None if name == DEFAULT_PROFILE => Profile::default(),
                None => {
                    let known: Vec<&str> = file.profile.keys().map(String::as_str).collect();
                    return Err(format!(
                        "{shown}: no profile '{name}' (it has: {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
            };
            let default = file
                .profile
                .get(DEFAULT_PROFILE)
                .cloned()
                .unwrap_or_default();
            chosen.over(default).relative_to(dir)
        }
        (None, Some(name)) if name != DEFAULT_PROFILE => {
            return Err(format!(
                "profile '{name}' asked for, but there is no {FILE_NAME} here (give --config FILE)"
            ));
        }
        (None, _) => Profile::default(),
    };
    Ok(from_environment(env)?.over(from_file))
}

/// Reads a config file: its settings, its folder, and its name for messages.
fn load(path: &Path) -> Result<(File, PathBuf, String), String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read the config {shown}: {err}"))?;
    let file: File = crate::toml_text::parse(&text).map_err(|err| format!("{shown}:{err}"))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((file, dir, shown))
}

/// The settings the `LOOPCHECK_*` variables give; a bad value names its variable.
fn from_environment(env: &dyn Fn(&str) -> Option<String>) -> Result<Profile, String> {
    let list = |key: &str| {
        env(key).map(|value| {
            value
                .split(',')
                .map(|word| word.trim().to_owned())
                .filter(|word| !word.is_empty())
                .collect::<Vec<_>>()
        })
    };
    fn number<T: std::str::FromStr>(
        env: &dyn Fn(&str) -> Option<String>,
        key: &str,
        what: &str,
    ) -> Result<Option<T>, String> {
        env(key)
            .map(|value| {
                value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{key}={value}: expected {what}"))
            })
            .transpose()
    }
    Ok(Profile {
        controller: env("LOOPCHECK_CONTROLLER"),
        supports: list("LOOPCHECK_SUPPORTS"),
        jobs: number(env, "LOOPCHECK_JOBS", "a whole number of cases at once")?,
        timeout: number(env, "LOOPCHECK_TIMEOUT", "a number of seconds")?,
        startup_timeout: number(env, "LOOPCHECK_STARTUP_TIMEOUT", "a number of seconds")?,
        seed: number(env, "LOOPCHECK_SEED", "a whole number")?,
        filter: list("LOOPCHECK_FILTER"),
        paths: None,
        report_json: env("LOOPCHECK_REPORT_JSON").map(PathBuf::from),
        junit: env("LOOPCHECK_JUNIT").map(PathBuf::from),
        html: env("LOOPCHECK_HTML").map(PathBuf::from),
        baseline: env("LOOPCHECK_BASELINE").map(PathBuf::from),
        snapshots: env("LOOPCHECK_SNAPSHOTS").map(PathBuf::from),
        partition: env("LOOPCHECK_PARTITION"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    const TWO_PROFILES: &str = r#"
[profile.default]
controller = "python3 loop.py"
jobs = 4
report-json = "out/report.json"

[profile.ci]
jobs = 2
junit = "out/junit.xml"
"#;

    #[test]
    fn a_profile_inherits_the_default_and_paths_follow_the_file() {
        let (dir, path) = file(TWO_PROFILES);
        let ci = resolve(Some(&path), Some("ci"), &no_env).unwrap();
        assert_eq!(ci.controller.as_deref(), Some("python3 loop.py"));
        assert_eq!(ci.jobs, Some(2));
        assert_eq!(ci.junit, Some(dir.path().join("out/junit.xml")));
        assert_eq!(ci.report_json, Some(dir.path().join("out/report.json")));
        let default = resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!((default.jobs, default.junit), (Some(4), None));
    }

    #[test]
    fn the_environment_overrides_the_file_and_names_the_profile() {
        let (_dir, path) = file(TWO_PROFILES);
        let env = |key: &str| match key {
            "LOOPCHECK_PROFILE" => Some("ci".to_owned()),
            "LOOPCHECK_JOBS" => Some("7".to_owned()),
            "LOOPCHECK_SUPPORTS" => Some("stateless, stream".to_owned()),
            _ => None,
        };
        let resolved = resolve(Some(&path), None, &env).unwrap();
        assert_eq!(resolved.jobs, Some(7));
        assert_eq!(
            resolved.supports,
            Some(vec!["stateless".to_owned(), "stream".to_owned()])
        );
        assert!(resolved.junit.is_some(), "the ci profile was chosen");
    }

    #[test]
    fn mistakes_are_named_with_their_place() {
        let (_dir, path) = file("[profile.default]\njobs = 2\ncontroler = \"x\"\n");
        let err = resolve(Some(&path), None, &no_env).unwrap_err();
        assert!(err.ends_with("loopcheck.toml:3:1: unknown field `controler`, expected one of `controller`, `supports`, `jobs`, `timeout`, `startup-timeout`, `seed`, `filter`, `paths`, `report-json`, `junit`, `html`, `baseline`, `snapshots`, `partition`"), "{err}");
        let (_dir, path) = file("[profile.default]\njobs = \"two\"\n");
        let err = resolve(Some(&path), None, &no_env).unwrap_err();
        assert!(
            err.contains("loopcheck.toml:2:8: invalid type: string \"two\", expected usize"),
            "{err}"
        );
        let (_dir, path) = file(TWO_PROFILES);
        let err = resolve(Some(&path), Some("nightly"), &no_env).unwrap_err();
        assert!(
            err.ends_with("no profile 'nightly' (it has: ci, default)"),
            "{err}"
        );
        let bad = |key: &str| (key == "LOOPCHECK_TIMEOUT").then(|| "soon".to_owned());
        let err = resolve(None, None, &bad).unwrap_err();
        assert_eq!(err, "LOOPCHECK_TIMEOUT=soon: expected a number of seconds");
    }
}
