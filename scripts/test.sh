#!/usr/bin/env bash
# Every test fz has: the normal build's unit and lit tests (GPU tests report
# themselves skipped without a GPU), the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, and a bounded run of each
# fuzzer (FZ_FUZZ_SECONDS for the parser's, default 60, and
# FZ_FUZZ_COMPILE_SECONDS for the compiler's, default 120). Exits non-zero
# on any failure; first, with the package to install, if something it
# needs is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check-deps.sh test.sh all
jobs=$(nproc)

echo "== build (RelWithDebInfo) =="
FZ_BUILD_DIR=build bash scripts/build.sh
echo "== tests =="
(cd build && ctest --output-on-failure -j"$jobs")

echo "== unit tests under ASan + UBSan =="
FZ_BUILD_DIR=build-asan bash scripts/build.sh -DCMAKE_BUILD_TYPE=Debug -DFZ_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j"$jobs" -L unit)

echo "== fuzzers =="
bash scripts/fuzz.sh "${FZ_FUZZ_SECONDS:-60}" "${FZ_FUZZ_COMPILE_SECONDS:-120}"
