#!/usr/bin/env bash
# run.sh CMAKE BUILD_DIR CONSUMER_SRC CC [PKG_CONFIG]
#
# Installs the fz build in BUILD_DIR into a scratch prefix and checks that
# another project can use it:
#  1. the prefix holds the headers, both libraries, the tools, fz.pc and
#     the CMake package files;
#  2. libfz.so needs only libc, libm, libstdc++ and libgcc_s (LLVM, zstd
#     and zlib are inside), and exports only fz_* symbols (none of the
#     test support in fz_testing);
#  3. the consumer project (CONSUMER_SRC) configures with find_package(fz)
#     and links fz::fz (shared) and fz::fz_static; both run;
#  4. the same main.c builds with `cc $(pkg-config --cflags --libs fz)`
#     and runs (skipped when pkg-config is missing);
#  5. the prefix still works after being moved (relocatable), through
#     pkg-config and through find_package.
set -euo pipefail
cmake=$1 build=$2 src=$3 cc=$4 pkgconfig=${5:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/fz-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "install test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "cmake --install into $work/prefix"
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install"; }

step "files"
prefix=$work/prefix
for f in include/fz/fz.h include/fz/ir.h include/fz/ops.def \
         bin/fuse-opt bin/fuse-run; do
  [ -e "$prefix/$f" ] || fail "missing $f"
done
so=$(find "$prefix" -name 'libfz.so' | head -n1)
[ -n "$so" ] || fail "missing libfz.so"
libdir=$(dirname "$so")
for f in libfz.a libfz_core.a pkgconfig/fz.pc cmake/fz/fzConfig.cmake \
         cmake/fz/fzConfigVersion.cmake cmake/fz/fzTargets.cmake; do
  [ -e "$libdir/$f" ] || fail "missing ${libdir#$prefix/}/$f"
done

# Only the system's C and C++ runtimes may be needed.
check_ldd() {
  local bad
  bad=$(ldd "$1" | awk '{print $1}' |
        grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|ld-linux|libc\.so|libm\.so|libstdc\+\+\.so|libgcc_s\.so)' || true)
  [ -z "$bad" ] || { ldd "$1"; fail "$(basename "$1") needs: $bad"; }
}

step "ldd and exported symbols of libfz.so"
check_ldd "$so"
symbols=$(nm -D --defined-only "$so" | awk '{print $3}')
others=$(grep -v '^fz_' <<<"$symbols" || true)
[ -z "$others" ] || fail "libfz.so exports non-fz symbols: $(head -c 400 <<<"$others")"
for sym in fz_executor_run fz_fusion_add_tensor fz_build_pointwise fz_version; do
  grep -qx "$sym" <<<"$symbols" || fail "libfz.so does not export $sym"
done
# Test support (lib/testing, fz_testing) is not part of the library.
testing=$(grep -E '^fz_(random_|splitmix)' <<<"$symbols" || true)
[ -z "$testing" ] || fail "libfz.so exports test support: $testing"

step "find_package(fz): fz::fz and fz::fz_static"
"$cmake" -S "$src" -B "$work/consumer" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "consumer configure"; }
"$cmake" --build "$work/consumer" -j2 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "consumer build"; }
"$work/consumer/consumer_shared" >"$work/shared.out" ||
  { cat "$work/shared.out"; fail "consumer_shared"; }
grep -q "consumer: OK" "$work/shared.out" || fail "consumer_shared output"
grep -q "$libdir/libfz.so" <<<"$(ldd "$work/consumer/consumer_shared")" ||
  { ldd "$work/consumer/consumer_shared"; fail "consumer_shared does not use the installed libfz.so"; }
"$work/consumer/consumer_static" >"$work/static.out" ||
  { cat "$work/static.out"; fail "consumer_static"; }
grep -q "consumer: OK" "$work/static.out" || fail "consumer_static output"
check_ldd "$work/consumer/consumer_static"

if [ -n "$pkgconfig" ]; then
  step "pkg-config fz"
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  "$pkgconfig" --exists fz || fail "pkg-config does not find fz"
  [ "$("$pkgconfig" --modversion fz)" = "$(sed -n 's/^Version: //p' "$libdir/pkgconfig/fz.pc")" ] ||
    fail "pkg-config --modversion"
  # shellcheck disable=SC2046
  "$cc" -std=c11 -o "$work/consumer_pc" "$src/main.c" \
    $("$pkgconfig" --cflags --libs fz) -lm -Wl,-rpath,"$libdir" ||
    fail "building with pkg-config flags"
  "$work/consumer_pc" >"$work/pc.out" || { cat "$work/pc.out"; fail "consumer_pc"; }
  grep -q "consumer: OK" "$work/pc.out" || fail "consumer_pc output"

  step "relocated prefix (pkg-config)"
  mv "$prefix" "$work/moved"
  export PKG_CONFIG_PATH="$work/moved/${libdir#$prefix/}/pkgconfig"
  moved_lib=$("$pkgconfig" --variable=libdir fz)
  [ -e "$moved_lib/libfz.so" ] || fail "fz.pc's libdir after moving: $moved_lib"
  "$cc" -std=c11 -o "$work/consumer_moved" "$src/main.c" \
    $("$pkgconfig" --cflags --libs fz) -lm -Wl,-rpath,"$moved_lib" ||
    fail "building against the moved prefix"
  "$work/consumer_moved" >/dev/null || fail "consumer against the moved prefix"
  mv "$work/moved" "$prefix"
else
  echo "== pkg-config not found: pkg-config checks skipped"
fi

step "relocated prefix (find_package)"
mv "$prefix" "$work/moved"
"$cmake" -S "$src" -B "$work/consumer2" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$work/moved" >"$work/configure2.log" 2>&1 ||
  { cat "$work/configure2.log"; fail "consumer configure (moved prefix)"; }
"$cmake" --build "$work/consumer2" --target consumer_shared \
  >"$work/build2.log" 2>&1 ||
  { cat "$work/build2.log"; fail "consumer build (moved prefix)"; }
"$work/consumer2/consumer_shared" >/dev/null ||
  fail "consumer_shared against the moved prefix"
echo "install test: OK"
