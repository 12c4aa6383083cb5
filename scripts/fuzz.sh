#!/usr/bin/env bash
# Builds the parser fuzzer with clang 19 (libFuzzer + ASan + UBSan, the
# library instrumented too so coverage reaches the parser) in build-fuzz/
# (or $FZ_FUZZ_BUILD_DIR), then runs it for a bounded time on a scratch
# copy of test/fuzz/corpus, so the checked-in seeds are never rewritten.
# Usage: scripts/fuzz.sh [seconds]   (default 60). Exits non-zero on a crash;
# the crashing input is left in the current directory as crash-*.
set -euo pipefail
seconds=${1:-60}
root="$(cd "$(dirname "$0")/.." && pwd)"
build=${FZ_FUZZ_BUILD_DIR:-$root/build-fuzz}
cc=${FZ_FUZZ_CC:-clang-19}
flags="-fsanitize=fuzzer-no-link,address,undefined"
flags+=" -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

cmake -S "$root" -B "$build" -DFZ_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build "$build" --target fuzz_parse -j"$(nproc)"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp "$root"/test/fuzz/corpus/*.fz "$corpus"/
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/bin/fuzz_parse" -max_total_time="$seconds" -max_len=4096 \
  -timeout=10 -print_final_stats=1 -dict="$root/test/fuzz/fz.dict" "$corpus"
