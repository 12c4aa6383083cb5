"""GPU tests of fd.ops.rand, randn and dropout.

Run from the repository root: python3 python/tests/test_random.py, with
libfz.so found through $FZ_LIBRARY (or the build trees). Without torch,
CUDA or a GPU it prints "SKIPPED: ..." and exits 77. Plain asserts.

fz's random numbers are its own Philox4x32-10 stream (docs/format.md,
"rand and randn"), not torch's, so they are checked against the contract
instead of against torch.rand: element i of a draw depends only on (seed,
offset, i), whatever kernel computes it (bit for bit across fusions that
schedule it differently, and equal to a Python Philox here), and the
statistics are those of uniform and normal numbers. Thresholds sit five
or more standard deviations away.
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


def philox(counter, key):
    """Philox4x32-10 (Salmon et al., SC'11), for checking a few elements."""
    m0, m1, w0, w1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    x = list(counter)
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + w0) & 0xFFFFFFFF, (k1 + w1) & 0xFFFFFFFF
        p0, p1 = m0 * x[0], m1 * x[2]
        x = [((p1 >> 32) ^ x[1] ^ k0) & 0xFFFFFFFF, p1 & 0xFFFFFFFF,
             ((p0 >> 32) ^ x[3] ^ k1) & 0xFFFFFFFF, p0 & 0xFFFFFFFF]
    return x


def rand_f32(seed, offset, i):
    """Element i of rand f32 under (seed, offset): call i // 4, word i % 4,
    its top 24 bits times 2^-24."""
    q, s, o = i // 4, seed % (1 << 64), offset % (1 << 64)
    w = philox([q & 0xFFFFFFFF, q >> 32, o & 0xFFFFFFFF, o >> 32],
               [s & 0xFFFFFFFF, s >> 32])
    return (w[i % 4] >> 8) * 2.0 ** -24


def draw_alone(dtype):
    with fz.FusionDefinition("rand_alone") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        seed = fd.define_scalar("i64")
        off = fd.define_scalar("i64")
        fd.add_output(fd.ops.rand(x.shape, dtype, seed, off))
    return fd


def draw_and_row_sum(dtype):
    """The same draw, computed inside a reduction kernel (another
    schedule: rows, vectors along them) and stored from it."""
    with fz.FusionDefinition("rand_row_sum") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        seed = fd.define_scalar("i64")
        off = fd.define_scalar("i64")
        u = fd.ops.rand(x.shape, dtype, seed, off)
        fd.add_output(u)
        fd.add_output(fd.ops.sum(u * x, dims=[1]))
    return fd


def draw_transposed(dtype):
    """The same draw walked column by column (permuted, added to a
    column-major tensor)."""
    with fz.FusionDefinition("rand_transposed") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        seed = fd.define_scalar("i64")
        off = fd.define_scalar("i64")
        u = fd.ops.rand([x.size(1), x.size(0)], dtype, seed, off)
        fd.add_output(fd.ops.permute(u, [1, 0]) + x)
    return fd


# ---- the tests ---------------------------------------------------------------


def test_same_draw_in_different_kernels_is_identical():
    seed, off = 1234567 + SEED, 42
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        for m, n in ((512, 1024), (37, 101), (1, 4099)):
            x = torch.rand(m, n, generator=GEN, device=DEV)
            (a,) = draw_alone(dtype).execute([x, seed, off])
            b, s = draw_and_row_sum(dtype).execute([x, seed, off])
            assert a.dtype == dtype and a.shape == (m, n), (a.dtype, a.shape)
            assert torch.equal(a, b), "%s [%d, %d]: rand alone and in a " \
                "reduction differ in %d elements" % (
                    dtype, m, n, int((a != b).sum()))
            want = (b.double() * x.double()).sum(1)
            assert torch.allclose(s.double(), want, rtol=1e-4, atol=1e-4), \
                "row sums of the draw"
            xt = torch.zeros(n, m, device=DEV).t()  # [m, n] column-major
            (t,) = draw_transposed(dtype).execute([xt, seed, off])
            ut = t.t()  # the [n, m] draw
            (a2,) = draw_alone(dtype).execute(
                [torch.empty(n, m, device=DEV), seed, off])
            assert torch.equal(ut.to(dtype), a2), \
                "%s: rand walked transposed differs" % dtype


def test_rand_matches_the_definition():
    seed, off = -5 - SEED, (1 << 40) + 3
    x = torch.empty(300, 517, device=DEV)
    (a,) = draw_alone(torch.float32).execute([x, seed, off])
    flat = a.flatten().tolist()
    for i in (0, 1, 2, 3, 4, 517, 4097, 300 * 517 - 1):
        want = rand_f32(seed, off, i)
        assert flat[i] == want, "element %d: %r, want %r" % (i, flat[i], want)


def test_rand_is_uniform_and_offsets_are_independent():
    x = torch.empty(1024, 1024, device=DEV)
    fd = draw_alone(torch.float32)
    (a,) = fd.execute([x, SEED, 0])
    (b,) = fd.execute([x, SEED, 1])
    assert float(a.min()) >= 0.0 and float(a.max()) < 1.0
    n = a.numel()
    counts = torch.histc(a, bins=64, min=0.0, max=1.0).double()
    chi = float(((counts - n / 64) ** 2 / (n / 64)).sum())
    assert chi < 130.0, "chi-square %g over 64 bins" % chi  # mean 63, sd 11
    r = float(torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1])
    assert abs(r) < 5.0 / n ** 0.5, "offsets 0 and 1 correlate: %g" % r
    assert not torch.equal(a, b)


def test_randn_moments():
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        with fz.FusionDefinition("randn") as fd:
            seed = fd.define_scalar("i64")
            fd.add_output(fd.ops.randn([1024, 1024], dtype, seed, 7))
        (z,) = fd.execute([SEED])
        assert z.dtype == dtype
        z = z.double()
        n = z.numel()
        mean, var = float(z.mean()), float(z.var())
        share = float((z.abs() < 1).double().mean())
        assert torch.isfinite(z).all(), "randn gave a non-finite value"
        assert abs(mean) < 5.0 / n ** 0.5, "%s mean %g" % (dtype, mean)
        assert abs(var - 1) < 7.5 / n ** 0.5, "%s variance %g" % (dtype, var)
        assert abs(share - 0.6827) < 0.003, "%s within 1: %g" % (dtype, share)


def test_dropout_keep_ratio_and_scaling():
    x = torch.randn(2048, 1000, generator=GEN, device=DEV)
    for p in (0.1, 0.5, 0.9):
        with fz.FusionDefinition("dropout") as fd:
            t = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
            seed = fd.define_scalar("i64")
            out, mask = fd.ops.dropout(t, p, seed, 3)
            fd.add_output(out)
            fd.add_output(mask)
        o, m = fd.execute([x, SEED])
        assert m.dtype == torch.bool and o.shape == x.shape
        keep = float(m.double().mean())
        sd = (p * (1 - p) / m.numel()) ** 0.5
        assert abs(keep - (1 - p)) < 5 * sd, "p=%g: kept %g" % (p, keep)
        want = torch.where(m, x / (1 - p), torch.zeros_like(x))
        assert torch.allclose(o, want, rtol=1e-6, atol=0), "p=%g scaling" % p
        o2, m2 = fd.execute([x, SEED])
        assert torch.equal(o, o2) and torch.equal(m, m2), "not deterministic"


def test_dropout_p0_and_p1_as_torch():
    x = torch.randn(64, 96, generator=GEN, device=DEV)
    x[0, 0] = float("inf")
    for p in (0.0, 1.0):
        with fz.FusionDefinition("dropout_edge") as fd:
            t = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
            out, mask = fd.ops.dropout(t, p, 5, 0)
            fd.add_output(out)
            fd.add_output(mask)
        o, m = fd.execute([x])
        want = torch.nn.functional.dropout(x, p, training=True)
        assert torch.equal(o.isnan(), want.isnan()), "p=%g NaNs" % p
        assert torch.equal(torch.nan_to_num(o), torch.nan_to_num(want)), \
            "p=%g differs from torch" % p
        assert bool(m.all()) if p == 0 else not bool(m.any())


def main():
    print("fz %s from %s, torch %s on %s, seed %d" % (
        fz.version(), fz.lib().path, torch.__version__,
        torch.cuda.get_device_name(DEV), SEED))
    return fzcheck.run_tests(globals(), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
