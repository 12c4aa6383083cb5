#!/usr/bin/env bash
# no_call_cycles.sh OBJECT_DIR - fails when the files of one stage call
# each other in a circle.
#
# Each object file in OBJECT_DIR (e.g. lib/lower's, as CMake compiled them)
# is a node; an edge a -> b means a.c calls (or reads) a symbol b.c
# defines. The stage's files must form a hierarchy (the driver over the
# skeletons, the skeletons over the helpers), so tsort must find an order.
# Prints the edges of any cycle it finds.
set -euo pipefail
dir=$1
command -v nm >/dev/null || { echo "nm is missing: apt-get install binutils" >&2; exit 2; }
shopt -s nullglob
objects=("$dir"/*.o)
[ ${#objects[@]} -gt 1 ] || { echo "no object files in $dir" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in "${objects[@]}"; do
  f=$(basename "$o" .o)
  nm "$o" | awk '$2 ~ /^[TDBRC]$/ {print $3}' | sort -u > "$tmp/$f.def"
  nm "$o" | awk '$1 == "U" {print $2}' | sort -u > "$tmp/$f.und"
done
: > "$tmp/edges"
for a in "$tmp"/*.und; do
  fa=$(basename "$a" .und)
  for d in "$tmp"/*.def; do
    fb=$(basename "$d" .def)
    [ "$fa" = "$fb" ] && continue
    if [ -n "$(comm -12 "$a" "$d")" ]; then
      echo "$fa $fb" >> "$tmp/edges"
    fi
  done
done
if ! tsort "$tmp/edges" > "$tmp/order" 2> "$tmp/cycles"; then
  echo "files of $dir call each other in a circle:" >&2
  cat "$tmp/cycles" >&2
  exit 1
fi
echo "$(wc -l < "$tmp/edges") call edges among ${#objects[@]} files, no cycle"
