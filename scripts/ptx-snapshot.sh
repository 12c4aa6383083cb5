#!/usr/bin/env bash
# ptx-snapshot.sh FUSE_OPT OUTDIR [EXTRA_DIR ...]
#
# Writes what fuse-opt emits (LLVM IR after O3 and PTX for sm_90 and
# sm_80, with and without canonicalize) for every .fz under examples/,
# test/lit/, test/gpu/ and bench/fusions/ (and any EXTRA_DIR), at every
# size that file's `--bind=` or `GPU-RUN: --size` lines name, one file per
# case, so that two builds can be compared with `diff -r`. A refactor that
# must not change the generated kernels proves it this way:
#
#   scripts/ptx-snapshot.sh old-build/bin/fuse-opt /tmp/before
#   scripts/ptx-snapshot.sh build/bin/fuse-opt /tmp/after
#   diff -r /tmp/before /tmp/after
#
# Cases fuse-opt rejects keep their diagnostics (`.stderr`), so a changed
# error shows up in the diff too. Run it from the repository root.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 FUSE_OPT OUTDIR [EXTRA_DIR ...]" >&2
  exit 2
fi
opt=$1
out=$2
shift 2
rm -rf "$out"
mkdir -p "$out"

files=$(find examples test/lit test/gpu bench/fusions "$@" -name '*.fz' 2>/dev/null | sort)
for f in $files; do
  split=""
  grep -q -- '^// -----' "$f" && split="--split-input-file"
  binds=$( { grep -o -- '--bind=[^ ]*' "$f" | sed 's/--bind=//'
             grep -o -- 'GPU-RUN: --size[= ][^ ]*' "$f" | sed 's/.*--size[= ]//'; } | sort -u)
  [ -z "$binds" ] && binds="-"
  name=$(echo "$f" | sed 's|^\./||; s|/|_|g')
  for b in $binds; do
    bind=""
    [ "$b" != "-" ] && bind="--bind=$b"
    for pass in none canonicalize; do
      p=""
      [ "$pass" != none ] && p="--pass=canonicalize"
      for v in "llvm sm_90" "ptx sm_90" "ptx sm_80"; do
        set -- $v
        o="$out/$name.${b//[=,]/_}.$pass.$1.$2"
        if "$opt" $split $p --emit="$1" --arch="$2" $bind "$f" > "$o" 2> "$o.stderr"; then
          rm "$o.stderr"
        else
          echo "rc=$?" >> "$o.stderr"
          mv "$o" "$o.failed-stdout"
          # Paths differ between checkouts; diagnostics are compared without them.
          sed -i 's|^[^ ]*/||' "$o.stderr"
        fi
      done
    done
  done
done
echo "outputs: $(find "$out" -type f ! -name '*.stderr' ! -name '*.failed-stdout' | wc -l)" \
     "rejected: $(find "$out" -name '*.stderr' | wc -l)"
