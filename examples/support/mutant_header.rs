//! The header of a mutant in `harness/mutants/` (`# key: value` lines), shared by the
//! examples and the tests that pick mutants by it.

use std::path::{Path, PathBuf};

/// A header line's value (`# key: value`), or an empty string.
pub fn header(path: &Path, key: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(&format!("# {key}: ")).map(str::to_owned))
        .unwrap_or_default()
}

/// The file names of the mutants whose header says `fuzz: reachable`, sorted: the ones a
/// generated case can reach.
pub fn fuzz_reachable(mutants: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(mutants)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| header(path, "fuzz") == "reachable")
                .filter_map(|path: PathBuf| Some(path.file_name()?.to_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
