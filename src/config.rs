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
//!
//! [snapshots]
//! redactions = { "/steps/*/model/body/metadata/trace_id" = "[trace id]" }
//! ```
//!
//! Every value is checked here, where its place in the file is known: a bad one reads
//! `loopcheck.toml:L:C: what is wrong; expected what`, not the name of the flag it would
//! have filled.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::{Spanned, Value};

use crate::runner::CAPABILITIES;
use crate::runner::partition::Partition;

use crate::expectations::{Redactions, Selector};
use crate::redact::{Redactor, RuleError, Rules};
use crate::toml_text::TextError;

/// Why the settings cannot be resolved: each names the file and place (`file:L:C`), or
/// the variable, where the mistake is, as a person would look for it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the config {path}: {source}")]
    Read {
        /// The file as named.
        path: String,
        /// Why not.
        source: std::io::Error,
    },
    /// The file is not UTF-8 TOML of the settings' shape.
    #[error("{path}:{source}")]
    Text {
        /// The file as named.
        path: String,
        /// Where and what.
        source: TextError,
    },
    /// A value of a profile is wrong: `file:L:C: wrong; expected what`, a hint last.
    #[error("{path}:{line}:{col}: {message}")]
    Value {
        /// The file as named.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What is wrong and what was expected.
        message: String,
    },
    /// The profile asked for is not in the file.
    #[error("{path}: no profile '{name}' (it has: {known})")]
    NoProfile {
        /// The file as named.
        path: String,
        /// The profile asked for.
        name: String,
        /// The file's profiles, `none` when it has none.
        known: String,
    },
    /// A profile is asked for and there is no settings file.
    #[error("profile '{name}' asked for, but there is no {FILE_NAME} here (give --config FILE)")]
    NoFile {
        /// The profile asked for.
        name: String,
    },
    /// A `LOOPCHECK_*` variable's value is wrong: `VAR=value: wrong; expected what`.
    #[error("{var}={value}: {message}")]
    Variable {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// The `[redact]` table's rules do not compile.
    #[error("{path}: [redact]: {source}")]
    Redact {
        /// The file as named.
        path: String,
        /// The rule and why.
        source: RuleError,
    },
}

/// What is wrong with one value, without where it is (its caller knows that). A hint,
/// when there is one, ends it on its own line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Wrong(String);

/// The file looked for in the working directory when no `--config` is given.
pub const FILE_NAME: &str = "loopcheck.toml";

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// Settings of `loopcheck run`; every one optional.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// The Markdown summary's path.
    pub summary_markdown: Option<PathBuf>,
    /// The expected failures.
    pub baseline: Option<PathBuf>,
    /// The snapshot folder.
    pub snapshots: Option<PathBuf>,
    /// The shard.
    pub partition: Option<Partition>,
    /// Case id globs left out.
    pub exclude: Option<Vec<String>>,
    /// Runs of a failing case run again.
    pub retries: Option<u32>,
    /// Stop starting case runs after the first failure.
    pub fail_fast: Option<bool>,
}

/// A profile's keys, each with what its value must be (said once, for the file, the
/// environment and the hint of an unknown key).
const SETTINGS: &[(&str, &str)] = &[
    ("controller", "a command for `sh -c`, as a string"),
    (
        "supports",
        "a list of capabilities, some of previous_response_id, stateless, conversation, replay, stream, websocket, background, programmatic, approvals, persistent, budgets, webhook, custom, mcp, shell, apply_patch, compaction, text_format, computer, namespaces, tool_search",
    ),
    ("jobs", "a whole number of cases at once, at least 1"),
    ("timeout", "a positive number of seconds"),
    ("startup-timeout", "a positive number of seconds"),
    ("seed", "a whole number, 0 or more"),
    (
        "filter",
        "a list of case id globs, such as [\"dispatch/*\"]",
    ),
    ("paths", "a list of scenario files or folders"),
    ("report-json", "a file path, as a string"),
    ("junit", "a file path, as a string"),
    ("html", "a file path, as a string"),
    ("summary-markdown", "a file path, as a string"),
    ("baseline", "a file path, as a string"),
    ("snapshots", "a folder path, as a string"),
    ("partition", "slice:K/N or hash:K/N, with 1 <= K <= N"),
    ("exclude", "a list of case id globs, such as [\"stream/*\"]"),
    ("retries", "a whole number of runs again, 0 or more"),
    ("fail-fast", "true or false"),
];

/// What the value of `key` must be.
fn expected(key: &str) -> &'static str {
    SETTINGS
        .iter()
        .find(|(known, _)| *known == key)
        .map_or("", |(_, expected)| expected)
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
            summary_markdown: self.summary_markdown.or(base.summary_markdown),
            baseline: self.baseline.or(base.baseline),
            snapshots: self.snapshots.or(base.snapshots),
            partition: self.partition.or(base.partition),
            exclude: self.exclude.or(base.exclude),
            retries: self.retries.or(base.retries),
            fail_fast: self.fail_fast.or(base.fail_fast),
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
        self.summary_markdown = self.summary_markdown.map(at);
        self.baseline = self.baseline.map(at);
        self.snapshots = self.snapshots.map(at);
        self
    }

    /// Sets the setting an entry of the file names, once its value is checked.
    fn set(&mut self, entry: &Entry) -> Result<(), Bad> {
        let path = |entry: &Entry| entry.string().map(PathBuf::from);
        match entry.key {
            "controller" => self.controller = Some(entry.string()?),
            "supports" => self.supports = Some(entry.words(capability)?),
            "jobs" => self.jobs = Some(entry.whole(1)?),
            "timeout" => self.timeout = Some(entry.seconds()?),
            "startup-timeout" => self.startup_timeout = Some(entry.seconds()?),
            "seed" => self.seed = Some(entry.whole(0)?),
            "filter" => self.filter = Some(entry.words(glob)?),
            "paths" => {
                let paths = entry.words(|_| Ok(()))?;
                self.paths = Some(paths.into_iter().map(PathBuf::from).collect());
            }
            "report-json" => self.report_json = Some(path(entry)?),
            "junit" => self.junit = Some(path(entry)?),
            "html" => self.html = Some(path(entry)?),
            "summary-markdown" => self.summary_markdown = Some(path(entry)?),
            "baseline" => self.baseline = Some(path(entry)?),
            "snapshots" => self.snapshots = Some(path(entry)?),
            "partition" => {
                let text = entry.string()?;
                self.partition = Some(partition(&text).map_err(|wrong| entry.bad(wrong.0))?);
            }
            "exclude" => self.exclude = Some(entry.words(glob)?),
            "retries" => self.retries = Some(entry.whole(0)?),
            "fail-fast" => self.fail_fast = Some(entry.boolean()?),
            unknown => return Err(entry.unknown(unknown)),
        }
        Ok(())
    }
}

/// A capability word, or what is wrong with it.
fn capability(word: &str) -> Result<(), Wrong> {
    if CAPABILITIES.contains(&word) {
        return Ok(());
    }
    Err(Wrong(format!(
        "unknown capability '{word}'{}",
        did_you_mean(word, CAPABILITIES)
    )))
}

/// A case id glob, or what is wrong with it.
fn glob(word: &str) -> Result<(), Wrong> {
    globset::Glob::new(word)
        .map(drop)
        .map_err(|err| Wrong(format!("invalid glob '{word}': {}", err.kind())))
}

/// A partition, or what is wrong with it (what it expects is said by the caller).
fn partition(text: &str) -> Result<Partition, Wrong> {
    text.parse::<Partition>().map_err(|err| Wrong(err.what()))
}

/// `\n(hint: did you mean ...?)` when one of `known` is a likely typo of `word`.
fn did_you_mean(word: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map_or_else(String::new, |(_, candidate)| {
            format!("\n(hint: did you mean `{candidate}`?)")
        })
}

/// Levenshtein distance, for the hint of a misspelt word.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// A profile as written: each key and value with where it is in the file.
type Written = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    profile: BTreeMap<String, Written>,
    /// What is redacted beyond the built-in rules, in every profile.
    #[serde(default)]
    redact: Rules,
    /// How snapshots are compared, in every profile.
    #[serde(default)]
    snapshots: SnapshotSettings,
}

/// The `[snapshots]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotSettings {
    /// Selector = placeholder, as written (`[snapshots] redactions = { ... }`).
    #[serde(default)]
    redactions: BTreeMap<Spanned<String>, Spanned<Value>>,
}

/// What a snapshot redaction's selector and placeholder must be.
const REDACTION_EXPECTED: &str = "a JSON pointer into the snapshot, `*` for any key or index, such as \"/steps/*/model/body/metadata/trace_id\" = \"[trace id]\"";

/// The `[snapshots]` table's redactions, checked; a mistake names its place.
fn snapshot_redactions_of(
    settings: &SnapshotSettings,
    path: &str,
    text: &str,
) -> Result<Redactions, ConfigError> {
    let at = |offset: usize, wrong: String| {
        let (line, col) = crate::toml_text::line_col(text, offset);
        ConfigError::Value {
            path: path.to_owned(),
            line,
            col,
            message: with_expected(&wrong, REDACTION_EXPECTED),
        }
    };
    let mut rules = Vec::new();
    for (selector, placeholder) in &settings.redactions {
        let parsed = Selector::parse(selector.get_ref()).map_err(|wrong| {
            at(
                selector.span().start,
                format!("[snapshots] redactions: {wrong}"),
            )
        })?;
        let Value::String(placeholder_text) = placeholder.get_ref() else {
            return Err(at(
                placeholder.span().start,
                format!(
                    "[snapshots] redactions: the placeholder of '{}' is {}, not a string",
                    selector.get_ref(),
                    kind(placeholder.get_ref())
                ),
            ));
        };
        rules.push((parsed, placeholder_text.clone()));
    }
    Ok(Redactions::new(rules))
}

/// A bad value: where it is (a byte offset), what is wrong and what was expected. A
/// hint, when there is one, ends `wrong` on its own line.
#[derive(Debug)]
struct Bad {
    at: usize,
    wrong: String,
    expected: String,
}

impl Bad {
    /// `file:L:C: wrong; expected what`, with the hint line last.
    fn located(&self, path: &str, text: &str) -> ConfigError {
        let (line, col) = crate::toml_text::line_col(text, self.at);
        ConfigError::Value {
            path: path.to_owned(),
            line,
            col,
            message: with_expected(&self.wrong, &self.expected),
        }
    }
}

/// One `key = value` of a profile, with the file's text to locate list items in.
struct Entry<'a> {
    profile: &'a str,
    key: &'a str,
    key_at: usize,
    value: &'a Value,
    span: Range<usize>,
    text: &'a str,
}

impl Entry<'_> {
    /// The value as a whole is wrong.
    fn bad(&self, wrong: String) -> Bad {
        Bad {
            at: self.span.start,
            wrong,
            expected: expected(self.key).to_owned(),
        }
    }

    /// The value is of the wrong type.
    fn of_wrong_type(&self) -> Bad {
        self.bad(format!(
            "`{}` is {} ({})",
            self.key,
            kind(self.value),
            self.value
        ))
    }

    fn unknown(&self, key: &str) -> Bad {
        let keys: Vec<&str> = SETTINGS.iter().map(|(key, _)| *key).collect();
        Bad {
            at: self.key_at,
            wrong: format!(
                "unknown key `{key}` in [profile.{}]{}",
                self.profile,
                did_you_mean(key, &keys)
            ),
            expected: format!("one of {}", keys.join(", ")),
        }
    }

    fn string(&self) -> Result<String, Bad> {
        match self.value {
            Value::String(text) => Ok(text.clone()),
            _ => Err(self.of_wrong_type()),
        }
    }

    /// A list of strings, each passing `check`; a bad item is located in the list.
    fn words(&self, check: fn(&str) -> Result<(), Wrong>) -> Result<Vec<String>, Bad> {
        let Value::Array(items) = self.value else {
            return Err(self.of_wrong_type());
        };
        items
            .iter()
            .map(|item| {
                let at = self.item_at(&item.to_string());
                let Value::String(word) = item else {
                    let wrong = format!("`{}` holds {} ({item})", self.key, kind(item));
                    return Err(Bad {
                        at,
                        ..self.bad(wrong)
                    });
                };
                check(word).map_err(|wrong| Bad {
                    at,
                    ..self.bad(wrong.0)
                })?;
                Ok(word.clone())
            })
            .collect()
    }

    /// Where a list item is written (as TOML shows it), else where the list starts.
    fn item_at(&self, written: &str) -> usize {
        self.text
            .get(self.span.clone())
            .and_then(|list| list.find(written))
            .map_or(self.span.start, |offset| self.span.start + offset)
    }

    /// A whole number of at least `least`.
    fn whole<T: TryFrom<i64>>(&self, least: i64) -> Result<T, Bad> {
        let Value::Integer(number) = self.value else {
            return Err(self.of_wrong_type());
        };
        if *number < least {
            return Err(self.bad(format!("`{}` is {number}, below {least}", self.key)));
        }
        T::try_from(*number).map_err(|_| self.bad(format!("`{}` is {number}, too large", self.key)))
    }

    /// `true` or `false`.
    fn boolean(&self) -> Result<bool, Bad> {
        match self.value {
            Value::Boolean(value) => Ok(*value),
            _ => Err(self.of_wrong_type()),
        }
    }

    /// A positive, finite number of seconds, whole or not.
    fn seconds(&self) -> Result<f64, Bad> {
        let secs = match self.value {
            Value::Integer(number) => *number as f64,
            Value::Float(number) => *number,
            _ => return Err(self.of_wrong_type()),
        };
        positive_seconds(secs).map_err(|wrong| self.bad(format!("`{}` is {wrong}", self.key)))
    }
}

/// A timeout, or what is wrong with it.
/// A variable's positive number of seconds.
fn env_seconds(text: &str) -> Result<f64, Wrong> {
    let secs = text.parse().map_err(|_| Wrong("not a number".to_owned()))?;
    positive_seconds(secs)
}

fn positive_seconds(secs: f64) -> Result<f64, Wrong> {
    if secs.is_finite() && secs > 0.0 {
        Ok(secs)
    } else {
        Err(Wrong(format!("{secs}, not a positive number")))
    }
}

/// A TOML value's type, as a person says it.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

/// The profiles of a file's text, each value checked; the first bad one in the file is
/// the error.
fn profiles(file: &File, path: &str, text: &str) -> Result<BTreeMap<String, Profile>, ConfigError> {
    let mut first_bad: Option<Bad> = None;
    let mut profiles = BTreeMap::new();
    for (name, written) in &file.profile {
        let mut profile = Profile::default();
        for (key, value) in written {
            let entry = Entry {
                profile: name,
                key: key.get_ref(),
                key_at: key.span().start,
                value: value.get_ref(),
                span: value.span(),
                text,
            };
            if let Err(bad) = profile.set(&entry)
                && first_bad.as_ref().is_none_or(|first| bad.at < first.at)
            {
                first_bad = Some(bad);
            }
        }
        profiles.insert(name.clone(), profile);
    }
    match first_bad {
        Some(bad) => Err(bad.located(path, text)),
        None => Ok(profiles),
    }
}

/// Resolves the settings: the profile `name` (or `LOOPCHECK_PROFILE`, or `default`) of
/// the file at `path` (or `loopcheck.toml` here, when it exists), under the environment.
/// `env` reads a variable (the process environment, or a test's).
pub fn resolve(
    path: Option<&Path>,
    name: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Profile, ConfigError> {
    let file = find(path)?;
    let named = name.map(str::to_owned).or_else(|| env("LOOPCHECK_PROFILE"));
    let from_file = match (&file, &named) {
        (
            Some(Loaded {
                profiles,
                dir,
                shown,
                ..
            }),
            named,
        ) => {
            let name = named.as_deref().unwrap_or(DEFAULT_PROFILE);
            let chosen = match profiles.get(name) {
                Some(profile) => profile.clone(),
                None if name == DEFAULT_PROFILE => Profile::default(),
                None => {
                    let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
                    return Err(ConfigError::NoProfile {
                        path: shown.clone(),
                        name: name.to_owned(),
                        known: if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        },
                    });
                }
            };
            let default = profiles.get(DEFAULT_PROFILE).cloned().unwrap_or_default();
            chosen.over(default).relative_to(dir)
        }
        (None, Some(name)) if name != DEFAULT_PROFILE => {
            return Err(ConfigError::NoFile { name: name.clone() });
        }
        (None, _) => Profile::default(),
    };
    Ok(from_environment(env)?.over(from_file))
}

/// A config file read and checked: its profiles, its redaction rules, its folder, and
/// its name for messages.
struct Loaded {
    profiles: BTreeMap<String, Profile>,
    redact: Rules,
    redactions: Redactions,
    dir: PathBuf,
    shown: String,
}

/// The redactor of the config file at `path` (or `loopcheck.toml` here, when it
/// exists): the built-in rules plus its `[redact]` table's.
pub fn redactor(path: Option<&Path>) -> Result<Redactor, ConfigError> {
    match find(path)? {
        Some(file) => Redactor::new(&file.redact).map_err(|source| ConfigError::Redact {
            path: file.shown,
            source,
        }),
        None => Ok(Redactor::default()),
    }
}

/// The snapshot redactions of the config file at `path` (or `loopcheck.toml` here, when
/// it exists): its `[snapshots] redactions` table.
pub fn snapshot_redactions(path: Option<&Path>) -> Result<Redactions, ConfigError> {
    Ok(find(path)?.map(|file| file.redactions).unwrap_or_default())
}

/// The config file at `path`, or `loopcheck.toml` here when it exists.
fn find(path: Option<&Path>) -> Result<Option<Loaded>, ConfigError> {
    match path {
        Some(path) => load(path).map(Some),
        None if Path::new(FILE_NAME).exists() => load(Path::new(FILE_NAME)).map(Some),
        None => Ok(None),
    }
}

/// Reads a config file; an error names the file, line and column.
fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let in_file = |source| ConfigError::Text {
        path: shown.clone(),
        source,
    };
    let text = crate::toml_text::utf8(&bytes).map_err(in_file)?;
    let file: File = crate::toml_text::parse(text).map_err(in_file)?;
    let profiles = profiles(&file, &shown, text)?;
    let redactions = snapshot_redactions_of(&file.snapshots, &shown, text)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(Loaded {
        profiles,
        redact: file.redact,
        redactions,
        dir,
        shown,
    })
}

/// The settings the `LOOPCHECK_*` variables give; a bad value names its variable.
fn from_environment(env: &dyn Fn(&str) -> Option<String>) -> Result<Profile, ConfigError> {
    let path = |var: &str| env(var).map(PathBuf::from);
    Ok(Profile {
        controller: env("LOOPCHECK_CONTROLLER"),
        supports: read(env, "LOOPCHECK_SUPPORTS", "supports", words(capability))?,
        jobs: read(env, "LOOPCHECK_JOBS", "jobs", whole(1))?
            .map(|jobs| usize::try_from(jobs).unwrap_or(usize::MAX)),
        timeout: read(env, "LOOPCHECK_TIMEOUT", "timeout", env_seconds)?,
        startup_timeout: read(
            env,
            "LOOPCHECK_STARTUP_TIMEOUT",
            "startup-timeout",
            env_seconds,
        )?,
        seed: read(env, "LOOPCHECK_SEED", "seed", whole(0))?,
        filter: read(env, "LOOPCHECK_FILTER", "filter", words(glob))?,
        paths: None,
        report_json: path("LOOPCHECK_REPORT_JSON"),
        junit: path("LOOPCHECK_JUNIT"),
        html: path("LOOPCHECK_HTML"),
        summary_markdown: path("LOOPCHECK_SUMMARY_MARKDOWN"),
        baseline: path("LOOPCHECK_BASELINE"),
        snapshots: path("LOOPCHECK_SNAPSHOTS"),
        partition: read(env, "LOOPCHECK_PARTITION", "partition", partition)?,
        exclude: read(env, "LOOPCHECK_EXCLUDE", "exclude", words(glob))?,
        retries: read(env, "LOOPCHECK_RETRIES", "retries", whole(0))?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        fail_fast: read(env, "LOOPCHECK_FAIL_FAST", "fail-fast", boolean)?,
    })
}

/// Reads variable `var` with `parse`; a bad value reads `VAR=value: what is wrong;
/// expected what`, as the file's errors do.
fn read<T>(
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
    setting: &str,
    parse: impl Fn(&str) -> Result<T, Wrong>,
) -> Result<Option<T>, ConfigError> {
    env(var)
        .map(|value| {
            parse(value.trim()).map_err(|wrong| ConfigError::Variable {
                var: var.to_owned(),
                message: with_expected(&wrong.0, expected(setting)),
                value,
            })
        })
        .transpose()
}

/// Parses a whole number of at least `least`.
fn whole(least: u64) -> impl Fn(&str) -> Result<u64, Wrong> {
    move |text| match text.parse::<u64>() {
        Ok(number) if number >= least => Ok(number),
        Ok(number) => Err(Wrong(format!("{number}, below {least}"))),
        Err(_) => Err(Wrong("not a whole number".to_owned())),
    }
}

/// Parses `true` or `false`.
fn boolean(text: &str) -> Result<bool, Wrong> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Wrong(format!("`{text}` is neither true nor false"))),
    }
}

/// Parses a comma-separated list, each word passing `check`.
fn words(check: fn(&str) -> Result<(), Wrong>) -> impl Fn(&str) -> Result<Vec<String>, Wrong> {
    move |text| {
        text.split(',')
            .map(str::trim)
            .filter(|word| !word.is_empty())
            .map(|word| check(word).map(|()| word.to_owned()))
            .collect()
    }
}

/// `wrong; expected what`, with the hint `wrong` may end in on its own line, last.
fn with_expected(wrong: &str, expected: &str) -> String {
    let (wrong, hint) = wrong.split_once('\n').unwrap_or((wrong, ""));
    let hint = if hint.is_empty() {
        String::new()
    } else {
        format!("\n{hint}")
    };
    format!("{wrong}; expected {expected}{hint}")
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
    fn exclude_retries_and_fail_fast_are_settings_too() {
        let (_dir, path) =
            file("[profile.default]\nexclude = [\"stream/*\"]\nretries = 2\nfail-fast = true\n");
        let profile = resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(profile.exclude, Some(vec!["stream/*".to_owned()]));
        assert_eq!((profile.retries, profile.fail_fast), (Some(2), Some(true)));
        let env = |key: &str| (key == "LOOPCHECK_FAIL_FAST").then(|| "false".to_owned());
        let profile = resolve(Some(&path), None, &env).unwrap();
        assert_eq!(profile.fail_fast, Some(false));
        let (_dir, path) = file("[profile.default]\nfail-fast = \"yes\"\n");
        let err = resolve(Some(&path), None, &no_env).unwrap_err().to_string();
        assert!(err.contains("expected true or false"), "{err}");
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
        let err = resolve(Some(&path), None, &no_env).unwrap_err().to_string();
        assert!(err.ends_with("loopcheck.toml:3:1: unknown key `controler` in [profile.default]; expected one of controller, supports, jobs, timeout, startup-timeout, seed, filter, paths, report-json, junit, html, summary-markdown, baseline, snapshots, partition, exclude, retries, fail-fast\n(hint: did you mean `controller`?)"), "{err}");
        let (_dir, path) = file("[profile.default]\njobs = \"two\"\n");
        let err = resolve(Some(&path), None, &no_env).unwrap_err().to_string();
        assert!(
            err.ends_with("loopcheck.toml:2:8: `jobs` is a string (\"two\"); expected a whole number of cases at once, at least 1"),
            "{err}"
        );
        let (_dir, path) = file(TWO_PROFILES);
        let err = resolve(Some(&path), Some("nightly"), &no_env)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("no profile 'nightly' (it has: ci, default)"),
            "{err}"
        );
        let bad = |key: &str| (key == "LOOPCHECK_TIMEOUT").then(|| "soon".to_owned());
        let err = resolve(None, None, &bad).unwrap_err().to_string();
        assert_eq!(
            err,
            "LOOPCHECK_TIMEOUT=soon: not a number; expected a positive number of seconds"
        );
    }

    #[test]
    fn a_profile_not_chosen_is_checked_too_and_the_first_mistake_in_the_file_wins() {
        let (_dir, path) = file("[profile.ci]\nseed = -1\n\n[profile.default]\ntimeout = 0\n");
        let err = resolve(Some(&path), None, &no_env).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "loopcheck.toml:2:8: `seed` is -1, below 0; expected a whole number, 0 or more"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_bad_variable_is_named_with_its_value_and_what_it_takes() {
        let env = |key: &str| match key {
            "LOOPCHECK_JOBS" => Some("0".to_owned()),
            _ => None,
        };
        let err = resolve(None, None, &env).unwrap_err().to_string();
        assert_eq!(
            err,
            "LOOPCHECK_JOBS=0: 0, below 1; expected a whole number of cases at once, at least 1"
        );
        let env = |key: &str| (key == "LOOPCHECK_SUPPORTS").then(|| "stream,backgrond".to_owned());
        let err = resolve(None, None, &env).unwrap_err().to_string();
        assert!(
            err.starts_with("LOOPCHECK_SUPPORTS=stream,backgrond: unknown capability 'backgrond'; expected a list of capabilities")
                && err.ends_with("\n(hint: did you mean `background`?)"),
            "{err}"
        );
    }

    #[test]
    fn snapshot_redactions_are_read_and_a_bad_selector_is_placed() {
        let (_dir, path) =
            file("[snapshots]\nredactions = { \"/steps/*/model/body/user\" = \"[user]\" }\n");
        let redactions = snapshot_redactions(Some(&path)).unwrap();
        assert_eq!(redactions.unmatched(), vec!["/steps/*/model/body/user"]);
        let (_dir, path) = file(
            "[profile.default]\njobs = 2\n\n[snapshots]\nredactions = { \"/a\" = \"x\", \"/steps//b\" = \"y\" }\n",
        );
        let err = resolve(Some(&path), None, &no_env).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "loopcheck.toml:5:28: [snapshots] redactions: selector '/steps//b' has an empty segment; expected a JSON pointer into the snapshot, `*` for any key or index, such as \"/steps/*/model/body/metadata/trace_id\" = \"[trace id]\""
            ),
            "{err}"
        );
    }

    #[test]
    fn the_expected_capabilities_are_the_runner_s() {
        assert_eq!(
            expected("supports"),
            format!(
                "a list of capabilities, some of {}",
                CAPABILITIES.join(", ")
            )
        );
    }
}
