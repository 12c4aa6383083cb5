#!/usr/bin/env python3
"""Writes the reduction correctness sweep as one file of fusions
separated by `// -----` lines, for `fuse-run --split-input-file`.

Rank 2, 3 and 4 inputs; every permutation of the input's allocation order;
reduction over every non-empty proper subset of axes for rank <= 3 and a
representative set for rank 4; for rank 3, keepdim outputs in the default
layout and in every permutation; sizes including 1, primes and
non-multiples of the vector width; f32 and bf16.

usage: gen_reduction_sweep.py OUT.fz [--dtypes f32,bf16] [--ops sum,amax]
"""
import argparse
import itertools

SIZES = {2: [37, 1030], 3: [5, 1, 67], 4: [3, 7, 4, 9]}
RANK4_SUBSETS = [(0,), (3,), (1, 2), (0, 2), (0, 1, 2), (1, 2, 3)]


def type_text(dtype, shape, layout=None):
    t = f"{dtype}[{', '.join(str(s) for s in shape)}]"
    if layout is not None:
        t += f" layout({', '.join(str(p) for p in layout)})"
    return t


def fusion(name, dtype, shape, perm, dims, keepdim, op, out_layout):
    kept = [s for i, s in enumerate(shape) if i not in dims]
    out_shape = ["b1" if i in dims else str(s) for i, s in enumerate(shape)] if keepdim else kept
    out_dtype = dtype
    lines = [f"fusion @{name}(%x: {type_text(dtype, shape, perm)}) {{"]
    attrs = f"dims({', '.join(str(d) for d in dims)})" + (" keepdim" if keepdim else "")
    res = f"{out_dtype}[{', '.join(str(s) for s in out_shape)}]" if out_shape else out_dtype
    if out_layout is not None:
        res += f" layout({', '.join(str(p) for p in out_layout)})"
    lines.append(f"  %r = {op} %x {attrs} : {res}")
    lines.append("  return %r")
    lines.append("}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--ops", default="sum")
    args = ap.parse_args()
    cases = []
    n = 0
    for dtype in args.dtypes.split(","):
        for op in args.ops.split(","):
            for rank in (2, 3, 4):
                shape = SIZES[rank]
                subsets = ([c for k in range(1, rank) for c in itertools.combinations(range(rank), k)]
                           if rank <= 3 else RANK4_SUBSETS)
                for perm in itertools.permutations(range(rank)):
                    for dims in subsets:
                        outs = [(False, None)]
                        if rank == 3:
                            outs += [(True, None)] + [(True, p) for p in itertools.permutations(range(3))]
                        for keepdim, out_layout in outs:
                            n += 1
                            cases.append(fusion(f"r{n}", dtype, shape, perm, dims, keepdim, op, out_layout))
    with open(args.out, "w") as f:
        f.write("\n// -----\n".join(cases) + "\n")
    print(f"{len(cases)} fusions")


if __name__ == "__main__":
    main()
