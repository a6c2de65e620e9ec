//! Output paths checked before the first case runs: a report that cannot be written is a
//! usage error found in a second, not after a run of many minutes. The check asks what
//! the atomic write ([`crate::files::write_bytes_atomic`]) will need: a temporary file
//! in the path's folder (created, with its parents, when missing), then a rename.

use std::path::{Path, PathBuf};

/// An output that cannot be written, named with what it is and where it was to go.
#[derive(Debug, thiserror::Error)]
pub enum Unwritable {
    /// A file (a report, a baseline).
    #[error(
        "cannot write the {what} to {path}: {why}\n(hint: give a file path in a folder this user can write)"
    )]
    File {
        /// What it is, e.g. "JSON report".
        what: String,
        /// Where it was to go.
        path: PathBuf,
        /// Why not.
        why: Refusal,
    },
    /// A folder of files (snapshots, fuzz failures).
    #[error("cannot write the {what} into {dir}: {why}\n(hint: give a folder this user can write)")]
    Folder {
        /// What goes there, e.g. "fuzz failures".
        what: String,
        /// The folder.
        dir: PathBuf,
        /// Why not.
        why: Refusal,
    },
}

/// Why a path takes no new file.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A file's path names a folder.
    #[error("it is a folder")]
    IsAFolder,
    /// The nearest existing ancestor is a file.
    #[error("{} is not a folder", .0.display())]
    NotAFolder(PathBuf),
    /// The folder refuses a new file (permissions, a read-only mount, a full quota).
    #[error("{} takes no new file: {source}", .dir.display())]
    NoNewFile {
        /// The folder probed.
        dir: PathBuf,
        /// What the probe met.
        source: std::io::Error,
    },
}

/// Whether the `what` (e.g. "JSON report") can be written to `path`; an error names the
/// path and why not.
pub fn check_file(what: &str, path: &Path) -> Result<(), Unwritable> {
    let refuse = |why: Refusal| Unwritable::File {
        what: what.to_owned(),
        path: path.to_owned(),
        why,
    };
    if path.is_dir() {
        return Err(refuse(Refusal::IsAFolder));
    }
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    check_folder_at(folder).map_err(refuse)
}

/// Whether files can be written into the folder `dir` (e.g. snapshots, fuzz failures).
pub fn check_folder(what: &str, dir: &Path) -> Result<(), Unwritable> {
    check_folder_at(dir).map_err(|why| Unwritable::Folder {
        what: what.to_owned(),
        dir: dir.to_owned(),
        why,
    })
}

/// `dir` takes new files, or would be created under a folder that does. Probed with a
/// real temporary file (removed at once): permissions, read-only mounts and full quotas
/// all show, as they would at the write.
fn check_folder_at(dir: &Path) -> Result<(), Refusal> {
    let existing = dir
        .ancestors()
        .map(|folder| {
            if folder.as_os_str().is_empty() {
                Path::new(".")
            } else {
                folder
            }
        })
        .find(|folder| folder.exists())
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        return Err(Refusal::NotAFolder(existing.to_owned()));
    }
    tempfile::NamedTempFile::new_in(existing)
        .map(drop)
        .map_err(|source| Refusal::NoNewFile {
            dir: existing.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_path_is_refused_when_a_folder_or_under_a_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_file("JSON report", &dir.path().join("new/deeper/r.json")).is_ok());
        let err = check_file("JSON report", dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains(": it is a folder\n(hint: "), "{err}");
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let err = check_file("JUnit report", &file.join("junit.xml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plain is not a folder"), "{err}");
        assert!(check_folder("snapshots", &file).is_err());
    }
}
