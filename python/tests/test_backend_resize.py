#!/usr/bin/env python3
"""torch.compile(backend="fz") on programs that slice, pad, concatenate,
gather and arg-reduce, against eager PyTorch (fzcheck.check: shapes,
dtypes, strides, torch.testing.assert_close with tolerances that grow
with the reductions behind a value).

  rotary embedding (rotate_half: two windows of the last axis, cat, then
  x * cos + rot * sin) as ONE fusion, static and with a dynamic sequence
  length, and its backward (slice_backward as a fused pad); cross-entropy
  from integer labels, written out (log_softmax, gather) and as
  F.cross_entropy (nll_loss_forward decomposed), forward and backward; F.pad constant, negative widths
  too; index_select and gather; argmax/argmin (dim None, keepdim); chunk
  and unbind pieces fused; windows returned bare still alias their input
  as in eager; slice bounds and pads that are run-time values (dynamic
  shapes) left to ATen with eager's results.

FZ_DYNAMO_STRICT=1 is set: a fusion fz fails to run raises instead of
falling back to ATen. Run from the repository root:
    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_backend_resize.py [TEST ...]
    FZ_LIBRARY=build/lib/libfz.so python3 -m pytest -q python/tests/test_backend_resize.py
Without torch, CUDA or a GPU it prints "SKIPPED: ..." and exits 77.
Registered in ctest as gpu/python_backend_resize.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import fzcheck  # noqa: E402
from fzcheck import check, flatten  # noqa: E402

torch = fzcheck.require_torch_cuda()
import torch.nn.functional as F  # noqa: E402

import fz  # noqa: E402,F401  (registers backend="fz")
from fz.dynamo.compiler import Session, make_backend  # noqa: E402

os.environ["FZ_DYNAMO_STRICT"] = "1"

DEV = torch.device("cuda", 0)
SEED = fzcheck.seed()


def setup_function(function):
    """pytest: every test compiles anew."""
    torch._dynamo.reset()


def randn(*shape, dtype=torch.float32):
    return torch.randn(shape, device=DEV).to(dtype)


class Compiled:
    """fn compiled with an fz backend that keeps its records: the fusions
    and the nodes left to ATen of every graph it compiled."""

    def __init__(self, fn, dynamic=None):
        self.session = Session(keep=True)
        self.fn = torch.compile(fn, backend=make_backend(self.session),
                                dynamic=dynamic)

    def __call__(self, *args):
        return self.fn(*args)

    def graphs(self, kind=None):
        return [g for g in self.session.graphs
                if kind is None or g.kind == kind]

    def fusions(self, kind=None):
        return [f for g in self.graphs(kind) for f in g.fusions]

    def aten(self, kind=None):
        return [op for g in self.graphs(kind) for op, _ in g.aten]

    def describe(self):
        return "; ".join("%s %d: fusions %s, ATen %s" % (
            g.kind, g.index, [f.ops for f in g.fusions],
            [(op, why) for op, why in g.aten]) for g in self.session.graphs)

    def check_ran(self):
        for f in self.fusions():
            assert f.call.fallback is None, "%s ran as ATen: %s" % (
                f.name, f.call.fallback)


def same(fn, args, what, n=1, cfn=None, layout=True):
    cfn = cfn or Compiled(fn)
    got = flatten(cfn(*args))
    want = flatten(fn(*args))
    assert len(got) == len(want), "%s: %d outputs, eager %d" % (
        what, len(got), len(want))
    ns = n if isinstance(n, (list, tuple)) else [n] * len(want)
    for i, (g, w, k) in enumerate(zip(got, want, ns)):
        check(g, w, "%s: output %d" % (what, i), n=k, layout=layout)
    cfn.check_ran()
    return cfn, got


def same_grads(fn, inputs, what, n=1, n_grad=1):
    cfn = Compiled(fn)
    weights = []

    def run(f):
        leaves = [x.detach().clone().requires_grad_(x.is_floating_point())
                  for x in inputs]
        outs = flatten(f(*leaves))
        if not weights:
            weights.extend(randn(*o.shape) for o in outs)
        sum((o * w).sum() for o, w in zip(outs, weights)).backward()
        return outs, [x.grad for x in leaves if x.requires_grad]

    want, want_g = run(fn)
    got, got_g = run(cfn)
    for i, (g, w) in enumerate(zip(got, want)):
        check(g, w, "%s: output %d" % (what, i), n=n)
    assert len(got_g) == len(want_g), what
    ns = n_grad if isinstance(n_grad, (list, tuple)) else [n_grad] * len(got_g)
    for i, (g, w, k) in enumerate(zip(got_g, want_g, ns)):
        assert g is not None, "%s: no gradient for input %d" % (what, i)
        check(g, w, "%s: grad %d" % (what, i), n=k, layout=False)
    cfn.check_ran()
    return cfn


def rotate_half(x):
    d = x.shape[-1]
    return torch.cat((-x[..., d // 2:], x[..., :d // 2]), dim=-1)


def rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


# ---- the tests -------------------------------------------------------------


def test_rotary_is_one_fusion():
    x, cos, sin = randn(2, 8, 128, 64), randn(128, 64), randn(128, 64)
    cfn, _ = same(rotary, (x, cos, sin), "rotary")
    fusions = cfn.fusions()
    assert len(fusions) == 1, "rotary: %s" % cfn.describe()
    assert "aten.cat.default" in fusions[0].ops and \
        fusions[0].ops.count("aten.slice.Tensor") == 2, cfn.describe()
    assert not cfn.aten(), "rotary left ATen work: %s" % cfn.describe()
    print("  rotary: %s" % cfn.describe())


def test_rotary_bf16_and_dynamic_sequence():
    x = randn(2, 4, 96, 128, dtype=torch.bfloat16)
    cos, sin = randn(96, 128, dtype=torch.bfloat16), randn(96, 128,
                                                           dtype=torch.bfloat16)
    same(rotary, (x, cos, sin), "rotary bf16")
    torch._dynamo.reset()
    # a dynamic sequence length; the sliced axis (64) stays static (with
    # dynamic=True it would be dynamic too, and its windows stay ATen)
    cfn = Compiled(rotary)
    for t in (48, 100, 257):
        x, cos, sin = randn(2, 4, t, 64), randn(t, 64), randn(t, 64)
        torch._dynamo.mark_dynamic(x, 2)
        torch._dynamo.mark_dynamic(cos, 0)
        torch._dynamo.mark_dynamic(sin, 0)
        same(rotary, (x, cos, sin), "rotary, sequence %d" % t, cfn=cfn)
    assert len(cfn.graphs()) == 1, "dynamic rotary recompiled: %s" % \
        cfn.describe()
    assert len(cfn.fusions()) == 1, "dynamic rotary: %s" % cfn.describe()
    print("  dynamic rotary: %d graph(s): %s" % (len(cfn.graphs()),
                                                 cfn.describe()))


def test_rotary_backward():
    x, cos, sin = randn(2, 4, 32, 64), randn(32, 64), randn(32, 64)
    cfn = same_grads(rotary, [x, cos, sin], "rotary backward",
                     n_grad=[1, 8, 8])
    # the windows' gradients (slice_backward) are pads in a fusion
    assert "aten.slice_backward.default" not in cfn.aten("backward"), \
        cfn.describe()
    assert any("aten.slice_backward.default" in f.ops
               for f in cfn.fusions("backward")), cfn.describe()
    print("  rotary backward: %s" % cfn.describe())


def test_cross_entropy():
    def written_out(x, y):
        logp = torch.log_softmax(x, -1)
        return -logp.gather(1, y[:, None]).squeeze(1).mean()

    def library(x, y):
        return F.cross_entropy(x, y)

    def ignored(x, y):
        return F.cross_entropy(x, y, ignore_index=3, reduction="sum")

    n, c = 256, 1000
    x = randn(n, c) * 2
    y = torch.randint(0, c, (n,), device=DEV)
    y[::7] = 3
    for label, fn in (("log_softmax + gather", written_out),
                      ("F.cross_entropy", library),
                      ("F.cross_entropy ignore_index, sum", ignored)):
        cfn, _ = same(fn, (x, y), label, n=c + n)
        ops = [op for f in cfn.fusions() for op in f.ops]
        assert "aten.gather.default" in ops, "%s: %s" % (label,
                                                        cfn.describe())
        print("  %s: %s" % (label, cfn.describe()))
        torch._dynamo.reset()
    same_grads(library, [x, y], "F.cross_entropy backward", n=c + n,
               n_grad=[c])


def test_pad():
    x = randn(33, 65)
    fns = [
        ("pad 2-d", lambda x: F.pad(x, (1, 2, 0, 3), value=0.5) * 2),
        ("pad crop", lambda x: F.pad(x.exp(), (-1, 2))),
        ("pad crop both", lambda x: F.pad(x, (3, -4, -2, 1)) + 1),
        ("pad int", lambda x: F.pad((x * 10).to(torch.int32), (2, 2), value=7)),
    ]
    for label, fn in fns:
        cfn, _ = same(fn, (x,), label)
        assert any("aten.constant_pad_nd.default" in f.ops
                   for f in cfn.fusions()), "%s: %s" % (label, cfn.describe())
        torch._dynamo.reset()


def test_index_select_and_gather():
    w, s = randn(500, 64), randn(64)
    idx = torch.randint(0, 500, (77,), device=DEV)
    cfn, _ = same(lambda w, i, s: torch.index_select(w, 0, i) * s + 1,
                  (w, idx, s), "embedding-like index_select")
    assert any("aten.index_select.default" in f.ops for f in cfn.fusions()), \
        cfn.describe()
    torch._dynamo.reset()
    x = randn(64, 300)
    g = torch.randint(0, 300, (64, 5), device=DEV)
    cfn, _ = same(lambda x, g: torch.gather(x.exp(), 1, g).sum(-1),
                  (x, g), "gather then sum", n=5)
    assert any("aten.gather.default" in f.ops for f in cfn.fusions()), \
        cfn.describe()


def test_argmax_argmin():
    x = randn(37, 129)
    x[3, 5] = float("nan")
    fn = lambda x: (x.argmax(-1), x.argmin(0, keepdim=True),  # noqa: E731
                    (x * 2).argmax(), torch.argmax(x, dim=1, keepdim=True),
                    x.exp().argmin(), torch.argmax(x, keepdim=True))
    cfn, got = same(fn, (x,), "argmax/argmin")
    assert all(g.dtype == torch.int64 for g in got)
    assert cfn.fusions(), cfn.describe()


def test_chunk_and_unbind_pieces_fuse():
    def chunked(x, c, s):
        a, b = x.chunk(2, -1)
        return a * c - b * s, b * c + a * s

    def unbound(qkv):
        q, k, v = qkv.unbind(0)
        return torch.softmax(q * k, -1) * v

    def split_sizes(x):
        a, b, c = torch.split(x, [3, 5, 8], dim=1)
        return a.sum(1) + b.amax(1) - c.mean(1)

    x, c, s = randn(16, 128), randn(16, 64), randn(16, 64)
    cfn, _ = same(chunked, (x, c, s), "chunk")
    assert len(cfn.fusions()) == 1, "chunk: %s" % cfn.describe()
    torch._dynamo.reset()
    cfn, _ = same(unbound, (randn(3, 32, 256),), "unbind", n=256)
    assert len(cfn.fusions()) == 1, "unbind: %s" % cfn.describe()
    torch._dynamo.reset()
    cfn, _ = same(split_sizes, (randn(32, 16),), "split_with_sizes", n=8)
    assert len(cfn.fusions()) == 1, "split: %s" % cfn.describe()


def test_windows_returned_alias_as_in_eager():
    def bare(x):
        return x[:, 1:]

    def mixed(x):
        e = x.exp()
        return e[:, 2:6], x[1:], e * 2, x.select(1, 0)

    x = randn(8, 16)
    cfn, got = same(bare, (x,), "a bare window")
    assert got[0].data_ptr() == x[:, 1:].data_ptr(), "the window is a copy"
    torch._dynamo.reset()
    cfn, got = same(mixed, (x,), "windows next to fused work")
    assert got[1].data_ptr() == x[1:].data_ptr(), "x[1:] is a copy"
    assert got[3].data_ptr() == x.select(1, 0).data_ptr(), "select is a copy"
    x.add_(1)  # eager: the windows see the change
    torch.testing.assert_close(got[1], x[1:])
    torch.testing.assert_close(got[3], x.select(1, 0))
    assert cfn.fusions(), cfn.describe()


def test_cat_many_operands():
    def f(a, b, c):
        return torch.cat([a.exp(), b, c * 2, b], dim=-2) + 1

    def with_empty(a):
        return torch.cat([a.new_empty(0), a * 2, a.new_empty(0)], 0)

    a, b, c = randn(4, 3, 16), randn(4, 5, 16), randn(4, 1, 16)
    same(f, (a, b, c), "cat of 4 along -2")
    torch._dynamo.reset()
    same(with_empty, (randn(6, 5),), "cat with legacy empty operands")


def test_run_time_bounds_stay_aten():
    def half(x):
        return x[:, : x.shape[1] // 2] * 2 + 1

    def padded(x):
        return F.pad(x * 3, (1, 1))

    def rows(x):
        return torch.cat([x, x[:1]], 0).exp()

    for label, fn in (("slice bound from a size", half),
                      ("pad of a dynamic axis", padded),
                      ("cat along a dynamic axis", rows)):
        cfn = Compiled(fn, dynamic=True)
        for m, n in ((6, 40), (9, 70), (17, 130)):
            same(fn, (randn(m, n),), "%s %dx%d" % (label, m, n), cfn=cfn)
        print("  %s: %s" % (label, cfn.describe()))
        torch._dynamo.reset()


def main():
    torch.manual_seed(SEED)
    print("fz %s, torch %s on %s, seed %d" % (
        getattr(fz, "__version__", "?"), torch.__version__,
        torch.cuda.get_device_name(DEV), SEED))
    return fzcheck.run_tests(globals(), sys.argv[1:],
                             before_each=torch._dynamo.reset)


if __name__ == "__main__":
    sys.exit(main())
