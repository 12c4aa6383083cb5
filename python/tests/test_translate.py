"""The backend's translation of ATen graphs into fz fusions, without
torch or a GPU: small graphs of stand-in FX nodes (a node's target prints
as the ATen op, its meta["val"] is a stand-in fake tensor) are translated
and built into C fusions through libfz (translate.dry_build, which needs
no GPU), and the fusion text is checked. A stand-in `torch` module (only
what translate.py reads: Tensor, SymInt, SymFloat, strided, device) is
installed for this process.

    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_translate.py

ctest runs it as unit/python_translate. Plain asserts.
"""

import operator
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))

# ---- stand-ins ------------------------------------------------------------------

torch = types.ModuleType("torch")


class Tensor:
    pass


class SymInt:
    def __init__(self, expr, hint):
        self.node = types.SimpleNamespace(expr=expr, hint=hint)

    def __str__(self):
        return str(self.node.expr)


class SymFloat:
    pass


class Expr:
    def __init__(self, text, symbol):
        self.text, self.is_Symbol, self.is_Integer = text, symbol, False

    def __str__(self):
        return self.text


class Device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __str__(self):
        return "%s:%d" % (self.type, self.index)


class Dtype:
    def __init__(self, name, floating):
        self.name, self.is_floating_point = name, floating

    def __str__(self):
        return "torch." + self.name


torch.Tensor, torch.SymInt, torch.SymFloat = Tensor, SymInt, SymFloat
torch.strided = "strided"
torch.device = lambda kind, index=0: kind if isinstance(kind, Device) \
    else Device(kind, index)
sys.modules["torch"] = torch

F32 = Dtype("float32", True)
BF16 = Dtype("bfloat16", True)
I64 = Dtype("int64", False)
BOOL = Dtype("bool", False)
CUDA = Device("cuda", 0)


def hint(s):
    return s if isinstance(s, int) else s.node.hint


class Fake(Tensor):
    """A fake tensor: dtype, shape (ints or SymInts), strides, device."""

    def __init__(self, shape, dtype=F32, strides=None, device=CUDA):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.layout = torch.strided
        if strides is None:
            strides, n = [], 1
            for s in reversed(self.shape):
                strides.insert(0, n)
                n = n * s if isinstance(s, int) and isinstance(n, int) else \
                    SymInt(Expr("%s*%s" % (n, s), False), hint(n) * hint(s))
        self._strides = tuple(strides)

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._strides


class Op:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


class Node:
    def __init__(self, op, name, target=None, args=(), kwargs=None, val=None):
        self.op, self.name, self.target = op, name, target
        self.args, self.kwargs = tuple(args), dict(kwargs or {})
        self.meta = {"val": val}
        self.users = {}
        for a in self.all_input_nodes:
            a.users[self] = None

    @property
    def all_input_nodes(self):
        found = []

        def walk(x):
            if isinstance(x, Node):
                if x not in found:
                    found.append(x)
            elif isinstance(x, (list, tuple)):
                for y in x:
                    walk(y)
        walk(self.args)
        walk(list(self.kwargs.values()))
        return found


class Graph:
    def __init__(self):
        self.nodes = []

    def input(self, name, val):
        n = Node("placeholder", name, val=val)
        self.nodes.append(n)
        return n

    def call(self, target, args, val, **kwargs):
        t = target if target is operator.getitem else Op(target)
        n = Node("call_function", "n%d" % len(self.nodes), t, args, kwargs, val)
        self.nodes.append(n)
        return n

    def use(self, *nodes):
        """Marks nodes as used outside the group."""
        out = Node("output", "output", args=(list(nodes),))
        return out


from fz.dynamo import translate  # noqa: E402
from fz.dynamo.translate import (Translation, Unsupported, dry_build,  # noqa: E402
                                 node_support)


def build(g, inputs, outputs):
    group = [n for n in g.nodes if n.op == "call_function"]
    t = Translation("t", group, inputs, outputs).build()
    return t, dry_build(t)


# ---- tests ------------------------------------------------------------------------


def test_layer_norm_forward():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    w = g.input("w", Fake([8]))
    vm = g.call("aten.var_mean.correction", (x, [1]),
                (Fake([4, 1]), Fake([4, 1])), correction=0, keepdim=True)
    var = g.call(operator.getitem, (vm, 0), Fake([4, 1]))
    mean = g.call(operator.getitem, (vm, 1), Fake([4, 1]))
    eps = g.call("aten.add.Tensor", (var, 1e-5), Fake([4, 1]))
    rstd = g.call("aten.rsqrt.default", (eps,), Fake([4, 1]))
    centered = g.call("aten.sub.Tensor", (x, mean), Fake([4, 8]))
    normed = g.call("aten.mul.Tensor", (centered, rstd), Fake([4, 8]))
    y = g.call("aten.mul.Tensor", (normed, w), Fake([4, 8]))
    g.use(y, mean, rstd)
    for n in g.nodes[2:]:
        assert node_support(n) is None, (n.target, node_support(n))
    t, text = build(g, [x, w], [y, mean, rstd])
    assert t.out_plan == [("fz", 0), ("fz", 1), ("fz", 2)], t.out_plan
    assert [i.index for i in t.fz_inputs] == [0, 1]
    for op in ("var", "mean", "rsqrt", "sub", "mul", "broadcast"):
        assert op in text, (op, text)
    assert "correction(0)" in text and " sum " not in text, text
    assert "f32[4, 8]" in text and "b1" in text, text


def test_softmax_bf16():
    g = Graph()
    x = g.input("x", Fake([2, 3, 16], BF16))
    up = g.call("prims.convert_element_type.default", (x, F32), Fake([2, 3, 16]))
    m = g.call("aten.amax.default", (up, [-1], True), Fake([2, 3, 1]))
    d = g.call("aten.sub.Tensor", (up, m), Fake([2, 3, 16]))
    e = g.call("aten.exp.default", (d,), Fake([2, 3, 16]))
    s = g.call("aten.sum.dim_IntList", (e, [-1], True), Fake([2, 3, 1]))
    r = g.call("aten.div.Tensor", (e, s), Fake([2, 3, 16]))
    down = g.call("prims.convert_element_type.default", (r, BF16),
                  Fake([2, 3, 16], BF16))
    g.use(down)
    t, text = build(g, [x], [down])
    for op in ("amax", "exp", "sum", "div", "cast"):
        assert op in text, (op, text)
    assert "bf16[2, 3, 16]" in text


def test_view_outputs_are_aten_views():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    e = g.call("aten.exp.default", (x,), Fake([4, 8]))
    v = g.call("aten.view.default", (e, [32]), Fake([32]))
    tr = g.call("aten.t.default", (e,), Fake([8, 4], strides=[1, 8]))
    ex = g.call("aten.expand.default", (x, [2, 4, 8]),
                Fake([2, 4, 8], strides=[0, 8, 1]))
    g.use(v, tr, ex)
    t, text = build(g, [x], [v, tr, ex])
    assert t.out_plan[0][0] == "view" and t.out_plan[0][1] == ("fz", 0)
    assert t.out_plan[1][0] == "view" and t.out_plan[1][1] == ("fz", 0)
    # a view of an input is taken from the input itself
    assert t.out_plan[2][0] == "view" and t.out_plan[2][1] == ("arg", 0)
    assert t.out_plan[2][2][0][1] == [[("const", 2), ("const", 4),
                                       ("const", 8)]], t.out_plan[2]
    assert len(t.fz_outputs) == 1 and "exp" in text


def test_shapes():
    g = Graph()
    x = g.input("x", Fake([4, 1, 8]))
    b = g.input("b", Fake([8, 4]))
    sq = g.call("aten.squeeze.dim", (x, 1), Fake([4, 8]))
    p = g.call("aten.permute.default", (b, [1, 0]), Fake([4, 8], strides=[1, 4]))
    a = g.call("aten.add.Tensor", (sq, p), Fake([4, 8]), alpha=2)
    r = g.call("aten.view.default", (a, [2, 2, 8]), Fake([2, 2, 8]))
    u = g.call("aten.unsqueeze.default", (r, 0), Fake([1, 2, 2, 8]))
    s = g.call("aten.sum.dim_IntList", (u, [0, 1]), Fake([2, 8]))
    f = g.call("aten.full.default", ([2, 1], 3.0), Fake([2, 1]),
               dtype=F32, device=CUDA)
    w = g.call("aten.where.self",
               (g.call("aten.gt.Scalar", (s, 0), Fake([2, 8], BOOL)), s, f),
               Fake([2, 8]))
    g.use(w)
    t, text = build(g, [x, b], [w])
    for op in ("squeeze", "permute", "reshape", "full", "where", "gt"):
        assert op in text, (op, text)


def test_dynamic_sizes():
    s0 = SymInt(Expr("s0", True), 6)
    g = Graph()
    x = g.input("x", Fake([s0, 8]))
    y = g.input("y", Fake([s0, 1]))
    m = g.call("aten.mul.Tensor", (x, y), Fake([s0, 8]))
    ex = g.call("aten.expand.default", (y, [s0, 8]),
                Fake([s0, 8], strides=[1, 0]))
    a = g.call("aten.add.Tensor", (m, ex), Fake([s0, 8]))
    mean = g.call("aten.mean.dim", (a, [0]), Fake([8]))
    g.use(a, mean)
    t, text = build(g, [x, y], [a, mean])
    assert "s0" in text, text
    assert t.fd._static is False, "dynamic sizes stay symbols"


def test_symbol_bound_by_a_later_input():
    s0 = SymInt(Expr("s0", True), 5)
    g = Graph()
    y = g.input("y", Fake([1, 8]))
    x = g.input("x", Fake([s0, 8]))
    ex = g.call("aten.expand.default", (y, [s0, 8]),
                Fake([s0, 8], strides=[0, 1]))
    a = g.call("aten.add.Tensor", (ex, x), Fake([s0, 8]))
    g.use(a)
    t, text = build(g, [y, x], [a])
    assert "b1->s0" in text, text


def test_var_mean_over_run_time_sizes():
    # the count of a var with correction 1 over s1 is a run-time value:
    # one var and one mean reduction, no literal count, no sum
    s0, s1 = SymInt(Expr("s0", True), 5), SymInt(Expr("s1", True), 7)
    g = Graph()
    x = g.input("x", Fake([s0, s1]))
    vm = g.call("aten.var_mean.correction", (x, [1]),
                (Fake([s0]), Fake([s0])), correction=1)
    var = g.call(operator.getitem, (vm, 0), Fake([s0]))
    mean = g.call(operator.getitem, (vm, 1), Fake([s0]))
    v2 = g.call("aten.var.correction", (x, [0]), Fake([s1]), correction=2.5,
                keepdim=False)
    g.use(var, mean, v2)
    t, text = build(g, [x], [var, mean, v2])
    assert " = var %" in text and " = mean %" in text, text
    assert "correction(1)" in text and "correction(2.5)" in text, text
    assert " sum " not in text and "f32[s0, s1]" in text, text


def test_gather_and_index_select():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    i = g.input("i", Fake([4, 1], I64))
    j = g.input("j", Fake([3], I64))
    gx = g.call("aten.gather.default", (x, 1, i), Fake([4, 1]))
    sx = g.call("aten.index_select.default", (x, -1, j), Fake([4, 3]))
    small = g.call("aten.gather.default", (x, 1, j), Fake([3]))
    assert node_support(gx) is None, node_support(gx)
    assert node_support(sx) is None, node_support(sx)
    assert "rank" in node_support(small), node_support(small)
    fi = g.input("fi", Fake([4, 1]))
    bad = g.call("aten.gather.default", (x, 1, fi), Fake([4, 1]))
    assert "indices" in node_support(bad), node_support(bad)
    g.nodes = [n for n in g.nodes if n not in (small, bad)]
    g.use(gx, sx)
    t, text = build(g, [x, i, j], [gx, sx])
    assert "gather %" in text and "dims(1)" in text, text
    assert "index_select %" in text, text


def test_unsupported():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    c = g.input("c", Fake([4, 8], device=Device("cpu")))
    i = g.input("i", Fake([4, 8], I64))
    mm = g.call("aten.mm.default", (x, x), Fake([4, 4]))
    assert "no translation" in node_support(mm)
    cpu = g.call("aten.exp.default", (c,), Fake([4, 8], device=Device("cpu")))
    assert "cpu" in node_support(cpu)
    bit = g.call("aten.bitwise_and.Tensor", (i, i), Fake([4, 8], I64))
    assert "bitwise" in node_support(bit)
    cp = g.call("aten._to_copy.default", (x,), Fake([4, 8], BF16),
                dtype=BF16, device=Device("cpu"))
    assert "devices" in node_support(cp), node_support(cp)
    var = g.call("aten.var.correction", (i, [1]), Fake([4], F32))
    assert "integers" in node_support(var)


def test_argmax_argmin():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    e = g.call("aten.exp.default", (x,), Fake([4, 8]))
    a = g.call("aten.argmax.default", (e, -1), Fake([4], I64))
    b = g.call("aten.argmin.default", (x, 0, True), Fake([1, 8], I64))
    c = g.call("aten.argmax.default", (x,), Fake([], I64))
    for n in (a, b, c):
        assert node_support(n) is None, (n.target, node_support(n))
    g.use(a, b, c)
    t, text = build(g, [x], [a, b, c])
    assert "= argmax %1 dims(1) : i64[4]" in text, text
    assert "= argmin %0 dims(0) keepdim : i64[b1, 8]" in text, text
    assert "= argmax %0 dims(0, 1) : i64 " in text, text
    flag = g.input("flag", Fake([4], BOOL))
    bad = g.call("aten.argmax.default", (flag, 0), Fake([], I64))
    assert "bool" in node_support(bad), node_support(bad)
    s = g.input("s", Fake([]))
    zero = g.call("aten.argmin.default", (s,), Fake([], I64))
    assert "rank-0" in node_support(zero), node_support(zero)


def test_views_only_group_is_refused():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    v = g.call("aten.view.default", (x, [32]), Fake([32]))
    g.use(v)
    try:
        build(g, [x], [v])
    except Unsupported:
        return
    raise AssertionError("a group of views only was accepted")


def test_components_and_cycles():
    from fz.dynamo.compiler import _components, _creates_cycle
    g = Graph()
    x = g.input("x", Fake([4]))
    a = g.call("aten.exp.default", (x,), Fake([4]))
    b = g.call("aten.neg.default", (x,), Fake([4]))
    mm = g.call("aten.mm.default", (a, a), Fake([4]))  # outside any group
    c = g.call("aten.add.Tensor", (a, mm), Fake([4]))
    pieces = sorted(_components([a, b]), key=len)
    assert pieces == [[a], [b]] or pieces == [[b], [a]], pieces
    assert len(_components([a, c])) == 1   # c uses a directly
    # a and c in one call: c needs mm, which needs a: a cycle
    assert _creates_cycle([a, c], [x, mm])
    assert not _creates_cycle([a], [x])


def main():
    assert translate.is_tensor(Fake([1]))
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    for name, fn in tests:
        fn()
        print("ok", name)
    print("%d tests passed" % len(tests))


if __name__ == "__main__":
    main()
