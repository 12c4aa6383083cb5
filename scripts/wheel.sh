#!/usr/bin/env bash
# Builds the Python wheel, dist/fz-<version>-py3-none-linux_<arch>.whl:
# the fz package (python/fz) with libfz.so inside (LLVM included, stripped).
#   scripts/wheel.sh [--library PATH] [--out DIR]
# Without --library, libfz.so is built first, in Release, into
# $FZ_BUILD_DIR (default build-release). --out defaults to dist/.
# Needs a Python with setuptools (>= 61) and wheel: $FZ_WHEEL_PYTHON, else
# python3 or /usr/bin/python3 (Debian: python3-setuptools python3-wheel);
# nothing is downloaded. Prints the wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fail() { echo "wheel.sh: $*" >&2; exit 1; }

library='' out=$root/dist
while [ $# -gt 0 ]; do
  case $1 in
    --library) [ $# -ge 2 ] || fail "--library needs a path"; library=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || fail "--out needs a folder"; out=$2; shift 2 ;;
    *) fail "unknown argument '$1' (usage: scripts/wheel.sh [--library PATH] [--out DIR])" ;;
  esac
done

has_tools() { # PYTHON: setuptools >= 61 (pyproject metadata) and wheel
  "$1" -c 'import sys, setuptools, wheel
sys.exit(int(setuptools.__version__.split(".")[0]) < 61)' >/dev/null 2>&1
}
python=${FZ_WHEEL_PYTHON:-}
if [ -n "$python" ]; then
  has_tools "$python" || fail "FZ_WHEEL_PYTHON=$python lacks setuptools >= 61 or wheel"
else
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null && has_tools "$candidate"; then
      python=$candidate
      break
    fi
  done
  [ -n "$python" ] || fail "no Python with setuptools >= 61 and wheel: apt-get install python3-setuptools python3-wheel, or set FZ_WHEEL_PYTHON"
fi
command -v strip >/dev/null || fail "strip is missing: apt-get install binutils"

if [ -z "$library" ]; then
  build=${FZ_BUILD_DIR:-build-release}
  echo "== libfz.so (Release) in $build" >&2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target fz_shared -j"$(nproc)" >&2
  library=$build/lib/libfz.so
fi
[ -f "$library" ] || fail "libfz.so not found at $library"
library=$(cd "$(dirname "$library")" && pwd)/$(basename "$library")

# The package is built from a copy, so that the checkout gets no build/,
# egg-info or libfz.so inside python/ (python/fz/libfz.so would shadow
# the build trees' library for every later run from the checkout).
stage=$(mktemp -d "${TMPDIR:-/tmp}/fz-wheel.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp python/pyproject.toml python/setup.py python/README.md "$stage/"
cp -r python/fz "$stage/fz"
rm -f "$stage/fz/libfz.so"
find "$stage/fz" -name __pycache__ -prune -exec rm -rf {} +

mkdir -p "$out"
out=$(cd "$out" && pwd)
echo "== wheel from $library" >&2
wheel=$(cd "$stage" && FZ_LIBRARY=$library "$python" -c '
import sys
from setuptools import build_meta
print(build_meta.build_wheel(sys.argv[1]))' "$out" 2>"$stage/build.log" | tail -n1) ||
  { cat "$stage/build.log" >&2; fail "building the wheel failed (log above)"; }
[ -f "$out/$wheel" ] || { cat "$stage/build.log" >&2; fail "no wheel in $out"; }
echo "$out/$wheel"
