//! Snapshots waiting for review: the `.snap.new` files a run outside CI writes beside a
//! changed or missing snapshot. Accepting one moves it over its snapshot; rejecting it
//! deletes it. `loopcheck snapshots review` is built on these, for teams without cargo.

use std::path::{Path, PathBuf};

/// The extension of a snapshot waiting for review.
const PENDING: &str = ".snap.new";

/// Why pending snapshots cannot be listed or settled; each names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum PendingError {
    /// The folder cannot be walked.
    #[error("cannot read the snapshot folder {}: {source}", .path.display())]
    Walk {
        /// The folder (or the entry under it).
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// A pending file cannot be read, moved or removed.
    #[error("cannot {action} {}: {source}", .path.display())]
    File {
        /// What was being done: `read`, `accept`, `reject`.
        action: &'static str,
        /// The pending file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

/// One snapshot waiting for review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The `.snap.new` file.
    pub new: PathBuf,
    /// The snapshot it would replace (which may not exist yet).
    pub snap: PathBuf,
    /// The case id, as `--filter` globs match it.
    pub case: String,
    /// `case [state]` and the delivery when not plain JSON, as a person reads it.
    pub label: String,
}

impl Pending {
    /// Whether this is a new snapshot rather than a change to one.
    pub fn is_new(&self) -> bool {
        !self.snap.exists()
    }

    /// The change from the snapshot to the pending one, as a unified diff of their
    /// content, as a run's drift shows it (the whole content as added for a new one).
    pub fn diff(&self) -> Result<String, PendingError> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| PendingError::File {
                action: "read",
                path: path.to_owned(),
                source,
            })
        };
        let new = read(&self.new)?;
        let old = if self.is_new() {
            String::new()
        } else {
            read(&self.snap)?
        };
        Ok(similar::TextDiff::from_lines(body(&old), body(&new))
            .unified_diff()
            .context_radius(3)
            .header("snapshot", "pending")
            .to_string())
    }

    /// Moves the pending file over its snapshot (a rename: a reader sees the old file or
    /// the new one, never half of one).
    pub fn accept(&self) -> Result<(), PendingError> {
        std::fs::rename(&self.new, &self.snap).map_err(|source| PendingError::File {
            action: "accept",
            path: self.new.clone(),
            source,
        })
    }

    /// Deletes the pending file; the snapshot stays as it was.
    pub fn reject(&self) -> Result<(), PendingError> {
        std::fs::remove_file(&self.new).map_err(|source| PendingError::File {
            action: "reject",
            path: self.new.clone(),
            source,
        })
    }
}

/// What follows a snapshot file's header: the content a review compares.
fn body(text: &str) -> &str {
    text.strip_prefix("---\n")
        .and_then(|rest| rest.find("\n---\n").map(|end| &rest[end + 5..]))
        .unwrap_or(text)
}

/// The pending snapshots under `dir`, in path order; none when the folder does not exist.
pub fn find(dir: &Path) -> Result<Vec<Pending>, PendingError> {
    let mut found = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut found)?;
    }
    found.sort_by(|a, b| a.new.cmp(&b.new));
    Ok(found)
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<Pending>) -> Result<(), PendingError> {
    let walk_error = |source| PendingError::Walk {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(walk_error)? {
        let path = entry.map_err(walk_error)?.path();
        if path.is_dir() {
            walk(root, &path, found)?;
            continue;
        }
        let Some(name) = path.to_str().and_then(|p| p.strip_suffix(PENDING)) else {
            continue;
        };
        let snap = PathBuf::from(format!("{name}.snap"));
        let (case, label) = described(&path).unwrap_or_else(|| from_name(root, name));
        found.push(Pending {
            new: path,
            snap,
            case,
            label,
        });
    }
    Ok(())
}

/// The case and label a snapshot's header describes (`description: "case [state]"`),
/// with the delivery its name carries.
fn described(path: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = body_header(&text)?
        .lines()
        .find_map(|l| l.strip_prefix("description: "))?;
    let description: String = serde_json::from_str(line).ok()?;
    let (case, _) = description.rsplit_once(" [")?;
    let name = path.to_str()?.strip_suffix(PENDING)?;
    let delivery = [".stream", ".websocket"]
        .into_iter()
        .find(|d| name.ends_with(d))
        .map(|d| format!(" ({})", &d[1..]))
        .unwrap_or_default();
    Some((case.to_owned(), format!("{description}{delivery}")))
}

fn body_header(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    rest.find("\n---\n").map(|end| &rest[..end])
}

/// The case as the file's path names it, for a file whose header cannot be read:
/// `<dir>/<area>/<name>.<state>[.<delivery>]`.
fn from_name(root: &Path, name: &str) -> (String, String) {
    let relative = Path::new(name)
        .strip_prefix(root)
        .map_or_else(|_| name.to_owned(), |p| p.display().to_string());
    let case = match relative.rsplit_once('/') {
        Some((area, file)) => format!("{area}/{}", file.split('.').next().unwrap_or(file)),
        None => relative.split('.').next().unwrap_or(&relative).to_owned(),
    };
    (case, relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(case: &str, state: &str, content: &str) -> String {
        format!("---\nsource: loopcheck\ndescription: \"{case} [{state}]\"\n---\n{content}\n")
    }

    #[test]
    fn pending_files_are_found_described_diffed_accepted_and_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let area = dir.path().join("area");
        std::fs::create_dir_all(&area).unwrap();
        std::fs::write(
            area.join("01-a.stateless.snap"),
            snapshot("area/01-a", "stateless", "{\"x\": 1}"),
        )
        .unwrap();
        std::fs::write(
            area.join("01-a.stateless.snap.new"),
            snapshot("area/01-a", "stateless", "{\"x\": 2}"),
        )
        .unwrap();
        std::fs::write(
            area.join("02-b.stateless.stream.snap.new"),
            snapshot("area/02-b", "stateless", "{}"),
        )
        .unwrap();
        let found = find(dir.path()).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].case, "area/01-a");
        assert!(!found[0].is_new());
        let diff = found[0].diff().unwrap();
        assert!(
            diff.contains("-{\"x\": 1}") && diff.contains("+{\"x\": 2}"),
            "{diff}"
        );
        assert!(!diff.contains("source: loopcheck"), "{diff}");
        assert_eq!(found[1].label, "area/02-b [stateless] (stream)");
        assert!(found[1].is_new());

        found[0].accept().unwrap();
        let accepted = std::fs::read_to_string(area.join("01-a.stateless.snap")).unwrap();
        assert!(accepted.contains("{\"x\": 2}"));
        found[1].reject().unwrap();
        assert!(find(dir.path()).unwrap().is_empty());
        assert!(!area.join("02-b.stateless.stream.snap").exists());
    }

    #[test]
    fn a_file_without_a_header_is_named_by_its_path_and_a_missing_folder_has_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("area")).unwrap();
        std::fs::write(dir.path().join("area/03-c.conversation.snap.new"), "junk").unwrap();
        let found = find(dir.path()).unwrap();
        assert_eq!(found[0].case, "area/03-c");
        assert!(find(&dir.path().join("none")).unwrap().is_empty());
    }
}
