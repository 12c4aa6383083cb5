"""GPU tests of the Python front end on the seeds' workloads and the
normalization set, against PyTorch.

  - seed 000: layer-norm backward, defined op for op as
    examples/layer_norm_backward_seed000.fz computes it, at the seed's size
    [2048, 8192] and an odd one, in f32 and bf16 (the bf16 form casts up,
    computes in f32 and casts the three gradients down, as
    test/gpu/norm_layer_norm_backward_bf16.fz does), against PyTorch
    autograd (torch.nn.functional.layer_norm, then backward);
  - seed 004: PlayGround, a row sum of a column-major tensor (x.t() of a
    row-major one), against torch.sum; and PlayGround_ref, the same bytes
    summed as a row-major tensor over dim 0;
  - the normalization set: softmax, RMS norm and layer norm forward, f32
    and bf16, against PyTorch's own functions.

Each result is compared twice: with a float64 computation of the same
function on the same inputs (fz must be within its error budget of it),
and with PyTorch's float32 (or bf16) result (what "equal to PyTorch's"
means: within two budgets, PyTorch being within one; where PyTorch is not,
a NOTE says so and fz is held to one budget plus PyTorch's own error).
Budgets scale with the length of the reductions involved: 2 * eps(f32) *
sqrt(length) of the sum of the magnitudes that were added, plus, for bf16
results, the final rounding (half a bf16 ulp). Every budget is also checked
to stay far below the results' own size, so that no comparison can pass
vacuously. FZ_TEST_DEBUG=1 prints where each comparison's margin is
smallest; FZ_TEST_SEED repeats a run's inputs.

Run from the repository root:  python3 python/tests/test_seeds.py [TEST ...]
with libfz.so found through $FZ_LIBRARY (or the build trees). Without
torch, CUDA or a GPU it prints "SKIPPED: ..." and exits 77. Registered in
ctest as gpu/python_seeds.
"""

import math
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
    import torch.nn.functional as F
except ImportError as e:
    skip("no torch (%s)" % e)
if not torch.cuda.is_available():
    skip("no GPU (torch.cuda.is_available() is False)")

import fz  # noqa: E402

DEV = torch.device("cuda", 0)
SEED = int(os.environ.get("FZ_TEST_SEED", time.time_ns() % (1 << 31)))
GEN = torch.Generator(device=DEV).manual_seed(SEED)

F32_EPS = 2.0 ** -23
BF16_HALF_ULP = 2.0 ** -8     # relative rounding error of one bf16 rounding
EPS_LN = 1e-5
EPS_RMS = 1e-6


def rand(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    t = torch.rand(*shape, generator=GEN, device=DEV, dtype=torch.float32)
    return (lo + (hi - lo) * t).to(dtype)


def red_tol(length):
    """Relative error budget of an f32 sum of `length` terms, against the
    sum of their magnitudes (pairwise or blocked summation stays far
    inside it; a wrong formula is far outside)."""
    return 2.0 * F32_EPS * math.sqrt(max(1, length))


def check(got, ref, tol, what, vacuity=5e-3):
    """|got - ref| <= tol elementwise (ref: float64). Also fails when the
    tolerance is not small against the reference itself (median tol over
    median |ref| above `vacuity`), which would make the check empty.
    Returns the worst error/tolerance ratio, for the log."""
    assert got.shape == ref.shape, "%s: shape %s, expected %s" % (
        what, tuple(got.shape), tuple(ref.shape))
    tol = tol.expand_as(ref) if torch.is_tensor(tol) else torch.full_like(ref, tol)
    ratio = float(tol.median() / ref.abs().median().clamp_min(1e-300))
    assert ratio <= vacuity, "%s: tolerance too loose to mean anything " \
        "(median tol / median |ref| = %g)" % (what, ratio)
    g = got.double()
    assert torch.isfinite(g).all(), "%s: non-finite results" % what
    err = (g - ref).abs()
    bad = ~(err <= tol)
    if bad.any():
        idx = tuple(bad.nonzero()[0].tolist())
        raise AssertionError(
            "%s: %d of %d elements off; first at %s: %r vs %r (tol %g), "
            "worst err/tol %.3g" % (what, int(bad.sum()), bad.numel(), idx,
                                   g[idx].item(), ref[idx].item(),
                                   tol[idx].item(), float((err / tol).max())))
    if os.environ.get("FZ_TEST_DEBUG"):   # where the margin is smallest
        k = int((err / tol).flatten().argmax())
        print("    %s: tightest at flat index %d: got %r, float64 %r, tol %r"
              % (what, k, g.flatten()[k].item(), ref.flatten()[k].item(),
                 tol.flatten()[k].item()))
    return float((err / tol).max())


def compare(got, tol, torch_result, ref, what, vacuity=5e-3):
    """fz within its budget of the float64 reference, and within two
    budgets of PyTorch's result, which is itself expected within one. (If
    PyTorch's is not, that is said, and fz is held to the budget plus
    PyTorch's own error: fz cannot be closer to an inexact result than
    that.)"""
    assert got.dtype == torch_result.dtype, "%s: dtype %s, PyTorch gives %s" % (
        what, got.dtype, torch_result.dtype)
    r1 = check(got, ref, tol, what + " vs float64", vacuity)
    tol = tol.expand_as(ref) if torch.is_tensor(tol) else torch.full_like(ref, tol)
    torch_err = (torch_result.double() - ref).abs()
    if bool((torch_err <= tol).all()):
        r2 = check(got, torch_result.double(), 2 * tol, what + " vs PyTorch",
                   2 * vacuity)
    else:
        print("  NOTE: %s: PyTorch's own result is off the float64 one by up "
              "to %.3g budgets; fz is compared with it within one budget "
              "plus PyTorch's error" % (what, float((torch_err / tol).max())))
        r2 = check(got, torch_result.double(), tol + torch_err,
                   what + " vs PyTorch", float("inf"))
    return max(r1, r2)


def bf16_tol(f32_tol, ref):
    """Budget of a result computed in f32 then rounded once to bf16."""
    return BF16_HALF_ULP * ref.abs() * 1.05 + f32_tol * 1.05


# ---- seed 000: layer-norm backward -----------------------------------------------

_LN_BWD = {}


def ln_backward_fusion(n, dtype):
    """The seed's fusion, op for op (examples/layer_norm_backward_seed000.fz
    and its tensor names), for rows of n elements (1/n is a literal there,
    so one definition per n). dtype bf16: inputs cast up, gradients down."""
    key = (n, dtype)
    if key in _LN_BWD:
        return _LN_BWD[key]
    inv_n = 1.0 / n
    low = dtype != torch.float32
    with fz.FusionDefinition("layer_norm_backward_seed000") as fd:
        grad = fd.define_tensor([-1, -1], dtype, name="grad")
        x = fd.define_tensor([-1, -1], dtype, name="x")
        mean = fd.define_tensor([-1, 1], torch.float32, name="mean")
        rstd = fd.define_tensor([-1, 1], torch.float32, name="rstd")
        weight = fd.define_tensor([-1], dtype, name="weight")
        ops = fd.ops
        if low:
            grad = ops.cast(grad, torch.float32)
            x = ops.cast(x, torch.float32)
            weight = ops.cast(weight, torch.float32)
        M, N = x.size(0), x.size(1)
        T0 = ops.expand(mean, [-1, N])
        T1 = ops.sub(x, T0)
        T2 = ops.expand(rstd, [-1, N])
        T3 = ops.mul(T1, T2)
        T4 = ops.broadcast(weight, [0])
        T5 = ops.expand(T4, [M, -1])
        T6 = ops.mul(grad, T5)
        T7 = ops.mul(grad, T3)
        T34 = ops.sum(T7, dims=[0])
        T35 = ops.sum(grad, dims=[0])
        T8 = ops.mul(T6, T2)
        T9 = ops.mul(T6, T1)
        T10 = ops.sum(T9, dims=[1])
        T11 = ops.broadcast(T10, [1])
        T12 = ops.mul(rstd, rstd)
        T13 = ops.mul(T12, rstd)
        T14 = ops.mul(-0.5, T13)
        T15 = ops.mul(T11, T14)
        T16 = ops.expand(T15, [-1, N])
        T17 = ops.mul(inv_n, T16)
        T36 = ops.mul(2.0, T1)
        T37 = ops.mul(T17, T36)
        T39 = ops.add(T8, T37)
        T18 = ops.neg(T39)
        T19 = ops.sum(T18, dims=[1])
        T20 = ops.broadcast(T19, [1])
        T21 = ops.set(T20)
        T25 = ops.squeeze(T21, [1])
        T27 = ops.broadcast(T25, [1])
        T28 = ops.set(T27)
        T29 = ops.set(T28)
        T30 = ops.expand(T29, [-1, N])
        T31 = ops.mul(inv_n, T30)
        T40 = ops.add(T31, T39)
        outs = [T40, T34, T35]
        if low:
            outs = [ops.cast(t, dtype) for t in outs]
        for t in outs:
            fd.add_output(t)
    _LN_BWD[key] = fd
    return fd


def ln_backward_f64(dy, x, mean, rstd, w):
    """The seed's formula (not PyTorch's simplified one, which takes the
    saved statistics to be exact: the two differ by a term in mean(xhat)
    that vanishes only then), evaluated in float64."""
    n = x.shape[1]
    xc = x - mean
    xhat = xc * rstd
    g = dy * w
    grstd = (g * xc).sum(1, keepdim=True)
    gxc = g * rstd + (grstd * (-0.5 * rstd ** 3) / n) * 2 * xc
    dx = gxc - gxc.sum(1, keepdim=True) / n
    return dx, (dy * xhat).sum(0), dy.sum(0)


def run_ln_backward(m, n, dtype):
    x = rand(m, n, dtype=dtype)
    w = rand(n, dtype=dtype, lo=0.5, hi=1.5)
    b = rand(n, dtype=dtype)
    dy = rand(m, n, dtype=dtype)
    # The saved statistics, as the forward leaves them (f32 for bf16 too).
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [n], w, b, EPS_LN)
    mean = mean.reshape(m, 1).float().contiguous()
    rstd = rstd.reshape(m, 1).float().contiguous()

    fd = ln_backward_fusion(n, dtype)
    dx, dw, db = fd.execute([dy, x, mean, rstd, w])
    for got, shape in ((dx, (m, n)), (dw, (n,)), (db, (n,))):
        assert got.dtype == dtype and tuple(got.shape) == shape, \
            "output %s %s" % (got.dtype, tuple(got.shape))

    # PyTorch autograd, in the inputs' dtype.
    xr = x.detach().clone().requires_grad_()
    wr = w.detach().clone().requires_grad_()
    br = b.detach().clone().requires_grad_()
    F.layer_norm(xr, [n], wr, br, EPS_LN).backward(dy)
    # The same function in float64, from the same saved statistics.
    d = lambda t: t.double()
    rdx, rdw, rdb = ln_backward_f64(d(dy), d(x), d(mean), d(rstd), d(w))

    # Error budgets: the sums of magnitudes each result is built from.
    g = d(dy) * d(w)
    xhat = (d(x) - d(mean)) * d(rstd)
    m2 = (g * xhat).abs().mean(1, keepdim=True)
    dx_scale = d(rstd) * (g.abs() + g.abs().mean(1, keepdim=True) +
                          xhat.abs() * m2 + xhat.abs().mean(1, keepdim=True) * m2)
    tdx = red_tol(n) * dx_scale + 1e-30
    tdw = red_tol(m) * (d(dy) * xhat).abs().sum(0) + 1e-30
    tdb = red_tol(m) * d(dy).abs().sum(0) + 1e-30
    vac = 5e-3
    if dtype != torch.float32:
        tdx, tdw, tdb = bf16_tol(tdx, rdx), bf16_tol(tdw, rdw), bf16_tol(tdb, rdb)
        vac = 2e-2
    what = "layer norm backward %dx%d %s" % (m, n, str(dtype).replace("torch.", ""))
    worst = max(compare(dx, tdx, xr.grad, rdx, what + " grad_input", vac),
                compare(dw, tdw, wr.grad, rdw, what + " grad_weight", vac),
                compare(db, tdb, br.grad, rdb, what + " grad_bias", vac))
    print("  %s: worst err/tol %.3f" % (what, worst))


def test_seed000_layer_norm_backward_f32():
    run_ln_backward(2048, 8192, torch.float32)     # the seed's size
    run_ln_backward(37, 1000, torch.float32)       # odd rows and tails


def test_seed000_layer_norm_backward_bf16():
    run_ln_backward(2048, 8192, torch.bfloat16)
    run_ln_backward(300, 1000, torch.bfloat16)


def test_seed000_fusion_text():
    # What the definition became: the seed's fusion after canonicalize has
    # folded the squeeze/broadcast/set chain; three outputs. (Printed for
    # the log, with the first line of the kernel plan.)
    fd = ln_backward_fusion(8192, torch.float32)
    x = rand(16, 8192)
    stats = torch.ops.aten.native_layer_norm(x, [8192], None, None, EPS_LN)
    fd.execute([rand(16, 8192), x, stats[1].reshape(16, 1).float(),
                stats[2].reshape(16, 1).float(), rand(8192)])
    text = fd.fusion_text()
    assert text and "@layer_norm_backward_seed000" in text, text
    assert text.count("return") == 1 and "squeeze" not in text, text
    plan = fd.last_plan() or ""
    print("  plan: %s" % (plan.strip().splitlines()[0] if plan else "(none)"))


# ---- seed 004: PlayGround ------------------------------------------------------------

def test_seed004_playground():
    with fz.FusionDefinition("playground") as fd:
        x = fd.define_tensor([-1, -1], torch.float32, stride_order=[0, 1])
        fd.add_output(fd.ops.sum(x, dims=[1]))
    with fz.FusionDefinition("playground_ref") as ref_fd:
        xr = ref_fd.define_tensor([-1, -1], torch.float32)
        ref_fd.add_output(ref_fd.ops.sum(xr, dims=[0]))
    # The seed is [16384, 36864]; the test keeps one extent and cuts the
    # other (and tries a small odd one).
    for rows, cols in [(16384, 36864 // 8), (2048, 36864), (333, 1001)]:
        # Mostly positive numbers: sums that cancel to near zero would make
        # any tolerance against the magnitudes summed a loose one.
        base = rand(cols, rows, lo=-1.0, hi=3.0)   # row-major [cols, rows]
        x = base.t()                     # [rows, cols], strides (1, rows)
        assert x.stride() == (1, rows)
        (s,) = fd.execute([x])
        want = torch.sum(x, 1)
        ref = x.double().sum(1)
        tol = red_tol(cols) * x.double().abs().sum(1)
        what = "PlayGround %dx%d" % (rows, cols)
        worst = compare(s, tol, want, ref, what)
        (s_ref,) = ref_fd.execute([base])   # PlayGround_ref: same bytes
        compare(s_ref, tol, want, ref, what + " (PlayGround_ref)")
        same = bool(torch.equal(s, s_ref))
        print("  %s: worst err/tol %.3f; PlayGround and PlayGround_ref "
              "bitwise %s" % (what, worst, "equal" if same else "different"))


# ---- the normalization set ---------------------------------------------------------

def softmax_fusion(dtype):
    with fz.FusionDefinition("softmax") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        xf = fd.ops.cast(x, torch.float32) if dtype != torch.float32 else x
        mx = fd.ops.amax(xf, dims=[1], keepdim=True)
        e = fd.ops.exp(xf - mx)
        s = fd.ops.sum(e, dims=[1], keepdim=True)
        y = e / s
        fd.add_output(fd.ops.cast(y, dtype) if dtype != torch.float32 else y)
    return fd


def test_softmax():
    for dtype in (torch.float32, torch.bfloat16):
        fd = softmax_fusion(dtype)
        for m, n in [(2048, 8192), (1000, 100), (37, 32768)]:
            x = rand(m, n, dtype=dtype, lo=-8.0, hi=8.0)
            (y,) = fd.execute([x])
            want = torch.softmax(x, -1)
            ref = torch.softmax(x.double(), -1)
            # exp of an f32 difference up to 16 (8 ulps), exp, the division
            tol = (red_tol(n) + 32 * F32_EPS) * ref + 1e-30
            vac = 5e-3
            if dtype != torch.float32:
                tol, vac = bf16_tol(tol, ref), 2e-2
            what = "softmax %dx%d %s" % (m, n, dtype)
            print("  %s: worst err/tol %.3f" % (
                what, compare(y, tol, want, ref, what, vac)))


def rms_norm_fusion(dtype):
    with fz.FusionDefinition("rms_norm") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        w = fd.define_tensor([-1], dtype)
        low = dtype != torch.float32
        xf = fd.ops.cast(x, torch.float32) if low else x
        wf = fd.ops.cast(w, torch.float32) if low else w
        ms = fd.ops.mean(xf * xf, dims=[1], keepdim=True)
        y = xf * fd.ops.rsqrt(ms + EPS_RMS) * wf
        fd.add_output(fd.ops.cast(y, dtype) if low else y)
    return fd


def torch_rms_norm(x, w):
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS_RMS)
    return (xf * r * w.float()).to(x.dtype)


def test_rms_norm():
    for dtype in (torch.float32, torch.bfloat16):
        fd = rms_norm_fusion(dtype)
        for m, n in [(2048, 8192), (16384, 1024), (37, 1000)]:
            x, w = rand(m, n, dtype=dtype), rand(n, dtype=dtype)
            (y,) = fd.execute([x, w])
            want = torch_rms_norm(x, w)
            xd, wd = x.double(), w.double()
            ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + EPS_RMS) * wd
            tol = (red_tol(n) + 16 * F32_EPS) * ref.abs() + 1e-30
            vac = 5e-3
            if dtype != torch.float32:
                tol, vac = bf16_tol(tol, ref), 2e-2
            what = "RMS norm %dx%d %s" % (m, n, dtype)
            print("  %s: worst err/tol %.3f" % (
                what, compare(y, tol, want, ref, what, vac)))
            if hasattr(F, "rms_norm") and dtype == torch.float32:
                # PyTorch's own op, where it has one: the same numbers.
                check(F.rms_norm(x, [n], w, EPS_RMS), ref, tol * 2,
                      what + " F.rms_norm vs float64")


def test_layer_norm_forward():
    with fz.FusionDefinition("layer_norm") as fd:
        x = fd.define_tensor([-1, -1], torch.float32)
        w = fd.define_tensor([-1], torch.float32)
        b = fd.define_tensor([-1], torch.float32)
        mean = fd.ops.mean(x, dims=[1], keepdim=True)
        xc = x - mean
        var = fd.ops.mean(xc * xc, dims=[1], keepdim=True)
        rstd = fd.ops.rsqrt(var + EPS_LN)
        fd.add_output(xc * rstd * w + b)
        fd.add_output(mean)
        fd.add_output(rstd)
    for m, n in [(2048, 8192), (37, 1000)]:
        x, w, b = rand(m, n), rand(n), rand(n)
        y, mean, rstd = fd.execute([x, w, b])
        want_y = F.layer_norm(x, [n], w, b, EPS_LN)
        _, want_mean, want_rstd = torch.ops.aten.native_layer_norm(
            x, [n], w, b, EPS_LN)
        xd = x.double()
        rmean = xd.mean(1, keepdim=True)
        rrstd = torch.rsqrt(((xd - rmean) ** 2).mean(1, keepdim=True) + EPS_LN)
        ry = (xd - rmean) * rrstd * w.double() + b.double()
        k = red_tol(n) + 16 * F32_EPS
        mean_scale = xd.abs().mean(1, keepdim=True)
        tm = k * mean_scale + 1e-30
        tr = 2 * k * rrstd                # var's terms are all positive
        ty = k * (w.double().abs() * ((xd - rmean).abs() * rrstd +
                                      rrstd * mean_scale) * 2 +
                  b.double().abs()) + 1e-30
        what = "layer norm %dx%d" % (m, n)
        # The mean of numbers around 0 is itself near 0: its budget is
        # against the magnitudes summed, not the mean, so no vacuity check.
        compare(y, ty, want_y, ry, what + " y")
        compare(mean, tm, want_mean.reshape(m, 1), rmean, what + " mean",
                vacuity=float("inf"))
        compare(rstd, tr, want_rstd.reshape(m, 1), rrstd, what + " rstd")


# ---- runner ----------------------------------------------------------------------

def main():
    print("fz %s from %s, torch %s on %s, seed %d" % (
        fz.version(), fz.lib().path, torch.__version__,
        torch.cuda.get_device_name(DEV), SEED))
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    only = sys.argv[1:]
    passed = failed = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        try:
            fn()
            torch.cuda.synchronize()
            passed += 1
            print("PASS %s" % name)
        except Exception as e:  # report every test, then fail
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
    if passed + failed == 0:
        print("no test matched %r" % (only,))
        return 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
