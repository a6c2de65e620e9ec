//! Output paths checked before anything runs.

use std::path::Path;

use crate::report::writable::{self, Unwritable};

use super::args::ReportPaths;

impl ReportPaths {
    /// Checks, before anything runs, that each report asked for can be written.
    pub(super) fn check(&self) -> Result<(), Unwritable> {
        let json = self.report_json.as_deref().filter(|p| *p != Path::new("-"));
        check_files(&[
            ("JSON report", json),
            ("JUnit report", self.junit.as_deref()),
            ("HTML report", self.html.as_deref()),
            ("Markdown summary", self.summary_markdown.as_deref()),
        ])
    }
}

/// Checks that each file given can be written, naming the first that cannot.
pub(super) fn check_files(files: &[(&str, Option<&Path>)]) -> Result<(), Unwritable> {
    files
        .iter()
        .filter_map(|(what, path)| Some((what, (*path)?)))
        .try_for_each(|(what, path)| writable::check_file(what, path))
}
