#!/usr/bin/env bash
# Builds the fuzzers with clang 19 (libFuzzer + ASan + UBSan, the library
# instrumented too so coverage reaches it) in build-fuzz/ (or
# $FZ_FUZZ_BUILD_DIR) and runs each for a bounded time on a scratch corpus,
# so that nothing checked in is rewritten:
#   fuzz_parse    parser, verifier and printer, from test/fuzz/corpus;
#   fuzz_compile  passes, segmentation, schedulers, lowering and NVPTX, from
#                 every fusion under test/ and examples/ (files split at
#                 their `// -----` lines).
# Usage: scripts/fuzz.sh [parse-seconds [compile-seconds]] (default 60 120).
# Exits non-zero when a target crashed (both run regardless); each crashing
# input is left in the current directory as fuzz_<target>-crash-* (likewise
# -timeout-*, -oom-*, -leak-*). Reproduce with build-fuzz/bin/fuzz_<target>
# FILE (with FZ_FUZZ_VERBOSE=1, fuzz_compile prints the call it drew as
# fuse-opt options); shrink with -minimize_crash=1 -runs=10000 FILE.
set -euo pipefail
parse_seconds=${1:-60}
compile_seconds=${2:-120}
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/check-deps.sh" fuzz.sh all
build=${FZ_FUZZ_BUILD_DIR:-$root/build-fuzz}
cc=${FZ_FUZZ_CC:-clang-19}
flags="-fsanitize=fuzzer-no-link,address,undefined"
flags+=" -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

cmake -S "$root" -B "$build" -DFZ_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build "$build" --target fuzz_parse fuzz_compile -j"$(nproc)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Each `// -----`-separated chunk of every .fz under test/ and examples/ as
# one seed, named after its file and chunk number.
seed_fusions() {
  local dest=$1 file name
  while IFS= read -r file; do
    name=${file#"$root"/}
    name=${name//\//_}
    awk -v out="$dest/$name" '
      BEGIN { n = 0 }
      /^\/\/ -----[ \t\r]*$/ { n++; next }
      { print > (out "." n) }' "$file"
  done < <(find "$root/test" "$root/examples" -name '*.fz' | sort)
}

# run TARGET SECONDS CORPUS: 0, or 1 after a crash.
run() {
  echo "== $1: $2 s =="
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/bin/$1" -max_total_time="$2" -max_len=4096 -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$1-" \
    -dict="$root/test/fuzz/fz.dict" "$3" || return 1
}

mkdir "$scratch/parse" "$scratch/compile"
cp "$root"/test/fuzz/corpus/*.fz "$scratch/parse"/
seed_fusions "$scratch/compile" # test/fuzz/corpus among them

status=0
run fuzz_parse "$parse_seconds" "$scratch/parse" || status=1
run fuzz_compile "$compile_seconds" "$scratch/compile" || status=1
exit $status
