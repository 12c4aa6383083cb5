"""GPU tests of the Python front end against PyTorch.

Run from the repository root, either way:
    python3 python/tests/test_fz.py
    python3 -m python.tests.test_fz
with libfz.so found through $FZ_LIBRARY (or the build trees). Without
torch, CUDA or a GPU it prints "SKIPPED: ..." and exits 77 (skipped, not
passed). Plain asserts; no pytest needed. Inputs are fresh random numbers
(never all zeros) from a printed seed; fz's results are compared with
PyTorch's, and for reductions with a float64 computation, with tolerances
scaled to the magnitudes summed.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))

SKIP = 77


def skip(why):
    print("SKIPPED: %s" % why)
    sys.exit(SKIP)


try:
    import torch
except ImportError as e:
    skip("no torch (%s)" % e)
if not torch.cuda.is_available():
    skip("no GPU (torch.cuda.is_available() is False)")

import fz  # noqa: E402

DEV = torch.device("cuda", 0)
SEED = int(os.environ.get("FZ_TEST_SEED", time.time_ns() % (1 << 31)))
GEN = torch.Generator(device=DEV).manual_seed(SEED)


def rand(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    t = torch.rand(*shape, generator=GEN, device=DEV, dtype=torch.float32)
    return (lo + (hi - lo) * t).to(dtype)


def close(got, want, rtol, atol, what):
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (
        what, tuple(got.shape), tuple(want.shape))
    assert got.dtype == want.dtype, "%s: dtype %s, expected %s" % (
        what, got.dtype, want.dtype)
    g, w = got.double(), want.double()
    bad = ~((g - w).abs() <= atol + rtol * w.abs())
    if bad.any():
        idx = bad.nonzero()[0].tolist()
        raise AssertionError("%s: %d of %d elements differ; first at %s: %r "
                             "vs %r" % (what, int(bad.sum()), bad.numel(), idx,
                                        g[tuple(idx)].item(),
                                        w[tuple(idx)].item()))


def sum_close(got, x, dims, what):
    """A sum against float64, within 1e-5 of the magnitudes summed."""
    want = x.double().sum(dims)
    scale = x.double().abs().sum(dims)
    err = (got.double() - want).abs()
    bad = ~(err <= 1e-5 * scale + 1e-6)
    assert not bad.any(), "%s: %d sums off, worst %g (scale %g)" % (
        what, int(bad.sum()), float(err.max()), float(scale.max()))


# ---- the tests ---------------------------------------------------------------


def test_pointwise_chain():
    with fz.FusionDefinition("chain") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        y = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        t = fd.ops.sigmoid(x * y + 1.5)
        u = fd.ops.tanh(t * x) - fd.ops.exp(y * 0.25)
        fd.add_output(fd.ops.gelu(u))
    for m, n in [(257, 1031), (64, 4096)]:
        a, b = rand(m, n), rand(m, n)
        (out,) = fd.execute([a, b])
        t = torch.sigmoid(a * b + 1.5)
        want = torch.nn.functional.gelu(torch.tanh(t * a) - torch.exp(b * 0.25))
        close(out, want, 1e-5, 1e-6, "chain %dx%d" % (m, n))
    # Any strides: a transposed view and a sliced one, same fusion.
    a = rand(700, 300).t()
    b = rand(300, 1400)[:, ::2]
    (out,) = fd.execute([a, b])
    t = torch.sigmoid(a * b + 1.5)
    want = torch.nn.functional.gelu(torch.tanh(t * a) - torch.exp(b * 0.25))
    close(out, want, 1e-5, 1e-6, "chain, strided inputs")


def test_broadcast_add():
    with fz.FusionDefinition("bias") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        b = fd.define_tensor(shape=[-1], dtype=torch.float32)
        c = fd.define_tensor(shape=[-1, 1], dtype=torch.float32)
        fd.add_output(x + b)                        # PyTorch-style: b over rows
        fd.add_output(x * fd.ops.broadcast(b, [0]) + c)  # explicit; c over columns
    x, b, c = rand(300, 1000), rand(1000), rand(300, 1)
    s, t = fd.execute([x, b, c])
    close(s, x + b, 0, 0, "x + b")
    close(t, x * b + c, 1e-6, 1e-6, "x * b + c")


def test_playground_column_major_sum():
    # Seed 004's PlayGround at a smaller size: a row sum of a column-major
    # tensor, which must read along the contiguous axis 0.
    with fz.FusionDefinition("playground") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32,
                             stride_order=[0, 1])
        fd.add_output(fd.ops.sum(x, dims=[1]))
    for rows, cols in [(4096, 3000), (1024, 36864 // 8), (100, 7)]:
        x = rand(cols, rows).t()          # [rows, cols], strides (1, rows)
        assert x.stride() == (1, rows)
        (s,) = fd.execute([x])
        assert s.shape == (rows,)
        sum_close(s, x, 1, "playground %dx%d" % (rows, cols))
        sum_close(torch.sum(x, 1), x, 1, "torch's own sum (sanity)")


def test_bf16():
    with fz.FusionDefinition("bf16") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.bfloat16)
        w = fd.define_tensor(shape=[-1], dtype=torch.bfloat16)
        y = fd.ops.silu(x) * w + 1.0               # bf16 in, computed in f32
        fd.add_output(y)                           # bf16 out
        fd.add_output(fd.ops.sum(fd.ops.cast(x, torch.float32), dims=[1]))
    x, w = rand(512, 2048, dtype=torch.bfloat16), rand(2048, dtype=torch.bfloat16)
    y, s = fd.execute([x, w])
    want = torch.nn.functional.silu(x) * w + 1.0
    assert y.dtype == torch.bfloat16
    # Both round to bf16 at every op; fz's ops compute in f64 and PyTorch's
    # in f32, so a last-bit difference on a rounding tie is allowed.
    close(y, want, 2 ** -7, 1e-2, "bf16 silu(x) * w + 1")
    sum_close(s, x.float(), 1, "bf16 -> f32 row sum")


def test_output_layout_and_scalar():
    with fz.FusionDefinition("layout") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        alpha = fd.define_scalar(torch.float64)
        fd.add_output(x * alpha, stride_order=[0, 1])   # asked: column-major
        fd.add_output(fd.ops.mean(x, dims=[0]))
    x = rand(333, 517)
    y, m = fd.execute([x, 0.75])
    assert y.stride() == (1, 333), "column-major output, got %s" % (y.stride(),)
    close(y, x * 0.75, 0, 0, "x * alpha")
    close(m, x.mean(0), 1e-5, 1e-6, "mean over dim 0")
    y2, m2 = fd.execute([x, -3.0])                       # cached call
    close(y2, x * -3.0, 0, 0, "x * alpha, second call")


def test_sizes_are_run_time_values():
    """mean's count and a size as an operand are read at run time (`symbol
    N`): one build (fusion and executor) serves both shapes."""
    with fz.FusionDefinition("sizes") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        fd.add_output(fd.ops.mean(x, dims=[1]))
        fd.add_output(x / x.size(1))
    for m, n in ((300, 517), (64, 4099)):
        x = rand(m, n)
        mean, scaled = fd.execute([x])
        close(mean, x.mean(1), 1e-5, 1e-6, "mean over %d columns" % n)
        close(scaled, x / n, 1e-6, 1e-30, "x / x.size(1) for %d columns" % n)
    assert len(fd._built) == 1, "%d builds for two shapes" % len(fd._built)
    assert "symbol" in fd._last.text, fd._last.text


def test_new_sizes_and_repeated_calls():
    """A new size of a built pattern prepares a call (no build: one
    executor), a repeated size only runs (no signature miss); results are
    PyTorch's either way, for three outputs, with the scalar as a number
    or a 0-dim tensor, on the default stream and a side stream. A
    transposed input is another pattern (a second build)."""
    with fz.FusionDefinition("ln_stats") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        w = fd.define_tensor(shape=[-1], dtype=torch.float32)
        eps = fd.define_scalar(torch.float64)
        mean = fd.ops.mean(x, dims=[1], keepdim=True)
        d = x - mean
        rstd = fd.ops.rsqrt(fd.ops.mean(d * d, dims=[1], keepdim=True) + eps)
        fd.add_output(d * rstd * w)
        fd.add_output(mean)
        fd.add_output(rstd)

    def check(x, w, e, what):
        y, m, r = fd.execute([x, w, e])
        want_m = x.mean(1, keepdim=True)
        want_r = torch.rsqrt(((x - want_m) ** 2).mean(1, keepdim=True) +
                             1e-5)
        close(m, want_m, 1e-5, 1e-6, "mean, " + what)
        close(r, want_r, 1e-4, 1e-6, "rstd, " + what)
        close(y, (x - want_m) * want_r * w, 1e-4, 1e-5, "y, " + what)

    shapes = [(300 + 7 * k, 517 + 13 * k) for k in range(6)]
    number, tensor = 1e-5, torch.tensor(1e-5, dtype=torch.float64, device=DEV)
    for k, (m, n) in enumerate(shapes):
        check(rand(m, n), rand(n), tensor if k % 2 else number,
              "new size %dx%d" % (m, n))
    st = fd.stats()
    assert len(fd._built) == 1, "%d builds" % len(fd._built)
    assert st["signature_misses"] == len(shapes), st
    calls = len(fd._calls)
    side = torch.cuda.Stream(DEV)
    for k, (m, n) in enumerate(shapes):
        with torch.cuda.stream(side if k % 3 == 0 else
                               torch.cuda.current_stream(DEV)):
            check(rand(m, n), rand(n), tensor if k % 2 else number,
                  "again %dx%d" % (m, n))
    torch.cuda.synchronize()
    st = fd.stats()
    assert st["signature_misses"] == len(shapes), st
    assert st["runs"] == 2 * len(shapes), st
    assert len(fd._calls) == calls, "%d calls prepared" % len(fd._calls)
    check(rand(517, 300).t(), rand(517), number, "transposed")
    assert len(fd._built) == 2, "%d builds" % len(fd._built)


def _full_sum():
    """A sum long enough to be split across blocks: its kernel takes a
    workspace and counters, fz's scratch memory."""
    with fz.FusionDefinition("full_sum") as fd:
        x = fd.define_tensor(shape=[-1], dtype=torch.float32)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    return fd


def test_scratch_memory_from_torch():
    fd = _full_sum()
    x = rand(1 << 24)
    before = torch.cuda.memory_stats(DEV)["allocation.all.allocated"]
    (s,) = fd.execute([x])
    after = torch.cuda.memory_stats(DEV)["allocation.all.allocated"]
    # the output, plus the workspace taken from torch's allocator
    assert after - before >= 2, "scratch memory did not come from torch " \
        "(%d allocations)" % (after - before)
    close(s, x.double().sum().float(), 1e-5 * 64, 1e-3, "full sum")
    st = fd.stats()
    assert st["signature_misses"] == 1 and st["runs"] == 1, st


def test_two_streams_at_once():
    fd = _full_sum()
    xs = [rand(1 << 24) for _ in range(2)]
    fd.execute([xs[0]])  # warm: compiled once
    streams = [torch.cuda.Stream(DEV) for _ in range(2)]
    outs = [[], []]
    for _ in range(20):
        for i in range(2):
            with torch.cuda.stream(streams[i]):
                outs[i].append(fd.execute([xs[i]])[0])
    torch.cuda.synchronize()
    for i in range(2):
        want = xs[i].double().sum().float()
        for k, o in enumerate(outs[i]):
            close(o, want, 1e-5 * 64, 1e-3, "stream %d call %d" % (i, k))


def test_cuda_graph_capture_after_warm_up():
    fd = _full_sum()
    x = rand(1 << 24)
    s = torch.cuda.Stream(DEV)
    with torch.cuda.stream(s):
        fd.execute([x])  # warm up outside capture: compiles
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        (out,) = fd.execute([x])
    x.copy_(rand(1 << 24))
    g.replay()
    torch.cuda.synchronize()
    close(out, x.double().sum().float(), 1e-5 * 64, 1e-3, "replayed graph")
    # a new signature inside capture is refused with a clear error
    y = rand(1 << 23)
    g2 = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g2):
            fd.execute([y])
    except fz.FzError as e:
        assert "captured" in e.message, e.message
    else:
        raise AssertionError("a first call during capture was accepted")


def test_more_pointwise_ops():
    # PyTorch's names and semantics for the later ops: float ops promote
    # integers, shifts past the width give 0 or the sign (CUDA's rule),
    # nan_to_num's defaults are the dtype's extremes, dim=[] reduces all.
    with fz.FusionDefinition("more_ops") as fd:
        x = fd.define_tensor(shape=[-1], dtype=torch.float32)
        i = fd.define_tensor(shape=[-1], dtype=torch.int32)
        n = fd.define_tensor(shape=[-1], dtype=torch.int32)
        fd.add_output(fd.ops.erfinv(x))
        fd.add_output(fd.ops.atan2(x, i))
        fd.add_output(fd.ops.fmod(x * 8.0, x))
        fd.add_output(fd.ops.sign(x))
        fd.add_output(fd.ops.bitwise_left_shift(i, n))
        fd.add_output(i >> n)
        fd.add_output(~i)
        fd.add_output(fd.ops.nan_to_num(x / 0.0))
        fd.add_output(fd.ops.sum(x, dims=[]))
    x = rand(10000, lo=-1.0, hi=1.0)
    i = torch.randint(-1000, 1000, (10000,), device=DEV, dtype=torch.int32,
                      generator=GEN)
    n = torch.randint(-40, 40, (10000,), device=DEV, dtype=torch.int32,
                      generator=GEN)
    got = fd.execute([x, i, n])
    want = [torch.erfinv(x), torch.atan2(x, i), torch.fmod(x * 8.0, x),
            torch.sign(x), torch.bitwise_left_shift(i, n), i >> n, ~i,
            torch.nan_to_num(x / 0.0)]
    names = ["erfinv", "atan2", "fmod", "sign", "<<", ">>", "~",
             "nan_to_num"]
    for g, w, name in zip(got, want, names):
        exact = name not in ("erfinv", "atan2")
        close(g, w, 0 if exact else 1e-5, 0 if exact else 1e-6, name)
    assert got[-1].shape == torch.sum(x, dim=[]).shape, "sum(dim=[]) shape"
    sum_close(got[-1], x, 0, "sum(dim=[])")


def main():
    print("fz %s from %s, torch %s on %s, seed %d" % (
        fz.version(), fz.lib().path, torch.__version__,
        torch.cuda.get_device_name(DEV), SEED))
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    only = sys.argv[1:]
    failed = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        try:
            fn()
            torch.cuda.synchronize()
            print("PASS %s" % name)
        except Exception as e:  # report every test, then fail
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
    print("%d failed" % failed if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
