#!/usr/bin/env bash
# Installs what fz needs on Debian 12, only when something is missing:
# the packages of scripts/deps.txt (LLVM 19's static libraries, FileCheck
# and lit; clang 19 and its sanitizer and libFuzzer runtimes for the
# fuzzers; check and subunit for the unit tests; pkg-config for the
# install test; cmake; zlib and zstd,
# static, linked into libfz), the same list scripts/check-deps.sh checks.
set -euo pipefail
packages=()
while read -r package _; do
  case $package in '' | '#'*) continue ;; esac
  packages+=("$package")
done < "$(dirname "$0")/deps.txt"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
