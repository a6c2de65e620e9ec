//! Dependencies point one way: each module of `src/` uses only modules of lower layers
//! (the table in ARCHITECTURE.md), and no module's submodules import each other in a
//! cycle. Read from the source text, so an import against the layering fails here with
//! its file and line, before it grows into a knot.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One reference from a file to another module: `crate::x` or a sibling's `super::x`.
#[derive(Debug, Clone)]
struct Import {
    /// The importing file, relative to the crate.
    file: String,
    line: usize,
    /// The module path it names, from the crate root (`["server", "engine"]`).
    target: Vec<String>,
}

/// The layer of each top-level module, from ARCHITECTURE.md's table.
fn layers() -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md is readable");
    let mut layers = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, layer, modules, ..] = cells.as_slice() else {
            continue;
        };
        let Ok(layer) = layer.parse::<usize>() else {
            continue;
        };
        for module in modules.split(',') {
            let module = module.trim().trim_matches('`');
            assert!(
                layers.insert(module.to_owned(), layer).is_none(),
                "ARCHITECTURE.md lists `{module}` in two layers"
            );
        }
    }
    assert!(!layers.is_empty(), "ARCHITECTURE.md has no layer table");
    layers
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/` (`src/server/api/mod.rs` -> `server::api`).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source without comments and without items under `#[cfg(test)]`: tests may
/// reach anywhere, and a doc link is not a dependency.
fn code_of(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut skip_depth: Option<i32> = None;
    let mut pending_test = false;
    for (number, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("");
        let trimmed = line.trim();
        if let Some(depth) = skip_depth.as_mut() {
            *depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if *depth <= 0 && (line.contains('}') || trimmed.ends_with(';')) {
                skip_depth = None;
            }
            continue;
        }
        if trimmed == "#[cfg(test)]" {
            pending_test = true;
            continue;
        }
        if pending_test {
            pending_test = trimmed.starts_with("#[");
            if pending_test {
                continue;
            }
            let depth = line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if depth > 0 || !(trimmed.ends_with(';') || trimmed.ends_with('}')) {
                skip_depth = Some(depth);
            }
            continue;
        }
        lines.push((number + 1, line.to_owned()));
    }
    lines
}

/// The paths a line names after `prefix`: `crate::a::b`, and each path of a group
/// `crate::{a::b, c}` (one level of grouping is enough for this crate's imports).
fn paths_after<'a>(line: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            for item in top_level_items(group) {
                let path: Vec<&str> = item
                    .trim()
                    .split("::")
                    .map(str::trim)
                    .take_while(|p| is_ident(p))
                    .collect();
                if !path.is_empty() {
                    found.push(path);
                }
            }
        } else {
            let path: Vec<&str> = rest
                .split("::")
                .map(|p| {
                    let end = p
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(p.len());
                    &p[..end]
                })
                .take_while(|p| is_ident(p))
                .collect();
            if !path.is_empty() {
                found.push(path);
            }
        }
    }
    found
}

/// The comma-separated items of a `{...}` group up to its closing brace, nested groups
/// kept whole (`a::{b, c}, d` gives `a::{b, c}` and `d`).
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

fn is_ident(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Every import of every file under `src/`, with the module each file is.
fn imports() -> Vec<(Vec<String>, Import)> {
    let src = Path::new(ROOT).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src");
        let module = module_of(relative);
        if matches!(module.as_slice(), [only] if only == "lib" || only == "main") {
            continue;
        }
        let is_mod_file = path.file_name().is_some_and(|n| n == "mod.rs");
        let text = std::fs::read_to_string(&path).expect("a source file is readable");
        let file = format!("src/{}", relative.display());
        for (line, code) in code_of(&text) {
            for target in paths_after(&code, "crate::") {
                out.push((
                    module.clone(),
                    Import {
                        file: file.clone(),
                        line,
                        target: target.iter().map(|s| s.to_string()).collect(),
                    },
                ));
            }
            // `super::x` in `a/b.rs` names `a::x`; in `a/b/mod.rs` it names `a::x` too.
            let parent = &module[..module.len().saturating_sub(1)];
            if parent.is_empty() && !is_mod_file {
                continue;
            }
            for target in paths_after(&code, "super::") {
                let mut full: Vec<String> = parent.to_vec();
                full.extend(target.iter().map(|s| s.to_string()));
                out.push((
                    module.clone(),
                    Import {
                        file: file.clone(),
                        line,
                        target: full,
                    },
                ));
            }
        }
    }
    out
}

#[test]
fn every_module_uses_only_modules_of_lower_layers() {
    let layers = layers();
    let mut wrong = Vec::new();
    for (module, import) in imports() {
        let (from, to) = (&module[0], &import.target[0]);
        if from == to {
            continue;
        }
        let Some(&from_layer) = layers.get(from) else {
            wrong.push(format!(
                "{}: module `{from}` has no layer in ARCHITECTURE.md",
                import.file
            ));
            continue;
        };
        // A name that is not a module of the crate (`crate::Foo` re-exported at the
        // root) would be caught by the compiler's own paths; only modules are layered.
        let Some(&to_layer) = layers.get(to) else {
            continue;
        };
        if to_layer >= from_layer {
            wrong.push(format!(
                "{}:{}: `{from}` (layer {from_layer}) imports `crate::{}` (layer {to_layer})",
                import.file,
                import.line,
                import.target.join("::")
            ));
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layering of ARCHITECTURE.md (a module uses only lower layers):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_module_of_the_crate_has_a_layer() {
    let layers = layers();
    let src = Path::new(ROOT).join("src");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
        if is_module && name != "lib" && name != "main" && !layers.contains_key(&name) {
            missing.push(name);
        }
    }
    let stale: Vec<&String> = layers
        .keys()
        .filter(|m| !src.join(m.as_str()).is_dir() && !src.join(format!("{m}.rs")).exists())
        .collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "ARCHITECTURE.md's layer table and src/ disagree: not in the table {missing:?}, not in src {stale:?}"
    );
}

#[test]
fn no_module_has_submodules_that_import_each_other_in_a_cycle() {
    // Edges between siblings: `a::b` -> `a::c`, with the line that makes each.
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (module, import) in imports() {
        let shared = module
            .iter()
            .zip(&import.target)
            .take_while(|(a, b)| a == b)
            .count();
        if shared == module.len() || shared == import.target.len() {
            continue; // a module using its own submodule, or its own ancestor
        }
        let from = module[..=shared].join("::");
        let to = import.target[..=shared].join("::");
        edges
            .entry(from)
            .or_default()
            .entry(to)
            .or_insert_with(|| format!("{}:{}", import.file, import.line));
    }
    let mut cycles = Vec::new();
    for start in edges.keys() {
        // Depth-first search for a path back to `start`.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in edges.get(&node).into_iter().flat_map(|e| e.keys()) {
                if next == start {
                    let mut steps = Vec::new();
                    let mut full = path.clone();
                    full.push(start.clone());
                    for pair in full.windows(2) {
                        steps.push(format!(
                            "{} -> {} ({})",
                            pair[0], pair[1], edges[&pair[0]][&pair[1]]
                        ));
                    }
                    cycles.push(steps.join("; "));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other in a cycle:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_reader_finds_the_imports_it_judges() {
    // The checks above are only as good as this reader: it must see plain, grouped and
    // inline paths, and skip comments and tests.
    let code = code_of(
        "use crate::a::b;\nuse crate::{c::{d, x}, e};\n// crate::hidden\nlet x = crate::f::g(1);\n#[cfg(test)]\nmod tests {\n    use crate::t;\n}\nuse super::s;\n",
    );
    let found: Vec<Vec<&str>> = code
        .iter()
        .flat_map(|(_, line)| paths_after(line, "crate::"))
        .collect();
    assert_eq!(
        found,
        vec![vec!["a", "b"], vec!["c"], vec!["e"], vec!["f", "g"]]
    );
    let supers: Vec<Vec<&str>> = code
        .iter()
        .flat_map(|(_, line)| paths_after(line, "super::"))
        .collect();
    assert_eq!(supers, vec![vec!["s"]]);
}
