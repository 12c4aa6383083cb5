"""Counts the distinct kernels fuse-opt lowers one fusion to over a sweep
of sizes: fuse-opt --emit=llvm-lowered per binding, distinct outputs
counted (sizes are kernel parameters, so equal text is one kernel).

usage: count_kernels.py FILE SWEEP
SWEEP: rownorm  N = 1000 + 37 i, K = 500 + 113 i, i < 40
       softmax  N = 4096, K = 128 + 40 i, i < 100
Prints "SWEEP: S shapes, K kernels".
"""
import subprocess
import sys


def main():
    path, sweep = sys.argv[1], sys.argv[2]
    if sweep == "rownorm":
        binds = [(1000 + 37 * i, 500 + 113 * i) for i in range(40)]
    else:
        binds = [(4096, 128 + 40 * i) for i in range(100)]
    kernels = set()
    for n, k in binds:
        out = subprocess.run(
            ["fuse-opt", "--emit=llvm-lowered", "--bind=N=%d,K=%d" % (n, k),
             path], check=True, capture_output=True, text=True).stdout
        kernels.add(out)
    print("%s: %d shapes, %d kernels" % (sweep, len(binds), len(kernels)))


if __name__ == "__main__":
    sys.exit(main())
