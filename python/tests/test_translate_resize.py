"""The backend's translation of ATen's resize ops (slice, narrow, select,
constant_pad_nd, cat, slice_backward, and split/unbind through them) into fz fusions,
without torch or a GPU, on test_translate.py's stand-in graphs: what is
fused, what is declined and why (run-time bounds, dynamic resized axes),
and which outputs stay ATen views of their base.

    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_translate_resize.py

ctest runs it as unit/python_translate_resize. Plain asserts.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# the stand-in torch and graphs (installs the stand-in module)
from test_translate import (BOOL, I64, Expr, Fake, Graph, SymInt,  # noqa: E402
                            build)
from fz.dynamo.translate import Unsupported, node_support  # noqa: E402

END = sys.maxsize


def supported(*nodes):
    for n in nodes:
        assert node_support(n) is None, (str(n.target), node_support(n))


def test_rotary_embedding_is_one_fusion():
    # rotate_half: cat(-x[..., d/2:], x[..., :d/2]); x * cos + rot * sin
    g = Graph()
    x = g.input("x", Fake([2, 4, 8]))
    cos = g.input("cos", Fake([4, 8]))
    sin = g.input("sin", Fake([4, 8]))
    lo = g.call("aten.slice.Tensor", (x, 2, 0, 4), Fake([2, 4, 4]))
    hi = g.call("aten.slice.Tensor", (x, 2, 4, END), Fake([2, 4, 4]))
    neg = g.call("aten.neg.default", (hi,), Fake([2, 4, 4]))
    rot = g.call("aten.cat.default", ([neg, lo], -1), Fake([2, 4, 8]))
    a = g.call("aten.mul.Tensor", (x, cos), Fake([2, 4, 8]))
    b = g.call("aten.mul.Tensor", (rot, sin), Fake([2, 4, 8]))
    y = g.call("aten.add.Tensor", (a, b), Fake([2, 4, 8]))
    g.use(y)
    supported(lo, hi, neg, rot, a, b, y)
    t, text = build(g, [x, cos, sin], [y])
    assert t.out_plan == [("fz", 0)], t.out_plan
    assert text.count(" = slice ") == 2 and " = cat " in text, text
    assert "f32[2, 4, 8]" in text, text


def test_windows_that_leave_the_group_stay_views():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    e = g.call("aten.exp.default", (x,), Fake([4, 8]))
    ew = g.call("aten.slice.Tensor", (e, 1, 2, 6), Fake([4, 4], strides=[8, 1]))
    xw = g.call("aten.slice.Tensor", (x, 0, 1, END), Fake([3, 8]))
    row = g.call("aten.select.int", (x, 0, -1), Fake([8]))
    g.use(ew, xw, row)
    t, text = build(g, [x], [ew, xw, row])
    # fz computes exp whole; the window is ATen's view of it
    assert t.out_plan[0][:2] == ("view", ("fz", 0)), t.out_plan[0]
    step = t.out_plan[0][2][0]
    assert str(step[0]) == "aten.slice.Tensor" and step[1] == [
        ("const", 1), ("const", 2), ("const", 6)], step
    # windows of an input are views of the input itself (they alias it)
    assert t.out_plan[1][:2] == ("view", ("arg", 0)), t.out_plan[1]
    assert t.out_plan[2][:2] == ("view", ("arg", 0)), t.out_plan[2]
    assert len(t.fz_outputs) == 1 and " = slice " not in text, text


def test_windows_only_is_no_fusion():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    w = g.call("aten.slice.Tensor", (x, 1, 0, 4), Fake([4, 4], strides=[8, 1]))
    g.use(w)
    try:
        build(g, [x], [w])
    except Unsupported:
        return
    raise AssertionError("a group of a window alone was fused")


def test_select_narrow_and_steps():
    g = Graph()
    x = g.input("x", Fake([6, 8]))
    s = g.call("aten.select.int", (x, 1, -1), Fake([6], strides=[8]))
    n = g.call("aten.narrow.default", (x, 0, -4, 2), Fake([2, 8]))
    st = g.call("aten.slice.Tensor", (x, 1, 1, END, 3), Fake([6, 3],
                                                             strides=[8, 3]))
    a = g.call("aten.add.Tensor", (s, 1.0), Fake([6]))
    b = g.call("aten.mul.Tensor", (n, 2.0), Fake([2, 8]))
    c = g.call("aten.neg.default", (st,), Fake([6, 3]))
    g.use(a, b, c)
    supported(s, n, st)
    t, text = build(g, [x], [a, b, c])
    assert "squeeze" in text and text.count(" = slice ") == 3, text
    assert "f32[6]" in text and "f32[2, 8]" in text and "f32[6, 3]" in text, text


def test_pad():
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    p = g.call("aten.constant_pad_nd.default", (x, [1, -2, 0, 3], 0.5),
               Fake([7, 7]))
    e = g.call("aten.exp.default", (p,), Fake([7, 7]))
    g.use(e)
    supported(p)
    t, text = build(g, [x], [e])
    assert " = pad " in text and "f32[7, 7]" in text, text


def test_cat_of_many_and_legacy_empty_operands():
    g = Graph()
    empty = g.input("empty", Fake([0]))
    a = g.input("a", Fake([2, 3]))
    b = g.input("b", Fake([2, 5]))
    i = g.input("i", Fake([2, 1], I64))
    c = g.call("aten.cat.default", ([empty, a, b, empty, i], 1), Fake([2, 9]))
    e = g.call("aten.exp.default", (c,), Fake([2, 9]))
    g.use(e)
    supported(c)
    t, text = build(g, [empty, a, b, i], [e])
    # the legacy empty operand is no input of the fusion
    assert [k.index for k in t.fz_inputs] == [1, 2, 3], \
        [k.index for k in t.fz_inputs]
    assert " = cat " in text and "f32[2, 9]" in text, text


def test_slice_backward_is_a_pad():
    # the gradient of x[:, 2:5] (x: [4, 8]) and of x[1:] (x: [6, 4])
    g = Graph()
    gy = g.input("gy", Fake([4, 3]))
    gz = g.input("gz", Fake([5, 4]))
    a = g.call("aten.slice_backward.default", (gy, [4, 8], 1, 2, 5, 1),
               Fake([4, 8]))
    b = g.call("aten.slice_backward.default", (gz, [6, 4], -2, 1, END, 1),
               Fake([6, 4]))
    ea = g.call("aten.exp.default", (a,), Fake([4, 8]))
    eb = g.call("aten.exp.default", (b,), Fake([6, 4]))
    g.use(ea, eb)
    supported(a, b)
    t, text = build(g, [gy, gz], [ea, eb])
    assert "pad %0 low(0, 2) high(0, 3) value(0.0) : f32[4, 8]" in text, text
    assert "pad %1 low(1, 0) high(0, 0) value(0.0) : f32[6, 4]" in text, text
    n = g.input("n", SymInt(Expr("s0", True), 8))
    strided = g.call("aten.slice_backward.default", (gy, [4, 8], 1, 0, 6, 2),
                     Fake([4, 8]))
    assert "step 2" in node_support(strided), node_support(strided)
    sized = g.call("aten.slice_backward.default", (gy, [4, n], 1, 2, 5, 1),
                   Fake([4, 8]))
    assert "run time" in node_support(sized), node_support(sized)


def test_run_time_bounds_and_dynamic_axes_decline():
    s0 = SymInt(Expr("s0", True), 6)
    g = Graph()
    x = g.input("x", Fake([s0, 8]))
    y = g.input("y", Fake([4, 8]))
    n = g.input("n", SymInt(Expr("s1", True), 3))
    # a resized dynamic axis
    rows = g.call("aten.slice.Tensor", (x, 0, 1, END), Fake([s0, 8]))
    assert "dynamic axis 0" in node_support(rows), node_support(rows)
    pad = g.call("aten.constant_pad_nd.default", (x, [0, 0, 1, 1]),
                 Fake([s0, 8]))
    assert "dynamic axis 0" in node_support(pad), node_support(pad)
    cat = g.call("aten.cat.default", ([x, x], 0), Fake([s0, 8]))
    assert "dynamic axis 0" in node_support(cat), node_support(cat)
    # bounds and widths that are graph values (SymInts)
    end = g.call("aten.slice.Tensor", (y, 0, 0, n), Fake([3, 8]))
    assert "run time" in node_support(end), node_support(end)
    width = g.call("aten.constant_pad_nd.default", (y, [n, 0]), Fake([4, 11]))
    assert "run time" in node_support(width), node_support(width)
    sel = g.call("aten.select.int", (y, 0, n), Fake([8]))
    assert "run time" in node_support(sel), node_support(sel)
    bad = g.call("aten.slice.Tensor", (y, 1, 0, 4, 0), Fake([4, 4]))
    assert "step" in node_support(bad), node_support(bad)


def test_dynamic_axes_that_are_not_resized():
    # x[:, 1:] and a pad and a cat of the static axis: the dynamic rows
    # stay a symbol (one fusion for every row count)
    s0 = SymInt(Expr("s0", True), 6)
    g = Graph()
    x = g.input("x", Fake([s0, 8]))
    cols = g.call("aten.slice.Tensor", (x, 1, 1, END), Fake([s0, 7]))
    whole = g.call("aten.slice.Tensor", (x, 0, 0, END), Fake([s0, 8]))
    pad = g.call("aten.constant_pad_nd.default", (cols, [0, 1]), Fake([s0, 8]))
    cat = g.call("aten.cat.default", ([pad, whole], 1), Fake([s0, 16]))
    e = g.call("aten.exp.default", (cat,), Fake([s0, 16]))
    g.use(e)
    supported(cols, whole, pad, cat)
    t, text = build(g, [x], [e])
    assert "f32[s0, 16]" in text and t.fd._static is False, text


def test_argmax_of_every_axis_keepdim():
    # torch.argmax(x, keepdim=True): dim None keeps every axis as size 1
    g = Graph()
    x = g.input("x", Fake([4, 8]))
    a = g.call("aten.argmax.default", (x, None, True), Fake([1, 1], I64))
    g.use(a)
    supported(a)
    t, text = build(g, [x], [a])
    assert "argmax %0 dims(0, 1) keepdim : i64[b1, b1]" in text, text


def test_bool_cat_and_pad():
    g = Graph()
    m = g.input("m", Fake([4, 2], BOOL))
    p = g.call("aten.constant_pad_nd.default", (m, [1, 1], True),
               Fake([4, 4], BOOL))
    c = g.call("aten.cat.default", ([p, m], 1), Fake([4, 6], BOOL))
    g.use(c)
    supported(p, c)
    t, text = build(g, [m], [c])
    assert " = pad " in text and " = cat " in text and "bool[4, 6]" in text, \
        text


def main():
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    for name, fn in tests:
        fn()
        print("ok", name)
    print("%d tests passed" % len(tests))


if __name__ == "__main__":
    main()
