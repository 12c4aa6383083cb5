#!/usr/bin/env python3
"""fz's ops against PyTorch's own OpInfo samples.

For every fz op with a PyTorch counterpart (opinfo_map.TABLE: the fd.ops
name, the OpInfo name, how a sample maps to the op's operands), every
entry of torch.testing._internal.common_methods_invocations.op_db with
that name (each variant), every dtype both support (fz: f64 f32 f16 bf16
i64 i32 i8 bool), and every sample of `op.sample_inputs("cuda", dtype)`:
a FusionDefinition computing the op on the sample's operands runs, and
its results must equal eager PyTorch's (torch.testing.assert_close,
equal dtype, NaNs equal; reductions get an atol scaled by the number of
elements reduced and the input's magnitude (squared for a variance), see
fzcheck.py; argmax/argmin positions and integer results are exact).

The ops: the pointwise set, sum prod amax amin mean, argmax argmin, var
var_mean (correction, unbiased), gather index_select take_along_dim
(dim=None: flattened), cat, nn.functional.pad (constant mode), narrow
and aten slice (fd.ops.slice). opinfo_map.py turns a sample into an fz
call, or says why fz cannot express it.

A sample fz cannot express is counted as unsupported, with its reason:
out=, kwargs the fz op has no counterpart for (alpha != 1, rounding_mode,
approximate="tanh", memory_format other than preserve_format, pad modes
other than constant, a negative var correction), tensors off the GPU or
of other dtypes (index tensors: int64 or int32), indices PyTorch would
reject or wrap (take_along_dim counts negative ones from the end),
0-dim tensors mixed with tensors of another dtype (PyTorch promotes those
by category only), cat operands of different ranks (PyTorch's legacy
skip of 1-D empty ones). A 0-dim tensor of a pointwise or indexing op
takes part as a [1] tensor (fz tensors have rank >= 1) and the result
is read back as 0-dim where PyTorch's is; a reduction's stays rank 0, an
fz scalar (fz reduces rank-0 values as PyTorch does). An error raised by
fz when running a sample (an index it finds out of range included) is a
failure. Ops that fd.ops lacks are left out (hasattr), so ops added to
fz later are picked up by name.

PyTorch's test package imports `expecttest`, which a plain PyTorch
install may lack; a minimal stand-in is put in sys.modules first.

Prints a table per op sorted by name (passed / failed / unsupported
samples), the reasons for unsupported samples, and the first failures;
exits 1 on any failure. Run from the repository root:
    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_opinfo.py
        [--ops exp,add,nn.functional.gelu,...] [--groups pointwise,...]
        [--reference] [--show N] [--json FILE]
--groups picks op groups (pointwise, reduction, indexing, resize), so
that the run can be split; --reference adds each OpInfo's
reference_inputs (more and harder samples: extremal values, type
promotion); --json writes the per-op counts and unsupported reasons
(opinfo_map.summary). Without torch, CUDA or a GPU it prints
"SKIPPED: ..." and exits 77. Registered in ctest as gpu/python_opinfo.
"""

import argparse
import collections
import json
import os
import sys
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import fzcheck  # noqa: E402
import opinfo_map as om  # noqa: E402
from opinfo_map import Unsupported  # noqa: E402

torch = fzcheck.require_torch_cuda()

import fz  # noqa: E402

FZ_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16,
             torch.int64, torch.int32, torch.int8, torch.bool]


# ---- running ----------------------------------------------------------------


def run_fz(entry, p, cache):
    """fz's results for plan p, as a list (one tensor per result)."""
    tensors = om.check_operands(p)
    ckey = (entry.fz, entry.torch, p.key,
            tuple(om.operand_key(v) for v in p.operands))
    fd = cache.get(ckey)
    if fd is None:
        fd = fz.FusionDefinition(entry.fz)
        try:
            with fd:
                om.define(fd, p)
        except (TypeError, ValueError, AttributeError) as e:
            raise Unsupported("fd.ops.%s: %s" % (entry.fz, e))
        cache[ckey] = fd
    outs = fd.execute(om.fz_inputs(p, tensors))
    if p.check_indices:
        fd.check()   # an index fz finds out of range fails this sample
    if p.zero_result:
        outs = [o.reshape(()) for o in outs]
    return outs


def compare(entry, p, got, want, sample):
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    if not all(isinstance(w, torch.Tensor) for w in wants):
        raise Unsupported("eager returned %s" % type(want).__name__)
    if len(got) != len(wants):
        raise AssertionError("%d results, eager %d" % (len(got), len(wants)))
    base = 0.0
    x = sample.input
    if p.n > 1 and isinstance(x, torch.Tensor):
        base = fzcheck.magnitude(x.double() if x.is_floating_point() else x)
    for k, (g, w) in enumerate(zip(got, wants)):
        scale = base ** p.scale_pows[min(k, len(p.scale_pows) - 1)]
        rtol, atol = fzcheck.tolerances(w.dtype, p.n, scale)
        if entry.fz == "prod" and w.is_floating_point():
            # A product's error is relative and grows with its length.
            rtol += 4 * p.n * (2.0 ** -52 if w.dtype == torch.float64
                               else 2.0 ** -23)
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol,
                                   equal_nan=True, check_dtype=True,
                                   check_device=True)


def describe(sample):
    def one(v):
        if isinstance(v, torch.Tensor):
            return "%s%s%s" % (str(v.dtype).replace("torch.", ""),
                               list(v.shape),
                               "" if v.is_contiguous() else " strided")
        if isinstance(v, (list, tuple)):
            return "[%s]" % ", ".join(one(u) for u in v)
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


def run_opinfo(entry, op, args, cache):
    """One OpInfo's samples in every dtype: a row of opinfo_map.summary."""
    label = op.name + ("." + op.variant_test_name
                       if op.variant_test_name else "")
    counts = collections.Counter()
    reasons = collections.Counter()
    failures = []
    began = time.monotonic()
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
            try:
                # the plan first: it refuses indices eager would assert on
                p = om.plan(entry, sample)
                try:
                    want = op(sample.input, *sample.args, **sample.kwargs)
                except Exception as e:
                    raise Unsupported("eager raised %s" % type(e).__name__)
                got = run_fz(entry, p, cache)
                compare(entry, p, got, want, sample)
                counts["passed"] += 1
            except Unsupported as e:
                counts["unsupported"] += 1
                reasons[str(e)] += 1
            except Exception as e:  # a wrong value or an fz error
                counts["failed"] += 1
                msg = "%s %s %s: %s: %s" % (
                    label, dtype, describe(sample), type(e).__name__,
                    " ".join(str(e).split())[:400])
                if len(failures) < args.show:
                    print("FAIL " + msg)
                    failures.append(msg)
    return {"op": entry.fz, "opinfo": label,
            "dtypes": [fz.dtype_name(d) for d in dtypes], "counts": counts,
            "reasons": reasons, "failures": failures,
            "seconds": time.monotonic() - began}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="",
                    help="fz op or OpInfo names, comma-separated")
    ap.add_argument("--groups", default=",".join(om.GROUPS),
                    help="op groups, comma-separated, of: %s (default: all)"
                    % ", ".join(om.GROUPS))
    ap.add_argument("--reference", action="store_true",
                    help="also each OpInfo's reference_inputs")
    ap.add_argument("--show", type=int, default=3,
                    help="failures shown per op (default 3)")
    ap.add_argument("--json", metavar="FILE",
                    help="write the per-op counts and reasons to FILE")
    args = ap.parse_args()
    only = [o for o in args.ops.split(",") if o]
    groups = [g for g in args.groups.split(",") if g]
    unknown = [g for g in groups if g not in om.GROUPS]
    if unknown:
        ap.error("unknown groups %s (known: %s)"
                 % (", ".join(unknown), ", ".join(om.GROUPS)))

    op_db = load_op_db()
    by_name = collections.defaultdict(list)
    for op in op_db:
        by_name[op.name].append(op)
    probe = fz.FusionDefinition("probe").ops
    print("fz %s, torch %s on %s; %d OpInfos" % (
        fz.version(), torch.__version__, torch.cuda.get_device_name(), len(op_db)))

    rows, absent, no_opinfo = [], [], []
    cache = {}
    began = time.monotonic()
    for entry in om.TABLE:
        if entry.group not in groups:
            continue
        if only and entry.fz not in only and entry.torch not in only:
            continue
        if not hasattr(probe, entry.fz):
            absent.append(entry.fz)
            continue
        if entry.torch not in by_name:
            no_opinfo.append(entry.torch)
            continue
        for op in by_name[entry.torch]:
            rows.append(run_opinfo(entry, op, args, cache))
            cache.clear()   # frees this OpInfo's compiled kernels
            sys.stdout.flush()

    result = om.summary(rows)
    print("\n| fz op | OpInfo | dtypes | passed | failed | unsupported | s |")
    print("|---|---|---|---|---|---|---|")
    for r in result["ops"]:
        print("| %s | %s | %s | %d | %d | %d | %.1f |" % (
            r["op"], r["opinfo"], " ".join(r["dtypes"]) or "—", r["passed"],
            r["failed"], r["unsupported"], r["seconds"]))
    print("\nunsupported samples, by reason:")
    for r in result["ops"]:
        if r["unsupported_reasons"]:
            print("  %s: %s" % (r["opinfo"], "; ".join(
                "%s (%d)" % rk
                for rk in list(r["unsupported_reasons"].items())[:6])))
    if absent:
        print("\nnot in fd.ops (left out): %s" % " ".join(absent))
    if no_opinfo:
        print("no OpInfo in this PyTorch: %s" % " ".join(no_opinfo))
    result["absent"] = absent
    result["no_opinfo"] = no_opinfo
    result["groups"] = groups
    result["seconds"] = time.monotonic() - began
    print("\n%d OpInfo entries: %d samples passed, %d failed, %d unsupported "
          "(%.0f s)" % (result["entries"], result["passed"], result["failed"],
                        result["unsupported"], result["seconds"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
