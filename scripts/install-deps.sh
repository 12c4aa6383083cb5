#!/usr/bin/env bash
# Installs what fz needs on Debian 12, only when something is missing:
# LLVM 19 (static libraries, FileCheck, lit), clang 19 (for the fuzzer),
# check (unit tests), cmake, zlib and zstd (static, linked into libfz).
set -euo pipefail
packages=(llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev check cmake zlib1g-dev libzstd-dev python3 make gcc g++)
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
