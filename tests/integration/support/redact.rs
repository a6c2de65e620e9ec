//! The one redactor of the tests: what changes from run to run (durations, ids, temporary
//! paths, the version) replaced with stable words, so that a snapshot shows only what a
//! change to the program changes.

/// Each pattern and the words that stand in for what it matches.
const RULES: &[(&str, &str)] = &[
    (r"\b\d+ ms\b", "[ms] ms"),
    (r"finished in \d+\.\d s", "finished in [s] s"),
    (r#""duration_ms": \d+"#, r#""duration_ms": "[ms]""#),
    (r"\b(resp|rs|fc|msg)_[0-9a-f]{48}\b", "${1}_[id]"),
    (r"\bcall_[0-9A-Za-z]{24}\b", "call_[id]"),
    (r"/tmp/[^\s:]+", "[tmp]"),
    (r"loopcheck \d+\.\d+\.\d+", "loopcheck [version]"),
    (
        r#""loopcheck": "\d+\.\d+\.\d+""#,
        r#""loopcheck": "[version]""#,
    ),
];

/// insta settings that redact every snapshot taken while they are bound.
pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in RULES {
        settings.add_filter(pattern, *replacement);
    }
    settings
}
