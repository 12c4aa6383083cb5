"""Prints a fusion too large to keep as a file, for tests of scale.

large.py exp COUNT      a chain: %v1 = exp %v0, %v2 = exp %v1, ... f32[N]
large.py permute COUNT  a chain of COUNT permutes of f32[M, N], each
                        swapping the axes
large.py outputs COUNT  COUNT outputs, %o<i> = mul %x, <i>.0
"""
import sys

kind, count = sys.argv[1], int(sys.argv[2])
out = sys.stdout.write
if kind == "exp":
    out("fusion @exp_chain(%v0: f32[N]) {\n")
    for i in range(1, count + 1):
        out(f"  %v{i} = exp %v{i - 1} : f32[N]\n")
    out(f"  return %v{count}\n}}\n")
elif kind == "permute":
    shapes = ["f32[M, N]", "f32[N, M]"]
    out("fusion @permute_chain(%v0: f32[M, N]) {\n")
    for i in range(1, count + 1):
        out(f"  %v{i} = permute %v{i - 1} perm(1, 0) : {shapes[i % 2]}\n")
    out(f"  return %v{count}\n}}\n")
elif kind == "outputs":
    out("fusion @outputs(%x: f32[N]) {\n")
    for i in range(1, count + 1):
        out(f"  %o{i} = mul %x, {i}.0 : f32[N]\n")
    out("  return " + ", ".join(f"%o{i}" for i in range(1, count + 1)) + "\n}\n")
else:
    sys.exit(f"large.py: unknown kind '{kind}'")
