#!/usr/bin/env python3
"""fz benchmark: each workload through fz (fuse-run), PyTorch eager and
torch.compile in one run, on the same GPU, with the same shapes and layouts.

Times are medians over many runs measured with CUDA events after warm-up,
each run enqueued behind a flush that keeps the GPU busy while the host
enqueues the run and leaves the L2 as a stream of such runs would (a 256
MiB read that evicts it, then a write of as many bytes as the run writes,
so that the run pays for the write-backs its own writes cost; --flush
write: a 256 MiB write, as Triton's do_bench), the events read after the
last run (fuse-run times fz the same way). GB/s counts each input read once and
each output written once; "% copy" is against a device-to-device copy
measured here. Prints a Markdown table; --json writes the raw numbers;
--report DIR writes DIR/report.md (the machine, the versions and the
tables), DIR/report.png (GB/s per workload, with the copy as a line),
DIR/long_rows.png and DIR/sweep.png (% of copy against row length and
against bytes moved; the charts need matplotlib, else only the Markdown
is written) and DIR/results.json, from which --from-json regenerates the
report without a GPU.

Three groups of measurements:
- main: the workloads of the table (the default);
- long_rows: softmax, RMS norm and cross-entropy, forward and backward,
  bf16 and f32, on rows of 4096 to 262144 elements (--only long_rows);
- the size sweep: one workload per kernel family from about 1 MiB to
  4 GiB moved (run by --report, or alone by --sweep-only).

usage: bench.py [--fuse-run PATH] [--only NAME[,NAME]] [--iters K]
                [--json F] [--report DIR] [--no-compile] [--no-sweep]
                [--flush steady|write]
       bench.py --sweep-only [--only FAMILY[,FAMILY]] [--report DIR]
       bench.py --from-json F[,F...] --report DIR
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_GPU = "../../test/gpu/"  # fusion paths are relative to bench/fusions
FLUSH_BYTES = 256 << 20  # the L2-evicting flush before every timed run
FUSE_RUN_TIMEOUT_S = 600


# ---- the PyTorch side of the workloads ----------------------------------------------
# A builder returns (inputs, fn, bytes moved): fn(*inputs) is what eager and
# torch.compile time; bytes count each input read once and each output
# written once. A fourth item, when there is one, is the function
# torch.compile times instead of fn (over the same inputs).


def rand(*shape, dtype=None):
    import torch
    return torch.rand(*shape, device="cuda", dtype=dtype or torch.float32) * 2 - 1


def colmajor(m, n):
    return rand(n, m).t()  # [m, n] with strides (1, m)


def gelu(n):
    def build():
        import torch
        x = rand(n)
        return [x], lambda x: torch.nn.functional.gelu(x * 2 + 1), 8 * n
    return build


def transpose(m, n):
    """x^T materialised row-major: bytes are read + write."""
    def build():
        x = rand(m, n)
        return [x], lambda x: x.t().contiguous(), 2 * 4 * x.numel()
    return build


def red(shape, dim, col=False):
    def build():
        x = colmajor(*shape) if col else rand(*shape)
        dims = dim if isinstance(dim, tuple) else (dim,)
        out = x.numel() // x.shape[dims[0]] if len(dims) == 1 else x.shape[-1]
        return [x], lambda x: x.sum(dim=dim), 4 * (x.numel() + out)
    return build


def rms_norm_backward(g, x, rstd, w):
    """dx and dw of y = x * rstd * w, rstd = (mean(x^2) + eps)^-1/2, from
    the saved rstd, computed in rstd's dtype (f32 as the forward saves it)
    and cast back: the math of bench/fusions/rms_norm_backward_bf16.fz and
    test/gpu/norm_rms_norm_backward.fz (d rstd / d x_j = -rstd^3 x_j / N)."""
    gf, xf, wf = g.to(rstd.dtype), x.to(rstd.dtype), w.to(rstd.dtype)
    gw = gf * wf
    s = (gw * xf).sum(-1, keepdim=True)
    dx = gw * rstd - xf * (rstd * rstd * rstd * s / x.shape[-1])
    dw = (gf * xf * rstd).sum(0)
    return dx.to(x.dtype), dw.to(w.dtype)


def softmax_backward(g, y):
    """dx = y * (g - sum(g * y)): the math of the softmax backward fusions
    (PyTorch's own kernel, aten._softmax_backward_data, is what eager and
    torch.compile time)."""
    return y * (g - (g * y).sum(-1, keepdim=True))


def cross_entropy(x, label):
    """(loss, lse) of cross-entropy from integer labels, as the forward
    fusions compute them (bench/fusions/cross_entropy{,_bf16}.fz): in f32
    for bf16 logits, lse = max + log(sum(exp(x - max))), loss = lse - the
    label's logit. Only the math check runs it: eager and torch.compile time
    F.cross_entropy."""
    import torch
    xf = x.to(torch.promote_types(x.dtype, torch.float32))  # f64 stays f64
    mx = xf.amax(-1, keepdim=True)
    lse = (xf - mx).exp().sum(-1).log() + mx.squeeze(-1)
    return lse - xf.gather(-1, label[:, None]).squeeze(-1), lse


def cross_entropy_backward(x, label, lse, g):
    """dx = (exp(x - lse) - onehot(label)) * g from the saved lse, in lse's
    dtype (f32) and cast back to x's: the math of the backward fusions
    (bench/fusions/cross_entropy_backward{,_bf16}.fz), the one-hot an
    arange compared with the label as there. torch.compile times this;
    eager times what autograd runs (norm's cross_entropy_backward)."""
    import torch
    xf = x.to(lse.dtype)
    hit = torch.arange(x.shape[-1], device=x.device) == label[:, None]
    dx = (torch.exp(xf - lse[:, None]) - hit.to(xf.dtype)) * g[:, None]
    return dx.to(x.dtype)


def norm(kind, m, n, dtype=None):
    """The normalization workloads, written as PyTorch runs them."""
    def build():
        import torch
        dt = dtype or torch.float32
        x = rand(m, n, dtype=dt)
        size = x.element_size()
        if kind == "softmax":
            return [x], lambda x: torch.softmax(x, -1), 2 * m * n * size
        if kind == "layer_norm":
            w, b = rand(n), rand(n)
            fn = lambda x, w, b: torch.native_layer_norm(x, [n], w, b, 1e-5)
            return [x, w, b], fn, 2 * m * n * size + 8 * m + 8 * n
        if kind == "rms_norm":
            w = rand(n, dtype=dt)
            def fn(x, w):
                xf = x.float()
                r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
                return (xf * r * w.float()).to(dt)
            return [x, w], fn, 2 * m * n * size + n * size
        if kind == "layer_norm_backward":
            g = rand(m, n, dtype=dt)
            mean = rand(m, 1)
            rstd = torch.rand(m, 1, device="cuda") + 0.5
            w, b = rand(n, dtype=dt), rand(n, dtype=dt)
            fn = lambda g, x, mean, rstd, w, b: torch.ops.aten.native_layer_norm_backward(
                g, x, [n], mean, rstd, w, b, [True, True, True])
            return [g, x, mean, rstd, w, b], fn, 3 * m * n * size + 3 * n * size + 8 * m
        if kind == "softmax_backward":
            g, y = rand(m, n, dtype=dt), torch.softmax(x, -1)
            fn = lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, dt)
            return [g, y], fn, 3 * m * n * size
        if kind == "rms_norm_backward":
            g = rand(m, n, dtype=dt)
            rstd = torch.rand(m, 1, device="cuda") + 0.5
            w = rand(n, dtype=dt)
            return [g, x, rstd, w], rms_norm_backward, 3 * m * n * size + 2 * n * size + 4 * m
        if kind == "cross_entropy":
            # As under autocast, which runs cross_entropy in f32: bf16
            # logits are cast up first (a kernel of its own in eager), and
            # the loss is f32, as fz's fusion computes it. Bytes: x, the
            # labels and the loss (fz also writes lse, M floats, not
            # counted).
            label = torch.randint(0, n, (m,), device="cuda")
            fn = lambda x, label: torch.nn.functional.cross_entropy(
                x.float(), label, reduction="none")
            return [x, label], fn, m * n * size + 12 * m
        if kind == "cross_entropy_backward":
            # Eager: what autograd runs for the forward above, from the
            # f32 log-softmax it saved (an [M, N] tensor): nll_loss's
            # backward (a zeroed [M, N] f32 gradient with -g scattered at
            # the labels), _log_softmax_backward_data, and for bf16 the
            # backward of the cast up (dx cast back). torch.compile: the
            # fusions' formula from the saved lse (one float a row). The
            # two read different saved tensors, so each ignores the
            # other's. Bytes are the fusions': x and dx, the labels, lse
            # and g.
            label = torch.randint(0, n, (m,), device="cuda")
            lsm = torch.log_softmax(x.float(), -1)
            lse = torch.logsumexp(x.float(), -1)
            g = rand(m)
            total_weight = torch.ops.aten.nll_loss_forward(lsm, label, None, 0, -100)[1]

            def eager(x, label, lse, g, lsm):
                gl = torch.ops.aten.nll_loss_backward(g, lsm, label, None, 0, -100,
                                                      total_weight)
                dx = torch.ops.aten._log_softmax_backward_data(gl, lsm, 1, lsm.dtype)
                return dx.to(x.dtype)

            def compiled(x, label, lse, g, lsm):
                return cross_entropy_backward(x, label, lse, g)
            return ([x, label, lse, g, lsm], eager, 2 * m * n * size + 16 * m,
                    compiled)
        raise ValueError(kind)
    return build


def workloads():
    """(name, fusion file, --size, torch builder) per workload of the main
    table."""
    import torch

    def broadcast_add():
        x, w = rand(8192, 8192), rand(8192)
        return [x, w], lambda x, w: x + w, 4 * (2 * 8192 * 8192 + 8192)

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

    def nchw_to_nhwc():
        x = rand(64, 256, 56, 56)
        fn = lambda x: x.contiguous(memory_format=torch.channels_last)
        return [x], fn, 2 * 4 * x.numel()

    T = TEST_GPU
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
        ("gelu(x*2+1) 2^28 f32", "gelu.fz", "N=268435456", gelu(1 << 28)),
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
        ("transpose 8192 f32", "transpose_8192.fz", "M=8192,N=8192", transpose(8192, 8192)),
        ("nchw->nhwc 64x256x56x56", "nchw_to_nhwc.fz", "N=64,C=256,H=56,W=56",
         nchw_to_nhwc),
    ]


# Row lengths of the long_rows group; each size holds 2^28 bf16 or 2^27
# f32 elements (512 MiB per tensor), so only the row length changes.
LONG_ROW_LENGTHS = (4096, 16384, 65536, 131072, 262144)
LONG_ROW_KINDS = (
    # kind, label, fusion file for bf16, for f32
    ("softmax", "softmax forward", TEST_GPU + "norm_softmax_bf16.fz",
     TEST_GPU + "norm_softmax.fz"),
    ("softmax_backward", "softmax backward", "softmax_backward_bf16.fz",
     TEST_GPU + "norm_softmax_backward.fz"),
    ("rms_norm", "RMS norm forward", TEST_GPU + "norm_rms_norm_bf16.fz",
     TEST_GPU + "norm_rms_norm.fz"),
    ("rms_norm_backward", "RMS norm backward", "rms_norm_backward_bf16.fz",
     TEST_GPU + "norm_rms_norm_backward.fz"),
    ("cross_entropy", "cross-entropy forward", "cross_entropy_bf16.fz",
     "cross_entropy.fz"),
    ("cross_entropy_backward", "cross-entropy backward",
     "cross_entropy_backward_bf16.fz", "cross_entropy_backward.fz"),
)


def long_row_workloads():
    """The long_rows group, as workloads() gives its rows, each with the
    fields its chart groups by (kind, dtype, row length)."""
    import torch
    rows = []
    for kind, label, bf16_file, f32_file in LONG_ROW_KINDS:
        for dname, dtype, elements, fusion in (
                ("bf16", torch.bfloat16, 1 << 28, bf16_file),
                ("f32", torch.float32, 1 << 27, f32_file)):
            for n in LONG_ROW_LENGTHS:
                m = elements // n
                rows.append((f"{label} {dname} {m}x{n}", fusion, f"M={m},N={n}",
                             norm(kind, m, n, dtype),
                             dict(kind=label, dtype=dname, m=m, n=n)))
    return rows


# The size sweep: per kernel family, sizes x4 apart from about 1 MiB to
# 4 GiB moved (2^20 * 4^k bytes, k = 0..6; layer norm backward, with three
# [M, 8192] tensors, from 0.75 MiB to 3 GiB).
SWEEP_STEPS = 7
SWEEP_FAMILIES = (
    # key, title
    ("pointwise", "pointwise: gelu(x*2+1) f32"),
    ("inner", "inner reduction: row sum of [M, 8192] f32"),
    ("outer", "outer reduction: column sum of [M, 8192] f32"),
    ("persistent", "persistent normalization: softmax over rows of 4096 f32"),
    ("inner_outer", "inner-outer: layer norm backward, rows of 8192 f32"),
    ("transpose", "transpose: [M, 2M] f32 to [2M, M]"),
)


def sweep_sizes(key):
    """(shape label, fusion file, --size, torch builder, about how many
    bytes it moves) per size of one family, smallest first."""
    out = []
    for k in range(SWEEP_STEPS):
        nominal = (3 << (18 + 2 * k)) if key == "inner_outer" else 1 << (20 + 2 * k)
        if key == "pointwise":
            n = 1 << (17 + 2 * k)
            out.append((f"[{n}]", "gelu.fz", f"N={n}", gelu(n), nominal))
        elif key in ("inner", "outer"):
            m = 32 << (2 * k)
            fusion, dim = ("sum_rows.fz", 1) if key == "inner" else ("sum_cols.fz", 0)
            out.append((f"[{m}, 8192]", fusion, f"M={m},N=8192", red((m, 8192), dim),
                        nominal))
        elif key == "persistent":
            m = 32 << (2 * k)
            out.append((f"[{m}, 4096]", TEST_GPU + "norm_softmax.fz", f"M={m},N=4096",
                        norm("softmax", m, 4096), nominal))
        elif key == "inner_outer":
            m = 8 << (2 * k)
            out.append((f"[{m}, 8192]", TEST_GPU + "norm_layer_norm_backward.fz",
                        f"M={m},N=8192", norm("layer_norm_backward", m, 8192), nominal))
        elif key == "transpose":
            m = 256 << k
            out.append((f"[{m}, {2 * m}]", TEST_GPU + "transpose_f32.fz",
                        f"M={m},N={2 * m}", transpose(m, 2 * m), nominal))
        else:
            raise ValueError(key)
    return out


# "steady" (a read, then a write of the run's own output bytes) or "write"
# (a 256 MiB write); set from --flush, and for fuse-run through
# FZ_TIMER_FLUSH.
FLUSH = "steady"


def written_bytes(out):
    """Bytes of the tensors a call returns (nested tuples and lists too):
    what the steady flush writes before each timed run."""
    if hasattr(out, "numel") and hasattr(out, "element_size"):
        return out.numel() * out.element_size()
    if isinstance(out, (tuple, list)):
        return sum(written_bytes(o) for o in out)
    return 0


def time_torch(fn, inputs, iters, warmup=10):
    """Median time of fn(*inputs) in us, timed as fuse-run times fz: every
    run is enqueued behind a flush that keeps the GPU busy while the host
    enqueues the run (so the host's launch latency stays out of the time,
    as in Triton's do_bench) and leaves the L2 as a stream of such runs
    would: a 256 MiB read evicts it, then a write of as many bytes as the
    run writes leaves that many dirty lines for the run to write back
    (FLUSH "write": a 256 MiB write, which leaves the L2 full of dirty
    lines whatever the run writes). The events are read after the last
    run."""
    import torch
    written = 0
    for _ in range(warmup):
        written = written_bytes(fn(*inputs))
    written = min(written, FLUSH_BYTES) // 4
    flush = torch.zeros(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    torch.cuda.synchronize()
    for r, (a, b) in enumerate(events):
        if FLUSH == "write":
            flush.fill_(r)
        else:
            flush.sum()
            if written:
                flush[:written].zero_()
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


def compile_fresh(fn):
    """torch.compile of fn for the shapes it meets, from a clean state.
    Workloads share their builders' functions, and dynamo keeps compiled
    code per function: by default a size after the first is compiled for
    dynamic shapes (automatic dynamic shapes), and past the recompile
    limit (8) the function runs eagerly. dynamic=False keeps every size
    static; the reset starts each one at no recompiles."""
    import torch
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def sweep_iters(nbytes, copy_gbs, iters, budget_s=0.05):
    """Timed runs for one sweep measurement: as many as fit in budget_s of
    GPU time (a run costs about its bytes at the copy's rate plus the
    L2-evicting flush before it), at most `iters`, at least 10. Only the
    largest sizes get fewer than the default."""
    per_run_s = (nbytes + 2 * FLUSH_BYTES) / (copy_gbs * 1e9)
    return max(10, min(iters, int(budget_s / per_run_s)))


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


def run_fz(fuse_run, fusion, sizes, iters, print_plan=False):
    """(median us, fuse-run's output); (None, the output) when it failed."""
    # The interpreter would take minutes on these sizes: correctness of the
    # same schedulers is what the gpu-labelled tests check.
    path = os.path.join(HERE, "fusions", fusion)
    if not os.path.exists(path):
        return None, "no fusion file %s" % path
    sizes = sizes_for(path, sizes)
    cmd = [fuse_run, path] + (["--size", sizes] if sizes else []) + [
        "--iters", str(iters), "--no-validate"] + (["--print-plan"] if print_plan else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=FUSE_RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "fuse-run: timed out after %d s" % FUSE_RUN_TIMEOUT_S
    except OSError as e:
        return None, "fuse-run: %s" % e
    out = p.stdout + p.stderr
    m = re.search(r"time: median ([0-9.]+) us", out)
    if p.returncode != 0 or not m:
        return None, out + ("\n(killed by signal %d)" % -p.returncode
                            if p.returncode < 0 else
                            "\n(exit status %d)" % p.returncode)
    return float(m.group(1)), out


def error_line(log):
    """The line of a failed fuse-run's output that says why: its first
    error at an op ("FILE:LINE:COL: error: ..."), else its first message
    of its own ("fuse-run: ..."), else the last line (how it exited)."""
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    for mark in ("error:", "fuse-run:"):
        for l in lines:
            if mark in l:
                return l
    return lines[-1] if lines else "no output"


def plan_kinds(log):
    """The plan kind of each kernel a fuse-run --print-plan ran, in order
    ("inner-persistent", or "inner-reduction + pointwise" when the fusion
    ran in segments)."""
    return " + ".join(re.findall(r"^plan @\S+ (\S+) kernel=", log, re.M)) or None


def check_math():
    """The backward math the long rows time and the fusions compute,
    against autograd through the forward, and cross-entropy's forward
    against F.cross_entropy, in f64 on [64, 1000]: a list of dicts (check,
    max_abs_err, ok)."""
    import torch
    gen = torch.Generator(device="cuda").manual_seed(0)

    def r(*shape):
        return torch.rand(*shape, device="cuda", dtype=torch.float64, generator=gen) * 2 - 1

    m, n = 64, 1000
    x, w, g = r(m, n).requires_grad_(), r(n).requires_grad_(), r(m, n)
    y = torch.softmax(x, -1)
    (want,) = torch.autograd.grad(y, x, g)
    y = y.detach()
    got = [("softmax backward: aten._softmax_backward_data (eager, compile)",
            torch.ops.aten._softmax_backward_data(g, y, -1, y.dtype), want),
           ("softmax backward: y * (g - sum(g * y)) (the fusions)",
            softmax_backward(g, y), want)]
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    want_dx, want_dw = torch.autograd.grad(x * rstd * w, (x, w), g)
    dx, dw = rms_norm_backward(g, x.detach(), rstd.detach(), w.detach())
    got += [("RMS norm backward dx (eager, compile, the fusions)", dx, want_dx),
            ("RMS norm backward dw (eager, compile, the fusions)", dw, want_dw)]
    # Labels as the fusions make them: any integers, then mod N (PyTorch's
    # remainder, which fz's mod is), so the check sees the fusions' classes.
    raw = torch.randint(-5 * n, 5 * n, (m,), device="cuda", generator=gen)
    label = raw.remainder(n)
    xd = x.detach().requires_grad_()
    want = torch.nn.functional.cross_entropy(xd, label, reduction="none")
    loss, lse = cross_entropy(xd.detach(), label)
    got.append(("cross-entropy forward: lse - x[label] (the fusions)", loss,
                want.detach()))
    gl = r(m)
    (want,) = torch.autograd.grad(want, xd, gl)
    lsm = torch.log_softmax(xd.detach(), -1)
    total_weight = torch.ops.aten.nll_loss_forward(lsm, label, None, 0, -100)[1]
    eager = torch.ops.aten._log_softmax_backward_data(
        torch.ops.aten.nll_loss_backward(gl, lsm, label, None, 0, -100, total_weight),
        lsm, 1, lsm.dtype)
    got += [("cross-entropy backward: aten.nll_loss_backward + "
             "_log_softmax_backward_data (eager)", eager, want),
            ("cross-entropy backward: (exp(x - lse) - onehot) * g from the "
             "forward's lse (compile, the fusions)",
             cross_entropy_backward(xd.detach(), label, lse, gl), want)]
    out = []
    for name, a, b in got:
        err = (a - b).abs().max().item()
        out.append(dict(check=name, max_abs_err=err,
                        ok=err <= 1e-9 * max(1.0, b.abs().max().item())))
    return out


def measure(label, fusion, sizes, build, args, iters, fresh_compile, print_plan):
    """One workload through eager, torch.compile and fz: a dict of the
    times in us (None for a path that failed or was skipped) and fz's error
    line; a failure is reported on stderr, never raised."""
    import torch
    row = dict(workload=label, bytes=None, fz_us=None, eager_us=None,
               compile_us=None, iters=iters)
    inputs = None
    try:
        built = build()
        inputs, fn, row["bytes"] = built[:3]
        compile_fn = built[3] if len(built) > 3 else fn
        del built  # holds the inputs too, which the del below must free
        row["eager_us"] = time_torch(fn, inputs, iters)
        if not args.no_compile:
            try:
                cfn = (compile_fresh(compile_fn) if fresh_compile
                       else torch.compile(compile_fn))
                row["compile_us"] = time_torch(cfn, inputs, iters)
            except Exception as e:  # report, don't hide
                print(f"# torch.compile failed on {label}: {e}", file=sys.stderr)
    except Exception as e:
        print(f"# PyTorch failed on {label}: {e}", file=sys.stderr)
    del inputs  # fuse-run, another process, needs the memory
    torch.cuda.empty_cache()
    fz, log = run_fz(args.fuse_run, fusion, sizes, iters, print_plan)
    row["fz_us"] = fz
    if print_plan:
        row["fz_plan"] = plan_kinds(log)
    if fz is None:
        row["fz_error"] = error_line(log)
        print(f"# fz failed on {label}:\n{log}", file=sys.stderr)
    print(f"# {label}: fz {fz} us, eager {fmt(row['eager_us'])} us, compile "
          f"{row['compile_us']}", file=sys.stderr)
    return row


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


def build_commit(fuse_run):
    """The commit fuse-run's libfz was built from (its --version line,
    "commit HASH[-dirty]"), or None when it does not say."""
    try:
        p = subprocess.run([fuse_run, "--version"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r", commit (\S+)$", p.stdout.splitlines()[0]
                  if p.returncode == 0 and p.stdout else "")
    return m.group(1) if m and m.group(1) != "unknown" else None


def gbs(nbytes, us):
    return nbytes / (us * 1e-6) / 1e9 if us and nbytes else None


def fmt(v, p=1):
    return "—" if v is None else f"{v:.{p}f}"


def mb(r):
    return fmt(r["bytes"] / 1e6 if r.get("bytes") else None, 0)


def pct_copy(r, key, copy):
    """% of the copy bandwidth of r's `key` time, against the copy of the
    run that measured r (runs merged by --from-json each have their own)."""
    g = gbs(r.get("bytes"), r.get(key))
    return g / (r.get("copy_gbs") or copy) * 100 if g else None


def fz_fastest(r):
    times = [t for t in (r.get("eager_us"), r.get("compile_us")) if t]
    fz = r.get("fz_us")
    return "—" if not fz or not times else ("yes" if fz <= min(times) else "no")


WAYS = (("fz_us", "fz", "#2a7ab9"), ("eager_us", "PyTorch eager", "#999999"),
        ("compile_us", "torch.compile", "#e3882f"))


def main_rows(data):
    return [r for r in data["results"] if r.get("group", "main") == "main"]


def long_rows(data):
    return [r for r in data["results"] if r.get("group") == "long_rows"]


def load_json(paths):
    """The saved results of one run, or of several merged into one (their
    rows and sweep points in the order given, a row or point measured by
    several runs as the last one measured it; the machine and versions of
    the first)."""
    data = None
    for path in paths:
        with open(path) as fh:
            d = json.load(fh)
        for r in d.get("results", []) + d.get("sweep", []):
            r.setdefault("copy_gbs", d["copy_gbs"])
        if data is None:
            data = d
            data.setdefault("sweep", [])
            data.setdefault("checks", [])
            data["copies"] = [d["copy_gbs"]]
            continue
        if d.get("flush", "write") != data.get("flush", "write"):
            data["flush"] = "mixed"
        data["results"] += d.get("results", [])
        data["sweep"] += d.get("sweep", [])
        data["checks"] += d.get("checks", [])
        data["copies"].append(d["copy_gbs"])
    data["results"] = last_of_each(data["results"], ("group", "workload"))
    data["sweep"] = last_of_each(data["sweep"], ("family", "workload"))
    # Each run of long rows checks the same math: one line per check, the
    # worst of the runs'.
    checks = {}
    for c in data.get("checks", []):
        kept = checks.get(c["check"])
        if kept is None or (kept.get("ok") and not c.get("ok")):
            checks[c["check"]] = c
    data["checks"] = list(checks.values())
    return data


def last_of_each(items, keys):
    """items without repeats of the same `keys`: each in its first place,
    with the last repeat's numbers (a part run again replaces the first)."""
    last = {tuple(i.get(k) for k in keys): i for i in items}
    out, seen = [], set()
    for i in items:
        key = tuple(i.get(k) for k in keys)
        if key not in seen:
            seen.add(key)
            out.append(last[key])
    return out


def write_report(data, out_dir):
    """DIR/report.md and, with matplotlib, DIR/report.png (the main rows),
    DIR/long_rows.png and DIR/sweep.png, from the dict main() saves as JSON
    (so --from-json can redo it)."""
    os.makedirs(out_dir, exist_ok=True)
    copy = data["copy_gbs"]
    res = main_rows(data)
    lines = ["# fz benchmark report", ""]
    copies = data.get("copies", [copy])
    copy_text = "%.0f GB/s (device-to-device copy, read + write)" % copy
    if len(copies) > 1:
        copy_text += ("; the %d merged runs measured %s GB/s, and each row's "
                      "%% copy is against its own run's copy"
                      % (len(copies), ", ".join("%.0f" % c for c in copies)))
    meta = [("date", data.get("date")), ("GPU", data.get("device")),
            ("driver", data.get("driver")), ("torch", data.get("torch")),
            ("fz commit", data.get("commit")),
            ("runs", "median of %s timed runs each (CUDA events, after "
                     "warm-up; each run enqueued behind %s, so neither "
                     "cached data nor the host's launch latency is in the "
                     "time)"
             % (data.get("iters", "?"),
                {"write": "a 256 MiB L2-evicting write",
                 "mixed": "a 256 MiB L2-evicting write in some of the "
                          "merged runs and a read in others (their times "
                          "are not comparable)"}.get(
                    data.get("flush", "write"),
                    "a 256 MiB L2-evicting read and a write of as many "
                    "bytes as the run writes"))),
            ("copy", copy_text)]
    lines += ["- %s: %s" % (k, v) for k, v in meta if v is not None]
    lines += ["",
              "GB/s counts each input read once and each output written once "
              "(layout changes: read + write); % copy is against the copy "
              "above. fz runs through fuse-run (--no-validate: the gpu "
              "ctests validate the same plans); eager and torch.compile "
              "(default mode, compiled once before timing) run in the same "
              "process. — means the run failed or was skipped.", ""]
    charts = []
    if res:
        png = os.path.join(out_dir, "report.png")
        chart = write_chart(data, png)
        head = ["workload", "MB"]
        for who in ("fz", "eager", "compile"):
            head += ["%s us" % who, "%s GB/s" % who, "%s %% copy" % who]
        head.append("fz fastest")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in res:
            row = [r["workload"], mb(r)]
            for key in ("fz_us", "eager_us", "compile_us"):
                us = r.get(key)
                row += [fmt(us), fmt(gbs(r.get("bytes"), us), 0),
                        fmt(pct_copy(r, key, copy))]
            row.append(fz_fastest(r))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        charts.append((png, chart))
        if chart is True:
            lines += ["![GB/s per workload: fz, eager, torch.compile; the line is "
                      "the copy](report.png)", ""]
        else:
            lines += ["(No chart: %s.)" % chart, ""]
    if long_rows(data):
        lines += long_rows_section(data, out_dir, charts)
    if data.get("sweep"):
        lines += sweep_section(data, out_dir, charts)
    md = os.path.join(out_dir, "report.md")
    with open(md, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    drawn = [path for path, made in charts if made is True]
    missing = [made for path, made in charts if made is not True]
    print("# wrote %s%s%s" % (md, "".join(" and %s" % p for p in drawn),
                              " (no chart: %s)" % missing[0] if missing else ""),
          file=sys.stderr)


def times_table(rows, first, copy, extra=()):
    """A Markdown table of us and % copy for fz, eager and compile; `first`
    names the first column, taken from each row's "workload"; `extra` adds
    (heading, row -> text) columns."""
    head = [first, "MB"]
    for who in ("fz", "eager", "compile"):
        head += ["%s us" % who, "%s %% copy" % who]
    head += ["fz fastest"] + [h for h, _ in extra]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        row = [r["workload"], mb(r)]
        for key in ("fz_us", "eager_us", "compile_us"):
            row += [fmt(r.get(key)), fmt(pct_copy(r, key, copy))]
        row += [fz_fastest(r)] + [f(r) for _, f in extra]
        out.append("| " + " | ".join(row) + " |")
    return out


def failures(rows):
    """fz's error line for each row where fuse-run failed."""
    bad = [r for r in rows if r.get("fz_error")]
    if not bad:
        return []
    return ["fz failed on:", ""] + ["- %s: `%s`" % (r["workload"], r["fz_error"])
                                    for r in bad] + [""]


def long_rows_section(data, out_dir, charts):
    rows = long_rows(data)
    lines = ["## Long rows", "",
             "Softmax, RMS norm and cross-entropy, forward and backward, on "
             "rows of %s elements. Each bf16 tensor holds 2^28 elements and "
             "each f32 tensor 2^27 (512 MiB either way), so within each "
             "group of five only the row length changes. eager and "
             "torch.compile run PyTorch's ops (softmax, "
             "aten._softmax_backward_data, RMS norm written out in f32 as "
             "under autocast, its backward from the saved rstd, "
             "F.cross_entropy(x.float(), labels, reduction='none') as under "
             "autocast, f32 loss). Cross-entropy backward: eager runs what "
             "autograd runs from the f32 log-softmax it saved "
             "(aten.nll_loss_backward, aten._log_softmax_backward_data, dx "
             "cast back to x's dtype); torch.compile compiles the fusions' "
             "formula, (exp(x - lse) - onehot(label)) * g, from the lse "
             "fz's forward saves (one float a row). torch.compile compiles "
             "each size from a clean state, for static shapes. "
             "\"fz kernels\" is the plan of each "
             "kernel fuse-run launched: one kernel holds whole rows in one "
             "pass; several mean the executor split the fusion into "
             "segments, with intermediates in memory. Medians of %s timed "
             "runs."
             % (", ".join(str(n) for n in LONG_ROW_LENGTHS),
                " or ".join(sorted({str(r.get("iters", "?")) for r in rows}))), "",
             "| rows | bf16 fusion | f32 fusion |", "|---|---|---|"]
    lines += ["| %s | %s | %s |" % (label, fusion_name(b), fusion_name(f))
              for _, label, b, f in LONG_ROW_KINDS]
    lines.append("")
    lines += times_table(rows, "workload", data["copy_gbs"],
                         [("fz kernels", lambda r: r.get("fz_plan") or "—")])
    lines.append("")
    lines += failures(rows)
    if data.get("checks"):
        lines += ["The math of the fusions and of the PyTorch functions "
                  "timed here, against autograd through the forward (the "
                  "backwards) and F.cross_entropy (cross-entropy forward), "
                  "in f64 on [64, 1000] (fz's kernels are checked against "
                  "fz's interpreter by the gpu ctests, not here):", ""]
        lines += ["- %s: max abs error %.3g, %s" % (
            c["check"], c["max_abs_err"], "ok" if c["ok"] else "MISMATCH")
            if c.get("max_abs_err") is not None else
            "- %s: %s" % (c["check"], c.get("error")) for c in data["checks"]]
        lines.append("")
    png = os.path.join(out_dir, "long_rows.png")
    panels = []
    for _, label, _, _ in LONG_ROW_KINDS:
        series = []
        for dname, style, marker in (("bf16", "-", "o"), ("f32", "--", "s")):
            pts = sorted(((r["n"], r) for r in rows
                          if r.get("kind") == label and r.get("dtype") == dname),
                         key=lambda p: p[0])
            for key, who, color in WAYS:
                series.append(dict(label="%s %s" % (who, dname), color=color,
                                   style=style, marker=marker,
                                   xs=[n for n, _ in pts],
                                   ys=[pct_copy(r, key, data["copy_gbs"])
                                       for _, r in pts]))
        if any(s["xs"] for s in series):
            panels.append(dict(title=label, series=series))
    chart = write_lines_chart(panels, png, "row length (elements)", size_label,
                              "long rows", data, ncols=2)
    charts.append((png, chart))
    if chart is True:
        lines += ["![% of copy against row length, per kind; solid bf16, "
                  "dashed f32](long_rows.png)", ""]
    else:
        lines += ["(No chart: %s.)" % chart, ""]
    return lines


def fusion_name(path):
    """A fusion file of the workloads, from the repository's root."""
    return os.path.normpath(os.path.join("bench/fusions", path))


def sweep_section(data, out_dir, charts):
    pts = data["sweep"]
    lines = ["## Size sweep", "",
             "One workload per kernel family, at sizes 4x apart from about "
             "1 MiB to 4 GiB moved, through fz, eager and torch.compile "
             "(compiled for each size from a clean state, for static "
             "shapes), timed as above; \"runs\" is the number of timed runs, "
             "fewer only where a run is long. % copy against bytes moved "
             "shows where each reaches the memory's bandwidth and how much "
             "of a small kernel's time is fixed cost (launch, ramp-up, the "
             "tail of a grid). \"fz kernels\" is the plan of each kernel "
             "fuse-run launched.", ""]
    png = os.path.join(out_dir, "sweep.png")
    panels = []
    for key, title in SWEEP_FAMILIES:
        fam = sorted((p for p in pts if p.get("family") == key),
                     key=lambda p: p.get("bytes") or 0)
        if not fam:
            continue
        panels.append(dict(title=title, series=[
            dict(label=who, color=color, style="-",
                 xs=[p.get("bytes") for p in fam],
                 ys=[pct_copy(p, k, data["copy_gbs"]) for p in fam])
            for k, who, color in WAYS]))
    chart = write_lines_chart(panels, png, "bytes moved", bytes_label,
                              "size sweep", data, ncols=3)
    charts.append((png, chart))
    if chart is True:
        lines += ["![% of copy against bytes moved, one panel per kernel "
                  "family](sweep.png)", ""]
    else:
        lines += ["(No chart: %s.)" % chart, ""]
    for key, title in SWEEP_FAMILIES:
        fam = sorted((p for p in pts if p.get("family") == key),
                     key=lambda p: p.get("bytes") or 0)
        if not fam:
            continue
        lines += ["### " + title, ""]
        lines += times_table(fam, "shape", data["copy_gbs"],
                             [("runs", lambda p: str(p.get("iters", "?"))),
                              ("fz kernels", lambda p: p.get("fz_plan") or "—")])
        lines.append("")
        lines += failures(fam)
    return lines


def size_label(n):
    return "%dK" % (n >> 10) if n >= 1024 else str(n)


def bytes_label(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift:
            v = b / (1 << shift)
            return ("%.0f%s" if v >= 10 else "%.2g%s") % (v, unit)
    return str(b)


def write_chart(data, path):
    """A horizontal bar chart of GB/s, three bars per workload; True, or
    the reason there is none."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return "matplotlib is not installed (%s)" % e
    res = main_rows(data)
    names = [r["workload"] for r in res]
    n = len(names)
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.42 * n * 1.0))
    h = 0.27
    for k, (key, label, color) in enumerate(WAYS):
        vals = [gbs(r.get("bytes"), r.get(key)) or 0 for r in res]
        ax.barh([i + (k - 1) * h for i in range(n)], vals, height=h,
                label=label, color=color)
    ax.axvline(data["copy_gbs"], color="#c0392b", linestyle="--", linewidth=1.2,
               label="copy (%.0f GB/s)" % data["copy_gbs"])
    ax.set_yticks(range(n))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (each input read once, each output written once)")
    ax.set_title(chart_title("fz vs PyTorch", data), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    # Below the axes, where no bar can be hidden behind it.
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=4,
               fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.3 / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def chart_title(title, data):
    if data.get("device"):
        title += " on %s" % data["device"]
    if data.get("date"):
        title += ", %s" % data["date"][:10]
    return title


def write_lines_chart(panels, path, xlabel, xtick_label, title, data, ncols):
    """One subplot per panel, % of copy against a log-2 x axis, a line per
    series (a missing time is a gap); True, or the reason there is none."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return "matplotlib is not installed (%s)" % e
    if not panels:
        return "no measurements"
    ncols = min(ncols, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    # wide enough for the legend and the title whatever the panel count
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(9.5, 4.6 * ncols),
                                                    3.4 * nrows + 0.8),
                             squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        xs_all = sorted({x for s in panel["series"] for x in s["xs"] if x})
        for s in panel["series"]:
            pts = [(x, y) for x, y in zip(s["xs"], s["ys"]) if x]
            ax.plot([x for x, _ in pts],
                    [float("nan") if y is None else y for _, y in pts],
                    s["style"], color=s["color"], marker=s.get("marker", "o"),
                    markersize=3,
                    label=s["label"])
        ax.axhline(100, color="#c0392b", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs_all)
        ax.set_xticklabels([xtick_label(x) for x in xs_all], fontsize=7,
                           rotation=45)
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel("% of copy", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)),
               fontsize=8, frameon=False)
    fig.suptitle(chart_title("fz vs PyTorch, " + title, data)
                 + " (dotted: the copy)", fontsize=10)
    fig.tight_layout(rect=(0, 0.5 / fig.get_figheight(), 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def print_table(data):
    copy = data["copy_gbs"]
    res = main_rows(data)
    print(f"\n{data['device']}, copy {copy:.0f} GB/s (read+write), medians of "
          f"{data.get('iters', '?')} runs\n")
    if res:
        print("| workload | MB | fz us | fz GB/s | % copy | eager us | compile us | fz fastest |")
        print("|---|---|---|---|---|---|---|---|")
    for r in res:
        fz, eager, comp = r.get("fz_us"), r.get("eager_us"), r.get("compile_us")
        g = gbs(r.get("bytes"), fz)
        best = min([t for t in (eager, comp) if t] or [float("inf")])
        print(f"| {r['workload']} | {mb(r)} | {fmt(fz)} | {fmt(g, 0)} | "
              f"{fmt(pct_copy(r, 'fz_us', copy))} | {fmt(eager)} | {fmt(comp)} | "
              f"{'yes' if fz and fz <= best else 'no'} |")
    if long_rows(data):
        print("\nLong rows\n")
        print("\n".join(times_table(long_rows(data), "workload", copy,
                                    [("fz kernels", lambda r: r.get("fz_plan") or "—"),
                                     ("fz error", lambda r: r.get("fz_error") or "")])))
    for key, title in SWEEP_FAMILIES:
        fam = [p for p in data.get("sweep", []) if p.get("family") == key]
        if fam:
            print("\nSweep: %s\n" % title)
            print("\n".join(times_table(fam, "shape", copy,
                                        [("runs", lambda p: str(p.get("iters", "?"))),
                                         ("fz error", lambda p: p.get("fz_error") or "")])))


def selected(label, group, only):
    """Whether an --only item is in the row's name, or in its group and name
    ("long_rows softmax forward bf16 65536x4096"): `long_rows` picks that
    group, `long_rows RMS` its RMS norm rows."""
    return not only or any(o in label or o in group + " " + label for o in only)


def main():
    ap = argparse.ArgumentParser(
        description="Each workload through fz (fuse-run), PyTorch eager and "
                    "torch.compile, in one process on one GPU.")
    ap.add_argument("--fuse-run", default=os.path.join(HERE, "..", "build-gpu", "bin", "fuse-run"),
                    help="the fuse-run binary (default: build-gpu/bin/fuse-run)")
    ap.add_argument("--only", default="",
                    help="comma-separated: run the workloads whose name, or "
                         "group and name, contains one (groups: main, "
                         "long_rows; 'long_rows RMS' is the RMS norm rows of "
                         "long_rows, 'long_rows cross-entropy' its "
                         "cross-entropy rows); with --sweep-only, the sweep families "
                         "by key (pointwise, inner, outer, persistent, "
                         "inner_outer, transpose). Without it: the main group")
    ap.add_argument("--iters", type=int, default=50, help="timed runs per measurement")
    ap.add_argument("--json", default="", help="write the raw numbers to this file")
    ap.add_argument("--report", default="",
                    help="write DIR/report.md, DIR/report.png and DIR/results.json; "
                         "without --only, also runs the size sweep "
                         "(DIR/sweep.png)")
    ap.add_argument("--sweep-only", action="store_true",
                    help="run only the size sweep")
    ap.add_argument("--no-sweep", action="store_true",
                    help="no size sweep with --report")
    ap.add_argument("--from-json", default="",
                    help="no GPU run: rebuild the table and --report from a "
                         "saved results JSON; comma-separated files are "
                         "merged into one report")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--flush", choices=("steady", "write"), default="steady",
                    help="before each timed run: a 256 MiB read, then a write "
                         "of the run's own output bytes (steady), or a 256 "
                         "MiB write (write, as Triton's do_bench and reports "
                         "before 2026-12-07)")
    ap.add_argument("--commit", default="",
                    help="fz commit the binaries were built from, for the "
                         "report (default: the one fuse-run --version names, "
                         "else git HEAD of this tree)")
    args = ap.parse_args()

    if args.from_json:
        data = load_json([p for p in args.from_json.split(",") if p])
        print_table(data)
        if args.report:
            write_report(data, args.report)
        return 0

    import torch
    global FLUSH
    FLUSH = args.flush
    if FLUSH == "write":  # fuse-run's timer reads it
        os.environ["FZ_TIMER_FLUSH"] = "write"
    else:
        os.environ.pop("FZ_TIMER_FLUSH", None)
    only = [s for s in args.only.split(",") if s]
    rows = []
    if not args.sweep_only:
        rows = [("main", w, None) for w in workloads()
                if not only or selected(w[0], "main", only)]
        rows += [("long_rows", w[:4], w[4]) for w in long_row_workloads()
                 if only and selected(w[0], "long_rows", only)]
    families = []
    if args.sweep_only or (args.report and not only and not args.no_sweep):
        families = [f for f in SWEEP_FAMILIES
                    if not args.sweep_only or not only or f[0] in only]

    name = torch.cuda.get_device_name()
    copy = copy_bandwidth(20)
    data = dict(device=name, copy_gbs=copy, iters=args.iters, flush=FLUSH,
                results=[],
                sweep=[], checks=[], driver=driver_version(),
                torch=torch.__version__, cuda=torch.version.cuda,
                commit=(args.commit or build_commit(args.fuse_run)
                        or git_commit()))

    def save():
        """The numbers so far, after each measurement: a run cut short
        still leaves what it measured."""
        data["date"] = (datetime.datetime.now(datetime.timezone.utc)
                        .strftime("%Y-%m-%d %H:%M UTC"))
        paths = [args.json] if args.json else []
        if args.report:
            os.makedirs(args.report, exist_ok=True)
            paths.append(os.path.join(args.report, "results.json"))
        for path in paths:
            with open(path, "w") as fh:
                json.dump(data, fh, indent=1)

    if any(group == "long_rows" for group, _, _ in rows):
        try:
            data["checks"] = check_math()
        except Exception as e:  # report, don't hide
            data["checks"] = [dict(check="long-row math", error=str(e))]
        for c in data["checks"]:
            print("# check: %s" % c, file=sys.stderr)
    started = time.time()
    for group, (label, fusion, sizes, build), fields in rows:
        # Every row compiles from a clean dynamo state with static shapes
        # (compile_fresh): rows that share a builder would otherwise run
        # torch.compile's dynamic-shape code, or eager past its recompile
        # limit, instead of what it compiles for that shape.
        row = measure(label, fusion, sizes, build, args, args.iters,
                      fresh_compile=True, print_plan=group != "main")
        row.update(copy_gbs=copy, group=group, **(fields or {}))
        data["results"].append(row)
        save()
    if rows:
        print("# rows took %.0f s" % (time.time() - started), file=sys.stderr)
    started = time.time()
    for key, title in families:
        for shape, fusion, sizes, build, nbytes in sweep_sizes(key):
            iters = sweep_iters(nbytes, copy, args.iters)
            row = measure(shape, fusion, sizes, build, args, iters,
                          fresh_compile=True, print_plan=True)
            row.update(copy_gbs=copy, family=key)
            data["sweep"].append(row)
            save()
    if families:
        print("# sweep took %.0f s" % (time.time() - started), file=sys.stderr)
    save()
    print_table(data)
    if args.report:
        write_report(data, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
