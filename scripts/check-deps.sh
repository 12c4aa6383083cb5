#!/usr/bin/env bash
# Checks up front that what a script needs is installed, so that a missing
# package is named instead of failing deep inside a CMake try-compile.
#   scripts/check-deps.sh CALLER [all|build]
# `all` (the default) checks every package of scripts/deps.txt; `build`
# leaves out those only the tests and the fuzzers need. Prints one line per missing piece,
# "CALLER: WHAT is missing: apt-get install PACKAGE, or run
# scripts/install-deps.sh", and exits 1 if anything is missing.
# For testing, FZ_CLANG_RESOURCE_DIR replaces `clang-19 -print-resource-dir`
# and FZ_LLVM_CONFIG replaces llvm-config-19.
set -uo pipefail
caller=${1:-check-deps.sh}
scope=${2:-all}
list="${BASH_SOURCE[0]%/*}/deps.txt"
llvm_config=${FZ_LLVM_CONFIG:-llvm-config-19}
missing=0

say_missing() { # WHAT PACKAGE
  echo "$caller: $1 is missing: apt-get install $2, or run scripts/install-deps.sh" >&2
  missing=1
}

have_command() { command -v "$1" >/dev/null 2>&1; }

# A static library where the linker looks (as CMake's find_library does).
have_static_lib() {
  local path
  path=$(gcc -print-file-name="$1" 2>/dev/null) && [ "$path" != "$1" ] && [ -f "$path" ]
}

# A clang runtime archive, in either layout of the resource directory.
have_clang_runtime() {
  local dir arch=$HOSTTYPE
  dir=${FZ_CLANG_RESOURCE_DIR:-$(clang-19 -print-resource-dir 2>/dev/null)} || return 1
  [ -n "$dir" ] && { [ -f "$dir/lib/linux/libclang_rt.$1-$arch.a" ] ||
    [ -f "$dir/lib/$arch-unknown-linux-gnu/libclang_rt.$1.a" ]; }
}

llvm_dir() { "$llvm_config" "$1" 2>/dev/null; }

check_package() { # PACKAGE
  local bindir libdir
  case $1 in
    cmake | make | gcc | g++ | python3 | clang-19)
      have_command "$1" || say_missing "$1" "$1" ;;
    llvm-19-dev)
      if ! have_command "$llvm_config"; then
        say_missing "LLVM 19's llvm-config ($llvm_config)" llvm-19-dev
      else
        libdir=$(llvm_dir --libdir)
        [ -f "$libdir/libLLVMNVPTXCodeGen.a" ] && [ -f "$libdir/libLLVMCore.a" ] ||
          say_missing "LLVM 19's static libraries (libLLVMCore.a in $libdir)" llvm-19-dev
        [ -f "$(llvm_dir --includedir)/llvm-c/Core.h" ] ||
          say_missing "LLVM 19's C headers (llvm-c/Core.h)" llvm-19-dev
      fi ;;
    llvm-19-tools)
      bindir=$(llvm_dir --bindir)
      [ -n "$bindir" ] && [ -x "$bindir/FileCheck" ] ||
        say_missing "LLVM 19's FileCheck" llvm-19-tools
      [ -n "$bindir" ] && [ -f "$bindir/../build/utils/lit/lit.py" ] ||
        say_missing "LLVM 19's lit (lit.py)" llvm-19-tools ;;
    check) have_static_lib libcheck.a || say_missing "check's static library (libcheck.a)" check ;;
    pkgconf) have_command pkg-config || say_missing "pkg-config" pkgconf ;;
    # scripts/wheel.sh (ctest unit/wheel) builds the wheel with Debian's
    # python3 and these, without network.
    python3-setuptools)
      [ -f /usr/lib/python3/dist-packages/setuptools/build_meta.py ] ||
        say_missing "setuptools for /usr/bin/python3" python3-setuptools ;;
    python3-wheel)
      [ -f /usr/lib/python3/dist-packages/wheel/bdist_wheel.py ] ||
        say_missing "wheel for /usr/bin/python3" python3-wheel ;;
    libsubunit-dev)
      have_static_lib libsubunit.a || say_missing "subunit's static library (libsubunit.a)" libsubunit-dev ;;
    zlib1g-dev) have_static_lib libz.a || say_missing "zlib's static library (libz.a)" zlib1g-dev ;;
    libzstd-dev) have_static_lib libzstd.a || say_missing "zstd's static library (libzstd.a)" libzstd-dev ;;
    libclang-rt-19-dev)
      have_clang_runtime asan_static || say_missing "clang-19's ASan runtime" libclang-rt-19-dev
      have_clang_runtime fuzzer || say_missing "clang-19's libFuzzer runtime" libclang-rt-19-dev ;;
    *)
      echo "$caller: scripts/check-deps.sh has no check for package $1 (scripts/deps.txt)" >&2
      missing=1 ;;
  esac
}

if [ ! -r "$list" ]; then
  echo "$caller: cannot read $list" >&2
  exit 1
fi
while read -r package needed_by _; do
  case $package in '' | '#'*) continue ;; esac
  [ "$scope" = build ] && [ "$needed_by" != all ] && continue
  check_package "$package"
done < "$list"
exit $missing
