//! The rule registry (`docs/rules.yaml`, embedded) and the coverage table derived from it.
//!
//! A rule is something the tool-loop guides ask of a controller. The registry says which
//! checks judge it and which catalogue cases exercise it; whether a deliberately broken
//! controller proves that judgement comes from the mutant headers in `harness/mutants/`,
//! which live in the repository, not in the binary. The status is derived, never written:
//! a rule cannot claim coverage the catalogue and the mutants do not give it.

use std::collections::BTreeSet;
use std::path::Path;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use crate::oracle::checks;
use crate::scenario::Level;

/// The registry as committed.
pub const REGISTRY: &str = include_str!("../docs/rules.yaml");

/// Where the registry and its generated table live in the repository.
pub const REGISTRY_PATH: &str = "docs/rules.yaml";
/// The generated table (`loopcheck list --rules --markdown`).
pub const TABLE_PATH: &str = "docs/rules.md";
/// The mutants' folder, relative to the repository root.
pub const MUTANTS_DIR: &str = "harness/mutants";

/// One rule of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// `family/short-name`, stable once published.
    pub id: String,
    /// What the controller must or should do, in one sentence.
    pub rule: String,
    /// Why it holds, in one sentence.
    pub why: String,
    /// The guide and section it comes from.
    pub source: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The check ids that judge it.
    #[serde(default)]
    pub checks: Vec<String>,
    /// Catalogue case ids or globs that exercise it.
    #[serde(default)]
    pub cases: Vec<String>,
    /// The case meant to exercise it, while `cases` is still empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<String>,
    /// False for a rule no black-box run can see.
    #[serde(default = "observable_default")]
    pub observable: bool,
    /// Why it cannot be seen (with `observable: false` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn observable_default() -> bool {
    true
}

impl Rule {
    /// The family: the part of the id before the `/`.
    pub fn family(&self) -> &str {
        self.id.split('/').next().unwrap_or(&self.id)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Registry {
    rules: Vec<Rule>,
}

/// Why the rule-coverage table cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// The registry is not YAML of the rules' shape.
    #[error("{REGISTRY_PATH}: {0}")]
    Registry(serde_saphyr::Error),
    /// The registry names checks or cases that do not exist.
    #[error("{REGISTRY_PATH} is stale:\n  {}", .0.join("\n  "))]
    Stale(Vec<String>),
    /// The mutants' folder cannot be read.
    #[error(
        "cannot read the mutants' folder {}: {source} (run from the repository root or pass --mutants DIR)",
        .dir.display()
    )]
    MutantsFolder {
        /// The folder.
        dir: std::path::PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// A mutant's header is incomplete.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// A mutant (its file) or a rule (its id) has a case glob that is not one.
    #[error("{owner}: {source}")]
    Glob {
        /// The mutant's file or the rule's id.
        owner: String,
        /// The glob.
        source: GlobError,
    },
}

/// A marked mutant file whose header does not name its check and its cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: a loopcheck-mutant header needs `caught-by:` and `cases:` lines")]
pub struct HeaderError {
    /// The file name.
    pub file: String,
}

/// A case glob that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid case glob '{glob}': {source}")]
pub struct GlobError {
    /// The glob.
    glob: String,
    /// Why not.
    source: globset::Error,
}

/// Parses a registry text.
pub fn parse(text: &str) -> Result<Vec<Rule>, RulesError> {
    serde_saphyr::from_str::<Registry>(text)
        .map(|registry| registry.rules)
        .map_err(RulesError::Registry)
}

/// The embedded registry.
pub fn registry() -> Result<Vec<Rule>, RulesError> {
    parse(REGISTRY)
}

/// What a mutant header promises: the check that catches it and the cases it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// The file name in the mutants' folder.
    pub file: String,
    /// The check that must fail when it runs.
    pub caught_by: String,
    /// Case-id globs it runs on.
    pub cases: Vec<String>,
}

/// The mutant a file's header describes: None for a file without the `loopcheck-mutant`
/// marker (documented gaps, equivalents, notes), an error for a marked file that does not
/// name its check or its cases. The header format is `tests/integration/mutants.rs`'s.
pub fn parse_mutant(file: &str, text: &str) -> Option<Result<Mutant, HeaderError>> {
    let prefix = match Path::new(file).extension().and_then(|e| e.to_str()) {
        Some("py" | "sh") => "#",
        Some("mjs") => "//",
        _ => return None,
    };
    let mut lines = text
        .lines()
        .map(|line| line.strip_prefix(prefix).map(|rest| rest.trim().to_owned()));
    if lines.next().flatten().as_deref() != Some("loopcheck-mutant") {
        return None;
    }
    let mut caught_by = None;
    let mut cases = None;
    for line in lines {
        let Some((key, value)) = line.as_deref().and_then(|l| l.split_once(':')) else {
            break;
        };
        match key.trim() {
            "caught-by" => caught_by = Some(value.trim().to_owned()),
            "cases" => {
                cases = Some(
                    value
                        .split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>(),
                )
            }
            _ => {}
        }
    }
    Some(match (caught_by, cases) {
        (Some(caught_by), Some(cases)) if !caught_by.is_empty() && !cases.is_empty() => {
            Ok(Mutant {
                file: file.to_owned(),
                caught_by,
                cases,
            })
        }
        _ => Err(HeaderError {
            file: file.to_owned(),
        }),
    })
}

/// The mutants of a folder, sorted by file name.
pub fn read_mutants(dir: &Path) -> Result<Vec<Mutant>, RulesError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RulesError::MutantsFolder {
        dir: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<_> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    let mut mutants = Vec::new();
    for path in files {
        let file = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Some(mutant) = parse_mutant(&file, &text) {
            mutants.push(mutant?);
        }
    }
    Ok(mutants)
}

/// A rule's derived status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Some case exercises it and some mutant is caught by one of its checks on one of
    /// its cases: the judgement is proven able to fail.
    Covered,
    /// Cases exercise it, but no mutant proves its checks catch a violation there.
    Partial,
    /// No catalogue case exercises it yet.
    Missing,
    /// No black-box run can see it.
    NotObservable,
}

impl Status {
    /// Every status, in the order the table counts them.
    pub const ALL: [Status; 4] = [
        Status::Covered,
        Status::Partial,
        Status::Missing,
        Status::NotObservable,
    ];

    /// The word the table uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Covered => "covered",
            Status::Partial => "partial",
            Status::Missing => "missing",
            Status::NotObservable => "not observable",
        }
    }
}

/// A rule with what the catalogue and the mutants give it.
#[derive(Debug, Clone)]
pub struct Coverage<'r> {
    /// The rule.
    pub rule: &'r Rule,
    /// The catalogue cases its globs match.
    pub cases: Vec<String>,
    /// The mutants caught by one of its checks on one of its cases.
    pub mutants: Vec<String>,
    /// The derived status.
    pub status: Status,
}

fn matchers(globs: &[String]) -> Result<Vec<GlobMatcher>, GlobError> {
    globs
        .iter()
        .map(|glob| {
            Glob::new(glob)
                .map(|g| g.compile_matcher())
                .map_err(|source| GlobError {
                    glob: glob.clone(),
                    source,
                })
        })
        .collect()
}

/// The case ids any of `globs` matches, in catalogue order.
fn matching(globs: &[String], case_ids: &[String]) -> Result<Vec<String>, GlobError> {
    let matchers = matchers(globs)?;
    Ok(case_ids
        .iter()
        .filter(|id| matchers.iter().any(|m| m.is_match(id.as_str())))
        .cloned()
        .collect())
}

/// Derives every rule's status from the catalogue's case ids and the mutants.
pub fn coverage<'r>(
    rules: &'r [Rule],
    case_ids: &[String],
    mutants: &[Mutant],
) -> Result<Vec<Coverage<'r>>, RulesError> {
    let mutant_cases = mutants
        .iter()
        .map(|m| {
            matching(&m.cases, case_ids)
                .map(|cases| cases.into_iter().collect::<BTreeSet<_>>())
                .map_err(|source| RulesError::Glob {
                    owner: m.file.clone(),
                    source,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules
        .iter()
        .map(|rule| {
            let cases = matching(&rule.cases, case_ids).map_err(|source| RulesError::Glob {
                owner: rule.id.clone(),
                source,
            })?;
            let proving: Vec<String> = mutants
                .iter()
                .zip(&mutant_cases)
                .filter(|(m, runs_on)| {
                    rule.checks.contains(&m.caught_by) && cases.iter().any(|c| runs_on.contains(c))
                })
                .map(|(m, _)| m.file.clone())
                .collect();
            let status = if !rule.observable {
                Status::NotObservable
            } else if cases.is_empty() {
                Status::Missing
            } else if proving.is_empty() {
                Status::Partial
            } else {
                Status::Covered
            };
            Ok(Coverage {
                rule,
                cases,
                mutants: proving,
                status,
            })
        })
        .collect()
}

/// What is wrong with a registry against the declared checks and the catalogue: every
/// reference must resolve, so the registry cannot go stale.
pub fn problems(rules: &[Rule], case_ids: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for rule in rules {
        let id = &rule.id;
        if !seen.insert(id.as_str()) {
            problems.push(format!("{id}: a second rule with this id"));
        }
        let well_formed = id.split_once('/').is_some_and(|(family, name)| {
            !family.is_empty() && !name.is_empty() && !name.contains('/')
        });
        if !well_formed {
            problems.push(format!("{id}: the id is not `family/short-name`"));
        }
        for (field, text) in [
            ("rule", &rule.rule),
            ("why", &rule.why),
            ("source", &rule.source),
        ] {
            if text.trim().is_empty() {
                problems.push(format!("{id}: `{field}` is empty"));
            }
        }
        for check in &rule.checks {
            if checks::find(check).is_none() {
                problems.push(format!(
                    "{id}: no check '{check}' (see `loopcheck list --checks`)"
                ));
            }
        }
        for glob in &rule.cases {
            match matching(std::slice::from_ref(glob), case_ids) {
                Ok(found) if found.is_empty() => problems.push(format!(
                    "{id}: no catalogue case matches '{glob}' (see `loopcheck list`)"
                )),
                Ok(_) => {}
                Err(err) => problems.push(format!("{id}: {err}")),
            }
        }
        if rule.planned.is_some() && !rule.cases.is_empty() {
            problems.push(format!(
                "{id}: `planned` is for a rule with no case yet; drop it once `cases` names the case"
            ));
        }
        match (rule.observable, &rule.reason) {
            (true, Some(_)) => {
                problems.push(format!("{id}: `reason` goes with `observable: false` only"))
            }
            (false, None) => problems.push(format!(
                "{id}: `observable: false` needs a `reason` saying why no run can see it"
            )),
            (false, Some(_)) if !rule.checks.is_empty() || !rule.cases.is_empty() => problems.push(
                format!("{id}: a rule that is not observable names no checks and no cases"),
            ),
            _ => {}
        }
    }
    problems
}

/// The checks no rule names, in declaration order.
pub fn unreferenced_checks(rules: &[Rule]) -> Vec<&'static str> {
    checks::ALL
        .iter()
        .map(|check| check.id)
        .filter(|id| !rules.iter().any(|rule| rule.checks.iter().any(|c| c == id)))
        .collect()
}

/// How many rules have each status.
pub fn counts(table: &[Coverage<'_>]) -> Vec<(Status, usize)> {
    Status::ALL
        .iter()
        .map(|&status| (status, table.iter().filter(|c| c.status == status).count()))
        .collect()
}

fn summary_line(table: &[Coverage<'_>]) -> String {
    let parts: Vec<String> = counts(table)
        .iter()
        .map(|(status, n)| format!("{n} {}", status.as_str()))
        .collect();
    format!("{} rules: {}", table.len(), parts.join(", "))
}

/// The table as plain text: one line per rule, then the counts.
pub fn text(table: &[Coverage<'_>]) -> String {
    let width = table.iter().map(|c| c.rule.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in table {
        out.push_str(&format!(
            "{:<width$}  {:<6}  {:<14}  {} case(s), {} mutant(s)\n",
            c.rule.id,
            c.rule.level.as_str(),
            c.status.as_str(),
            c.cases.len(),
            c.mutants.len()
        ));
    }
    out.push_str(&summary_line(table));
    out.push('\n');
    out
}

/// The table as JSON: every rule with its derived cases, mutants and status.
pub fn json(table: &[Coverage<'_>]) -> serde_json::Value {
    serde_json::Value::Array(
        table
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.rule.id,
                    "family": c.rule.family(),
                    "level": c.rule.level.as_str(),
                    "rule": c.rule.rule,
                    "why": c.rule.why,
                    "source": c.rule.source,
                    "checks": c.rule.checks,
                    "case_globs": c.rule.cases,
                    "cases": c.cases,
                    "planned": c.rule.planned,
                    "mutants": c.mutants,
                    "status": c.status.as_str(),
                    "reason": c.rule.reason,
                })
            })
            .collect(),
    )
}

/// The opening of docs/rules.md: what the table is and how to add a rule.
const MARKDOWN_HEADER: &str = "\
# Rule coverage

<!-- Generated by `loopcheck list --rules --markdown` from docs/rules.yaml and the
     headers in harness/mutants/; edit those, not this file. -->

Which rules of a correct tool-call loop the suite judges, and how well. The rules come
from five guides on the Responses API tool loop (numbered 000 to 004 below: a Spanish
guide to reliable function calling, state and background mode; a Chinese guide to
carrying tool-call state; an English lesson on the function-call loop; the French guide
to programmatic tool calling; a Chinese guide to multi-turn tool loops). Each rule names
the checks that judge it ([checks.md](checks.md)) and the catalogue cases that exercise
it ([scenarios.md](scenarios.md)).

## How the status is derived

Nothing in the status column is written by hand:

- **not observable**: the rule is marked `observable: false`; a black-box harness sees
  only the API traffic, the tool calls and the result line, and the reason says why this
  rule leaves no trace there.
- **missing**: no catalogue case matches the rule's `cases` (a rule whose case is still
  to be written names it under `planned`).
- **covered**: some case exists, and some mutant in `harness/mutants/` is caught by one
  of the rule's checks on one of the rule's cases (its header's `caught-by:` is one of
  the checks and its `cases:` globs match one of the cases). The mutant test
  (`tests/integration/mutants.rs`) runs it and requires that check to fail, so the
  judgement is shown able to fail. A check that judges several rules (`wire/accepted`,
  `state/config-resent`) lets a mutant of one of them count for another on a shared case:
  the mutants column names them, so read it before trusting a `covered`.
- **partial**: cases exist but no mutant proves their checks catch a violation of this
  rule.

## Adding a rule

1. Add an entry to `docs/rules.yaml`: a stable `family/short-name` id, the rule in one
   sentence, `why` in one sentence, its `source` (guide number and section), its
   `level`, the `checks` that judge it and the `cases` (ids or globs) that exercise it.
   A rule without a case yet gets `cases: []` and `planned:` naming the case to come; a
   rule no run can see gets `observable: false` and a `reason`.
2. To move it from partial to covered, add a mutant (a controller with that one defect)
   whose header names one of the rule's checks and one of its cases.
3. Regenerate this file from the repository root:
   `loopcheck list --rules --markdown > docs/rules.md` (`--mutants DIR` reads another
   mutants' folder). The integration test `rules` fails while this file differs from
   the generator's output, or while a rule names a check or a case that does not exist.
";

fn code_list(items: &[String]) -> String {
    if items.is_empty() {
        return "—".to_owned();
    }
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The table as Markdown: the whole of docs/rules.md.
pub fn markdown(table: &[Coverage<'_>], rules: &[Rule]) -> String {
    let mut out = String::from(MARKDOWN_HEADER);
    out.push_str("\n## Summary\n\n| status | rules |\n|---|---|\n");
    for (status, n) in counts(table) {
        out.push_str(&format!("| {} | {n} |\n", status.as_str()));
    }
    out.push_str(&format!("| all | {} |\n", table.len()));
    let mut families: Vec<&str> = Vec::new();
    for c in table {
        if !families.contains(&c.rule.family()) {
            families.push(c.rule.family());
        }
    }
    for family in families {
        out.push_str(&format!(
            "\n## `{family}`\n\n| rule | level | source | checks | cases | mutants | status |\n|---|---|---|---|---|---|---|\n"
        ));
        for c in table.iter().filter(|c| c.rule.family() == family) {
            let rule = c.rule;
            let cases = match (&rule.planned, rule.cases.is_empty()) {
                (Some(planned), true) => format!("— (planned: {planned})"),
                _ => code_list(&rule.cases),
            };
            let status = match (&rule.reason, c.status) {
                (Some(reason), Status::NotObservable) => format!("not observable: {reason}"),
                _ => c.status.as_str().to_owned(),
            };
            out.push_str(&format!(
                "| `{}`: {} *Why:* {} | {} | {} | {} | {} | {} | {} |\n",
                rule.id,
                cell(&rule.rule),
                cell(&rule.why),
                rule.level.as_str().to_uppercase(),
                cell(&rule.source),
                code_list(&rule.checks),
                cell(&cases),
                code_list(&c.mutants),
                cell(&status)
            ));
        }
    }
    let unreferenced = unreferenced_checks(rules);
    if !unreferenced.is_empty() {
        out.push_str(
            "\n## Checks no rule names\n\nChecks that judge the controller contract (docs/contract.md) rather than a rule of the guides, or whose rule is still to be added to the registry:\n\n",
        );
        for id in unreferenced {
            out.push_str(&format!("- `{id}`\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn rule(id: &str, checks: &[&str], cases: &[&str]) -> Rule {
        Rule {
            id: id.to_owned(),
            rule: "do it".to_owned(),
            why: "because".to_owned(),
            source: "guide 002, section 'X'".to_owned(),
            level: Level::Must,
            checks: ids(checks),
            cases: ids(cases),
            planned: None,
            observable: true,
            reason: None,
        }
    }

    fn mutant(file: &str, caught_by: &str, cases: &[&str]) -> Mutant {
        Mutant {
            file: file.to_owned(),
            caught_by: caught_by.to_owned(),
            cases: ids(cases),
        }
    }

    const CASES: &[&str] = &["a/01-one", "a/02-two", "b/01-other"];

    fn status_of(rule: Rule, mutants: &[Mutant]) -> (Status, Vec<String>) {
        let rules = [rule];
        let table = coverage(&rules, &ids(CASES), mutants).expect("valid globs");
        (table[0].status, table[0].mutants.clone())
    }

    #[test]
    fn a_mutant_caught_by_a_rule_check_on_a_rule_case_covers_it() {
        let (status, mutants) = status_of(
            rule("a/x", &["call-id/own-id"], &["a/*"]),
            &[mutant("m.py", "call-id/own-id", &["a/02-two"])],
        );
        assert_eq!(status, Status::Covered);
        assert_eq!(mutants, ["m.py"]);
    }

    #[test]
    fn a_mutant_of_another_check_or_on_other_cases_leaves_it_partial() {
        let rule = || rule("a/x", &["call-id/own-id"], &["a/01-one"]);
        let other_check = mutant("m.py", "call-id/answered", &["a/01-one"]);
        let other_case = mutant("n.py", "call-id/own-id", &["b/*"]);
        assert_eq!(
            status_of(rule(), &[other_check, other_case]).0,
            Status::Partial
        );
    }

    #[test]
    fn a_rule_whose_globs_match_no_case_is_missing_whatever_the_mutants() {
        let everywhere = mutant("canned.sh", "terminal/reached-outcome", &["*/*"]);
        let planned = rule("a/x", &["terminal/reached-outcome"], &[]);
        assert_eq!(status_of(planned, &[everywhere]).0, Status::Missing);
    }

    #[test]
    fn an_unobservable_rule_is_never_covered() {
        let mut hidden = rule("a/x", &[], &[]);
        hidden.observable = false;
        hidden.reason = Some("internal".to_owned());
        assert_eq!(status_of(hidden, &[]).0, Status::NotObservable);
    }

    #[test]
    fn problems_name_unknown_checks_and_cases_and_broken_fields() {
        let mut bad = rule("nofamily", &["call-id/nope"], &["a/99-*"]);
        bad.planned = Some("later".to_owned());
        let mut hidden = rule("a/hidden", &["call-id/own-id"], &[]);
        hidden.observable = false;
        let problems = problems(&[bad, hidden.clone(), hidden], &ids(CASES));
        let all = problems.join("\n");
        for expected in [
            "nofamily: the id is not",
            "no check 'call-id/nope'",
            "no catalogue case matches 'a/99-*'",
            "`planned` is for a rule with no case yet",
            "a/hidden: `observable: false` needs a `reason`",
            "a/hidden: a second rule with this id",
        ] {
            assert!(all.contains(expected), "missing '{expected}' in:\n{all}");
        }
    }

    #[test]
    fn mutant_headers_are_read_like_the_mutant_test_reads_them() {
        let py = "# loopcheck-mutant\n# defect: d\n# caught-by: call-id/own-id\n# cases: a/01-one, b/*\n# supports: x\n\nimport os\n";
        assert_eq!(
            parse_mutant("m.py", py),
            Some(Ok(mutant("m.py", "call-id/own-id", &["a/01-one", "b/*"])))
        );
        let mjs = "// loopcheck-mutant\n// caught-by: stream/requested\n// cases: a/*\n";
        assert_eq!(
            parse_mutant("m.mjs", mjs)
                .and_then(Result::ok)
                .map(|m| m.caught_by),
            Some("stream/requested".to_owned())
        );
        let gap = "# loopcheck-gap\n# caught-by: call-id/own-id\n# cases: a/*\n";
        assert_eq!(parse_mutant("g.py", gap), None);
        assert_eq!(parse_mutant("README.md", "# loopcheck-mutant\n"), None);
        assert!(matches!(
            parse_mutant("broken.py", "# loopcheck-mutant\n# defect: d\n"),
            Some(Err(_))
        ));
    }

    #[test]
    fn the_embedded_registry_resolves_against_the_checks_and_the_catalogue() {
        let rules = registry().expect("the registry parses");
        let case_ids: Vec<String> = crate::scenario::catalogue()
            .expect("the catalogue loads")
            .into_iter()
            .map(|c| c.scenario.id)
            .collect();
        let problems = problems(&rules, &case_ids);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
