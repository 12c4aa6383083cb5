#!/usr/bin/env python3
"""fz benchmark: each workload through fz (fuse-run), PyTorch eager and
torch.compile in one run, on the same GPU, with the same shapes and layouts.

Times are medians over many runs measured with CUDA events after warm-up,
each run enqueued behind a 256 MiB write that evicts the L2 cache and keeps
the GPU busy while the host enqueues the run, the events read after the
last run (fuse-run times fz the same way). GB/s counts each input read once and
each output written once; "% copy" is against a device-to-device copy
measured here. Prints a Markdown table; --json writes the raw numbers;
--report DIR writes DIR/report.md (the machine, the versions and the
table) and DIR/report.png (GB/s per workload, with the copy as a line;
needs matplotlib, else only the Markdown is written) and DIR/results.json,
from which --from-json regenerates the report without a GPU.

usage: bench.py [--fuse-run PATH] [--only NAME[,NAME]] [--iters K]
                [--json F] [--report DIR] [--no-compile]
       bench.py --from-json F --report DIR
"""
import argparse
import datetime
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
        """The normalization workloads, written as PyTorch runs them."""
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

    def batch_norm_nhwc(n, h, w, c):
        """Batch norm forward in training mode (batch statistics) on
        channels-last activations, as PyTorch runs it (cuDNN)."""
        def build():
            x = rand(n, c, h, w).contiguous(memory_format=torch.channels_last)
            wt, b = rand(c), rand(c)
            fn = lambda x, wt, b: torch.nn.functional.batch_norm(
                x, None, None, wt, b, training=True, eps=1e-5)
            return [x, wt, b], fn, 2 * 4 * x.numel() + 4 * 4 * c
        return build

    def transpose():
        x = rand(8192, 8192)
        return [x], lambda x: x.t().contiguous(), 2 * 4 * x.numel()

    def nchw_to_nhwc():
        x = rand(64, 256, 56, 56)
        fn = lambda x: x.contiguous(memory_format=torch.channels_last)
        return [x], fn, 2 * 4 * x.numel()

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
        ("batch norm forward NHWC 32x28x28x256 f32", "batch_norm_nhwc.fz",
         "N=32,H=28,W=28,C=256", batch_norm_nhwc(32, 28, 28, 256)),
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
        # Layout changes: bytes are read + write.
        ("transpose 8192 f32", "transpose_8192.fz", "M=8192,N=8192", transpose),
        ("nchw->nhwc 64x256x56x56", "nchw_to_nhwc.fz", "N=64,C=256,H=56,W=56",
         nchw_to_nhwc),
    ]


def time_torch(fn, inputs, iters, warmup=10):
    """Median time of fn(*inputs) in us, timed as fuse-run times fz: every
    run is enqueued behind a 256 MiB write that evicts the L2 cache and
    keeps the GPU busy while the host enqueues the run (so the host's
    launch latency stays out of the time, as in Triton's do_bench), and
    the events are read after the last run."""
    import torch
    for _ in range(warmup):
        fn(*inputs)
    flush = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    torch.cuda.synchronize()
    for r, (a, b) in enumerate(events):
        flush.fill_(r)
        a.record()
        fn(*inputs)
        b.record()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) * 1e3 for a, b in events)
    return times[len(times) // 2]


def copy_bandwidth(iters):
    import torch
    n = 1 << 30  # 4 GiB of f32
    x = torch.empty(n, device="cuda")
    y = torch.empty_like(x)
    us = time_torch(lambda: y.copy_(x), [], iters)
    return 2 * 4 * n / (us * 1e-6) / 1e9


def symbols_of(text):
    """The symbol names a fusion's text uses in its types ([M, b1->N])."""
    names = set()
    for dims in re.findall(r"\[([^\]]*)\]", text):
        for e in dims.split(","):
            e = e.strip().split("->")[-1].strip()
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", e) and e != "b1":
                names.add(e)
    return names


def sizes_for(path, sizes):
    """The SYM=N items of `sizes` the fusion at `path` has symbols for
    (fuse-run rejects the others): a fusion written with constant extents
    needs none."""
    try:
        with open(path) as fh:
            used = symbols_of(re.sub(r"//[^\n]*", "", fh.read()))
    except OSError:
        return sizes
    return ",".join(i for i in sizes.split(",") if i.split("=")[0] in used)


def run_fz(fuse_run, fusion, sizes, iters):
    # The interpreter would take minutes on these sizes: correctness of the
    # same schedulers is what the gpu-labelled tests check.
    path = os.path.join(HERE, "fusions", fusion)
    if not os.path.exists(path):
        return None, "no fusion file %s" % path
    sizes = sizes_for(path, sizes)
    cmd = [fuse_run, path] + (["--size", sizes] if sizes else []) + [
        "--iters", str(iters), "--no-validate"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    m = re.search(r"time: median ([0-9.]+) us", out)
    if p.returncode != 0 or not m:
        return None, out
    return float(m.group(1)), out


# ---- the report ------------------------------------------------------------------


def driver_version():
    """The NVIDIA driver's version (nvidia-smi), else the CUDA driver API
    version from libcuda, else None."""
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                            "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        import ctypes
        v = ctypes.c_int()
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)) == 0:
            return "CUDA %d.%d" % (v.value // 1000, v.value % 1000 // 10)
    except OSError:
        pass
    return None


def git_commit():
    try:
        p = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() or None if p.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def gbs(nbytes, us):
    return nbytes / (us * 1e-6) / 1e9 if us else None


def fmt(v, p=1):
    return "—" if v is None else f"{v:.{p}f}"


def write_report(data, out_dir):
    """DIR/report.md and, with matplotlib, DIR/report.png, from the dict
    main() saves as JSON (so --from-json can redo it)."""
    os.makedirs(out_dir, exist_ok=True)
    copy = data["copy_gbs"]
    res = data["results"]
    png = os.path.join(out_dir, "report.png")
    chart = write_chart(data, png)
    lines = ["# fz benchmark report", ""]
    meta = [("date", data.get("date")), ("GPU", data.get("device")),
            ("driver", data.get("driver")), ("torch", data.get("torch")),
            ("fz commit", data.get("commit")),
            ("runs", "median of %s timed runs each (CUDA events, after "
                     "warm-up; each run enqueued behind a 256 MiB "
                     "L2-evicting write, so neither cached data nor the "
                     "host's launch latency is in the time)"
             % data.get("iters", "?")),
            ("copy", "%.0f GB/s (device-to-device copy, read + write)" % copy)]
    lines += ["- %s: %s" % (k, v) for k, v in meta if v is not None]
    lines += ["",
              "GB/s counts each input read once and each output written once "
              "(layout changes: read + write); % copy is against the copy "
              "above. fz runs through fuse-run (--no-validate: the gpu "
              "ctests validate the same plans); eager and torch.compile "
              "(default mode, compiled once before timing) run in the same "
              "process. — means the run failed or was skipped.", ""]
    head = ["workload", "MB"]
    for who in ("fz", "eager", "compile"):
        head += ["%s us" % who, "%s GB/s" % who, "%s %% copy" % who]
    head.append("fz fastest")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in res:
        row = [r["workload"], "%.0f" % (r["bytes"] / 1e6)]
        for key in ("fz_us", "eager_us", "compile_us"):
            us = r.get(key)
            g = gbs(r["bytes"], us)
            row += [fmt(us), fmt(g, 0), fmt(g / copy * 100 if g else None)]
        times = [t for t in (r.get("eager_us"), r.get("compile_us")) if t]
        fz = r.get("fz_us")
        row.append("—" if not fz or not times else
                   ("yes" if fz <= min(times) else "no"))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if chart is True:
        lines += ["![GB/s per workload: fz, eager, torch.compile; the line is "
                  "the copy](report.png)", ""]
    else:
        lines += ["(No chart: %s.)" % chart, ""]
    md = os.path.join(out_dir, "report.md")
    with open(md, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("# wrote %s%s" % (md, " and %s" % png if chart is True else
                            " (no chart: %s)" % chart), file=sys.stderr)


def write_chart(data, path):
    """A horizontal bar chart of GB/s, three bars per workload; True, or
    the reason there is none."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return "matplotlib is not installed (%s)" % e
    res = data["results"]
    names = [r["workload"] for r in res]
    n = len(names)
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.42 * n * 1.0))
    h = 0.27
    for k, (key, label, color) in enumerate((
            ("fz_us", "fz", "#2a7ab9"), ("eager_us", "PyTorch eager", "#999999"),
            ("compile_us", "torch.compile", "#e3882f"))):
        vals = [gbs(r["bytes"], r.get(key)) or 0 for r in res]
        ax.barh([i + (k - 1) * h for i in range(n)], vals, height=h,
                label=label, color=color)
    ax.axvline(data["copy_gbs"], color="#c0392b", linestyle="--", linewidth=1.2,
               label="copy (%.0f GB/s)" % data["copy_gbs"])
    ax.set_yticks(range(n))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (each input read once, each output written once)")
    title = "fz vs PyTorch"
    if data.get("device"):
        title += " on %s" % data["device"]
    if data.get("date"):
        title += ", %s" % data["date"][:10]
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    # Below the axes, where no bar can be hidden behind it.
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=4,
               fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.3 / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def print_table(data):
    copy = data["copy_gbs"]
    print(f"\n{data['device']}, copy {copy:.0f} GB/s (read+write), medians of "
          f"{data.get('iters', '?')} runs\n")
    print("| workload | MB | fz us | fz GB/s | % copy | eager us | compile us | fz fastest |")
    print("|---|---|---|---|---|---|---|---|")
    for r in data["results"]:
        fz, eager, comp = r.get("fz_us"), r.get("eager_us"), r.get("compile_us")
        g = gbs(r["bytes"], fz)
        best = min([t for t in (eager, comp) if t] or [float("inf")])
        print(f"| {r['workload']} | {r['bytes']/1e6:.0f} | {fmt(fz)} | {fmt(g, 0)} | "
              f"{fmt(g / copy * 100 if g else None)} | {fmt(eager)} | {fmt(comp)} | "
              f"{'yes' if fz and fz <= best else 'no'} |")


def main():
    ap = argparse.ArgumentParser(
        description="Each workload through fz (fuse-run), PyTorch eager and "
                    "torch.compile, in one process on one GPU.")
    ap.add_argument("--fuse-run", default=os.path.join(HERE, "..", "build-gpu", "bin", "fuse-run"),
                    help="the fuse-run binary (default: build-gpu/bin/fuse-run)")
    ap.add_argument("--only", default="",
                    help="comma-separated substrings: run the workloads whose "
                         "name contains one")
    ap.add_argument("--iters", type=int, default=50, help="timed runs per measurement")
    ap.add_argument("--json", default="", help="write the raw numbers to this file")
    ap.add_argument("--report", default="",
                    help="write DIR/report.md, DIR/report.png and DIR/results.json")
    ap.add_argument("--from-json", default="",
                    help="no GPU run: rebuild the table and --report from a "
                         "saved results JSON")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--commit", default="",
                    help="fz commit the binaries were built from, for the "
                         "report (default: git HEAD of this tree, which is "
                         "wrong when the tree is a copy or the build is older)")
    args = ap.parse_args()

    if args.from_json:
        with open(args.from_json) as fh:
            data = json.load(fh)
        print_table(data)
        if args.report:
            write_report(data, args.report)
        return 0

    import torch
    name = torch.cuda.get_device_name()
    copy = copy_bandwidth(20)
    raw = []
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
        raw.append(dict(workload=label, bytes=nbytes, fz_us=fz, eager_us=eager,
                        compile_us=comp, copy_gbs=copy))
        print(f"# {label}: fz {fz} us, eager {eager:.1f} us, compile {comp}", file=sys.stderr)
    data = dict(device=name, copy_gbs=copy, iters=args.iters, results=raw,
                date=datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"),
                driver=driver_version(), torch=torch.__version__,
                cuda=torch.version.cuda, commit=args.commit or git_commit())
    print_table(data)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(data, fh, indent=1)
    if args.report:
        os.makedirs(args.report, exist_ok=True)
        with open(os.path.join(args.report, "results.json"), "w") as fh:
            json.dump(data, fh, indent=1)
        write_report(data, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
