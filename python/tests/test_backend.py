#!/usr/bin/env python3
"""torch.compile(backend="fz") against eager PyTorch, on small graphs.

Each graph runs eagerly and through the fz backend on the same inputs;
every output must have eager's shape, dtype, device and strides (on axes
of size > 1), and values within tolerances that scale with the length of
the reductions behind them (fzcheck.py says how). Where a test takes
gradients, loss.backward() runs through both and every input's gradient
is compared the same way.

  pointwise chains with broadcasting and type promotion; sum/mean/amax/
  amin over various dims, keepdim, integer and bf16 sums; softmax and
  log_softmax; layer norm and RMS norm forward and backward (f32, bf16);
  transposed, sliced, permuted and channels-last inputs; a matmul between
  fusions (the matmul stays ATen), forward and backward; dynamic shapes
  (dynamic=True over several sizes, torch._dynamo.mark_dynamic), with the
  number of graphs compiled counted; bf16 under autocast; mode=
  "reduce-overhead" (CUDA graphs); a non-default stream; cuda:1 when there
  is a second GPU; fz.explain; fz.__version__ and the backend's
  registration.

Run from the repository root:
    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_backend.py [TEST ...]
FZ_TEST_SEED repeats a run's inputs. Without torch, CUDA or a GPU it
prints "SKIPPED: ..." and exits 77. Registered in ctest as
gpu/python_backend.
"""

import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import fzcheck  # noqa: E402
from fzcheck import check, flatten  # noqa: E402

torch = fzcheck.require_torch_cuda()
import torch.nn.functional as F  # noqa: E402

import fz  # noqa: E402  (registers backend="fz")

DEV = torch.device("cuda", 0)
SEED = fzcheck.seed()


def randn(*shape, dtype=torch.float32, device=DEV):
    return torch.randn(shape, device=device).to(dtype)


def compiled(fn, **kw):
    return torch.compile(fn, backend="fz", **kw)


def counting_backend():
    """The fz backend behind a wrapper that records every graph dynamo
    hands it: (backend, list of graphs)."""
    from torch._dynamo.backends.registry import lookup_backend
    inner = lookup_backend("fz")
    graphs = []

    def backend(gm, example_inputs, **kw):
        graphs.append(gm)
        return inner(gm, example_inputs, **kw)
    return backend, graphs


def same(fn, args, what, n=1, scale=None, cfn=None, layout=True,
         precision=None):
    """fn(*args) through fz equals eager: every output (n: the reduction
    length behind each, one number or one per output)."""
    cfn = cfn or compiled(fn)
    got = flatten(cfn(*args))
    want = flatten(fn(*args))
    assert len(got) == len(want), "%s: %d outputs, eager %d" % (
        what, len(got), len(want))
    ns = n if isinstance(n, (list, tuple)) else [n] * len(want)
    assert len(ns) == len(want), "%s: %d lengths for %d outputs" % (
        what, len(ns), len(want))
    for i, (g, w, k) in enumerate(zip(got, want, ns)):
        check(g, w, "%s: output %d" % (what, i), n=k, scale=scale,
              layout=layout, precision=precision)
    return got


def same_grads(fn, inputs, what, n=1, n_grad=None, ctx=None, precision=None):
    """Forward and backward of fn through fz equal eager's: the outputs,
    then the gradient of every input that requires grad, for a loss that
    weighs each output element by a fixed random factor."""
    ctx = ctx or contextlib.nullcontext
    cfn = compiled(fn)
    weights = []

    def run(f):
        leaves = [x.detach().clone().requires_grad_(x.requires_grad)
                  for x in inputs]
        with ctx():
            outs = flatten(f(*leaves))
        if not weights:
            weights.extend(randn(*o.shape) for o in outs)
        loss = sum((o.float() * w).sum() for o, w in zip(outs, weights))
        loss.backward()
        return outs, [x.grad for x in leaves if x.requires_grad]

    want, want_g = run(fn)
    got, got_g = run(cfn)
    ns = n if isinstance(n, (list, tuple)) else [n] * len(want)
    assert len(ns) == len(want) and len(got_g) == len(want_g), what
    for i, (g, w, k) in enumerate(zip(got, want, ns)):
        check(g, w, "%s: output %d" % (what, i), n=k, precision=precision)
    ng = n_grad or n
    ns = ng if isinstance(ng, (list, tuple)) else [ng] * len(want_g)
    assert len(ns) == len(want_g), "%s: %d lengths for %d gradients" % (
        what, len(ns), len(want_g))
    for i, (g, w, k) in enumerate(zip(got_g, want_g, ns)):
        if g is None:
            raise AssertionError("%s: no gradient for input %d" % (what, i))
        check(g, w, "%s: grad of input %d" % (what, i), n=k, layout=False,
              precision=precision)


# ---- the tests -------------------------------------------------------------


def test_pointwise_broadcast_promotion():
    def f(x, b, i, m, k):
        y = torch.sigmoid(x * b + i) - torch.tanh(x) * 0.5   # f32*f16+i64: f32
        z = torch.where(m, y, -y).relu()                      # bool [M, 1]
        return (y, z, i * 3 + 1,                              # stays int64
                (b * 2).exp(),                                # stays f16
                k * 0.5, k / 3,                               # int32 -> f32
                (k > 2) & m)                                  # bool [M, N]
    x = randn(257, 1031)
    b = randn(1031, dtype=torch.float16)
    i = torch.randint(-4, 5, (257, 1), device=DEV)
    m = torch.rand(257, 1, device=DEV) > 0.5
    k = torch.randint(-5, 6, (1031,), device=DEV, dtype=torch.int32)
    got = same(f, (x, b, i, m, k), "pointwise chain")
    want_dtypes = [torch.float32, torch.float32, torch.int64, torch.float16,
                   torch.float32, torch.float32, torch.bool]
    assert [g.dtype for g in got] == want_dtypes, [g.dtype for g in got]


def test_reductions():
    x = randn(6, 37, 129)
    specs = [
        ("sum 0", lambda x: x.sum(0), 6),
        ("sum 1 keepdim", lambda x: x.sum(1, keepdim=True), 37),
        ("sum -1", lambda x: x.sum(-1), 129),
        ("sum (0, 2)", lambda x: x.sum((0, 2)), 6 * 129),
        ("sum all", lambda x: x.sum(), x.numel()),
        ("mean 1", lambda x: x.mean(1), 37),
        ("mean (1, 2) keepdim", lambda x: x.mean((1, 2), keepdim=True), 37 * 129),
        ("amax -1", lambda x: x.amax(-1), 1),
        ("amax (0, 1) keepdim", lambda x: x.amax((0, 1), keepdim=True), 1),
        ("amin 0", lambda x: x.amin(0), 1),
        ("variance -1", lambda x: ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1), 2 * 129),
    ]
    f = lambda x: tuple([fn(x) for _, fn, _ in specs])  # noqa: E731
    got = flatten(compiled(f)(x))
    want = flatten(f(x))
    scale = float(x.abs().max())  # the terms', not the sums' magnitude
    for (label, _, n), g, w in zip(specs, got, want):
        check(g, w, label, n=n, scale=scale)

    xi = torch.randint(-100, 100, (33, 65), device=DEV, dtype=torch.int32)
    xb = randn(64, 1000, dtype=torch.bfloat16)
    g = lambda xi, xb: (xi.sum(1), xb.sum(-1), xb.float().mean(0))  # noqa: E731
    got = same(g, (xi, xb), "int32 and bf16 sums", n=[1, 1000, 64],
               scale=float(xb.float().abs().max()))
    assert got[0].dtype == torch.int64 and got[1].dtype == torch.bfloat16


def test_softmax():
    x = randn(300, 1000) * 3
    xb = randn(128, 4096, dtype=torch.bfloat16)
    f = lambda x, xb: (torch.softmax(x, -1), torch.softmax(x, 0),  # noqa: E731
                       torch.log_softmax(x, -1), torch.softmax(xb, -1),
                       F.softmax(xb.float(), -1).to(torch.bfloat16))
    same(f, (x, xb), "softmax", n=[1000, 300, 1000, 4096, 4096])


def test_layer_norm_backward():
    def ln(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
    for dtype, (m, n) in [(torch.float32, (64, 1000)),
                          (torch.float32, (512, 4096)),
                          (torch.bfloat16, (256, 2048))]:
        x = randn(m, n, dtype=dtype).requires_grad_()
        w = (1 + 0.1 * randn(n)).to(dtype).requires_grad_()
        b = (0.1 * randn(n)).to(dtype).requires_grad_()
        # x's gradient reduces over a row (n), w's and b's over rows (m).
        same_grads(ln, [x, w, b], "layer_norm %s %dx%d" % (dtype, m, n),
                   n=n, n_grad=[n, m, m])
        torch._dynamo.reset()


def test_rms_norm_backward():
    def rms(x, w):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (xf * r).to(x.dtype) * w
    fns = [("manual", rms)]
    if hasattr(F, "rms_norm"):
        fns.append(("F.rms_norm",
                    lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6)))
    for label, fn in fns:
        for dtype, (m, n) in [(torch.float32, (128, 2048)),
                              (torch.bfloat16, (256, 4096))]:
            x = randn(m, n, dtype=dtype).requires_grad_()
            w = (1 + 0.1 * randn(n)).to(dtype).requires_grad_()
            same_grads(fn, [x, w], "rms %s %s" % (label, dtype), n=n,
                       n_grad=[n, m])
            torch._dynamo.reset()


def test_strided_inputs():
    a = randn(300, 700).t()                 # [700, 300], strides (1, 700)
    b = randn(700, 600)[:, ::2]             # [700, 300], strides (600, 2)
    same(lambda a: (a.exp() * 2, a.sum(1), torch.softmax(a, 0)), (a,),
         "column-major input", n=[1, 300, 700])
    torch._dynamo.reset()
    same(lambda b: (torch.tanh(b) + 1, b.amax(0)), (b,), "sliced input")
    torch._dynamo.reset()
    same(lambda a, b: (F.gelu(a * b), (a + b).sum(1, keepdim=True)), (a, b),
         "column-major and sliced inputs together", n=[1, 300])
    torch._dynamo.reset()
    p = randn(16, 64, 33).permute(2, 0, 1)  # [33, 16, 64]
    same(lambda p: (p * 2 + 1, p.sum(-1), torch.softmax(p, 1)), (p,),
         "permuted 3-d input", n=[1, 64, 16])


def test_channels_last():
    x = randn(8, 32, 14, 14).to(memory_format=torch.channels_last)
    s, b = randn(32), randn(32)

    def f(x, s, b):
        y = torch.relu(x * s.view(1, -1, 1, 1) + b.view(1, -1, 1, 1))
        return y, x.mean((2, 3)), x.sum(1, keepdim=True), x.amax((0, 2, 3))
    got = same(f, (x, s, b), "channels-last", n=[1, 196, 32, 8 * 196])
    assert got[0].is_contiguous(memory_format=torch.channels_last), \
        "channels-last in, strides %s out" % (got[0].stride(),)


def test_matmul_between_fusions():
    def f(x, w, b):
        h = torch.relu(x * 2 + b)
        y = h @ w                                       # stays ATen
        return torch.softmax(y, -1) * 3 + y.sum(-1, keepdim=True)
    x, w, b = randn(128, 256), randn(256, 512) / 16, randn(256)
    same(f, (x, w, b), "fusion, mm, fusion", n=512)
    torch._dynamo.reset()
    same(lambda x, w: x @ w, (x, w), "a graph of a matmul alone", n=256)
    torch._dynamo.reset()
    same_grads(f, [x.requires_grad_(), w.requires_grad_(), b.requires_grad_()],
               "fusion, mm, fusion: backward", n=512,
               n_grad=[512 + 512, 512 + 128, 512 + 128])


def test_dynamic_shapes():
    def f(x, b):
        return torch.softmax(x + b, -1) * x.sum(0)
    backend, graphs = counting_backend()
    cf = torch.compile(f, backend=backend, dynamic=True)
    sizes = [(64, 128), (96, 130), (200, 513), (33, 1000)]
    for m, n in sizes:
        x, b = randn(m, n), randn(n)
        same(f, (x, b), "dynamic=True %dx%d" % (m, n), n=max(m, n), cfn=cf)
    print("  dynamic=True: %d graph(s) compiled for %d sizes"
          % (len(graphs), len(sizes)))
    assert len(graphs) == 1, "dynamic=True recompiled: %d graphs for %d " \
        "sizes" % (len(graphs), len(sizes))

    torch._dynamo.reset()

    def g(x, w):
        return F.layer_norm(x, (x.shape[-1],), w) * 2 + 1
    backend, graphs = counting_backend()
    cg = torch.compile(g, backend=backend)
    w = randn(384)
    for m in (64, 100, 256):
        x = randn(m, 384)
        torch._dynamo.mark_dynamic(x, 0)
        same(g, (x, w), "mark_dynamic rows=%d" % m, n=384, cfn=cg)
    print("  mark_dynamic: %d graph(s) compiled for 3 sizes" % len(graphs))
    assert len(graphs) == 1, "mark_dynamic recompiled: %d graphs" % len(graphs)

    torch._dynamo.reset()
    backend, graphs = counting_backend()
    cs = torch.compile(f, backend=backend)
    x, b = randn(64, 128), randn(128)
    for _ in range(3):
        same(f, (x, b), "static, same shape", n=128, cfn=cs)
    assert len(graphs) == 1, "one shape called 3 times: %d graphs" % len(graphs)


def test_autocast_bf16():
    def f(x, w, g, b):
        h = F.layer_norm(x, (x.shape[-1],), g, b)
        y = h @ w                                       # bf16 under autocast
        return F.gelu(y, approximate="tanh") * torch.sigmoid(y), y.float().sum(-1)
    x, w = randn(256, 512), randn(512, 1024) / 22
    g, b = 1 + 0.1 * randn(512), 0.1 * randn(512)
    cf = compiled(f)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        got = same(f, (x, w, g, b), "autocast bf16 forward", n=[512, 1024],
                   cfn=cf, precision=torch.bfloat16)
    assert got[0].dtype == torch.bfloat16, got[0].dtype
    torch._dynamo.reset()
    same_grads(f, [x.requires_grad_(), w.requires_grad_(), g.requires_grad_(),
                   b.requires_grad_()], "autocast bf16 backward",
               n=[512, 1024], n_grad=[1024 + 512, 256 + 1024, 256, 256],
               ctx=lambda: torch.autocast("cuda", dtype=torch.bfloat16),
               precision=torch.bfloat16)


def test_reduce_overhead():
    def f(x, b):
        return torch.softmax(x * 2 + b, -1), (x - b).abs().amax(-1)
    cf = compiled(f, mode="reduce-overhead")
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
    for i in range(6):
        if mark:
            mark()
        x, b = randn(256, 1000), randn(1000)
        # Clone before the next call: a CUDA graph may reuse its outputs.
        got = [o.clone() for o in flatten(cf(x, b))]
        want = flatten(f(x, b))
        for k, (g, w) in enumerate(zip(got, want)):
            check(g, w, "reduce-overhead call %d output %d" % (i, k), n=1000)


def test_non_default_stream():
    def f(x, b):
        return torch.sigmoid(x * b).sum(-1), x * 3
    cf = compiled(f)
    shape = (512, 2048)
    b = randn(2048)
    cf(randn(*shape), b)                  # compiled on the default stream
    x = torch.zeros(*shape, device=DEV)
    new = randn(*shape)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        # x gets its values on s only after a long sleep: a kernel that ran
        # on another stream would read zeros.
        torch.cuda._sleep(50_000_000)
        x.copy_(new)
        got = flatten(cf(x, b))
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    want = flatten(f(new, b))
    for k, (g, w) in enumerate(zip(got, want)):
        check(g, w, "side stream output %d" % k, n=2048)


def test_second_device():
    if torch.cuda.device_count() < 2:
        raise fzcheck.Skipped("%d CUDA device(s): cuda:1 not tested"
                              % torch.cuda.device_count())
    d1 = torch.device("cuda", 1)
    x, w = randn(256, 1000, device=d1), randn(1000, device=d1)
    assert torch.cuda.current_device() == 0
    f = lambda x, w: (F.layer_norm(x, (1000,), w) * 2, x.sum(0))  # noqa: E731
    got = same(f, (x, w), "on cuda:1 (current device 0)", n=[1000, 256])
    assert all(g.device == d1 for g in got)


def test_explain():
    def f(x, w, b):
        h = torch.relu(x * 2 + b)
        y = h @ w
        return torch.softmax(y, -1)
    x, w, b = randn(64, 128), randn(128, 256), randn(128)
    text = fz.explain(f, x, w, b)
    assert isinstance(text, str), "fz.explain returned %r" % type(text)
    print("  " + text.strip().replace("\n", "\n  "))
    low = text.lower()
    assert "fusion" in low, "fz.explain names no fusion"
    assert "aten" in low, "fz.explain names no node left to ATen"
    assert "mm" in low, "fz.explain does not name the matmul"


def test_version_and_registration():
    assert isinstance(fz.__version__, str) and fz.__version__, fz.__version__
    assert "fz" in torch._dynamo.list_backends(exclude_tags=()), \
        "backend 'fz' not registered by `import fz`"
    from importlib import metadata
    eps = metadata.entry_points()
    group = (eps.select(group="torch_dynamo_backends") if hasattr(eps, "select")
             else eps.get("torch_dynamo_backends", []))
    ours = [e for e in group if e.name == "fz"]
    if ours:
        assert callable(ours[0].load()), "entry point fz does not load"
        print("  entry point torch_dynamo_backends:fz -> %s" % ours[0].value)
    else:
        print("  no installed distribution declares the torch_dynamo_backends "
              "entry point (a checkout run): not checked")


def main():
    torch.manual_seed(SEED)
    print("fz %s, torch %s on %s, seed %d" % (
        getattr(fz, "__version__", "?"), torch.__version__,
        torch.cuda.get_device_name(DEV),
        SEED))
    return fzcheck.run_tests(globals(), sys.argv[1:],
                             before_each=torch._dynamo.reset)


if __name__ == "__main__":
    sys.exit(main())
