//! `loopcheck list`: the catalogue's cases, its areas, the checks, or the rules' coverage.

use crate::rules::{self, RulesError};
use crate::scenario;

use super::args::ListArgs;
use super::error::{CliError, exit};

pub(super) fn list(args: ListArgs) -> Result<u8, CliError> {
    if args.checks {
        return print_listing(&list_checks(&args));
    }
    let cases = scenario::catalogue().map_err(CliError::Scenarios)?;
    if args.areas {
        return print_listing(&list_areas(&args, &cases));
    }
    if args.rules {
        return print_listing(&list_rules(&args, &cases)?);
    }
    print_listing(&list_cases(&args, &cases))
}

/// The rule-coverage table; an error when the registry names a check or a case that does
/// not exist, or the mutants cannot be read.
fn list_rules(args: &ListArgs, cases: &[scenario::Case]) -> Result<String, RulesError> {
    let registry = rules::registry()?;
    let case_ids: Vec<String> = cases.iter().map(|c| c.scenario.id.clone()).collect();
    let problems = rules::problems(&registry, &case_ids);
    if !problems.is_empty() {
        return Err(RulesError::Stale(problems));
    }
    let mutants = rules::read_mutants(&args.mutants)?;
    let table = rules::coverage(&registry, &case_ids, &mutants)?;
    Ok(if args.markdown {
        rules::markdown(&table, &registry)
    } else if args.json {
        serde_json::to_string_pretty(&rules::json(&table)).unwrap_or_default() + "\n"
    } else {
        rules::text(&table)
    })
}

/// Writes a listing to standard output; a closed pipe (`loopcheck list | head`) ends the
/// listing quietly instead of panicking as `print!` would.
pub(super) fn print_listing(text: &str) -> Result<u8, CliError> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Listing(err)),
        _ => Ok(exit::OK),
    }
}

/// The catalogue's cases as a table, Markdown or JSON, each with its origin.
fn list_cases(args: &ListArgs, cases: &[scenario::Case]) -> String {
    let origin = |c: &scenario::Case| c.scenario.origin.clone().unwrap_or_default();
    let mut out = String::new();
    if args.markdown {
        out.push_str("| case | level | origin | summary |\n|---|---|---|---|\n");
        for c in cases {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                c.scenario.id,
                c.scenario.level.as_str(),
                origin(c),
                c.scenario.summary.trim()
            ));
        }
    } else if args.json {
        let rows: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.scenario.id,
                    "level": c.scenario.level.as_str(),
                    "area": c.scenario.area(),
                    "origin": c.scenario.origin,
                    "summary": c.scenario.summary,
                })
            })
            .collect();
        out = serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
    } else {
        let width = cases.iter().map(|c| c.scenario.id.len()).max().unwrap_or(0);
        for c in cases {
            out.push_str(&format!(
                "{:<width$}  {:<6}  {:<12}  {}\n",
                c.scenario.id,
                c.scenario.level.as_str(),
                c.scenario.area(),
                c.scenario.summary.trim()
            ));
            if let Some(origin) = &c.scenario.origin {
                out.push_str(&format!("{:<width$}  from: {origin}\n", ""));
            }
        }
    }
    out
}

fn list_areas(args: &ListArgs, cases: &[scenario::Case]) -> String {
    let counts = scenario::area_counts(cases);
    if args.json {
        let rows: Vec<serde_json::Value> = counts
            .iter()
            .map(|(area, n)| serde_json::json!({"area": area, "cases": n}))
            .collect();
        return serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
    }
    if args.markdown {
        let mut out = String::from("| area | cases |\n|---|---|\n");
        for (area, n) in &counts {
            out.push_str(&format!("| `{area}` | {n} |\n"));
        }
        return out;
    }
    counts
        .iter()
        .map(|(area, n)| format!("{area:<12}  {n}\n"))
        .collect()
}

/// Every check as declared, as a table, Markdown or JSON.
fn list_checks(args: &ListArgs) -> String {
    use crate::oracle::checks::ALL;
    if args.json {
        let rows: Vec<serde_json::Value> = ALL
            .iter()
            .map(|c| {
                serde_json::json!({"id": c.id, "level": c.level.as_str(), "family": c.family(), "rule": c.rule})
            })
            .collect();
        return serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
    }
    if args.markdown {
        let mut out = String::from("| id | level | the controller must |\n|---|---|---|\n");
        for c in ALL {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                c.id,
                c.level.as_str().to_uppercase(),
                c.rule
            ));
        }
        return out;
    }
    let width = ALL.iter().map(|c| c.id.len()).max().unwrap_or(0);
    ALL.iter()
        .map(|c| format!("{:<width$}  {:<6}  {}\n", c.id, c.level.as_str(), c.rule))
        .collect()
}
