#!/usr/bin/env bash
# Installs the pinned agent frameworks of harness/frameworks/ outside the source tree, one
# folder each under $LOOPCHECK_FRAMEWORKS_DIR (default ~/.cache/loopcheck/frameworks):
# a virtualenv for a Python framework (its requirements.txt), node_modules for a Node one
# (its package.json and lock file, with the adapter and its manifest linked beside them,
# since ESM resolves packages from the file's folder). A framework whose pins have not
# changed since its last install is left as it is.
#
# Usage: harness/frameworks/install.sh [NAME...]   (default: every framework)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${LOOPCHECK_FRAMEWORKS_DIR:-$HOME/.cache/loopcheck/frameworks}
mkdir -p "$dir"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    # Every folder with an adapter (not, say, the __pycache__ of the shared contract.py).
    for adapter in "$here"/*/adapter.py "$here"/*/adapter.mjs; do
        [ -f "$adapter" ] && names+=("$(basename "$(dirname "$adapter")")")
    done
fi

for name in "${names[@]}"; do
    source="$here/$name"
    target="$dir/$name"
    if [ ! -d "$source" ]; then
        echo "install.sh: no framework $name in $here" >&2
        exit 2
    fi
    # A framework has either file set, so cat fails on the other: not an error here.
    pins=$({ cat "$source"/requirements.txt "$source"/package.json "$source"/package-lock.json 2> /dev/null || true; } | sha256sum | cut -d' ' -f1)
    if [ -f "$target/.pins" ] && [ "$(cat "$target/.pins")" = "$pins" ]; then
        echo "$name: up to date in $target"
    elif [ -f "$source/requirements.txt" ]; then
        echo "$name: installing into $target/venv"
        rm -rf "$target" && mkdir -p "$target"
        python3 -m venv "$target/venv"
        "$target/venv/bin/pip" install --quiet --disable-pip-version-check -r "$source/requirements.txt"
        echo "$pins" > "$target/.pins"
    elif [ -f "$source/package.json" ]; then
        echo "$name: installing into $target/node_modules"
        rm -rf "$target" && mkdir -p "$target"
        cp "$source/package.json" "$source/package-lock.json" "$target/"
        npm ci --prefix "$target" --no-audit --no-fund --loglevel=error
        echo "$pins" > "$target/.pins"
    else
        echo "install.sh: $source has neither requirements.txt nor package.json" >&2
        exit 2
    fi
    # The adapter runs from the source tree (edits need no reinstall); a Node adapter is
    # linked beside its node_modules, with its manifest, and the shared contract.mjs beside
    # the frameworks' folders, where the adapter's `../contract.mjs` finds it.
    if [ -f "$source/adapter.mjs" ]; then
        ln -sfn "$source/adapter.mjs" "$target/adapter.mjs"
        ln -sfn "$source/adapter.mjs.loopcheck.json" "$target/adapter.mjs.loopcheck.json"
        ln -sfn "$here/contract.mjs" "$dir/contract.mjs"
    fi
done
