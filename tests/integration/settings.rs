//! Settings mistakes are usage errors found before any case runs: a bad `loopcheck.toml`
//! value is named by its file, line and column (not by the flag it would fill), and an
//! output path that cannot be written is refused before the first case.

use std::path::Path;
use std::process::Output;

use crate::support::{cli, shell_quote};

/// One case, with a controller that leaves a marker file when it is started: the marker
/// shows whether any case ran.
fn run_in(dir: &Path, extra: &[&str]) -> Output {
    let marker = dir.join("controller-ran");
    let controller = format!("touch {}", shell_quote(&marker.to_string_lossy()));
    cli::command(&[
        "run",
        "--filter",
        "dispatch/01-unknown-tool",
        "--jobs",
        "1",
        "--controller",
        &controller,
    ])
    .args(extra)
    .current_dir(dir)
    .env_remove("LOOPCHECK_PROFILE")
    .output()
    .expect("loopcheck runs")
}

/// What is wrong with how a run refused a mistake: it must exit 2 with stderr starting
/// with `prefix`, before any case ran. Every row of a table is checked, so that one run
/// shows each row that fails.
fn refusal_problem(dir: &Path, output: &Output, prefix: &str) -> Option<String> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let ran = dir.join("controller-ran").exists();
    let _ = std::fs::remove_file(dir.join("controller-ran"));
    (output.status.code() != Some(2) || !stderr.starts_with(prefix) || ran).then(|| {
        format!(
            "expected exit 2, no case run and {prefix:?}; got exit {:?}, a case ran: {ran}, stderr:\n{stderr}",
            output.status.code()
        )
    })
}

/// Fails with every row's problem, when any row has one.
fn assert_no_problem(problems: Vec<String>) {
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn a_bad_config_value_is_named_by_its_place_in_the_file() {
    let table: &[(&str, &[u8], &str)] = &[
        (
            "negative timeout",
            b"[profile.default]\ntimeout = -5\n",
            "error: loopcheck.toml:2:11: `timeout` is -5, not a positive number; expected a positive number of seconds\n",
        ),
        (
            "string where a number is expected",
            b"[profile.default]\njobs = \"two\"\n",
            "error: loopcheck.toml:2:8: `jobs` is a string (\"two\"); expected a whole number of cases at once, at least 1\n",
        ),
        (
            "zero jobs",
            b"[profile.default]\n\njobs = 0\n",
            "error: loopcheck.toml:3:8: `jobs` is 0, below 1; expected a whole number",
        ),
        (
            "unknown key",
            b"[profile.default]\njobs = 2\ncontroler = \"x\"\n",
            "error: loopcheck.toml:3:1: unknown key `controler` in [profile.default]; expected one of controller, supports,",
        ),
        (
            "bad capability word",
            b"[profile.ci]\nsupports = [\"stateless\", \"streem\"]\n",
            "error: loopcheck.toml:2:26: unknown capability 'streem'; expected a list of capabilities",
        ),
        (
            "bad partition scheme",
            b"[profile.default]\npartition = \"diagonal:1/2\"\n",
            "error: loopcheck.toml:2:13: invalid partition 'diagonal:1/2'; expected slice:K/N or hash:K/N",
        ),
        (
            "bad glob",
            b"[profile.default]\nfilter = [\"dispatch/[x\"]\n",
            "error: loopcheck.toml:2:11: invalid glob 'dispatch/[x': ",
        ),
        (
            "non-UTF-8 bytes",
            b"[profile.default]\njobs = 2\n# caf\xff\n",
            "error: loopcheck.toml:3:6: invalid UTF-8 (byte 0xff); expected UTF-8 text\n",
        ),
    ];
    let problems = table.iter().filter_map(|(what, file, prefix)| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("loopcheck.toml"), file).unwrap();
        let output = run_in(dir.path(), &[]);
        refusal_problem(dir.path(), &output, prefix).map(|problem| format!("{what}: {problem}"))
    });
    assert_no_problem(problems.collect());
}

#[test]
fn the_hint_of_a_misspelt_key_names_the_key_meant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("loopcheck.toml"),
        "[profile.default]\ncontroler = \"x\"\n",
    )
    .unwrap();
    let output = run_in(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.ends_with("\n(hint: did you mean `controller`?)\n"),
        "{stderr}"
    );
}

#[test]
fn an_unwritable_output_path_is_refused_before_the_first_case() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a-folder")).unwrap();
    std::fs::write(dir.path().join("a-file"), "x").unwrap();
    let table: &[(&str, &str, &str)] = &[
        (
            "--report-json",
            "a-folder",
            "error: cannot write the JSON report to a-folder: it is a folder\n",
        ),
        (
            "--report-json",
            "a-file/report.json",
            "error: cannot write the JSON report to a-file/report.json: a-file is not a folder\n",
        ),
        (
            "--junit",
            "a-file/deeper/junit.xml",
            "error: cannot write the JUnit report to a-file/deeper/junit.xml: a-file is not a folder\n",
        ),
        (
            "--html",
            "a-folder",
            "error: cannot write the HTML report to a-folder: it is a folder\n",
        ),
        (
            "--write-baseline",
            "a-folder",
            "error: cannot write the baseline to a-folder: it is a folder\n",
        ),
    ];
    let problems = table.iter().filter_map(|(flag, path, prefix)| {
        let output = run_in(dir.path(), &[flag, path]);
        refusal_problem(dir.path(), &output, prefix)
            .map(|problem| format!("{flag} {path}: {problem}"))
    });
    assert_no_problem(problems.collect());
}

#[test]
fn a_report_path_in_a_missing_folder_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_in(dir.path(), &["--report-json", "new/folder/report.json"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(dir.path().join("controller-ran").exists(), "{stderr}");
    assert!(
        dir.path().join("new/folder/report.json").is_file(),
        "{stderr}"
    );
}
