//! The pages a user reads: the README stays a front page, and every relative link in the
//! README, ARCHITECTURE.md, CONTRIBUTING.md and docs/ leads to a file and a heading
//! that exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README is a front page; depth goes to docs/.
const README_MAX_BYTES: u64 = 15 * 1024;

fn pages() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    let mut pages: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    pages
}

/// GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of `[text](target)` links outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Drop code spans, whose brackets are not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                found.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
        }
    }
    found
}

#[test]
fn the_readme_is_a_front_page() {
    let size = std::fs::metadata(Path::new(ROOT).join("README.md"))
        .expect("README.md exists")
        .len();
    assert!(
        size <= README_MAX_BYTES,
        "README.md is {size} bytes, over the front page's {README_MAX_BYTES}: move depth to docs/"
    );
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        let dir = page.parent().expect("a page has a folder");
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                dir.join(file)
            };
            let name = page
                .strip_prefix(ROOT)
                .unwrap_or(&page)
                .display()
                .to_string();
            if !linked.exists() {
                broken.push(format!("{name}: ({target}): no file {}", linked.display()));
                continue;
            }
            if let Some(fragment) = fragment
                && linked.extension().is_some_and(|e| e == "md")
            {
                let headings = anchors(&std::fs::read_to_string(&linked).unwrap_or_default());
                if !headings.contains(fragment) {
                    broken.push(format!("{name}: ({target}): no heading #{fragment}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_reader_sees_links_and_skips_code() {
    assert_eq!(
        links("see [a](docs/a.md#x) and `[b](c)`\n```\n[d](e)\n```\n[f](#g)"),
        ["docs/a.md#x", "#g"]
    );
    assert_eq!(anchor(" `loopcheck run` options"), "loopcheck-run-options");
}
