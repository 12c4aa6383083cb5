#!/usr/bin/env python3
"""fz benchmark: each workload through fz (fuse-run), PyTorch eager and
torch.compile in one run, on the same GPU, with the same shapes and layouts.

Times are medians over many runs measured with CUDA events after warm-up
(fuse-run does the same for fz and also validates its outputs against the
reference interpreter before timing). GB/s counts each input read once and
each output written once; "% copy" is against a device-to-device copy
measured here. Prints a Markdown table; --json writes the raw numbers.

usage: bench.py [--fuse-run PATH] [--only NAME[,NAME]] [--iters K] [--json F]
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def workloads():
    """(name, fusion file, --size, torch builder) per workload. The builder
    returns (inputs, fn, bytes moved)."""
    import torch

    def rand(*shape, dtype=torch.float32):
        return torch.rand(*shape, device="cuda", dtype=dtype) * 2 - 1

    def colmajor(m, n):
        return rand(n, m).t()  # [m, n] with strides (1, m)

    def gelu():
        n = 1 << 28
        x = rand(n)
        return [x], lambda x: torch.nn.functional.gelu(x * 2 + 1), 8 * n

    def broadcast_add():
        x, w = rand(8192, 8192), rand(8192)
        return [x, w], lambda x, w: x + w, 4 * (2 * 8192 * 8192 + 8192)

    def red(shape, dim, col=False):
        def build():
            x = colmajor(*shape) if col else rand(*shape)
            dims = dim if isinstance(dim, tuple) else (dim,)
            out = x.numel() // x.shape[dims[0]] if len(dims) == 1 else x.shape[-1]
            return [x], lambda x: x.sum(dim=dim), 4 * (x.numel() + out)
        return build

    def norm(kind, m, n, dtype=torch.float32):
        """Normalizations of issue 5, written as PyTorch runs them."""
        def build():
            x = rand(m, n, dtype=dtype)
            size = x.element_size()
            if kind == "softmax":
                return [x], lambda x: torch.softmax(x, -1), 2 * m * n * size
            if kind == "layer_norm":
                w, b = rand(n), rand(n)
                fn = lambda x, w, b: torch.native_layer_norm(x, [n], w, b, 1e-5)
                return [x, w, b], fn, 2 * m * n * size + 8 * m + 8 * n
            if kind == "rms_norm":
                w = rand(n, dtype=dtype)
                def fn(x, w):
                    xf = x.float()
                    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
                    return (xf * r * w.float()).to(dtype)
                return [x, w], fn, 2 * m * n * size + n * size
            if kind == "layer_norm_backward":
                g = rand(m, n, dtype=dtype)
                mean = rand(m, 1)
                rstd = torch.rand(m, 1, device="cuda") + 0.5
                w, b = rand(n, dtype=dtype), rand(n, dtype=dtype)
                fn = lambda g, x, mean, rstd, w, b: torch.ops.aten.native_layer_norm_backward(
                    g, x, [n], mean, rstd, w, b, [True, True, True])
                return [g, x, mean, rstd, w, b], fn, 3 * m * n * size + 3 * n * size + 8 * m
            raise ValueError(kind)
        return build

    T = "../../test/gpu/"
    M, N = 16384, 36864
    return [
        ("layer norm backward 2048x8192 f32 (seed 000)", T + "norm_layer_norm_backward.fz",
         "M=2048,N=8192", norm("layer_norm_backward", 2048, 8192)),
        ("layer norm forward 2048x8192 f32", T + "norm_layer_norm.fz", "M=2048,N=8192",
         norm("layer_norm", 2048, 8192)),
        ("softmax 2048x8192 f32", T + "norm_softmax.fz", "M=2048,N=8192",
         norm("softmax", 2048, 8192)),
        ("RMS norm forward bf16 16384x8192", T + "norm_rms_norm_bf16.fz", "M=16384,N=8192",
         norm("rms_norm", 16384, 8192, torch.bfloat16)),
        ("layer norm backward 8192x4096 f32", T + "norm_layer_norm_backward.fz",
         "M=8192,N=4096", norm("layer_norm_backward", 8192, 4096)),
        ("layer norm backward 32768x1024 f32", T + "norm_layer_norm_backward.fz",
         "M=32768,N=1024", norm("layer_norm_backward", 32768, 1024)),
        ("layer norm backward 2048x8192 bf16", T + "norm_layer_norm_backward_bf16.fz",
         "M=2048,N=8192", norm("layer_norm_backward", 2048, 8192, torch.bfloat16)),
        ("layer norm backward 16384x8192 bf16", T + "norm_layer_norm_backward_bf16.fz",
         "M=16384,N=8192", norm("layer_norm_backward", 16384, 8192, torch.bfloat16)),
        ("softmax bf16 16384x8192", T + "norm_softmax_bf16.fz", "M=16384,N=8192",
         norm("softmax", 16384, 8192, torch.bfloat16)),
    ] + [
        ("gelu(x*2+1) 2^28 f32", "gelu.fz", "N=268435456", gelu),
        ("[8192,8192]+[8192] f32", "broadcast_add.fz", "M=8192,N=8192", broadcast_add),
        ("PlayGround: [16384,36864] col-major, sum dim 1", "sum_rows_colmajor.fz",
         f"M={M},N={N}", red((M, N), 1, col=True)),
        ("PlayGround_ref: [36864,16384], sum dim 0", "sum_cols.fz", f"M={N},N={M}",
         red((N, M), 0)),
        ("inner: [36864,16384], sum dim 1", "sum_rows.fz", f"M={N},N={M}", red((N, M), 1)),
        ("[16,1<<24] dim 1", "sum_rows.fz", "M=16,N=16777216", red((16, 1 << 24), 1)),
        ("[16,1<<24] dim 0", "sum_cols.fz", "M=16,N=16777216", red((16, 1 << 24), 0)),
        ("[1<<24,16] dim 1", "sum_rows.fz", "M=16777216,N=16", red((1 << 24, 16), 1)),
        ("[1<<24,16] dim 0", "sum_cols.fz", "M=16777216,N=16", red((1 << 24, 16), 0)),
        ("[2048,8192] dim 1", "sum_rows.fz", "M=2048,N=8192", red((2048, 8192), 1)),
        ("[2048,8192] dim 0", "sum_cols.fz", "M=2048,N=8192", red((2048, 8192), 0)),
        ("[64,56,56,256] channels-last sum (0,1,2)", "sum_channels_last.fz",
         "N=64,H=56,W=56,C=256", red((64, 56, 56, 256), (0, 1, 2))),
    ]


def time_torch(fn, inputs, iters, warmup=10):
    import torch
    for _ in range(warmup):
        fn(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*inputs)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    return times[len(times) // 2]


def copy_bandwidth(iters):
    import torch
    n = 1 << 30  # 4 GiB of f32
    x = torch.empty(n, device="cuda")
    y = torch.empty_like(x)
    us = time_torch(lambda: y.copy_(x), [], iters)
    return 2 * 4 * n / (us * 1e-6) / 1e9


def run_fz(fuse_run, fusion, sizes, iters):
    # The interpreter would take minutes on these sizes: correctness of the
    # same schedulers is what the gpu-labelled tests check.
    cmd = [fuse_run, os.path.join(HERE, "fusions", fusion), "--size", sizes,
           "--iters", str(iters), "--no-validate"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    m = re.search(r"time: median ([0-9.]+) us", out)
    if p.returncode != 0 or not m:
        return None, out
    return float(m.group(1)), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fuse-run", default=os.path.join(HERE, "..", "build-gpu", "bin", "fuse-run"))
    ap.add_argument("--only", default="")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    import torch
    name = torch.cuda.get_device_name()
    copy = copy_bandwidth(20)
    rows, raw = [], []
    only = [s for s in args.only.split(",") if s]
    for label, fusion, sizes, build in workloads():
        if only and not any(o in label for o in only):
            continue
        inputs, fn, nbytes = build()
        eager = time_torch(fn, inputs, args.iters)
        comp = None
        if not args.no_compile:
            try:
                cfn = torch.compile(fn)
                comp = time_torch(cfn, inputs, args.iters)
            except Exception as e:  # report, don't hide
                print(f"# torch.compile failed on {label}: {e}", file=sys.stderr)
        del inputs
        torch.cuda.empty_cache()
        fz, log = run_fz(args.fuse_run, fusion, sizes, args.iters)
        if fz is None:
            print(f"# fz failed on {label}:\n{log}", file=sys.stderr)
        gbs = lambda us: nbytes / (us * 1e-6) / 1e9 if us else None
        raw.append(dict(workload=label, bytes=nbytes, fz_us=fz, eager_us=eager,
                        compile_us=comp, copy_gbs=copy))
        best = min(t for t in (eager, comp) if t)
        rows.append((label, nbytes, fz, gbs(fz), (gbs(fz) or 0) / copy * 100, eager, comp,
                     "yes" if fz and fz <= best else "no"))
        print(f"# {label}: fz {fz} us, eager {eager:.1f} us, compile {comp}", file=sys.stderr)
    print(f"\n{name}, copy {copy:.0f} GB/s (read+write), medians of {args.iters} runs\n")
    print("| workload | MB | fz us | fz GB/s | % copy | eager us | compile us | fz fastest |")
    print("|---|---|---|---|---|---|---|---|")
    f = lambda v, p=1: "—" if v is None else f"{v:.{p}f}"
    for r in rows:
        print(f"| {r[0]} | {r[1]/1e6:.0f} | {f(r[2])} | {f(r[3],0)} | {f(r[4])} | {f(r[5])} | {f(r[6])} | {r[7]} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=name, copy_gbs=copy, results=raw), fh, indent=1)


if __name__ == "__main__":
    main()
