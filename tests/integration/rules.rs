//! The rule-coverage table: docs/rules.md is exactly what `loopcheck list --rules
//! --markdown` prints from the registry (docs/rules.yaml) and the mutant headers, and the
//! registry names only checks and cases that exist, so neither can go stale.

use loopcheck::rules::{self, TABLE_PATH};

use crate::support::cli::loopcheck;
use crate::support::{catalogue, root};

#[test]
fn the_committed_rule_table_is_the_generated_one() {
    let output = loopcheck(&["list", "--rules", "--markdown"]);
    assert!(
        output.status.success(),
        "loopcheck list --rules --markdown failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let generated = String::from_utf8(output.stdout).expect("UTF-8 output");
    let committed = std::fs::read_to_string(root().join(TABLE_PATH)).expect("docs/rules.md exists");
    assert!(
        committed == generated,
        "{TABLE_PATH} is out of date: run `loopcheck list --rules --markdown > {TABLE_PATH}` from the repository root"
    );
}

#[test]
fn every_rule_names_checks_and_cases_that_exist() {
    let registry = rules::registry().expect("the registry parses");
    let case_ids: Vec<String> = catalogue().into_iter().map(|c| c.scenario.id).collect();
    let problems = rules::problems(&registry, &case_ids);
    assert!(
        problems.is_empty(),
        "{} is stale:\n{}",
        rules::REGISTRY_PATH,
        problems.join("\n")
    );
}

#[test]
fn every_mutant_header_is_readable_by_the_generator() {
    let mutants = rules::read_mutants(&root().join(rules::MUTANTS_DIR))
        .expect("every mutant header names its check and cases");
    assert!(mutants.len() > 50, "only {} mutants read", mutants.len());
}
