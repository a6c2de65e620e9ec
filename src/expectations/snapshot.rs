//! Snapshots: the normalized transcript of each case run, kept in a folder (one file per
//! case and state mode; a team keeps one folder per controller) and compared on every
//! run. The oracle checks what must always hold; a snapshot catches what silently
//! changed: an SDK upgrade that starts sending `max_output_tokens`, a refactor that
//! reorders tools, a framework that drops `strict`.
//!
//! Files are in insta's format (a `---` metadata header, then the content), so
//! `cargo insta review` and `cargo insta accept` work on them: a changed or missing
//! snapshot is written beside the old one as `.snap.new` for review, except under `CI`,
//! where nothing is written and a missing snapshot fails the case. `--update-snapshots`
//! accepts every change at once and is refused under `CI`, as insta does.
//! `loopcheck snapshots review` walks the `.snap.new` files without cargo
//! ([`super::pending`]).
//!
//! Redactions from the settings file ([`super::redaction`]) replace fields that vary by
//! design, after normalization, on both sides of the comparison and in what is written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::redaction::Redactions;
use crate::report::CaseReport;
use crate::scenario::{Delivery, StateMode};
use crate::transcript::drift::{Comparison, ComparisonStatus, changes, text_diff};
use crate::transcript::normalize::{NORMALIZED_FORMAT, Normalized, normalize};

/// Why the snapshot folder cannot be used; the CLI reports it as a usage error.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// `--update-snapshots` under CI.
    #[error(
        "refusing to update snapshots because CI is set\n(hint: review changes with `loopcheck snapshots review` outside CI, or run without --update-snapshots)"
    )]
    UpdateInCi,
    /// The folder cannot be created or written.
    #[error(
        "failed to use the snapshot folder {path}: {source}\n(hint: pass a folder this user can write, or create it first)"
    )]
    Folder {
        /// The folder.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}

/// Why one snapshot file cannot be read or written; the case run's note says it, and
/// the case is `error`.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotFileError {
    /// The file cannot be read.
    #[error("failed to read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// Its folder cannot be created.
    #[error("failed to create {}: {source}", .dir.display())]
    Create {
        /// The folder.
        dir: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The file cannot be written.
    #[error("failed to write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The file is not a snapshot of this case run: `file:line: what was expected`.
    #[error("{}:{line}: {problem}", .path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong there.
        problem: Problem,
    },
}

/// What is wrong in a snapshot file.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// The first line is not `---`.
    #[error("expected `---`, the start of an insta snapshot's header")]
    NoHeaderStart,
    /// The header does not end.
    #[error("expected `---`, the end of the snapshot's header, before the end of the file")]
    NoHeaderEnd,
    /// The content is not a normalized transcript.
    #[error("expected a loopcheck normalized transcript (JSON, format {NORMALIZED_FORMAT}): {0}")]
    NotNormalized(serde_json::Error),
    /// A redaction left something that is no normalized transcript (a placeholder
    /// where a number or a list must be).
    #[error(
        "the redactions leave no normalized transcript ({0}); redact only fields a string may replace, such as those under `body`"
    )]
    Redacted(serde_json::Error),
    /// Written by a newer loopcheck.
    #[error(
        "this snapshot has format {0}, newer than this loopcheck reads ({NORMALIZED_FORMAT}); upgrade loopcheck"
    )]
    Newer(u32),
    /// The snapshot of another case run.
    #[error("this snapshot is of {found}, not {wanted}")]
    OtherRun {
        /// `case [state]` of the file.
        found: String,
        /// `case [state]` of the run.
        wanted: String,
    },
}

/// The snapshot folder of a run.
#[derive(Debug, Clone)]
pub struct Snapshots {
    dir: PathBuf,
    update: bool,
    ci: bool,
    redactions: Redactions,
}

impl Snapshots {
    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The snapshots in `dir`; checks before any case runs that the folder can be written
    /// when a run may write to it (outside CI, or to update).
    pub fn open(dir: &Path, update: bool, redactions: Redactions) -> Result<Self, SnapshotError> {
        let ci = crate::ci::is_ci();
        if update && ci {
            return Err(SnapshotError::UpdateInCi);
        }
        if update || !ci {
            let folder = |source| SnapshotError::Folder {
                path: dir.to_owned(),
                source,
            };
            std::fs::create_dir_all(dir).map_err(folder)?;
            tempfile::NamedTempFile::new_in(dir).map_err(folder)?;
        }
        Ok(Self {
            dir: dir.to_owned(),
            update,
            ci,
            redactions,
        })
    }

    /// The selectors that replaced nothing in any case run compared so far.
    pub fn unmatched_redactions(&self) -> Vec<&str> {
        self.redactions.unmatched()
    }

    /// The file of a case run: `<dir>/<area>/<name>.<state>.snap`, and
    /// `<name>.<state>.stream.snap` for a streamed run (`.websocket.snap` over the socket).
    pub fn path(&self, id: &str, state: StateMode, delivery: Delivery) -> PathBuf {
        let streamed = match delivery {
            Delivery::Json => "",
            Delivery::Stream => ".stream",
            Delivery::WebSocket => ".websocket",
        };
        self.dir
            .join(format!("{id}.{}{streamed}.snap", state.as_str()))
    }

    /// Compares a judged case run with its snapshot (or writes one), and folds the
    /// outcome into the report: a drifted run, or a missing snapshot under CI, turns a
    /// passing verdict into `drift`; an unreadable snapshot makes the case `error`.
    /// `cut_by_clock`: the run ends at a deadline, so how many exchanges fit before it
    /// depends on the machine's speed; the run and its snapshot are compared up to where
    /// the shorter one ends, and must end alike.
    pub fn check(&self, report: &mut CaseReport, cut_by_clock: bool) {
        self.check_named(report, None, cut_by_clock);
    }

    /// As [`Snapshots::check`], with the file named `name` (a relative path under the
    /// folder) in place of the case id: two tests of a suite may run the same case run
    /// with different loops, each held to its own snapshot.
    pub fn check_named(&self, report: &mut CaseReport, name: Option<&str>, cut_by_clock: bool) {
        if report.transcript.model.is_empty() && report.transcript.tools.is_empty() {
            return; // unsupported or not run: nothing was sent
        }
        let path = self.path(name.unwrap_or(&report.id), report.state, report.delivery);
        let normalized = normalize(&report.id, report.state, &report.transcript);
        let note = match redacted(&self.redactions, normalized, true) {
            Ok(actual) => self.compare(&path, &actual, cut_by_clock),
            Err(problem) => Comparison {
                status: ComparisonStatus::Unreadable,
                changes: vec![problem.to_string()],
                diff: None,
                path,
            },
        };
        report.fold_snapshot(note);
    }

    fn compare(&self, path: &Path, actual: &Normalized, cut_by_clock: bool) -> Comparison {
        let new_path = path.with_extension("snap.new");
        let note = |status, changes: Vec<String>, diff: Option<String>| Comparison {
            path: path.to_owned(),
            status,
            changes,
            diff,
        };
        // The file as stored: an update rewrites one that matches only once redacted.
        let mut stored = None;
        let expected = match std::fs::read_to_string(path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                let why = SnapshotFileError::Read {
                    path: path.to_owned(),
                    source,
                };
                return note(ComparisonStatus::Unreadable, vec![why.to_string()], None);
            }
            Ok(text) => match read(path, &text, actual).and_then(|expected| {
                stored = Some(text.clone());
                // A snapshot written before a redaction was added compares as though
                // written after it.
                redacted(&self.redactions, expected, false).map_err(|problem| {
                    SnapshotFileError::Bad {
                        path: path.to_owned(),
                        line: 1,
                        problem,
                    }
                })
            }) {
                Ok(expected) => Some(expected),
                // Updating replaces an unreadable snapshot too.
                Err(_) if self.update => None,
                Err(why) => {
                    return note(ComparisonStatus::Unreadable, vec![why.to_string()], None);
                }
            },
        };
        let write = |to: &Path| -> Result<(), SnapshotFileError> {
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|source| SnapshotFileError::Create {
                    dir: parent.to_owned(),
                    source,
                })?;
            }
            crate::files::write_bytes_atomic(to, render(actual).as_bytes()).map_err(|source| {
                SnapshotFileError::Write {
                    path: to.to_owned(),
                    source,
                }
            })
        };
        match expected {
            Some(expected)
                if self.update
                    && &expected == actual
                    && stored.as_deref() != Some(render(actual).as_str()) =>
            {
                match write(path) {
                    Ok(()) => {
                        let _ = std::fs::remove_file(&new_path);
                        note(ComparisonStatus::Updated, Vec::new(), None)
                    }
                    Err(why) => note(ComparisonStatus::Unreadable, vec![why.to_string()], None),
                }
            }
            Some(expected)
                if &expected == actual || cut_by_clock && same_until_cut(&expected, actual) =>
            {
                let _ = std::fs::remove_file(&new_path);
                note(ComparisonStatus::Matched, Vec::new(), None)
            }
            _ if self.update => match write(path) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&new_path);
                    note(ComparisonStatus::Updated, Vec::new(), None)
                }
                Err(why) => note(ComparisonStatus::Unreadable, vec![why.to_string()], None),
            },
            Some(expected) => {
                let found = changes(&expected, actual)
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                let diff = text_diff(&content(&expected), &content(actual));
                if !self.ci
                    && let Err(why) = write(&new_path)
                {
                    return note(ComparisonStatus::Unreadable, vec![why.to_string()], None);
                }
                note(ComparisonStatus::Drifted, found, Some(diff))
            }
            None if self.ci => note(
                ComparisonStatus::Missing,
                vec![format!(
                    "no snapshot at {} (under CI a missing snapshot fails; record it outside CI and commit it)",
                    path.display()
                )],
                None,
            ),
            None => match write(&new_path) {
                Ok(()) => note(ComparisonStatus::New, Vec::new(), None),
                Err(why) => note(ComparisonStatus::Unreadable, vec![why.to_string()], None),
            },
        }
    }
}

/// `normalized` with the redactions applied (`count`: as what the controller sent now).
fn redacted(
    redactions: &Redactions,
    normalized: Normalized,
    count: bool,
) -> Result<Normalized, Problem> {
    if redactions.is_empty() {
        return Ok(normalized);
    }
    let mut value = serde_json::to_value(&normalized).unwrap_or(Value::Null);
    redactions.apply(&mut value, count);
    serde_json::from_value(value).map_err(Problem::Redacted)
}

/// Whether two runs cut by a deadline agree: every exchange both made, and how they ended.
fn same_until_cut(expected: &Normalized, actual: &Normalized) -> bool {
    let both = expected.steps.len().min(actual.steps.len());
    expected.steps[..both] == actual.steps[..both]
        && expected.result == actual.result
        && expected.unfinished == actual.unfinished
}

/// The snapshot's content: the normalized transcript as pretty JSON, one field per line,
/// so a review shows changes line by line.
fn content(normalized: &Normalized) -> String {
    serde_json::to_string_pretty(normalized).unwrap_or_default()
}

/// The whole file, in insta's format.
fn render(normalized: &Normalized) -> String {
    format!(
        "---\nsource: loopcheck\ndescription: {}\n---\n{}\n",
        serde_json::to_string(&format!("{} [{}]", normalized.case, normalized.state))
            .unwrap_or_default(),
        content(normalized)
    )
}

/// Parses a snapshot file; the error names the file, the line and what was expected.
fn read(path: &Path, text: &str, actual: &Normalized) -> Result<Normalized, SnapshotFileError> {
    let at = |line: usize, problem: Problem| SnapshotFileError::Bad {
        path: path.to_owned(),
        line,
        problem,
    };
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(at(1, Problem::NoHeaderStart));
    }
    let mut offset = text.find('\n').map_or(text.len(), |n| n + 1);
    let mut line = 2;
    loop {
        let Some(next) = lines.next() else {
            return Err(at(line, Problem::NoHeaderEnd));
        };
        offset += next.len();
        if next.trim_end() == "---" {
            break;
        }
        line += 1;
    }
    let body = &text[offset..];
    let normalized: Normalized = serde_json::from_str(body)
        .map_err(|err| at(line + err.line(), Problem::NotNormalized(err)))?;
    if normalized.format > NORMALIZED_FORMAT {
        return Err(at(line + 1, Problem::Newer(normalized.format)));
    }
    if (&normalized.case, normalized.state) != (&actual.case, actual.state) {
        return Err(at(
            line + 1,
            Problem::OtherRun {
                found: format!("{} [{}]", normalized.case, normalized.state),
                wanted: format!("{} [{}]", actual.case, actual.state),
            },
        ));
    }
    Ok(normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized() -> Normalized {
        Normalized {
            format: NORMALIZED_FORMAT,
            case: "area/01-case".to_owned(),
            state: StateMode::Stateless,
            steps: Vec::new(),
            result: None,
            unfinished: None,
        }
    }

    #[test]
    fn a_run_cut_by_its_deadline_matches_its_snapshot_up_to_the_cut_and_no_further() {
        let path = Path::new("snapshots/reference/budget/05-deadline.previous_response_id.snap");
        let text =
            include_str!("../../snapshots/reference/budget/05-deadline.previous_response_id.snap");
        let mut shape = normalized();
        shape.case = "budget/05-deadline".to_owned();
        shape.state = StateMode::PreviousResponseId;
        let full = read(path, text, &shape).unwrap();
        assert!(full.steps.len() > 1, "{full:?}");
        // A slower machine reaches the deadline one exchange earlier.
        let mut shorter = full.clone();
        shorter.steps.pop();
        assert!(same_until_cut(&full, &shorter) && same_until_cut(&shorter, &full));
        // What both sent must still agree, and the run must end alike.
        let mut changed = shorter.clone();
        if let Some(crate::transcript::normalize::Step::Model(first)) = changed.steps.first_mut() {
            first.path = "/v1/other".to_owned();
        }
        assert!(!same_until_cut(&full, &changed));
        let mut ended_otherwise = shorter;
        ended_otherwise.result = None;
        assert!(!same_until_cut(&full, &ended_otherwise));
    }

    #[test]
    fn a_rendered_snapshot_reads_back() {
        let n = normalized();
        let path = Path::new("s/area/01-case.stateless.snap");
        assert_eq!(read(path, &render(&n), &n).unwrap(), n);
    }

    #[test]
    fn bad_files_name_the_file_the_line_and_what_was_expected() {
        let n = normalized();
        let path = Path::new("s.snap");
        let err = read(path, "hello", &n).unwrap_err().to_string();
        assert!(err.starts_with("s.snap:1: expected `---`"), "{err}");
        let err = read(path, "---\nsource: x\n", &n).unwrap_err().to_string();
        assert!(
            err.starts_with("s.snap:3: expected `---`, the end"),
            "{err}"
        );
        let truncated = render(&n);
        let err = read(path, &truncated[..truncated.len() - 20], &n)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected a loopcheck normalized transcript"),
            "{err}"
        );
        let mut other = n.clone();
        other.case = "area/02-other".to_owned();
        let err = read(path, &render(&other), &n).unwrap_err().to_string();
        assert!(
            err.contains("is of area/02-other [stateless], not area/01-case"),
            "{err}"
        );
    }
}
