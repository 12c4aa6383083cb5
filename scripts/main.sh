#!/usr/bin/env bash
# The main job: compile seed 000's layer-norm backward exactly as a tracing
# front end produces it, print the IR after every pass, the kernel plan and
# the PTX, and run + validate it against the reference interpreter on the
# GPU when one is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check-deps.sh main.sh build
FZ_BUILD_DIR=build bash scripts/build.sh
example=examples/layer_norm_backward_seed000.fz
opt=build/bin/fuse-opt

echo "== $example: IR after each pass =="
$opt --print-after-all --pass=canonicalize,alloc-order "$example"
echo "== segments and every scheduler's verdict =="
$opt --pass=canonicalize --emit=segments "$example"
$opt --pass=canonicalize --emit=explain "$example"
echo "== kernel plan =="
$opt --pass=canonicalize --emit=sched "$example"
echo "== PTX (sm_90) =="
$opt --pass=canonicalize --emit=ptx "$example"
echo "== run on the GPU, validated against the reference interpreter =="
set +e
build/bin/fuse-run "$example" --iters 20
rc=$?
set -e
case $rc in
  0) echo "main: GPU run validated" ;;
  77) echo "main: no GPU here: the GPU run was SKIPPED (everything up to PTX ran)" ;;
  *) echo "main: GPU run FAILED (exit $rc)"; exit $rc ;;
esac
