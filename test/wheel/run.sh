#!/usr/bin/env bash
# run.sh PYTHON SOURCE_DIR LIBFZ
#
# Builds the wheel (scripts/wheel.sh) around the build tree's libfz.so and
# checks it without pip and without torch:
#  1. its name is fz-<version>-py3-none-linux_<arch>.whl, <version> being
#     python/fz/_version.py's;
#  2. it holds fz/libfz.so, stripped, and the torch_dynamo_backends entry
#     point naming fz.dynamo:backend;
#  3. unpacked into a scratch folder, `import fz` (with FZ_LIBRARY unset)
#     loads the bundled library, and fz.__version__ equals its
#     fz_version();
#  4. the bundled libfz.so needs only libc, libm, libstdc++ and libgcc_s.
set -euo pipefail
python=$1 src=$2 libfz=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/fz-wheel-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "wheel test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "scripts/wheel.sh --library $libfz"
wheel=$(bash "$src/scripts/wheel.sh" --library "$libfz" --out "$work/dist" | tail -n1)
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$src/python/fz/_version.py")
[ -n "$version" ] || fail "no __version__ in python/fz/_version.py"
case $(basename "$wheel") in
  "fz-$version-py3-none-linux_$(uname -m).whl") ;;
  *) fail "unexpected wheel name $(basename "$wheel")" ;;
esac

step "unpack"
site=$work/site
"$python" -m zipfile -e "$wheel" "$site"
so=$site/fz/libfz.so
[ -f "$so" ] || fail "the wheel has no fz/libfz.so"
for f in fz/__init__.py fz/dynamo/__init__.py; do
  [ -f "$site/$f" ] || fail "the wheel has no $f"
done
if readelf -S "$so" | grep -q '\.debug_info'; then
  fail "fz/libfz.so is not stripped"
fi
eps=$(cat "$site"/fz-"$version".dist-info/entry_points.txt)
grep -q '^\[torch_dynamo_backends\]' <<<"$eps" &&
  grep -Eq '^fz *= *fz\.dynamo:backend$' <<<"$eps" ||
  fail "no torch_dynamo_backends entry point fz = fz.dynamo:backend: $eps"

step "import fz from the unpacked wheel"
(cd "$work" && env -u FZ_LIBRARY "$python" - "$site" "$version" <<'PY'
import os, sys
site, version = sys.argv[1], sys.argv[2]
sys.path.insert(0, site)
import fz
assert os.path.dirname(fz.__file__) == os.path.join(site, "fz"), fz.__file__
assert fz.__version__ == version, (fz.__version__, version)
assert fz.version() == fz.__version__, (fz.version(), fz.__version__)
loaded = fz.lib().path
assert os.path.realpath(loaded) == os.path.realpath(
    os.path.join(site, "fz", "libfz.so")), loaded
print("fz", fz.__version__, "from", loaded)
PY
) || fail "importing fz from the wheel"

step "ldd of the bundled libfz.so"
bad=$(ldd "$so" | awk '{print $1}' |
      grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|ld-linux|libc\.so|libm\.so|libstdc\+\+\.so|libgcc_s\.so)' || true)
[ -z "$bad" ] || { ldd "$so"; fail "libfz.so needs: $bad"; }
echo "wheel test: OK ($(du -k "$wheel" | cut -f1) KiB)"
