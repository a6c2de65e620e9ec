//! Output paths checked before the first case runs: a report that cannot be written is a
//! usage error found in a second, not after a run of many minutes. The check asks what
//! the atomic write ([`crate::files::write_bytes_atomic`]) will need: a temporary file
//! in the path's folder (created, with its parents, when missing), then a rename.

use std::path::Path;

/// Whether the `what` (e.g. "JSON report") can be written to `path`; an error names the
/// path and why not.
pub fn check_file(what: &str, path: &Path) -> Result<(), String> {
    let refuse = |why: String| {
        format!(
            "cannot write the {what} to {}: {why}\n(hint: give a file path in a folder this user can write)",
            path.display()
        )
    };
    if path.is_dir() {
        return Err(refuse("it is a folder".to_owned()));
    }
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    check_folder_at(folder).map_err(refuse)
}

/// Whether files can be written into the folder `dir` (e.g. snapshots, fuzz failures).
pub fn check_folder(what: &str, dir: &Path) -> Result<(), String> {
    check_folder_at(dir).map_err(|why| {
        format!(
            "cannot write the {what} into {}: {why}\n(hint: give a folder this user can write)",
            dir.display()
        )
    })
}

/// `dir` takes new files, or would be created under a folder that does. Probed with a
/// real temporary file (removed at once): permissions, read-only mounts and full quotas
/// all show, as they would at the write.
fn check_folder_at(dir: &Path) -> Result<(), String> {
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
        return Err(format!("{} is not a folder", existing.display()));
    }
    tempfile::NamedTempFile::new_in(existing)
        .map(drop)
        .map_err(|err| format!("{} takes no new file: {err}", existing.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_path_is_refused_when_a_folder_or_under_a_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_file("JSON report", &dir.path().join("new/deeper/r.json")).is_ok());
        let err = check_file("JSON report", dir.path()).unwrap_err();
        assert!(err.contains(": it is a folder\n(hint: "), "{err}");
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let err = check_file("JUnit report", &file.join("junit.xml")).unwrap_err();
        assert!(err.contains("plain is not a folder"), "{err}");
        assert!(check_folder("snapshots", &file).is_err());
    }
}
