//! The scenario format's JSON Schema: committed, current, named by every catalogue file,
//! and accepting every one of them while refusing what the loader refuses.

use std::path::{Path, PathBuf};

use loopcheck::scenario::schema::{COMMITTED, scenario_schema, scenario_schema_text};
use serde_json::Value;

use crate::support::root;

fn catalogue_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, into);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                into.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("scenarios"), &mut files);
    files.sort();
    files
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap()
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let committed = std::fs::read_to_string(root().join(COMMITTED)).unwrap();
    assert!(
        committed == scenario_schema_text(),
        "{COMMITTED} is out of date: run `loopcheck schema > {COMMITTED}`"
    );
}

#[test]
fn every_catalogue_file_names_the_schema_and_satisfies_it() {
    let validator = jsonschema::validator_for(&scenario_schema()).unwrap();
    let files = catalogue_files();
    assert!(files.len() > 50, "{} files", files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let relative = path.strip_prefix(root()).unwrap();
        let up = "../".repeat(relative.components().count() - 1);
        let line = format!("# yaml-language-server: $schema={up}{COMMITTED}");
        assert_eq!(
            text.lines().next(),
            Some(line.as_str()),
            "{}",
            path.display()
        );
        let errors: Vec<String> = validator
            .iter_errors(&yaml(&text))
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

#[test]
fn the_schema_refuses_what_the_loader_refuses() {
    let validator = jsonschema::validator_for(&scenario_schema()).unwrap();
    let good =
        std::fs::read_to_string(root().join("scenarios/correlation/01-single-call.yaml")).unwrap();
    assert!(validator.is_valid(&yaml(&good)));
    for (broken, why) in [
        (
            good.replace("level: must", "level: must\nlevle: must"),
            "an unknown key",
        ),
        (
            good.replace("level: must", "level: always"),
            "a level that is no level",
        ),
        (
            good.replace("expect:\n  outcome: completed", "expect:\n  outcome: done"),
            "an unknown outcome",
        ),
        (good.replace("format: 1\n", ""), "no format"),
    ] {
        assert_ne!(broken, good, "{why}: the test did not change the file");
        assert!(
            !validator.is_valid(&yaml(&broken)),
            "the schema accepts {why}"
        );
    }
}
