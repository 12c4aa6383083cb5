"""Tests of opinfo_map.py, test_opinfo.py's mapping of PyTorch OpInfo
samples to fz ops, that need neither torch nor a GPU: stand-in tensors
and samples shaped as PyTorch's OpInfo samples of argmax/argmin, var and
var_mean, gather, index_select, take_along_dim, cat, nn.functional.pad,
narrow and slice (and the reductions' rank-0 and dim=[] samples). Each
sample either is unsupported for the reason expected, or records a
FusionDefinition that libfz builds (verifier, canonicalize, alloc-order)
and whose outputs have the sizes and dtypes of PyTorch's results
(fz_bind_inputs, fz_output_sizes). The values are test_opinfo.py's to
check, on a GPU.

    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_opinfo_map.py

ctest runs it as unit/python_opinfo_map. Plain asserts; no pytest needed.
"""

import ctypes
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import fz  # noqa: E402
from fz import _lib  # noqa: E402
from fz.fusion import _NeedStatic  # noqa: E402
from fz.ops import Ops  # noqa: E402

import opinfo_map as om  # noqa: E402

S, M = 5, 10   # PyTorch's OpInfo sizes
TORCH_NAMES = {fz.dtype_name(n): n for n in om.FZ_DTYPES}


# ---- stand-ins for torch tensors and OpInfo samples ----------------------------


class DType:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__


class Device:
    def __init__(self, kind):
        self.type = kind


class Item:
    def __init__(self, v):
        self.v = v

    def item(self):
        return self.v


class T:
    """A tensor's shape, dtype, device and (for indices) values."""

    def __init__(self, shape, dtype="float32", values=None, device="cuda"):
        self.shape = tuple(shape)
        self.dtype = DType(dtype)
        self.device = Device(device)
        self.values = list(values) if values is not None else [0] * \
            self.numel()

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for e in self.shape:
            n *= e
        return n

    def stride(self):
        out, s = [], 1
        for e in reversed(self.shape):
            out.insert(0, s)
            s *= max(e, 1)
        return tuple(out)

    def reshape(self, *shape):
        return T(shape, self.dtype.name, self.values, self.device.type)

    def min(self):
        return Item(min(self.values))

    def max(self):
        return Item(max(self.values))

    def item(self):
        return self.values[0]

    def tolist(self):
        return list(self.values)


def idx(shape, high, dtype="int64", offset=0):
    """An index tensor of `shape` with values in [offset, offset + high)."""
    t = T(shape, dtype)
    t.values = [offset + i % high for i in range(t.numel())]
    return t


class Sample:
    def __init__(self, input, *args, **kwargs):
        self.input = input
        self.args = args
        self.kwargs = kwargs


def entry(torch_name):
    return next(e for e in om.TABLE if e.torch == torch_name)


# ---- building a plan's fusion with libfz --------------------------------------------


class HostTensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8),
                ("data", ctypes.c_void_p)]


class Bindings(ctypes.Structure):
    _fields_ = [("num_symbols", ctypes.c_int),
                ("values", ctypes.POINTER(ctypes.c_int64))]


def _declare(lib):
    lib.fz_bind_inputs.restype = ctypes.c_int
    lib.fz_bind_inputs.argtypes = [ctypes.c_void_p, ctypes.POINTER(HostTensor),
                                   ctypes.c_int, ctypes.POINTER(Bindings),
                                   ctypes.POINTER(_lib.Error)]
    lib.fz_bindings_free.restype = None
    lib.fz_bindings_free.argtypes = [ctypes.POINTER(Bindings)]
    lib.fz_output_sizes.restype = ctypes.c_int
    lib.fz_output_sizes.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                    ctypes.POINTER(Bindings),
                                    ctypes.c_int64 * 8,
                                    ctypes.POINTER(_lib.Error)]


def results(torch_name, sample):
    """[(shape, dtype name)] of the fusion sample's plan builds, as
    test_opinfo.py reads the results back; Unsupported as the plan says."""
    p = om.plan(entry(torch_name), sample)
    tensors = om.check_operands(p)
    fd = fz.FusionDefinition("t")
    with fd:
        om.define(fd, p)
    args = om.fz_inputs(p, tensors)
    try:
        fusion, _ = fd._build(fd._pattern(args))
    except _NeedStatic:   # as FusionDefinition.execute: exact sizes
        fd._static = True
        fusion, _ = fd._build(fd._pattern(args))
    lib = _lib.lib()
    _declare(lib)
    err = _lib.Error()
    try:
        host = (HostTensor * len(args))()
        for h, a in zip(host, args):
            h.dtype = _lib.DTYPES[fz.dtype_name(a.dtype)][0]
            h.rank = a.dim()
            for k, e in enumerate(a.shape):
                h.sizes[k] = e
        b = Bindings()
        if lib.fz_bind_inputs(fusion, host, len(args), ctypes.byref(b),
                              ctypes.byref(err)):
            _lib.raise_error(err, "bind")
        out = []
        try:
            for i in range(lib.fz_fusion_num_outputs(fusion)):
                v = lib.fz_fusion_output(fusion, i)
                sizes = (ctypes.c_int64 * 8)()
                if lib.fz_output_sizes(fusion, i, ctypes.byref(b), sizes,
                                       ctypes.byref(err)):
                    _lib.raise_error(err, "sizes")
                shape = tuple(sizes[:lib.fz_value_rank(v)])
                if p.zero_result:
                    assert shape == (1,), shape
                    shape = ()
                out.append((shape, TORCH_NAMES[
                    _lib.DTYPE_NAMES[lib.fz_value_dtype(v)]]))
        finally:
            lib.fz_bindings_free(ctypes.byref(b))
        return out
    finally:
        lib.fz_fusion_destroy(fusion)


def unsupported(torch_name, sample):
    try:
        om.check_operands(om.plan(entry(torch_name), sample))
    except om.Unsupported as e:
        return str(e)
    raise AssertionError("%s %r: supported" % (torch_name, sample.kwargs))


def expect(torch_name, sample, *want):
    got = results(torch_name, sample)
    assert got == list(want), "%s(%s, %r, %r): %r, expected %r" % (
        torch_name, sample.input.shape if hasattr(sample.input, "shape")
        else sample.input, sample.args, sample.kwargs, got, list(want))


# ---- the table ----------------------------------------------------------------------


def test_table_covers_fd_ops():
    names = {e.fz for e in om.TABLE}
    missing = (set(Ops._UNARY) | set(Ops._BINARY) |
               set(Ops._ALIASES) - {"arctan2"}) - names
    assert not missing, missing
    for op in ("argmax argmin var var_mean mean gather index_select "
               "take_along_dim cat pad slice nan_to_num where clamp").split():
        assert op in names, op
    for e in om.TABLE:
        assert e.group in om.GROUPS, e.kind
        assert hasattr(fz.FusionDefinition("probe").ops, e.fz), e.fz


# ---- reductions (PyTorch's _generate_reduction_inputs and kwargs) ------------


def reduced(shape, dims, keepdim):
    if not shape:
        return ()
    axes = range(len(shape)) if dims is None or dims == () else \
        [d % len(shape) for d in ((dims,) if isinstance(dims, int) else dims)]
    return tuple(1 if k in axes else e for k, e in enumerate(shape)
                 if keepdim or k not in axes)


def reduction_kwargs(ndim, multiple):
    yield {}
    yield {"dim": 0, "keepdim": True}
    yield {"dim": -1, "keepdim": False}
    if ndim > 2:
        yield {"dim": ndim // 2, "keepdim": True}
    if multiple:
        yield {"dim": tuple(range(ndim)), "keepdim": False}
        if ndim > 1:
            yield {"dim": (0, -1), "keepdim": True}
        if ndim > 3:
            yield {"dim": tuple(range(1, ndim, 2)), "keepdim": False}


def test_reductions_of_rank0_and_every_axis():
    for shape in [(), (2,), (3, 5), (3, 2, 1, 2)]:
        for name, multiple, dtype, out in [
                ("sum", True, "int32", "int64"),
                ("amax", True, "bfloat16", "bfloat16"),
                ("mean", True, "float16", "float16"),
                ("argmax", False, "float32", "int64"),
                ("argmin", False, "int8", "int64")]:
            for kw in reduction_kwargs(len(shape), multiple):
                want = reduced(shape, kw.get("dim"), kw.get("keepdim", False))
                expect(name, Sample(T(shape, dtype), **kw), (want, out))
    # dim=[] reduces every axis (sum, mean); argmax(dim=None, keepdim)
    # keeps every axis as 1
    expect("sum", Sample(T((3, 5)), dim=[]), ((), "float32"))
    expect("mean", Sample(T((3, 5)), dim=[], keepdim=True),
           ((1, 1), "float32"))
    expect("argmax", Sample(T((3, 5)), keepdim=True), ((1, 1), "int64"))
    expect("argmin", Sample(T(()), 0, True), ((), "int64"))


def test_var_samples():
    nd, one = T((S, S, S)), T((S,))
    for name in ("var", "var_mean"):
        def want(shape):
            return [(shape, "float32")] * (2 if name == "var_mean" else 1)
        expect(name, Sample(nd), *want(()))
        expect(name, Sample(nd, dim=1), *want((S, S)))
        expect(name, Sample(nd, dim=1, unbiased=True, keepdim=True),
               *want((S, 1, S)))
        expect(name, Sample(one, dim=0, unbiased=True, keepdim=True),
               *want((1,)))
        expect(name, Sample(one, dim=0, unbiased=False, keepdim=False),
               *want(()))
        expect(name, Sample(nd, dim=(1,), correction=1.3), *want((S, S)))
        expect(name, Sample(nd, dim=(1,), correction=S // 2), *want((S, S)))
        expect(name, Sample(nd, dim=None, correction=0, keepdim=True),
               *want((1, 1, 1)))
        expect(name, Sample(nd, dim=None, correction=None), *want(()))
        expect(name, Sample(nd, correction=0.5, keepdim=True),
               *want((1, 1, 1)))
        expect(name, Sample(T((3, 4, 5)), dim=-3), *want((4, 5)))
        expect(name, Sample(T((S, S)), True), *want(()))     # "unbiased"
        expect(name, Sample(T((S,), "bfloat16"), False),
               *[((), "bfloat16")] * len(want(())))
        expect(name, Sample(T(())), *want(()))
        # torch divides by count - correction for a negative one too
        expect(name, Sample(nd, dim=None, correction=-1), *want(()))
        assert "both" in unsupported(name, Sample(nd, unbiased=True,
                                                  correction=0))
    assert om.var_arguments(Sample(nd, 1, False, True)) == ([1], 0, True)
    assert om.var_arguments(Sample(nd)) == (None, 1, False)
    assert om.var_arguments(Sample(nd, dim=[], correction=2)) == ([], 2, False)


# ---- indexing --------------------------------------------------------------------------


def test_gather_samples():
    expect("gather", Sample(T((M, S)), 0, idx((S, S), M)), ((S, S), "float32"))
    expect("gather", Sample(T((M, S), "int8"), 0, idx((S, S), M, "int32")),
           ((S, S), "int8"))
    expect("gather", Sample(T((M, S), "bool"), 1, idx((M, S // 2), S)),
           ((M, S // 2), "bool"))
    # 0-dim input and index: lifted to [1]; the result has the index's shape
    expect("gather", Sample(T(()), 0, idx((1,), 1)), ((1,), "float32"))
    expect("gather", Sample(T(()), 0, idx((), 1)), ((), "float32"))
    expect("gather", Sample(T((S,)), 0, idx((), S)), ((), "float32"))
    assert unsupported("gather", Sample(T((S,)), 0, T((0,), "uint8"))) == \
        "uint8 index (fz indexes with int64 or int32)"
    assert "out of range" in unsupported(
        "gather", Sample(T((M, S)), 0, idx((S, S), M + 1)))
    assert "sparse_grad" in unsupported(
        "gather", Sample(T((M, S)), 0, idx((S, S), M), sparse_grad=True))


def test_index_select_samples():
    expect("index_select", Sample(T(()), 0, idx((1,), 1)), ((), "float32"))
    expect("index_select", Sample(T((1,), "int64"), 0, idx((1,), 1)),
           ((1,), "int64"))
    expect("index_select", Sample(T((S, S)), -1, idx((S,), S)),
           ((S, S), "float32"))
    expect("index_select", Sample(T((S, S)), 0, idx((), S, "int32")),
           ((1, S), "float32"))
    assert "out of range" in unsupported(
        "index_select", Sample(T((S, S)), 0, idx((3,), S, offset=-1)))


def test_take_along_dim_samples():
    expect("take_along_dim", Sample(T((S, S)), idx((S, S), S), 0),
           ((S, S), "float32"))
    expect("take_along_dim", Sample(T((S, S)), idx((1, S // 2), S), 1),
           ((S, S // 2), "float32"))
    expect("take_along_dim", Sample(T((1, S), "float16"),
                                    idx((S, S // 2), S), 1),
           ((S, S // 2), "float16"))
    expect("take_along_dim", Sample(T((S, S)), idx((S, S // 2), S)),
           ((S * (S // 2),), "float32"))
    expect("take_along_dim", Sample(T((S, S)), idx((S, S), S), dim=1),
           ((S, S), "float32"))
    assert "negative index" in unsupported(
        "take_along_dim", Sample(T((S, S)), idx((S, S), S, offset=-S), 1))


# ---- resize ops ------------------------------------------------------------------------


def test_cat_samples():
    def cat(a, b, **kw):
        return Sample([T(a), T(b)], **kw)
    expect("cat", cat((S, S), (S, S), dim=-1), ((S, 2 * S), "float32"))
    expect("cat", cat((S, S), (S, S), dim=1), ((S, 2 * S), "float32"))
    expect("cat", cat((M, S), (S, S), dim=0), ((M + S, S), "float32"))
    expect("cat", cat((1, 2, 3), (1, 2, 3), dim=-2), ((1, 4, 3), "float32"))
    expect("cat", cat((0, S), (S, S), dim=0), ((S, S), "float32"))
    expect("cat", cat((1,), (1,)), ((2,), "float32"))
    expect("cat", cat((0,), (0,), dim=0), ((0,), "float32"))
    expect("cat", Sample([T((2, 2, 2, 2), "int8")], 1), ((2, 2, 2, 2), "int8"))
    assert "ranks [1, 2]" in unsupported("cat", cat((0,), (S, S), dim=1))


def test_pad_samples():
    pad = "nn.functional.pad"
    expect(pad, Sample(T((1, 3, 3)), (2, 2)), ((1, 3, 7), "float32"))
    expect(pad, Sample(T((1, 3), "int32"), (0, 2, 0, 1), "constant", 2.),
           ((2, 5), "int32"))
    expect(pad, Sample(T((1, 3, 3, 3, 3), "bool"), (1, 1, 1, 1, 1, 1),
                       "constant", 1.), ((1, 3, 5, 5, 5), "bool"))
    expect(pad, Sample(T((1, 3, 4, 4)), (-1, 1, -2, 1), "constant", 1.),
           ((1, 3, 3, 4), "float32"))
    expect(pad, Sample(T((3, 3, 5, 5)), (1, 2), "constant", 1.),
           ((3, 3, 5, 8), "float32"))
    # empty inputs and results
    expect(pad, Sample(T((0, 3, 3)), (1, 2), "constant", 1.),
           ((0, 3, 6), "float32"))
    expect(pad, Sample(T((5, 3)), (-1, -2, 1, 1), "constant", 2.),
           ((7, 0), "float32"))
    assert unsupported(pad, Sample(T((1, 3, 3)), (1, 2), "reflect")) == \
        "mode='reflect' (fz pads with a constant)"
    assert om.pad_arguments(Sample(T((1, 3)), (1, 2), value=3)) == \
        ([1, 2], 3.0)


def test_narrow_and_slice_samples():
    for start in (2, T((), "int64", [2], device="cpu")):
        expect("narrow", Sample(T((S, S, S)), 1, start, 2),
               ((S, 2, S), "float32"))
    expect("narrow", Sample(T((S, S, S), "int8"), 2, 1, 2),
           ((S, S, 2), "int8"))
    expect("narrow", Sample(T((S, S, S)), -1, -3, 2), ((S, S, 2), "float32"))
    expect("narrow", Sample(T((S, S, S)), -1, 0, 0), ((S, S, 0), "float32"))
    assert "out of range" in unsupported("narrow",
                                         Sample(T((S, S, S)), 0, 4, 2))
    expect("slice", Sample(T((20, 30, 40)), dim=1, start=1, end=-2),
           ((20, 27, 40), "float32"))
    expect("slice", Sample(T((20, 30, 40)), dim=1, start=1, end=-2, step=3),
           ((20, 9, 40), "float32"))
    expect("slice", Sample(T((20, 30, 40)), dim=0, start=-10, end=-2, step=2),
           ((4, 30, 40), "float32"))
    assert om.slice_arguments(Sample(T((3,)), 0), T((3,))) == \
        ([None], [None], [1])


def test_split_chunk_tensor_split():
    assert om.pieces("split", 5, 2) == [(0, 2), (2, 4), (4, 5)]
    assert om.pieces("split", 5, [1, 3, 1]) == [(0, 1), (1, 4), (4, 5)]
    assert om.pieces("split", 0, 2) == [(0, 0)]
    assert om.pieces("chunk", 5, 2) == [(0, 3), (3, 5)]
    assert om.pieces("chunk", 6, 4) == [(0, 2), (2, 4), (4, 6)]
    assert om.pieces("tensor_split", 5, 3) == [(0, 2), (2, 4), (4, 5)]
    assert om.pieces("tensor_split", 5, [2, 4]) == [(0, 2), (2, 4), (4, 5)]
    assert om.pieces("tensor_split", 5, [4, 2, 7]) == \
        [(0, 4), (4, 4), (2, 5), (5, 5)]
    x = T((S, S, S))
    expect("split", Sample(x, 2), ((2, S, S), "float32"),
           ((2, S, S), "float32"), ((1, S, S), "float32"))
    expect("split", Sample(x, (1, 3, 1), -2), ((S, 1, S), "float32"),
           ((S, 3, S), "float32"), ((S, 1, S), "float32"))
    expect("chunk", Sample(x, S, -1), *[((S, S, 1), "float32")] * S)
    expect("tensor_split", Sample(x, T((3,), "int64", [1, 2, 3], "cpu"), 1),
           ((S, 1, S), "float32"), ((S, 1, S), "float32"),
           ((S, 1, S), "float32"), ((S, 2, S), "float32"))
    expect("tensor_split", Sample(x, T((), "int64", [1], "cpu")),
           ((S, S, S), "float32"))
    assert "eager raises" in unsupported("split", Sample(x, [1, 1]))
    expect("split_with_sizes", Sample(x, [2, 3], 2), ((S, S, 2), "float32"),
           ((S, S, 3), "float32"))


def test_dropout_where_deterministic():
    drop = "nn.functional.dropout"
    expect(drop, Sample(T((S, S), "float16"), p=0.0, training=True),
           ((S, S), "float16"))
    expect(drop, Sample(T(()), p=1.0, training=True), ((), "float32"))
    assert "random stream" in unsupported(drop, Sample(T((S,)), p=0.5))
    assert "random stream" in unsupported(drop, Sample(T((S,))))
    assert "training=False" in unsupported(
        drop, Sample(T((S,)), p=0.0, training=False))


# ---- pointwise lifting and the summary -----------------------------------------


def test_pointwise_zero_dim():
    expect("exp", Sample(T(())), ((), "float32"))
    expect("add", Sample(T((S,), "int32"), T((), "int32")), ((S,), "int32"))
    assert unsupported("add", Sample(T((S,), "int32"), T((), "int64"))) == \
        "0-dim tensor of another dtype than the others"
    assert unsupported("exp", Sample(T((S,), device="cpu"))) == "a cpu tensor"


def test_summary_is_sorted_and_serializable():
    def row(op, label, p, f, u, reasons):
        return {"op": op, "opinfo": label, "dtypes": ["f32"],
                "counts": {"passed": p, "failed": f, "unsupported": u},
                "reasons": reasons, "failures": [], "seconds": 0.5}
    s = om.summary([row("slice", "narrow", 3, 0, 1, {"a": 1}),
                    row("abs", "abs", 5, 1, 0, {}),
                    row("pad", "nn.functional.pad.reflect", 0, 0, 4,
                        {"mode='reflect'": 3, "x": 1}),
                    row("pad", "nn.functional.pad.constant", 9, 0, 0, {})])
    assert [(r["op"], r["opinfo"]) for r in s["ops"]] == [
        ("abs", "abs"), ("pad", "nn.functional.pad.constant"),
        ("pad", "nn.functional.pad.reflect"), ("slice", "narrow")]
    assert (s["passed"], s["failed"], s["unsupported"], s["entries"]) == \
        (17, 1, 5, 4)
    assert list(s["ops"][2]["unsupported_reasons"]) == ["mode='reflect'", "x"]
    assert json.loads(json.dumps(s)) == s


def main():
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print("PASS %s" % name)
        except Exception as e:  # report every test, then fail
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
    print("%d passed, %d failed" % (len(tests) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
