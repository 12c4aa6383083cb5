#!/usr/bin/env python3
"""What changing shapes cost: compiles, first-call host time, kernel time.

A job whose batch or sequence length varies calls one fusion on many
shapes. For each sweep below, one FusionDefinition (sizes -1: run-time)
is called once per shape, in order, and this prints per sweep:
  - shapes, signature misses, kernels compiled by LLVM, kernels read from
    fz's disk cache (off here unless --disk-cache: every kernel a miss
    needs is compiled), and the executors the Python front end made (a
    definition is rebuilt, with a new executor, when a shape needs sizes
    baked into the fusion, such as mean's element count);
  - the host time of each shape's first call (wall clock, from the call to
    its return, the GPU idle before it): median and maximum;
  - the kernel time of a later call (CUDA events, median of --iters after
    warm-up, each call behind an L2-evicting write, as bench.py and
    fuse-run time) for a few shapes, against a definition with those exact sizes
    (static), so that a shared kernel's cost against a specialized one
    shows. Static sizes still schedule into the size classes (the plan is
    a function of the sizes); with --compare-specialized the static
    definition's executor is made under FZ_PLAN_CLASSES=off, so it runs
    the exact plan of each shape (the kernels before size classes), and
    about ten shapes of each sweep are compared.
Sweeps:
  layer_norm  40 shapes, rows 1000 + 37 i, columns 500 + 113 i (f32)
  softmax     100 row lengths 128 + 40 i over 4096 rows (f32)
  rms_norm    100 row counts 8 * (64 + 40 i), rows of 4096 (bf16), as a
              sequence length changes the tokens of a batch
For contrast, torch.compile(dynamic=True) runs the same sweeps (its
recompiles counted by dynamo's frame counter, its first-call times the
same way).

usage: FZ_LIBRARY=build/lib/libfz.so python3 bench/dynamic.py
           [--only NAME[,NAME]] [--iters K] [--no-compile] [--disk-cache]
           [--compare-specialized] [--json FILE]
Exits 77 (skipped) without torch or a GPU.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))


def layer_norm_fd(fz, torch):
    with fz.FusionDefinition("layer_norm") as fd:
        x = fd.define_tensor([-1, -1], torch.float32)
        w = fd.define_tensor([-1], torch.float32)
        b = fd.define_tensor([-1], torch.float32)
        mean = fd.ops.mean(x, dims=[1], keepdim=True)
        d = x - mean
        var = fd.ops.mean(d * d, dims=[1], keepdim=True)
        fd.add_output(d * fd.ops.rsqrt(var + 1e-5) * w + b)
    return fd


def softmax_fd(fz, torch):
    with fz.FusionDefinition("softmax") as fd:
        x = fd.define_tensor([-1, -1], torch.float32)
        e = fd.ops.exp(x - fd.ops.amax(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def rms_norm_fd(fz, torch):
    with fz.FusionDefinition("rms_norm") as fd:
        x = fd.define_tensor([-1, -1], torch.bfloat16)
        w = fd.define_tensor([-1], torch.bfloat16)
        xf = fd.ops.cast(x, torch.float32)
        ms = fd.ops.mean(xf * xf, dims=[1], keepdim=True)
        y = xf * fd.ops.rsqrt(ms + 1e-6) * fd.ops.cast(w, torch.float32)
        fd.add_output(fd.ops.cast(y, torch.bfloat16))
    return fd


def sweeps(torch):
    """name -> (fusion builder, torch function, shapes, inputs of a shape)"""
    dev = "cuda"

    def ln_inputs(shape):
        m, n = shape
        return [torch.randn(m, n, device=dev), torch.randn(n, device=dev),
                torch.randn(n, device=dev)]

    def ln_torch(x, w, b):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    def sm_inputs(shape):
        return [torch.randn(*shape, device=dev)]

    def rms_inputs(shape):
        m, n = shape
        return [torch.randn(m, n, device=dev, dtype=torch.bfloat16),
                torch.randn(n, device=dev, dtype=torch.bfloat16)]

    def rms_torch(x, w):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (xf * r * w.float()).to(x.dtype)

    return {
        "layer_norm": (layer_norm_fd, ln_torch,
                       [(1000 + 37 * i, 500 + 113 * i) for i in range(40)],
                       ln_inputs),
        "softmax": (softmax_fd, lambda x: torch.softmax(x, -1),
                    [(4096, 128 + 40 * i) for i in range(100)], sm_inputs),
        "rms_norm": (rms_norm_fd, rms_torch,
                     [(8 * (64 + 40 * i), 4096) for i in range(100)],
                     rms_inputs),
    }


def first_call_seconds(fn, args, torch):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*args)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return t1 - t0


def kernel_us(fn, args, torch, iters):
    """Median GPU time of one call, in us, timed as bench.py and fuse-run
    time: every call is enqueued behind a 256 MiB write that evicts the L2
    cache and keeps the GPU busy while the host enqueues the call, so each
    pair of events brackets the call's kernels alone. (With the GPU idle
    between calls, a call whose kernels are shorter than its host path
    from Python, about 20 us, also counted the part of that path between
    its first event and its launch.)"""
    for _ in range(5):
        fn(*args)
    flush = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    torch.cuda.synchronize()
    for i in range(iters):
        flush.fill_(i)
        start[i].record()
        fn(*args)
        end[i].record()
    torch.cuda.synchronize()
    return 1e3 * statistics.median(s.elapsed_time(e)
                                   for s, e in zip(start, end))


def static_fd(builder, fz, torch, shape):
    """The same fusion with this shape's sizes fixed in the definition."""
    fd = builder(fz, torch)
    fd._static = True  # every call builds for its exact sizes
    return fd


def run_sweep(name, spec, fz, torch, args):
    builder, torch_fn, shapes, make_inputs = spec
    fd = builder(fz, torch)
    call = lambda *a: fd.execute(list(a))
    firsts, checked = [], 0
    inputs = {}
    for shape in shapes:
        ins = make_inputs(shape)
        inputs[shape] = ins
        firsts.append(first_call_seconds(call, ins, torch))
        if checked < 3:  # the shared path computes what PyTorch does
            (got,) = call(*ins)
            want = torch_fn(*ins)
            torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
            checked += 1
    st = fd.stats()
    row = {
        "sweep": name, "shapes": len(shapes),
        "signature_misses": st.get("signature_misses", 0),
        "kernels_compiled": st.get("kernels_compiled", 0),
        "kernels_from_disk": st.get("kernels_from_disk", 0),
        "executors": len(fd._built),
        "first_call_ms_median": 1e3 * statistics.median(firsts),
        "first_call_ms_max": 1e3 * max(firsts),
        "miss_host_ms_mean": 1e3 * st.get("miss_seconds", 0.0) /
        max(1, st.get("signature_misses", 0)),
    }
    picks = [shapes[0], shapes[len(shapes) // 2], shapes[-1]]
    if args.compare_specialized:
        picks = shapes[::max(1, len(shapes) // 10)]
    kern = []
    for shape in picks:
        ins = inputs[shape]
        shared = kernel_us(call, ins, torch, args.iters)
        sfd = static_fd(builder, fz, torch, shape)
        # the executor reads FZ_PLAN_CLASSES when the first call makes it
        if args.compare_specialized:
            os.environ["FZ_PLAN_CLASSES"] = "off"
        try:
            special = kernel_us(lambda *a: sfd.execute(list(a)), ins, torch,
                                args.iters)
        finally:
            os.environ.pop("FZ_PLAN_CLASSES", None)
        kern.append({"shape": list(shape), "shared_us": shared,
                     "static_us": special})
    row["kernel_time"] = kern
    if not args.no_compile:
        torch._dynamo.reset()
        cfn = torch.compile(torch_fn, dynamic=True)
        from torch._dynamo.utils import counters
        counters.clear()
        tfirst = [first_call_seconds(cfn, inputs[s], torch) for s in shapes]
        row["compile_frames"] = int(counters["stats"]["unique_graphs"])
        row["compile_first_call_ms_median"] = 1e3 * statistics.median(tfirst)
        row["compile_first_call_ms_max"] = 1e3 * max(tfirst)
    return row


def print_table(rows):
    print("| sweep | shapes | misses | kernels compiled | executors | "
          "first call ms (median / max) | host ms per miss | "
          "torch.compile(dynamic) graphs | its first call ms (median / max) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tc = ("%d | %.1f / %.1f" % (r["compile_frames"],
                                   r["compile_first_call_ms_median"],
                                   r["compile_first_call_ms_max"])
              if "compile_frames" in r else "- | -")
        print("| %s | %d | %d | %d | %d | %.2f / %.2f | %.2f | %s |" % (
            r["sweep"], r["shapes"], r["signature_misses"],
            r["kernels_compiled"], r["executors"],
            r["first_call_ms_median"], r["first_call_ms_max"],
            r["miss_host_ms_mean"], tc))
    print()
    print("| sweep | shape | shared kernel us | static (or specialized) "
          "kernel us | ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        for k in r["kernel_time"]:
            print("| %s | %s | %.2f | %.2f | %.3f |" % (
                r["sweep"], "x".join(map(str, k["shape"])), k["shared_us"],
                k["static_us"], k["shared_us"] / k["static_us"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--no-compile", action="store_true",
                    help="leave torch.compile out")
    ap.add_argument("--disk-cache", action="store_true",
                    help="keep fz's disk cache (default: off, so every "
                         "kernel a miss needs is compiled)")
    ap.add_argument("--compare-specialized", action="store_true",
                    help="time the shared kernels against each shape's "
                         "exact plan (FZ_PLAN_CLASSES=off), ~10 shapes a "
                         "sweep")
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("SKIPPED: no torch (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU")
        return 77
    if not args.disk_cache:
        os.environ["FZ_CACHE_DIR"] = "off"
    import fz
    torch.manual_seed(0)
    only = [s for s in args.only.split(",") if s]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tmp)
        for name, spec in sweeps(torch).items():
            if only and name not in only:
                continue
            rows.append(run_sweep(name, spec, fz, torch, args))
    print("fz %s, torch %s, %s" % (fz.version(), torch.__version__,
                                   torch.cuda.get_device_name()))
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
