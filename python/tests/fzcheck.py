"""What the torch.compile tests (test_backend.py, test_models.py,
test_opinfo.py) share: the skip rule, the seed, a small test runner, and
comparisons of fz's results with eager PyTorch's.

Importing this module needs no torch; `require_torch_cuda()` prints
"SKIPPED: ..." and exits 77 without torch or a GPU, as every Python test
of fz does.

Tolerances. A value that comes out of a reduction of n terms (a sum, a
mean, a norm's statistics, a gradient summed over rows) may differ from
eager's by the order of accumulation: about eps(accumulator) * sqrt(n)
times the terms' magnitude. So `tolerances(dtype, n, scale)` starts from
torch.testing.assert_close's defaults for the result's dtype and adds
    16 * eps(acc) * sqrt(n) * scale          (acc: f64 for f64, else f32)
and, for 16-bit results, one rounding of the result's dtype at `scale`
(eager rounds each intermediate to f16/bf16, a fused kernel keeps f32).
`scale` is the magnitude of the values involved, by default the largest
|expected| element.
"""

import math
import os
import sys
import time

SKIP = 77


def skip(why):
    print("SKIPPED: %s" % why)
    sys.exit(SKIP)


def require_torch_cuda():
    """torch, or exit 77 without it or without a GPU."""
    try:
        import torch
    except ImportError as e:
        skip("no torch (%s)" % e)
    if not torch.cuda.is_available():
        skip("no GPU (torch.cuda.is_available() is False)")
    return torch


def seed():
    """FZ_TEST_SEED, else a fresh one (printed by the tests)."""
    return int(os.environ.get("FZ_TEST_SEED", time.time_ns() % (1 << 31)))


class Skipped(Exception):
    """Raised by a test that cannot run here (e.g. needs a second GPU)."""


def run_tests(namespace, only, before_each=None):
    """Runs every test_* function of `namespace` (a module's globals),
    or those named in `only`; prints PASS/FAIL/SKIP per test and a
    summary; returns the exit status (1 on any failure)."""
    tests = [(k, v) for k, v in sorted(namespace.items())
             if k.startswith("test_") and callable(v)]
    unknown = [o for o in only if o not in dict(tests)]
    if unknown:
        print("unknown tests: %s" % ", ".join(unknown))
        return 2
    failed = passed = skipped = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        if before_each:
            before_each()
        try:
            fn()
            _synchronize()
            passed += 1
            print("PASS %s" % name)
        except Skipped as e:
            skipped += 1
            print("SKIP %s: %s" % (name, e))
        except Exception as e:  # report every test, then fail
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


def _synchronize():
    import torch
    torch.cuda.synchronize()


# ---- comparisons -------------------------------------------------------------


def _bases():
    import torch
    # torch.testing.assert_close's defaults, and each dtype's epsilon.
    return {
        torch.float64: (1e-7, 1e-7, 2.0 ** -52),
        torch.float32: (1.3e-6, 1e-5, 2.0 ** -23),
        torch.float16: (1e-3, 1e-5, 2.0 ** -10),
        torch.bfloat16: (1.6e-2, 1e-5, 2.0 ** -7),
    }


def tolerances(dtype, n=1, scale=1.0):
    """(rtol, atol) for a result of `dtype` behind reductions of length n
    over values of magnitude `scale` (see the module's comment). Integer
    and bool results are compared exactly."""
    import torch
    bases = _bases()
    if dtype not in bases:
        return 0.0, 0.0
    rtol, atol, eps = bases[dtype]
    acc = bases[torch.float64 if dtype == torch.float64 else torch.float32][2]
    atol += 16 * acc * math.sqrt(max(n, 1)) * scale
    if dtype in (torch.float16, torch.bfloat16):
        atol += eps * scale
    return rtol, atol


def magnitude(t):
    import torch
    if t.numel() == 0 or not t.is_floating_point():
        return 0.0
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def same_layout(a, b):
    """Equal strides on every axis of size > 1 (a size-1 axis' stride
    means nothing)."""
    return all(sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride())
               if n > 1)


def check(actual, expected, what, n=1, scale=None, rtol=None, atol=None,
          layout=True, precision=None):
    """actual == expected in shape, dtype, (with layout) strides, and
    values within tolerances(precision or the dtype, n, scale) unless
    rtol/atol are given. `precision` is the dtype the values were computed
    in where that is coarser than the result's (an f32 gradient of bf16
    autocast work). NaNs must match."""
    import torch
    if not isinstance(actual, torch.Tensor):
        raise AssertionError("%s: got %r, expected a tensor" % (what, actual))
    if actual.shape != expected.shape:
        raise AssertionError("%s: shape %s, eager %s" % (
            what, tuple(actual.shape), tuple(expected.shape)))
    if actual.dtype != expected.dtype:
        raise AssertionError("%s: dtype %s, eager %s" % (
            what, actual.dtype, expected.dtype))
    if actual.device != expected.device:
        raise AssertionError("%s: on %s, eager on %s" % (
            what, actual.device, expected.device))
    if layout and not same_layout(actual, expected):
        raise AssertionError("%s: strides %s, eager %s (shape %s)" % (
            what, actual.stride(), expected.stride(), tuple(expected.shape)))
    if scale is None:
        scale = magnitude(expected)
    r, a = tolerances(precision or expected.dtype, n, scale)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    try:
        torch.testing.assert_close(actual, expected, rtol=r, atol=a,
                                   equal_nan=True)
    except AssertionError as e:
        raise AssertionError("%s (rtol %.3g, atol %.3g, n %d): %s"
                             % (what, r, a, n, e)) from None


def flatten(out):
    """The tensors of a (nested) tuple/list result, in order."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    return [out]
