"""var and mean (one Welford state) against eager PyTorch on CUDA.

fd.ops.var_mean and fd.ops.var against torch.var_mean and torch.var
(dims, corrections 0, 1 and fractional, keepdim, f32/f64/f16/bf16, sizes
known only at run time, inner and outer axes, rows split across blocks);
a layer norm written with var_mean on inputs around 1e4 with unit spread,
where E[x^2] - E[x]^2 in f32 loses the variance, against float64; and
torch.compile(backend="fz") on graphs of aten.var_mean.correction and
aten.var.correction with dynamic sizes.

Run: python3 python/tests/test_welford.py [test names]. FZ_TEST_SEED
repeats a run's inputs. Without torch, CUDA or a GPU it prints
"SKIPPED: ..." and exits 77. Registered in ctest as gpu/python_welford.
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

import fz  # noqa: E402  (registers backend="fz")

DEV = torch.device("cuda", 0)
SEED = fzcheck.seed()
GEN = torch.Generator(device=DEV).manual_seed(SEED)


def randn(*shape, dtype=torch.float32, offset=0.0):
    t = torch.randn(*shape, generator=GEN, device=DEV, dtype=torch.float32)
    return (t + offset).to(dtype)


def var_mean_fusion(dtype, dims, correction, keepdim, rank=2):
    with fz.FusionDefinition("var_mean") as fd:
        x = fd.define_tensor(shape=[-1] * rank, dtype=dtype)
        v, m = fd.ops.var_mean(x, dims, correction=correction,
                               keepdim=keepdim)
        fd.add_output(v)
        fd.add_output(m)
    return fd


def count(x, dims):
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def test_var_mean_like_torch():
    cases = [  # dtype, dims, correction, keepdim, shapes
        (torch.float32, [1], 1, False, [(2048, 1024), (333, 37), (4, 1000000)]),
        (torch.float32, [0], 0, True, [(1000, 1024), (1000000, 4), (37, 333)]),
        (torch.float32, [-1], 2.5, False, [(64, 4099)]),
        (torch.float64, [1], 1, True, [(512, 3000), (3, 300001)]),
        (torch.float16, [1], 0, False, [(1024, 4096), (37, 1000)]),
        (torch.bfloat16, [1], 1, False, [(1024, 4096), (3, 300000)]),
        (torch.bfloat16, [0], 1, True, [(4096, 512)]),
    ]
    for dtype, dims, c, keepdim, shapes in cases:
        fd = var_mean_fusion(dtype, dims, c, keepdim)
        for shape in shapes:  # one fusion, every size: counts at run time
            x = randn(*shape, dtype=dtype)
            v, m = fd.execute([x])
            wv, wm = torch.var_mean(x, dims, correction=c, keepdim=keepdim)
            what = "var_mean %s %s dims=%s correction=%s" % (
                dtype, shape, dims, c)
            n = count(x, dims)
            check(v, wv, what + ": var", n=n, layout=False)
            check(m, wm, what + ": mean", n=n, layout=False)


def test_var_alone_and_every_axis():
    with fz.FusionDefinition("var") as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=torch.float32)
        fd.add_output(fd.ops.var(x, [0, 2], correction=1))
        fd.add_output(fd.ops.var(x))  # every axis, as torch.var(x)
    x = randn(17, 300, 129)
    a, b = fd.execute([x])
    check(a, torch.var(x, [0, 2]), "var over (0, 2)", n=17 * 129,
          layout=False)
    check(b, torch.var(x), "var over every axis", n=x.numel(), layout=False)


def test_correction_reaching_the_count():
    fd = var_mean_fusion(torch.float32, [1], 3, False)
    x = randn(8, 3)
    x[0] = 5.0  # a constant row: 0 / 0
    v, m = fd.execute([x])
    wv, wm = torch.var_mean(x, [1], correction=3)
    assert torch.isnan(v[0]) and torch.isnan(wv[0]), (v[0], wv[0])
    assert torch.isinf(v[1:]).all() and torch.isinf(wv[1:]).all(), v
    check(m, wm, "mean beside an infinite var", n=3, layout=False)


def layer_norm_fusion():
    with fz.FusionDefinition("layer_norm_var_mean") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        v, m = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
        y = (x - m) * fd.ops.rsqrt(v + 1e-5)
        fd.add_output(y)
        fd.add_output(v)
    return fd


def test_layer_norm_with_a_large_mean():
    """Rows around 1e4 with unit spread: the variance (about 1) is below
    the f32 rounding of x^2 (an ulp of 8 at 1e8); a Welford state keeps
    it. Compared with float64 statistics of the same f32 inputs, within
    what an f32 mean near 1e4 allows (half an ulp, 5e-4, in every update):
    the variance to a few 1e-3, the output to 2e-2."""
    fd = layer_norm_fusion()
    for shape in [(2048, 1024), (64, 8192), (37, 1000)]:
        x = randn(*shape, offset=1e4)
        y, v = fd.execute([x])
        x64 = x.double()
        wv, wm = torch.var_mean(x64, [1], correction=0, keepdim=True)
        check(v, wv.float(), "large-mean var %s" % (shape,), rtol=0,
              atol=5e-3, layout=False)
        want = (x64 - wm) * torch.rsqrt(wv + 1e-5)
        check(y, want.float(), "large-mean layer norm %s" % (shape,),
              rtol=0, atol=2e-2)
        eager = F.layer_norm(x, (shape[1],), eps=1e-5)
        check(y, eager, "large-mean layer norm %s vs eager" % (shape,),
              rtol=0, atol=4e-2)
        # what the sum of squares gives, to show the test can tell
        naive = (x * x).mean(1, keepdim=True) - x.mean(1, keepdim=True) ** 2
        assert (naive - wv.float()).abs().max() > 5e-2, \
            "the inputs do not defeat the sum of squares"


def compiled(fn):
    return torch.compile(fn, backend="fz", dynamic=True)


def test_compiled_var_mean_dynamic():
    def f(x):
        v, m = torch.var_mean(x, -1, correction=1)
        return v * 2, m, torch.var(x, 0, correction=2.5, keepdim=True)
    cf = compiled(f)
    for shape in [(64, 128), (96, 130), (33, 1000), (2, 70000)]:
        x = randn(*shape, offset=3.0)
        got, want = flatten(cf(x)), flatten(f(x))
        for i, (g, w) in enumerate(zip(got, want)):
            check(g, w, "compiled var_mean %s output %d" % (shape, i),
                  n=max(shape))


def test_compiled_layer_norm_large_mean():
    def f(x, w, b):
        v, m = torch.var_mean(x, -1, correction=0, keepdim=True)
        return (x - m) * torch.rsqrt(v + 1e-5) * w + b
    cf = compiled(f)
    for shape in [(512, 768), (100, 1000)]:
        x = randn(*shape, offset=1e4)
        w, b = randn(shape[1]), randn(shape[1])
        got = cf(x, w, b)
        x64 = x.double()
        v, m = torch.var_mean(x64, -1, correction=0, keepdim=True)
        want = ((x64 - m) * torch.rsqrt(v + 1e-5) * w.double() + b.double())
        check(got, want.float(), "compiled large-mean layer norm %s"
              % (shape,), rtol=0, atol=1e-1)


def test_compiled_bf16_var_mean():
    def f(x):
        return torch.var_mean(x, 1, correction=1)
    cf = compiled(f)
    x = randn(256, 4096, dtype=torch.bfloat16)
    for i, (g, w) in enumerate(zip(flatten(cf(x)), flatten(f(x)))):
        check(g, w, "compiled bf16 var_mean output %d" % i, n=4096)


def main():
    print("fz %s from %s, torch %s on %s, seed %d" % (
        fz.version(), fz.lib().path, torch.__version__,
        torch.cuda.get_device_name(DEV), SEED))
    return fzcheck.run_tests(globals(), sys.argv[1:],
                             before_each=torch._dynamo.reset)


if __name__ == "__main__":
    sys.exit(main())
