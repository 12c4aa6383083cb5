"""GPU tests of reshapes over symbolic sizes: a definition with shape
[-1, -1, -1] that flattens [B, S, H] to [B*S, H] (a derived extent, `B*S`)
keeps one build for every size, computes what PyTorch computes, and
compiles no more kernels than the same computation on an input that is
already flat (one compile per plan class: the reshape adds none). Also a
split [M] -> [-1, K] (the derived extent M/K, also read as mean's count)
and the run-time error when M/K is not an integer.

Run from the repository root: python3 python/tests/test_reshape_dynamic.py
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

# B, S and H distinct within each shape (equal sizes would share a symbol,
# another pattern and so another build), none 1.
SHAPES = [(4, 64, 1024), (3, 37, 1000), (2, 300, 7), (8, 16, 4096),
          (5, 11, 768), (6, 9, 1031)]


def rand(*shape):
    return torch.rand(*shape, generator=GEN, device=DEV) * 4 - 2


def layer_norm(fd, x2, w, b):
    """Layer norm of the rows of x2 (mean's count read at run time)."""
    mean = fd.ops.mean(x2, dims=[1], keepdim=True)
    xc = x2 - mean
    var = fd.ops.mean(xc * xc, dims=[1], keepdim=True)
    return xc * fd.ops.rsqrt(var + 1e-5) * w + b


def flattening_definition():
    with fz.FusionDefinition("ln_flatten") as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=torch.float32)
        w = fd.define_tensor(shape=[-1], dtype=torch.float32)
        b = fd.define_tensor(shape=[-1], dtype=torch.float32)
        x2 = fd.ops.reshape(x, [-1, x.size(2)])      # [B*S, H]
        y = layer_norm(fd, x2, w, b)
        fd.add_output(fd.ops.reshape(y, [x.size(0), x.size(1), -1]))
    return fd


def flat_definition():
    with fz.FusionDefinition("ln_flat") as fd:
        x2 = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        w = fd.define_tensor(shape=[-1], dtype=torch.float32)
        b = fd.define_tensor(shape=[-1], dtype=torch.float32)
        fd.add_output(layer_norm(fd, x2, w, b))
    return fd


def kernels(fd):
    """Distinct kernels the definition's executors made (compiled, or
    read from the disk cache)."""
    st = fd.stats()
    return st.get("kernels_compiled", 0) + st.get("kernels_from_disk", 0)


def test_flatten_matches_torch_with_one_build():
    fd = flattening_definition()
    for bsz, s, h in SHAPES:
        x, w, b = rand(bsz, s, h), rand(h), rand(h)
        (y,) = fd.execute([x, w, b])
        want = torch.nn.functional.layer_norm(x, (h,), w, b, eps=1e-5)
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4,
                                   msg="layer norm of %s" % ((bsz, s, h),))
    assert not fd._static, "the definition fell back to exact sizes"
    assert len(fd._built) == 1, "%d builds for %d shapes" % (
        len(fd._built), len(SHAPES))
    assert "reshape" in fd._last.text and "*" in fd._last.text, \
        fd._last.text


def test_flatten_compiles_as_the_flat_fusion():
    derived, flat = flattening_definition(), flat_definition()
    for bsz, s, h in SHAPES:
        x, w, b = rand(bsz, s, h), rand(h), rand(h)
        derived.execute([x, w, b])
        flat.execute([x.reshape(bsz * s, h), w, b])
    assert kernels(derived) == kernels(flat), \
        "%d kernels with the reshape, %d without" % (kernels(derived),
                                                      kernels(flat))
    misses = derived.stats()["signature_misses"]
    assert misses == len(SHAPES), misses


def test_split_by_a_symbolic_row_length():
    with fz.FusionDefinition("split") as fd:
        x = fd.define_tensor(shape=[-1], dtype=torch.float32)
        w = fd.define_tensor(shape=[-1], dtype=torch.float32)
        rows = fd.ops.reshape(x, [-1, w.size(0)])    # [M/K, K]
        fd.add_output(fd.ops.sum(rows * w, dims=[1]))
        # the count M/K read at run time (`symbol _S0/_S1`)
        fd.add_output(fd.ops.mean(rows, dims=[0]))
    for m, k in ((4096, 256), (37 * 41, 41), (1 << 20, 4096)):
        x, w = rand(m), rand(k)
        got, mean = fd.execute([x, w])
        want = (x.reshape(-1, k) * w).sum(1)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(mean, x.reshape(-1, k).mean(0),
                                   rtol=1e-4, atol=1e-5)
    assert not fd._static and len(fd._built) == 1, len(fd._built)
    try:
        fd.execute([rand(100), rand(7)])
    except fz.FzError as e:
        assert "is not an integer" in str(e), str(e)
    else:
        raise AssertionError("a reshape of 100 elements into rows of 7 ran")


def main():
    print("seed %d" % SEED)
    return fzcheck.run_tests(globals(), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
