//! Files written whole or not at all: a reader (a CI job, a browser, the next run)
//! never sees a half-written report, snapshot or cassette.

/// Writes bytes to a temporary file beside `path`, then renames it into place, so a
/// reader never sees a half-written file. Missing folders are created (a report path in
/// a CI config often names one the checkout lacks).
pub fn write_bytes_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    // A temporary file is private (0600); what is written is an ordinary file to share
    // (a report as a CI artifact, a starter controller), so it gets the usual 0644.
    {
        use std::os::unix::fs::PermissionsExt;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
}
