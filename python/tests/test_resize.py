"""GPU tests of fd.ops.slice, pad and cat against eager PyTorch: rotary
embeddings (rotate-half), RMSNorm followed by rotary embeddings, pads
with negative widths, cat of several operands, slices with steps and
PyTorch's negative and out-of-range indices, bf16.

Run from the repository root: python3 python/tests/test_resize.py
(libfz.so through $FZ_LIBRARY or the build trees). Without torch, CUDA or
a GPU it prints "SKIPPED: ..." and exits 77.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))


import fzcheck  # noqa: E402

torch = fzcheck.require_torch_cuda()

import fz  # noqa: E402

DEV = torch.device("cuda", 0)
SEED = fzcheck.seed()
GEN = torch.Generator(device=DEV).manual_seed(SEED)


def rand(*shape, dtype=torch.float32):
    t = torch.rand(*shape, generator=GEN, device=DEV) * 4 - 2
    return t.to(dtype)


def close(got, want, what, rtol=1e-5, atol=1e-6):
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (
        what, tuple(got.shape), tuple(want.shape))
    assert got.dtype == want.dtype, "%s: dtype %s vs %s" % (
        what, got.dtype, want.dtype)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, msg=what)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def test_rotary():
    d = 128
    with fz.FusionDefinition("rotary") as fd:
        x = fd.define_tensor(shape=[-1, -1, d], dtype=torch.float32)
        c = fd.define_tensor(shape=[-1, -1, d], dtype=torch.float32)
        s = fd.define_tensor(shape=[-1, -1, d], dtype=torch.float32)
        hi = fd.ops.slice(x, [0, 0, d // 2], [None, None, d])
        lo = fd.ops.slice(x, [0, 0, 0], [None, None, d // 2])
        rot = fd.ops.cat([-hi, lo], dim=-1)
        fd.add_output(x * c + rot * s)
    for b, t in ((2, 37), (4, 512), (1, 1)):
        xs, cs, ss = rand(b, t, d), rand(b, t, d), rand(b, t, d)
        (out,) = fd.execute([xs, cs, ss])
        close(out, xs * cs + rotate_half(xs) * ss, "rotary %dx%d" % (b, t))


def test_rmsnorm_rotary_bf16():
    d = 128
    with fz.FusionDefinition("rmsnorm_rotary") as fd:
        x = fd.define_tensor(shape=[-1, d], dtype=torch.bfloat16)
        w = fd.define_tensor(shape=[d], dtype=torch.bfloat16)
        c = fd.define_tensor(shape=[-1, d], dtype=torch.bfloat16)
        s = fd.define_tensor(shape=[-1, d], dtype=torch.bfloat16)
        xf = fd.ops.cast(x, torch.float32)
        ms = fd.ops.mean(xf * xf, dims=[1], keepdim=True)
        y = xf * fd.ops.rsqrt(ms + 1e-6) * fd.ops.cast(w, torch.float32)
        hi = fd.ops.slice(y, [0, d // 2], [None, d])
        lo = fd.ops.slice(y, [0, 0], [None, d // 2])
        rot = fd.ops.cat([-hi, lo], dim=1)
        out = y * fd.ops.cast(c, torch.float32) + rot * fd.ops.cast(s, torch.float32)
        fd.add_output(fd.ops.cast(out, torch.bfloat16))
    for n in (45, 4096):
        xs, ws = rand(n, d, dtype=torch.bfloat16), rand(d, dtype=torch.bfloat16)
        cs, ss = rand(n, d, dtype=torch.bfloat16), rand(n, d, dtype=torch.bfloat16)
        (got,) = fd.execute([xs, ws, cs, ss])
        xf = xs.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-6) * ws.float()
        want = (y * cs.float() + rotate_half(y) * ss.float()).bfloat16()
        close(got, want, "rmsnorm+rotary %d" % n, rtol=1.6e-2, atol=1e-2)


def test_pad_negative_widths():
    with fz.FusionDefinition("pads") as fd:
        x = fd.define_tensor(shape=[-1, 40], dtype=torch.float32)
        e = fd.ops.exp(x)
        fd.add_output(fd.ops.pad(e, [3, -5], -1.5))
        fd.add_output(fd.ops.pad(x, [-2, 4, 1, 2], 0.25))
    xs = rand(33, 40)
    a, b = fd.execute([xs])
    F = torch.nn.functional
    close(a, F.pad(xs.exp(), [3, -5], value=-1.5), "pad of exp", rtol=2e-6)
    close(b, F.pad(xs, [-2, 4, 1, 2], value=0.25), "pad two axes")


def test_cat_many_operands():
    with fz.FusionDefinition("cats") as fd:
        a = fd.define_tensor(shape=[7, 16], dtype=torch.float32)
        b = fd.define_tensor(shape=[7, 3], dtype=torch.float32)
        c = fd.define_tensor(shape=[7, 1], dtype=torch.float16)
        fd.add_output(fd.ops.cat([a, b, c, b], dim=1))
        fd.add_output(fd.ops.cat([a * 2.0, a, fd.ops.tanh(a)], dim=0))
    xa, xb, xc = rand(7, 16), rand(7, 3), rand(7, 1, dtype=torch.float16)
    inner, outer = fd.execute([xa, xb, xc])
    close(inner, torch.cat([xa, xb, xc, xb], dim=1), "cat inner, promoted")
    close(outer, torch.cat([xa * 2, xa, xa.tanh()], dim=0), "cat outer",
          rtol=2e-6)


def test_slice_steps_and_torch_indices():
    with fz.FusionDefinition("slices") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.bfloat16)
        fd.add_output(fd.ops.slice(x, [1, -7], [None, -1], [2, 3]))
        fd.add_output(fd.ops.slice(x, [-100, 2], [100, 5]))
    for n, m in ((9, 20), (64, 100)):
        xs = rand(n, m, dtype=torch.bfloat16)
        a, b = fd.execute([xs])
        close(a, xs[1::2, -7:-1:3].contiguous(), "steps %dx%d" % (n, m))
        close(b, xs[-100:100, 2:5].contiguous(), "clamped %dx%d" % (n, m))


def main():
    print("seed %d" % SEED)
    return fzcheck.run_tests(globals(), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
