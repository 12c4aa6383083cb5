"""GPU tests of argmax and argmin against eager PyTorch on CUDA: the
FusionDefinition ops (fd.ops.argmax / argmin) and torch.compile(backend=
"fz") over aten.argmax / aten.argmin. Positions must equal PyTorch's
exactly: ties and NaN go to the first position, a permuted or
channels-last input gives the logical index, dim=None the flat one.

    python3 python/tests/test_argreduce.py [test_name ...]

with libfz.so found through $FZ_LIBRARY (or the build trees). Without
torch, CUDA or a GPU it prints "SKIPPED: ..." and exits 77. Plain asserts.
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


def ints(*shape, dtype=torch.int32, values=5):
    """Few distinct values: ties in every row."""
    return torch.randint(-values, values, shape, generator=GEN, device=DEV,
                         dtype=dtype)


def same(got, want, what):
    assert got.dtype == torch.int64, "%s: dtype %s" % (what, got.dtype)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (
        what, tuple(got.shape), tuple(want.shape))
    bad = got != want
    if bad.any():
        idx = bad.nonzero()[0].tolist()
        raise AssertionError("%s: %d of %d positions differ; first at %s: %d "
                             "vs %d" % (what, int(bad.sum()), bad.numel(), idx,
                                        got[tuple(idx)].item(),
                                        want[tuple(idx)].item()))


def arg_fusion(name, ndim, dtype, dim, keepdim):
    with fz.FusionDefinition(name) as fd:
        x = fd.define_tensor(shape=[-1] * ndim, dtype=dtype)
        fd.add_output(fd.ops.argmax(x, dim=dim, keepdim=keepdim))
        fd.add_output(fd.ops.argmin(x, dim=dim, keepdim=keepdim))
    return fd


def check(fd, x, dim, keepdim, what):
    amax, amin = fd.execute([x])
    if dim is None and keepdim:
        want_max = torch.argmax(x, keepdim=True)
        want_min = torch.argmin(x, keepdim=True)
    else:
        want_max = torch.argmax(x, dim=dim, keepdim=keepdim)
        want_min = torch.argmin(x, dim=dim, keepdim=keepdim)
    same(amax, want_max, "argmax " + what)
    same(amin, want_min, "argmin " + what)


# ---- the tests ---------------------------------------------------------------


def test_rows_columns_and_all():
    """Inner, outer, split (few rows, long ones) and dim=None."""
    shapes = [(4096, 1024), (3, 300007), (1, 1), (999, 31), (400009, 8)]
    for dim, keepdim in [(-1, False), (1, True), (0, False), (None, False),
                         (None, True)]:
        fd = arg_fusion("arg", 2, torch.float32, dim, keepdim)
        for shape in shapes:
            x = rand(*shape)
            check(fd, x, dim, keepdim, "%s dim=%s keepdim=%s" % (
                shape, dim, keepdim))


def test_dtypes_and_ties():
    """bf16, f16, f64; integers with few values (ties everywhere), and
    floats rounded to a few values."""
    for dtype in (torch.bfloat16, torch.float16, torch.float64):
        fd = arg_fusion("arg_dtype", 2, dtype, 1, False)
        for shape in [(1024, 4096), (3, 200003), (31, 17)]:
            check(fd, rand(*shape, dtype=dtype), 1, False,
                  "%s %s" % (dtype, shape))
    for dtype in (torch.int32, torch.int64, torch.int8):
        for dim in (1, 0):
            fd = arg_fusion("arg_int", 2, dtype, dim, False)
            for shape in [(1024, 4096), (3, 200003), (300007, 4)]:
                check(fd, ints(*shape, dtype=dtype), dim, False,
                      "%s %s dim %d" % (dtype, shape, dim))
    fd = arg_fusion("arg_round", 2, torch.float32, 1, False)
    x = torch.round(rand(2048, 2048))
    check(fd, x, 1, False, "rounded f32")
    check(fd, torch.zeros(64, 5000, device=DEV), 1, False, "all equal")
    z = torch.zeros(8, 1000, device=DEV)
    z[:, ::2] = -0.0
    check(fd, z, 1, False, "signed zeros")


def test_nan_and_infinities():
    fd = arg_fusion("arg_nan", 2, torch.float32, 1, False)
    for shape in [(512, 4096), (2, 500003), (65, 33)]:
        x = rand(*shape)
        x[x < -1.98] = float("nan")  # about half a percent
        x[(x > 1.98) & (x < 1.99)] = float("inf")
        x[(x > -1.1) & (x < -1.09)] = float("-inf")
        check(fd, x, 1, False, "NaN/inf %s" % (shape,))
    x = torch.full((16, 100), float("-inf"), device=DEV)
    check(fd, x, 1, False, "all -inf")
    x = torch.full((16, 100), float("nan"), device=DEV)
    check(fd, x, 1, False, "all NaN")


def test_permuted_and_channels_last():
    """The position is logical, whatever the strides."""
    x = rand(8, 64, 14, 14).to(memory_format=torch.channels_last)
    for dim in (1, 2, 3, None):
        fd = arg_fusion("arg_cl", 4, torch.float32, dim, False)
        check(fd, x, dim, False, "channels-last dim=%s" % dim)
    t = rand(999, 1000).t()
    for dim in (0, 1, None):
        fd = arg_fusion("arg_t", 2, torch.float32, dim, False)
        check(fd, t, dim, False, "transposed dim=%s" % dim)


def test_persistent_softmax_with_argmax():
    with fz.FusionDefinition("softmax_argmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        m = fd.ops.amax(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        p = e / fd.ops.sum(e, dims=[1], keepdim=True)
        fd.add_output(p)
        fd.add_output(fd.ops.argmax(x, dim=1))
        fd.add_output(fd.ops.argmin(p, dim=1))
    for shape in [(4096, 1024), (1000, 4099), (3, 33)]:
        x = rand(*shape)
        p, i, j = fd.execute([x])
        want_p = torch.softmax(x, 1)
        assert torch.allclose(p, want_p, rtol=1e-5, atol=1e-6), "softmax"
        same(i, torch.argmax(x, 1), "argmax beside softmax %s" % (shape,))
        # argmin of the probabilities: fz's and torch's p may differ in the
        # last bit, so compare against argmin of fz's own p
        same(j, torch.argmin(p, 1), "argmin of softmax %s" % (shape,))


def test_rank0():
    with fz.FusionDefinition("arg_scalar") as fd:
        x = fd.define_scalar(dtype=torch.float32)
        fd.add_output(fd.ops.argmax(x))
    (got,) = fd.execute([torch.tensor(3.5, device=DEV)])
    assert got.item() == 0 and got.dtype == torch.int64, got


def test_torch_compile():
    def fn(x, y):
        return (torch.argmax(x * 2, dim=-1), torch.argmin(x, dim=0,
                                                          keepdim=True),
                torch.argmax(torch.exp(x)), torch.argmin(y, 1))
    compiled = torch.compile(fn, backend="fz")
    for shape in [(256, 1000), (7, 5)]:
        x = rand(*shape)
        y = ints(*shape)
        got = compiled(x, y)
        want = fn(x, y)
        for k, (g, w) in enumerate(zip(got, want)):
            same(g, w, "torch.compile output %d %s" % (k, shape))


def main():
    print("fz %s from %s, torch %s on %s, seed %d" % (
        fz.version(), fz.lib().path, torch.__version__,
        torch.cuda.get_device_name(DEV), SEED))
    return fzcheck.run_tests(globals(), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
