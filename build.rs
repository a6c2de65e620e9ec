//! Embeds the catalogue in `scenarios/` into the binary, so `loopcheck run` works anywhere.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(path);
        }
    }
}

fn main() {
    let root =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let scenarios = root.join("scenarios");
    println!("cargo:rerun-if-changed=scenarios");
    let mut files = Vec::new();
    collect(&scenarios, &mut files);
    files.sort();
    let mut code = String::from(
        "/// The embedded catalogue: (path relative to the repository, contents).\npub static FILES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let relative = file.strip_prefix(&root).expect("under the root");
        code.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            relative.to_string_lossy(),
            file.to_string_lossy()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("catalogue.rs");
    fs::write(out, code).expect("write catalogue.rs");
}
