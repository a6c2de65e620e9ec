//! One version everywhere a release is named: the crate's (Cargo.toml) is the one the
//! Python package takes (maturin reads it), and the npm packages, the action's default,
//! the workflow `loopcheck init` writes and the changelog's latest section must say the
//! same.

use serde_json::Value;

use crate::support::cli::{assert_success, loopcheck_in};
use crate::support::root;

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn crate_version() -> String {
    let manifest: toml::Table = read("Cargo.toml").parse().expect("Cargo.toml parses");
    manifest["package"]["version"]
        .as_str()
        .expect("the crate has a version")
        .to_owned()
}

fn json(path: &str) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
}

#[test]
fn the_python_package_takes_the_crates_version() {
    let pyproject: toml::Table = read("pyproject.toml").parse().expect("pyproject parses");
    let project = pyproject["project"].as_table().expect("[project]");
    assert!(
        project.get("version").is_none(),
        "pyproject.toml writes a version of its own; maturin takes the crate's"
    );
    let dynamic = project["dynamic"].as_array().expect("project.dynamic");
    assert!(
        dynamic
            .iter()
            .any(|field| field.as_str() == Some("version")),
        "pyproject.toml must declare the version dynamic (from Cargo.toml): {dynamic:?}"
    );
}

#[test]
fn the_npm_packages_carry_the_crates_version() {
    let version = crate_version();
    let main = json("npm/loopcheck/package.json");
    assert_eq!(
        main["version"],
        version.as_str(),
        "npm/loopcheck/package.json"
    );
    let platforms = main["optionalDependencies"]
        .as_object()
        .expect("the main package names its platform packages");
    assert!(!platforms.is_empty());
    for (name, wanted) in platforms {
        assert_eq!(wanted, version.as_str(), "the main package's pin of {name}");
        let dir = name
            .strip_prefix("@loopcheck/")
            .expect("a @loopcheck package");
        let path = format!("npm/{dir}/package.json");
        let platform = json(&path);
        assert_eq!(platform["name"], name.as_str(), "{path}");
        assert_eq!(platform["version"], version.as_str(), "{path}");
    }
}

#[test]
fn the_action_installs_the_crates_version_by_default() {
    let action: Value = serde_saphyr::from_str(&read("action.yml")).expect("action.yml parses");
    assert_eq!(
        action["inputs"]["version"]["default"],
        crate_version().as_str(),
        "action.yml's version input"
    );
}

#[test]
fn the_init_workflow_uses_the_action_and_package_of_this_version() {
    let version = crate_version();
    for language in ["python", "node"] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        assert_success(&loopcheck_in(dir.path(), &["init", language]));
        let workflow = std::fs::read_to_string(dir.path().join(".github/workflows/loopcheck.yml"))
            .expect("init writes the workflow");
        let parsed: Value = serde_saphyr::from_str(&workflow).expect("the workflow parses");
        let steps = parsed["jobs"]["loopcheck"]["steps"]
            .as_array()
            .expect("the job's steps");
        // loopcheck's action is the step given a controller.
        let action = steps
            .iter()
            .find(|step| step["with"]["controller"].is_string())
            .unwrap_or_else(|| panic!("{language}: no step uses the action:\n{workflow}"));
        let uses = action["uses"].as_str().unwrap_or_default();
        assert!(
            uses.ends_with(&format!("@v{version}")),
            "{language}: {uses}, not v{version}"
        );
        assert_eq!(action["with"]["version"], version.as_str(), "{language}");
    }
}

#[test]
fn the_changelog_opens_with_this_version() {
    let version = crate_version();
    let changelog = read("CHANGELOG.md");
    let latest = changelog
        .lines()
        .find(|line| line.starts_with("## "))
        .expect("CHANGELOG.md has a section per version");
    assert!(
        latest
            .trim_start_matches("## ")
            .split_whitespace()
            .next()
            .is_some_and(|word| word.trim_matches(['[', ']']) == version),
        "the latest section of CHANGELOG.md is {latest:?}, the crate is {version}"
    );
}
