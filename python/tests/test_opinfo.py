#!/usr/bin/env python3
"""fz's ops against PyTorch's own OpInfo samples.

For every fz op with a PyTorch counterpart (TABLE below: the fd.ops name,
the OpInfo name, how a sample maps to the op's operands), every entry of
torch.testing._internal.common_methods_invocations.op_db with that name
(each variant), every dtype both support (fz: f64 f32 f16 bf16 i64 i32 i8
bool), and every sample of `op.sample_inputs("cuda", dtype)`: a
FusionDefinition computing the op on the sample's operands runs, and its
result must equal eager PyTorch's (torch.testing.assert_close, equal
dtype, NaNs equal; reductions get an atol scaled by the number of
elements reduced, see fzcheck.py).

A sample fz cannot express is counted as unsupported, with its reason:
out=, kwargs the fz op has no counterpart for (alpha != 1, rounding_mode,
approximate="tanh", memory_format other than preserve_format), tensors
off the GPU or of other dtypes, 0-dim tensors mixed with tensors of
another dtype (PyTorch promotes those by category only). A 0-dim tensor
otherwise takes part as a [1] tensor (fz tensors have rank >= 1), and a
result of only 0-dim operands is read back as 0-dim. An error raised by
fz when running a sample is a failure. Ops that fd.ops lacks are left
out (hasattr), so ops added to fz later are picked up by name.

PyTorch's test package imports `expecttest`, which a plain PyTorch
install may lack; a minimal stand-in is put in sys.modules first.

Prints a table per op (passed / failed / unsupported samples), the
reasons for unsupported samples, and the first failures; exits 1 on any
failure. Run from the repository root:
    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_opinfo.py
        [--ops exp,add,nn.functional.gelu,...] [--reference] [--show N]
--reference adds each OpInfo's reference_inputs (more and harder
samples: extremal values, type promotion). Without torch, CUDA or a GPU
it prints "SKIPPED: ..." and exits 77. Registered in ctest as
gpu/python_opinfo.
"""

import argparse
import collections
import os
import sys
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import fzcheck  # noqa: E402

torch = fzcheck.require_torch_cuda()

import fz  # noqa: E402

FZ_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16,
             torch.int64, torch.int32, torch.int8, torch.bool]


class Entry:
    """fd.ops.<fz> computes OpInfo <torch>: `kind` says how a sample's
    input, args and kwargs become operands; `accepts` maps each kwarg the
    fz op implements to the values it implements (those are dropped),
    None to pass every kwarg on to the fz op; `target` is a cast's dtype."""

    def __init__(self, fz_name, torch_name, kind, accepts=(), target=None):
        self.fz = fz_name
        self.torch = torch_name
        self.kind = kind
        self.accepts = dict(accepts) if accepts is not None else None
        self.target = target


def _same(names, kind, accepts=()):
    return [Entry(n, n, kind, accepts) for n in names.split()]


TABLE = (
    _same("neg abs exp exp2 log log2 sqrt rsqrt reciprocal sin cos tanh "
          "sigmoid erf floor ceil isnan logical_not bitwise_not", "unary")
    + [Entry("round", "round", "unary", {"decimals": (0,)}),
       Entry("relu", "nn.functional.relu", "unary", {"inplace": (False,)}),
       Entry("gelu", "nn.functional.gelu", "unary",
             {"approximate": ("none",)}),
       Entry("silu", "nn.functional.silu", "unary", {"inplace": (False,)})]
    # Ops being added to fz under these names; used once fd.ops has them.
    + _same("log1p expm1 tan atan asin acos sinh cosh asinh acosh atanh "
            "erfc erfinv lgamma trunc sign frac isinf isfinite signbit",
            "unary")
    + [Entry("nan_to_num", "nan_to_num", "unary", None)]
    + [Entry("add", "add", "binary", {"alpha": (1,)}),
       Entry("sub", "sub", "binary", {"alpha": (1,)}),
       Entry("div", "div", "binary", {"rounding_mode": (None,)})]
    + _same("mul pow maximum minimum remainder eq ne lt le gt ge "
            "logical_and logical_or", "binary")
    + _same("atan2 fmod hypot bitwise_and bitwise_or bitwise_xor "
            "bitwise_left_shift bitwise_right_shift logical_xor", "binary")
    + [Entry("where", "where", "where"), Entry("clamp", "clamp", "clamp")]
    + _same("sum prod amax amin mean", "reduce")
    + [Entry("cast", name, "cast", {"memory_format": (torch.preserve_format,)},
             target)
       for name, target in [("double", torch.float64), ("float", torch.float32),
                            ("half", torch.float16),
                            ("bfloat16", torch.bfloat16),
                            ("long", torch.int64), ("int", torch.int32),
                            ("char", torch.int8), ("bool", torch.bool)]]
)


class Unsupported(Exception):
    """A sample fz cannot express (not a failure)."""


# ---- from a sample to operands and an fz op ---------------------------------


def _kwargs(sample, entry, consumed=()):
    """The kwargs to pass on to the fz op; Unsupported for any it lacks."""
    kw = {k: v for k, v in sample.kwargs.items() if k not in consumed}
    if "out" in kw:
        raise Unsupported("out=")
    if entry.accepts is None:
        return kw
    for k, v in kw.items():
        if k not in entry.accepts or not any(
                v is a or (type(v) is type(a) and v == a)
                for a in entry.accepts[k]):
            raise Unsupported("%s=%r" % (k, v))
    return {}


def _positional(sample, n, what):
    if len(sample.args) != n:
        raise Unsupported("%d positional args for %s" % (len(sample.args), what))
    return list(sample.args)


def plan(entry, sample):
    """(operands, call(ops, values) -> fz tensor, pointwise, key, n):
    the operands in the fz op's order (tensors and numbers), the call that
    records the op, whether it is pointwise, a key of what the call bakes
    in besides the operands, and the number of elements each result
    reduces (1 for pointwise ops)."""
    kind, name = entry.kind, entry.fz
    if kind == "unary":
        _positional(sample, 0, name)
        kw = _kwargs(sample, entry)
        return ([sample.input], lambda ops, v: getattr(ops, name)(v[0], **kw),
                True, repr(sorted(kw.items())), 1)
    if kind == "binary":
        (other,) = _positional(sample, 1, name)
        _kwargs(sample, entry)
        return ([sample.input, other],
                lambda ops, v: getattr(ops, name)(v[0], v[1]), True, "", 1)
    if kind == "where":
        cond, other = _positional(sample, 2, name)
        _kwargs(sample, entry)
        if not (isinstance(cond, torch.Tensor) and cond.dtype == torch.bool):
            raise Unsupported("where sample without a bool condition first")
        return ([cond, sample.input, other],
                lambda ops, v: ops.where(v[0], v[1], v[2]), True, "", 1)
    if kind == "clamp":
        args = list(sample.args) + [None] * (2 - len(sample.args))
        if len(args) > 2:
            raise Unsupported("%d positional args" % len(sample.args))
        lo = sample.kwargs.get("min", args[0])
        hi = sample.kwargs.get("max", args[1])
        _kwargs(sample, entry, consumed=("min", "max"))
        if lo is None or hi is None:
            raise Unsupported("clamp with one bound")
        return ([sample.input, lo, hi],
                lambda ops, v: ops.clamp(v[0], v[1], v[2]), True, "", 1)
    if kind == "cast":
        _positional(sample, 0, name)
        _kwargs(sample, entry)
        target = entry.target
        return ([sample.input], lambda ops, v: ops.cast(v[0], target), True,
                str(target), 1)
    if kind == "reduce":
        return _plan_reduce(entry, sample)
    raise ValueError(kind)


def _plan_reduce(entry, sample):
    x = sample.input
    args = list(sample.args)
    if len(args) > 2:
        raise Unsupported("%d positional args" % len(args))
    dim = args[0] if args else sample.kwargs.get("dim")
    keepdim = args[1] if len(args) > 1 else sample.kwargs.get("keepdim", False)
    dtype = sample.kwargs.get("dtype")
    _kwargs(sample, entry, consumed=("dim", "keepdim", "dtype"))
    if not isinstance(x, torch.Tensor):
        raise Unsupported("input is not a tensor")
    if dim is None:
        dims = list(range(x.dim()))
    elif isinstance(dim, int):
        dims = [dim]
    elif isinstance(dim, (list, tuple)):
        dims = list(dim)  # [] reduces every axis, as in PyTorch
    else:
        raise Unsupported("dim=%r" % (dim,))
    extra = {}
    if dtype is not None:
        if entry.fz == "mean":
            raise Unsupported("mean(dtype=)")
        if dtype not in FZ_DTYPES:
            raise Unsupported("dtype=%s" % dtype)
        extra["dtype"] = dtype
    n = 1
    for d in dims:
        n *= x.shape[d] if x.dim() else 1  # a 0-dim tensor is one element
    name = entry.fz
    whole = dim is None
    return ([x], lambda ops, v: getattr(ops, name)(
        v[0], dims=None if whole else dims, keepdim=bool(keepdim), **extra),
        False, repr((dims, whole, bool(keepdim), dtype)), n)


# ---- running ----------------------------------------------------------------


def _operand_key(v):
    if isinstance(v, torch.Tensor):
        return ("t", v.dtype, v.dim())
    return ("n", type(v).__name__, repr(v))


def check_operands(operands, pointwise, condition=None, rank0_ok=False):
    """The tensors among operands, and whether all of them are 0-dim;
    Unsupported for operands fz cannot take. `condition` is the index of
    an operand that takes no part in type promotion (where's)."""
    tensors = [v for v in operands if isinstance(v, torch.Tensor)]
    if not tensors:
        raise Unsupported("no tensor operand")
    for v in operands:
        if isinstance(v, torch.Tensor):
            if v.device.type != "cuda":
                raise Unsupported("a %s tensor" % v.device.type)
            if v.dtype not in FZ_DTYPES:
                raise Unsupported("a %s tensor" % v.dtype)
            if v.dim() > 8:
                raise Unsupported("rank %d" % v.dim())
        elif isinstance(v, bool) or isinstance(v, (int, float)):
            if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63:
                raise Unsupported("integer literal beyond int64")
        else:
            raise Unsupported("a %s operand" % type(v).__name__)
    zero = [t for t in tensors if t.dim() == 0]
    if zero and not pointwise and not rank0_ok:
        raise Unsupported("0-dim input")
    # Lifted to [1], a 0-dim tensor would promote as a ranked one: that
    # changes nothing where the ranked operands already have its dtype.
    promoting = [v for i, v in enumerate(operands)
                 if i != condition and isinstance(v, torch.Tensor)]
    ranked = {t.dtype for t in promoting if t.dim() > 0}
    if ranked and any(t.dim() == 0 and t.dtype not in ranked
                      for t in promoting):
        raise Unsupported("0-dim tensor of another dtype than the others")
    return tensors, len(zero) == len(tensors)


def run_fz(entry, operands, call, pointwise, key, cache):
    rank0 = 0 if entry.kind == "reduce" else 1
    tensors, all_zero = check_operands(
        operands, pointwise, 0 if entry.kind == "where" else None,
        rank0_ok=rank0 == 0)
    ckey = (entry.fz, entry.torch, key,
            tuple(_operand_key(v) for v in operands))
    fd = cache.get(ckey)
    if fd is None:
        fd = fz.FusionDefinition(entry.fz)
        try:
            with fd:
                # a reduction's 0-dim input stays rank 0, a scalar input
                # (fz reduces rank-0 values as PyTorch does); elsewhere [1]
                vals = [(fd.define_scalar(v.dtype) if v.dim() == 0
                         and rank0 == 0 else
                         fd.define_tensor([-1] * max(rank0, v.dim()),
                                          dtype=v.dtype))
                        if isinstance(v, torch.Tensor) else v
                        for v in operands]
                fd.add_output(call(fd.ops, vals))
        except (TypeError, ValueError, AttributeError) as e:
            raise Unsupported("fd.ops.%s: %s" % (entry.fz, e))
        cache[ckey] = fd
    (out,) = fd.execute([t.reshape(1) if t.dim() == 0 and rank0 else t
                         for t in tensors])
    if pointwise and all_zero:
        out = out.reshape(())
    return out


def compare(entry, got, want, n, sample):
    if not isinstance(want, torch.Tensor):
        raise Unsupported("eager returned %s" % type(want).__name__)
    scale = 0.0
    if n > 1:
        x = sample.input
        scale = fzcheck.magnitude(x.double() if x.is_floating_point() else x)
    rtol, atol = fzcheck.tolerances(want.dtype, n, scale)
    if entry.fz == "prod" and want.is_floating_point():
        # A product's error is relative and grows with its length.
        rtol += 4 * n * (2.0 ** -52 if want.dtype == torch.float64
                         else 2.0 ** -23)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol,
                               equal_nan=True, check_dtype=True,
                               check_device=True)


def describe(sample):
    def one(v):
        if isinstance(v, torch.Tensor):
            return "%s%s%s" % (str(v.dtype).replace("torch.", ""),
                               list(v.shape),
                               "" if v.is_contiguous() else " strided")
        return repr(v)
    parts = [one(sample.input)] + [one(a) for a in sample.args]
    parts += ["%s=%s" % (k, one(v)) for k, v in sample.kwargs.items()]
    return "(%s)" % ", ".join(parts)


# ---- PyTorch's OpInfo database ----------------------------------------------


def _expecttest_stand_in():
    """What torch.testing._internal.common_utils takes from expecttest:
    a TestCase base class (with assertExpectedInline) and ACCEPT."""
    m = types.ModuleType("expecttest")

    class TestCase(unittest.TestCase):
        longMessage = True

        def assertExpectedInline(self, actual, expect, skip=0):
            self.assertEqual(actual, expect)

        def assertExpectedRaisesInline(self, exc_type, callable, expect,
                                       *args, **kwargs):
            with self.assertRaises(exc_type) as cm:
                callable(*args, **kwargs)
            self.assertEqual(str(cm.exception), expect)

    def assert_expected_inline(actual, expect, skip=0):
        assert actual == expect, "%r != %r" % (actual, expect)

    m.TestCase = TestCase
    m.ACCEPT = False
    m.assert_expected_inline = assert_expected_inline
    return m


def load_op_db():
    try:
        import expecttest  # noqa: F401
    except ImportError:
        sys.modules["expecttest"] = _expecttest_stand_in()
    argv = sys.argv
    sys.argv = argv[:1]   # the test package parses the command line
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as e:
        fzcheck.skip("torch.testing._internal does not import here: %s" % e)
    finally:
        sys.argv = argv
    return op_db


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="",
                    help="fz op or OpInfo names, comma-separated")
    ap.add_argument("--reference", action="store_true",
                    help="also each OpInfo's reference_inputs")
    ap.add_argument("--show", type=int, default=3,
                    help="failures shown per op (default 3)")
    args = ap.parse_args()
    only = [o for o in args.ops.split(",") if o]

    op_db = load_op_db()
    by_name = collections.defaultdict(list)
    for op in op_db:
        by_name[op.name].append(op)
    probe = fz.FusionDefinition("probe").ops
    print("fz %s, torch %s on %s; %d OpInfos" % (
        fz.version(), torch.__version__, torch.cuda.get_device_name(), len(op_db)))

    rows, absent, no_opinfo = [], [], []
    cache = {}
    for entry in TABLE:
        if only and entry.fz not in only and entry.torch not in only:
            continue
        if not hasattr(probe, entry.fz):
            absent.append(entry.fz)
            continue
        if entry.torch not in by_name:
            no_opinfo.append(entry.torch)
            continue
        for op in by_name[entry.torch]:
            label = op.name + ("." + op.variant_test_name
                               if op.variant_test_name else "")
            counts = collections.Counter()
            reasons = collections.Counter()
            shown = 0
            try:
                supported = set(op.supported_dtypes("cuda"))
            except Exception as e:  # an OpInfo that cannot say
                reasons["supported_dtypes: %s" % e] += 1
                supported = set()
            dtypes = [d for d in FZ_DTYPES if d in supported]
            for dtype in dtypes:
                try:
                    samples = list(op.sample_inputs("cuda", dtype))
                    if args.reference:
                        samples += list(op.reference_inputs("cuda", dtype))
                except Exception as e:  # PyTorch's generator, not fz
                    counts["unsupported"] += 1
                    reasons["no samples for %s: %s" % (dtype, e)] += 1
                    continue
                for sample in samples:
                    what = "%s %s %s" % (label, dtype, describe(sample))
                    try:
                        operands, call, pointwise, key, n = plan(entry, sample)
                        try:
                            want = op(sample.input, *sample.args,
                                      **sample.kwargs)
                        except Exception as e:
                            raise Unsupported("eager raised %s"
                                              % type(e).__name__)
                        got = run_fz(entry, operands, call, pointwise, key,
                                     cache)
                        compare(entry, got, want, n, sample)
                        counts["passed"] += 1
                    except Unsupported as e:
                        counts["unsupported"] += 1
                        reasons[str(e)] += 1
                    except Exception as e:  # a wrong value or an fz error
                        counts["failed"] += 1
                        msg = "%s: %s: %s" % (what, type(e).__name__,
                                              " ".join(str(e).split())[:400])
                        if shown < args.show:
                            print("FAIL " + msg)
                            shown += 1
            rows.append((entry.fz, label, dtypes, counts, reasons))
            cache.clear()   # frees this OpInfo's compiled kernels

    print("\n| fz op | OpInfo | dtypes | passed | failed | unsupported |")
    print("|---|---|---|---|---|---|")
    for fz_name, label, dtypes, c, _ in rows:
        names = " ".join(fz.dtype_name(d) for d in dtypes) or "—"
        print("| %s | %s | %s | %d | %d | %d |" % (
            fz_name, label, names, c["passed"], c["failed"], c["unsupported"]))
    print("\nunsupported samples, by reason:")
    for fz_name, label, _, _, reasons in rows:
        if reasons:
            print("  %s: %s" % (label, "; ".join(
                "%s (%d)" % (r, k) for r, k in reasons.most_common(4))))
    if absent:
        print("\nnot in fd.ops (left out): %s" % " ".join(absent))
    if no_opinfo:
        print("no OpInfo in this PyTorch: %s" % " ".join(no_opinfo))
    total = collections.Counter()
    for row in rows:
        total.update(row[3])
    print("\n%d OpInfo entries: %d samples passed, %d failed, %d unsupported"
          % (len(rows), total["passed"], total["failed"], total["unsupported"]))
    return 1 if total["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
