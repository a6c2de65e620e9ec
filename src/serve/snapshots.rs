//! Snapshots in serve mode: a session's verdict is held to its snapshot as a run's case
//! run is ([`crate::expectations::Snapshots`]), under a name the session may choose (a
//! test's id), and what drifted is told in words a test failure can carry.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::report::CaseReport;
use crate::report::drift_groups::changes_once;
use crate::transcript::drift::ComparisonStatus;

/// What a session's `snapshot` name may be: a relative path of segments made of
/// letters, digits, `-`, `_` and `.` (no `.` or `..` segment, none longer than 200), so
/// it stays under the snapshot folder and its file name fits a file system's limit.
const NAME_EXPECTED: &str = "a relative path of letters, digits, `-`, `_` and `.`, such as \
     \"tests/test_loop.py-test_refund\" (no `..`, no leading `/`)";

/// The `snapshot` a session's creation names, checked; `None` when it names none.
pub fn requested_name(request: &Value) -> Result<Option<String>, String> {
    let name = match request.get("snapshot") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(name)) => name,
        Some(other) => return Err(format!("`snapshot` must be {NAME_EXPECTED}; got {other}")),
    };
    let safe_segment = |segment: &str| {
        !segment.is_empty()
            && segment.len() <= 200
            && segment != "."
            && segment != ".."
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !name.split('/').all(safe_segment) {
        return Err(format!("`snapshot` must be {NAME_EXPECTED}; got {name:?}"));
    }
    Ok(Some(name.clone()))
}

/// What a test failure says of the session's snapshot, when it fails the verdict or
/// waits for review: each change once (as the console groups them), and where to
/// review; `None` when the snapshot matched, was updated, or there is none.
pub fn message(report: &CaseReport, dir: &Path) -> Option<String> {
    let note = report.snapshot.as_ref()?;
    let review = format!(
        "review it with `loopcheck snapshots review --snapshots {}`",
        dir.display()
    );
    let path = note.path.display();
    let mut out = String::new();
    match note.status {
        ComparisonStatus::Drifted => {
            let once = changes_once(&note.changes);
            let _ = writeln!(
                out,
                "what the loop sent differs from its snapshot {path} in {} distinct change(s):",
                once.len()
            );
            for change in once {
                let _ = writeln!(out, "  {change}");
            }
            if crate::ci::is_ci() {
                out.push_str(
                    "(under CI nothing is written; run the test outside CI to review the change)",
                );
            } else {
                let _ = write!(out, "the new version is pending as {path}.new: {review}");
            }
        }
        ComparisonStatus::Missing => {
            let _ = write!(out, "{}", note.changes.join("; "));
        }
        ComparisonStatus::New => {
            let _ = write!(out, "new snapshot pending as {path}.new: {review}");
        }
        ComparisonStatus::Unreadable => {
            let _ = write!(
                out,
                "the snapshot cannot be used: {}",
                note.changes.join("; ")
            );
        }
        ComparisonStatus::Matched | ComparisonStatus::Updated => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_snapshot_name_stays_under_the_folder() {
        assert_eq!(requested_name(&json!({})), Ok(None));
        assert_eq!(
            requested_name(&json!({"snapshot": "tests/test_a.py-test_b_x_"})),
            Ok(Some("tests/test_a.py-test_b_x_".to_owned()))
        );
        for bad in [
            json!("../up"),
            json!("/abs"),
            json!("a//b"),
            json!("a b"),
            json!("a/./b"),
            json!(3),
        ] {
            let err = requested_name(&json!({ "snapshot": bad })).unwrap_err();
            assert!(
                err.starts_with("`snapshot` must be a relative path"),
                "{err}"
            );
        }
    }
}
