#!/usr/bin/env bash
# The main job: compile seed 000's layer-norm backward, print the IR after
# every pass and the generated code, and run + validate it on the GPU when
# one is present.
set -euo pipefail
cd "$(dirname "$0")/.."
FZ_BUILD_DIR=build bash scripts/build.sh
example=examples/layer_norm_backward_seed000.fz
echo "== $example: IR after each pass =="
build/bin/fuse-opt --print-after-all --pass=canonicalize "$example"
echo "== reference interpreter =="
build/bin/fuse-opt --pass=canonicalize --run-reference "$example"
