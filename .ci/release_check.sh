#!/usr/bin/env bash
# Release check: what a `pip install sb3-hir sb3-hir-example sb3-hir-robotics` from the built files gets.
#
#   1. sdist + wheel of sb3-hir and of each plugin under plugins/ (`python -m build`: the wheel is built from the
#      sdist, so a file missing from the sdist fails here), from a copy of the checkout's tracked and unignored
#      files, so nothing left in the work tree (egg-info, build/) leaks in;
#   2. `twine check --strict` on every file (long descriptions render, metadata is complete);
#   3. a fresh virtual environment with the CPU torch first, then the three wheels (sb3-hir with its 'dagger'
#      extra) under .ci/constraints-dagger.txt, and a smoke test run from outside the checkout: `sb3-hir plugins
#      --json` lists the builtin, example and robotics plugins, sb3_hir.testing.check_plugin passes on each plugin,
#      and the installed version equals sb3_hir.__version__ and the wheel's.
#
# build and twine are installed (pinned) into $VENV, the 'dagger' profile that `make install` creates;
# `--tools-only` installs them and stops.
# Prints how long each step took; removes its temporary directory however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
BUILD_VERSION=1.6.1
TWINE_VERSION=7.0.0
CONSTRAINTS=$repo/.ci/constraints-dagger.txt

if [ ! -x "$VENV/bin/python" ]; then
  echo "release check: no $VENV (run make install first)" >&2
  exit 1
fi

start=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sb3-hir-release.XXXXXX")
cleanup() {
  local rc=$? t0
  t0=$(date +%s)
  rm -rf "$tmp"
  echo "== release check: removing $tmp took $(( $(date +%s) - t0 ))s; $(( $(date +%s) - start ))s in all, exit code $rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
step_start=$start
took() {
  local now
  now=$(date +%s)
  echo "== release check: $1 took $((now - step_start))s"
  step_start=$now
}

"$VENV/bin/python" -m pip install -q -c "$CONSTRAINTS" "build==$BUILD_VERSION" "twine==$TWINE_VERSION"
took "installing build $BUILD_VERSION and twine $TWINE_VERSION into $VENV"
if [ "${1:-}" = "--tools-only" ]; then  # .ci/run installs the tools first, then runs this beside `make docs`
  exit 0
fi

# ---------------------------------------------------------------------------------------------------- build
src=$tmp/src
dist=$tmp/dist
mkdir -p "$src" "$dist"
git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$src"
projects=(. plugins/*/)
for project in "${projects[@]}"; do
  "$VENV/bin/python" -m build --outdir "$dist" "$src/$project" > "$tmp/build.log" 2>&1 || {
    cat "$tmp/build.log" >&2
    echo "release check: python -m build failed for $project" >&2
    exit 1
  }
  # setuptools' deprecations (e.g. of a pyproject.toml field) fail the check: they become errors at their date.
  if grep -E "SetuptoolsDeprecationWarning|remove deprecated calls" "$tmp/build.log" >&2; then
    echo "release check: the build of $project warns about deprecated configuration (above)" >&2
    exit 1
  fi
done
n_sdists=$(find "$dist" -name '*.tar.gz' | wc -l)
n_wheels=$(find "$dist" -name '*.whl' | wc -l)
if [ "$n_sdists" -ne "${#projects[@]}" ] || [ "$n_wheels" -ne "${#projects[@]}" ]; then
  echo "release check: expected ${#projects[@]} sdists and wheels, got $n_sdists and $n_wheels:" >&2
  ls -l "$dist" >&2
  exit 1
fi
(cd "$dist" && ls -l -- *)
took "python -m build (${#projects[@]} sdists, ${#projects[@]} wheels)"

COLUMNS=200 "$VENV/bin/twine" --no-color check --strict "$dist"/*
took "twine check --strict"

# ---------------------------------------------------------------------------------------------------- install
wheels=("$dist"/*.whl)
core_wheel=$(find "$dist" -name 'sb3_hir-*.whl')
plugin_wheels=()
for wheel in "${wheels[@]}"; do
  if [ "$wheel" != "$core_wheel" ]; then plugin_wheels+=("$wheel"); fi
done
wheel_version=$(basename "$core_wheel" | cut -d- -f2)
venv=$tmp/venv
"$PYTHON" -m venv "$venv"
# CPU build of torch first: an unpinned torch pulls a CUDA build of several GB. --no-compile: no .pyc files for
# tens of thousands of modules the smoke test never imports (writing and removing them is most of this step's time).
"$venv/bin/python" -m pip install -q --no-compile torch==2.13.0
"$venv/bin/python" -m pip install -q --no-compile -c "$CONSTRAINTS" "$core_wheel[dagger]" "${plugin_wheels[@]}"
took "fresh venv with the wheels"

# ---------------------------------------------------------------------------------------------------- smoke test
# From a directory outside the checkout, without PYTHONPATH, so only the installed wheels can be imported.
smoke=$tmp/smoke
mkdir -p "$smoke"
cd "$smoke"
env -u PYTHONPATH "$venv/bin/sb3-hir" plugins --json > plugins.json
env -u PYTHONPATH "$venv/bin/sb3-hir" --version > version.txt
cat > smoke.py <<'EOF'
import importlib.metadata as md
import json
import sys
import time
from pathlib import Path

import sb3_hir
import sb3_hir.dagger  # noqa: F401  (the 'dagger' extra resolved from the wheel's metadata)
from sb3_hir.testing import check_plugin

wheel_version, venv = sys.argv[1], Path(sys.argv[2]).resolve()
assert Path(sb3_hir.__file__).resolve().is_relative_to(venv), f"sb3_hir imported from {sb3_hir.__file__}, not {venv}"
installed = md.version("sb3-hir")
assert installed == sb3_hir.__version__ == wheel_version, (
    f"installed sb3-hir {installed}, sb3_hir.__version__ {sb3_hir.__version__}, wheel {wheel_version}")
cli_version = Path("version.txt").read_text().strip()
assert cli_version == f"sb3-hir {sb3_hir.__version__}", cli_version
print(f"version: sb3-hir {installed} (metadata) == sb3_hir.__version__ == wheel; `sb3-hir --version`: {cli_version}")

listing = json.loads(Path("plugins.json").read_text())
assert listing["broken"] == [], f"broken plugins: {listing['broken']}"
assert listing["conflicts"] == [], f"component name conflicts: {listing['conflicts']}"
found = {p["name"]: p for p in listing["plugins"]}
expected = {"builtin": "sb3-hir", "example": "sb3-hir-example", "robotics": "sb3-hir-robotics"}
for name, distribution in expected.items():
    assert name in found, f"plugin {name!r} missing from `sb3-hir plugins --json`: {sorted(found)}"
    plugin = found[name]
    assert plugin["distribution"] == distribution, plugin
    assert plugin["version"] == md.version(distribution), plugin
    assert plugin["components"], f"plugin {name!r} registers no components"
    components = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in plugin["components"].items())
    print(f"sb3-hir plugins --json: {name} ({distribution} {plugin['version']}) {components}")

for distribution in ("sb3-hir-example", "sb3-hir-robotics"):
    t0 = time.perf_counter()
    check_plugin(distribution)
    print(f"check_plugin({distribution!r}) passed in {time.perf_counter() - t0:.1f}s")
EOF
env -u PYTHONPATH "$venv/bin/python" smoke.py "$wheel_version" "$venv"
took "smoke test"
echo "== release check passed"
