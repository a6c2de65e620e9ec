#!/usr/bin/env python3
"""Runs every framework of harness/frameworks/ through the catalogue and writes the
published matrix: docs/frameworks.json (the matrix, with each run's failing checks) and
docs/frameworks.md (the page: page.md with the table and every framework's findings.md).

Every failure must be explained: each check that failed in a case run (or, for a run
that crashed or timed out without one, the case) must be named in that framework's
findings.md, whose second line gives the pass count the matrix has; the script lists
what is not and exits 1.

Usage: harness/frameworks/matrix.py [--loopcheck BIN] [--jobs N] [--render-only] [NAME...]
(install first: harness/frameworks/install.sh, which this script runs). Naming frameworks
reruns only those: the others keep their verdicts from docs/frameworks.json.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DOCS = ROOT / "docs"
INSTALLED = pathlib.Path(
    os.environ.get("LOOPCHECK_FRAMEWORKS_DIR", pathlib.Path.home() / ".cache/loopcheck/frameworks")
)
#: Verdicts that need no explanation.
FINE = {"pass", "unsupported"}


def write_atomic(path, text):
    """Writes beside `path`, then renames: a reader never sees half a page."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    temporary.replace(path)


def frameworks(names):
    found = sorted(p.name for p in HERE.iterdir() if (p / "findings.md").exists() or any(p.glob("adapter.*")))
    unknown = [n for n in names if n not in found]
    if unknown:
        sys.exit(f"matrix.py: no framework {', '.join(unknown)} (have: {', '.join(found)})")
    return names or found


def command(name):
    """The controller command of a framework, as installed by install.sh."""
    source = HERE / name
    if (source / "adapter.py").exists():
        return f"{INSTALLED / name / 'venv/bin/python'} {source / 'adapter.py'}"
    if (source / "adapter.mjs").exists():
        return f"node --preserve-symlinks --preserve-symlinks-main {INSTALLED / name / 'adapter.mjs'}"
    sys.exit(f"matrix.py: {source} has no adapter.py or adapter.mjs")


def find_loopcheck(explicit):
    for candidate in (explicit, os.environ.get("LOOPCHECK_BIN"), shutil.which("loopcheck"),
                      ROOT / "target/release/loopcheck", ROOT / "target/debug/loopcheck"):
        if candidate and pathlib.Path(candidate).is_file():
            return str(candidate)
    sys.exit("matrix.py: no loopcheck binary: build it (cargo build --release) or pass --loopcheck")


def run_matrix(loopcheck, names, jobs, out):
    args = [loopcheck, "matrix", "--report-json", str(out), "--jobs", str(jobs)]
    for name in names:
        args += ["--controller", f"{name}={command(name)}"]
    # The matrix exits 1 when a controller fails a case: that is the finding, not an error.
    code = subprocess.run(args, cwd=ROOT, stdout=subprocess.DEVNULL).returncode
    if code not in (0, 1):
        sys.exit(f"matrix.py: loopcheck matrix exited {code}")


def run_label(row):
    """`case [state]`, or `case [state, stream]` for a streamed run (as `loopcheck run` names it)."""
    streamed = ", stream" if row.get("delivery") == "stream" else ""
    return f"`{row['id']}` [{row['state']}{streamed}]"


def supported(summary):
    """A framework's runs minus those needing a capability it does not declare."""
    return summary["cases"] - summary["unsupported"]


def run_key(row):
    return (row["id"], row["state"], row.get("delivery"))


def merge(previous, fresh):
    """`fresh` (some frameworks' new runs) with the other frameworks' verdicts kept from
    `previous`. The runs are `fresh`'s, the catalogue as it is now; a kept framework that
    has no verdict for one of them was run on an older catalogue and is named."""
    kept = [n for n in previous["controllers"] if n not in fresh["controllers"]]
    controllers = sorted(kept + fresh["controllers"])
    old_rows = {run_key(row): row for row in previous["cases"]}
    stale = set()
    for row in fresh["cases"]:
        old = old_rows.get(run_key(row), {"verdicts": {}, "failing": {}})
        for name in kept:
            if name not in old["verdicts"]:
                stale.add(name)
                continue
            row["verdicts"][name] = old["verdicts"][name]
            if name in old.get("failing", {}):
                row.setdefault("failing", {})[name] = old["failing"][name]
        # In the controllers' order, so a rerun's diff is its changes only.
        for field in ("verdicts", "failing"):
            if field in row:
                row[field] = {n: row[field][n] for n in controllers if n in row[field]}
    for name in sorted(stale):
        print(f"matrix.py: {name} was run on another catalogue (runs without its verdict): rerun it")
    fresh["controllers"] = controllers
    fresh["summary"] = {n: (fresh["summary"].get(n) or previous["summary"][n]) for n in controllers}
    return fresh


def table(matrix):
    names = matrix["controllers"]
    lines = ["| case | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for row in matrix["cases"]:
        cells = []
        for name in names:
            verdict = row["verdicts"].get(name) or "-"
            failing = row.get("failing", {}).get(name, [])
            cells.append(verdict if not failing else f"{verdict}: " + ", ".join(f"`{c}`" for c in failing))
        lines.append(f"| {run_label(row)} | " + " | ".join(cells) + " |")
    passed = [matrix["summary"][n]["passed"] for n in names]
    runs = [supported(matrix["summary"][n]) for n in names]
    lines.append("| **passed / supported runs** | " + " | ".join(f"{p}/{s}" for p, s in zip(passed, runs)) + " |")
    return "\n".join(lines)


def unexplained(matrix):
    """(framework, case run, what) for every failure its findings.md does not name."""
    missing = []
    for name in matrix["controllers"]:
        findings = HERE / name / "findings.md"
        text = findings.read_text() if findings.exists() else ""
        for row in matrix["cases"]:
            verdict = row["verdicts"].get(name)
            if verdict in FINE or verdict is None:
                continue
            run = run_label(row).replace("`", "")
            failing = row.get("failing", {}).get(name, [])
            # A failing check is explained where its root cause is (which may cover many
            # runs, "every stateless run"); a run that failed without one (it crashed,
            # timed out) must be named itself.
            if not failing and row["id"] not in text:
                missing.append((name, run, f"the case ({verdict})"))
            for check in failing:
                if check not in text:
                    missing.append((name, run, f"the check {check}"))
    return missing


def pass_count(summary):
    """How the second line of a findings.md begins, with the matrix's numbers (what
    follows, how the failures split, is the findings' own)."""
    return f"Pass count: {summary['passed']} of {supported(summary)} supported runs ({summary['unsupported']} unsupported)"


def stale_counts(matrix):
    """(framework, what findings.md says, what it should say) where they differ: the
    page must not publish a count the matrix no longer has."""
    stale = []
    for name in matrix["controllers"]:
        findings = HERE / name / "findings.md"
        lines = findings.read_text().splitlines() if findings.exists() else []
        said = lines[1] if len(lines) > 1 else "(no second line)"
        expected = pass_count(matrix["summary"][name])
        if not said.startswith(expected):
            stale.append((name, said, expected))
    return stale


def nested(markdown):
    """A findings.md one heading level down, to sit under the page's "Findings"."""
    return "\n".join("#" + line if line.startswith("#") else line for line in markdown.splitlines())


def render(matrix):
    page = (HERE / "page.md").read_text()
    findings = "\n\n".join(
        nested((HERE / name / "findings.md").read_text().strip())
        for name in matrix["controllers"]
        if (HERE / name / "findings.md").exists()
    )
    return page.replace("{{matrix}}", table(matrix)).replace("{{findings}}", findings)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="frameworks (default: all)")
    parser.add_argument("--loopcheck", help="the loopcheck binary")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--render-only", action="store_true",
                        help="re-render the page from docs/frameworks.json without running anything")
    args = parser.parse_args()
    out = DOCS / "frameworks.json"
    if not args.render_only:
        names = frameworks(args.names)
        subprocess.run([str(HERE / "install.sh"), *names], check=True)
        # One file per run: two runs at once (one framework each) must not share it.
        fresh = INSTALLED / f"matrix-{os.getpid()}.json"
        run_matrix(find_loopcheck(args.loopcheck), names, args.jobs, fresh)
        matrix = json.loads(fresh.read_text())
        fresh.unlink()
        if args.names and out.exists():
            matrix = merge(json.loads(out.read_text()), matrix)
        write_atomic(out, json.dumps(matrix, indent=2) + "\n")
    matrix = json.loads(out.read_text())
    write_atomic(DOCS / "frameworks.md", render(matrix))
    missing = unexplained(matrix)
    for name, run, what in missing:
        print(f"unexplained: {name}: {run}: {what} is not named in harness/frameworks/{name}/findings.md")
    stale = stale_counts(matrix)
    for name, said, expected in stale:
        print(f"stale: harness/frameworks/{name}/findings.md line 2 says {said!r}; the matrix gives {expected!r}...")
    summary = ", ".join(
        f"{n} {matrix['summary'][n]['passed']}/{supported(matrix['summary'][n])}"
        for n in matrix["controllers"]
    )
    print(f"wrote docs/frameworks.md and docs/frameworks.json: {summary} (passed/supported)")
    sys.exit(1 if missing or stale else 0)


if __name__ == "__main__":
    main()
