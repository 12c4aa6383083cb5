"""GPU tests of gather, take_along_dim and index_select in the Python front
end against eager PyTorch, cross-entropy from integer labels against
torch.nn.functional.cross_entropy(reduction='none'), and the error for an
index out of range.

Run from the repository root: python3 python/tests/test_gather.py (or with
pytest). Without torch, CUDA or a GPU it prints "SKIPPED: ..." and exits 77.
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
    t = torch.rand(*shape, generator=GEN, device=DEV)
    return (4 * t - 2).to(dtype)


def indices(high, *shape, dtype=torch.int64):
    return torch.randint(0, high, shape, generator=GEN, device=DEV,
                         dtype=dtype)


def close(got, want, rtol, atol, what):
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (
        what, tuple(got.shape), tuple(want.shape))
    assert got.dtype == want.dtype, "%s: dtype %s, expected %s" % (
        what, got.dtype, want.dtype)
    g, w = got.double(), want.double()
    bad = ~((g - w).abs() <= atol + rtol * w.abs())
    assert not bad.any(), "%s: %d of %d differ" % (what, int(bad.sum()),
                                                  bad.numel())


def test_gather_both_axes_and_index_dtypes():
    for dim in (0, 1, -1):
        for idt in (torch.int64, torch.int32):
            with fz.FusionDefinition("gather") as fd:
                x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
                i = fd.define_tensor(shape=[-1, -1], dtype=idt)
                fd.add_output(fd.ops.gather(x, dim, i) * 2.0)
            x = rand(300, 200)
            shape = [300, 200]
            shape[dim] = 37
            i = indices(x.shape[dim], *shape, dtype=idt)
            (out,) = fd.execute([x, i])
            want = torch.gather(x, dim, i.long()) * 2.0
            close(out, want, 0, 0, "gather dim %d %s" % (dim, idt))


def test_take_along_dim_broadcasts():
    with fz.FusionDefinition("take") as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=torch.float32)
        i = fd.define_tensor(shape=[-1, 1, -1], dtype=torch.int64)
        fd.add_output(fd.ops.take_along_dim(x, i, 2))
    x = rand(8, 5, 100)
    i = indices(100, 8, 1, 7)
    (out,) = fd.execute([x, i])
    close(out, torch.take_along_dim(x, i, 2), 0, 0, "take_along_dim")


def test_index_select():
    for dim in (0, 1):
        for idt in (torch.int64, torch.int32):
            with fz.FusionDefinition("select") as fd:
                x = fd.define_tensor(shape=[-1, -1], dtype=torch.bfloat16)
                i = fd.define_tensor(shape=[-1], dtype=idt)
                fd.add_output(fd.ops.index_select(x, dim, i))
            x = rand(100, 300, dtype=torch.bfloat16)
            i = indices(x.shape[dim], 55, dtype=idt)
            (out,) = fd.execute([x, i])
            close(out, torch.index_select(x, dim, i), 0, 0,
                  "index_select dim %d %s" % (dim, idt))


def cross_entropy_fd(name, via_log_softmax):
    with fz.FusionDefinition(name) as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        label = fd.define_tensor(shape=[-1], dtype=torch.int64)
        m = fd.ops.amax(x, dims=[1], keepdim=True)
        d = x - m
        s = fd.ops.sum(fd.ops.exp(d), dims=[1], keepdim=True)
        lab = fd.ops.broadcast(label, [1])
        if via_log_softmax:
            lsm = d - fd.ops.log(s)
            loss = -fd.ops.gather(lsm, 1, lab)
        else:
            lse = fd.ops.log(s) + m
            loss = lse - fd.ops.gather(x, 1, lab)
        fd.add_output(fd.ops.squeeze(loss, [1]))
    return fd


def test_cross_entropy_from_labels():
    for via in (False, True):
        fd = cross_entropy_fd("ce", via)
        for n, c in [(1000, 1000), (64, 32000), (37, 1001)]:
            x, label = rand(n, c), indices(c, n)
            (out,) = fd.execute([x, label])
            want = torch.nn.functional.cross_entropy(x, label,
                                                     reduction="none")
            close(out, want, 1e-5, 1e-5, "cross-entropy %dx%d" % (n, c))
            assert "inner-persistent" in (fd.last_plan() or ""), \
                "cross-entropy is not one persistent kernel"
            assert fd.last_plan().count("plan @") == 1, fd.last_plan()


def test_out_of_range_raises_and_data_stays():
    with fz.FusionDefinition("bad") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        i = fd.define_tensor(shape=[-1, -1], dtype=torch.int64)
        fd.add_output(fd.ops.gather(x, 1, i))
    x = rand(4, 16)
    keep = x.clone()
    bad = torch.tensor([[0, 1], [2, 17], [3, 4], [5, 6]], device=DEV)
    fd.execute([x, bad])
    try:
        fd.check()
        raise AssertionError("check() did not raise for index 17")
    except fz.FzError as e:
        assert "index 17 is out of range [0, 16) of axis 1" in str(e), e
    assert torch.equal(x, keep), "the input changed"
    fd.check()  # reported once
    fd.execute([x, bad])
    torch.cuda.synchronize()
    try:
        fd.execute([x, bad.clamp(0, 15)])
        raise AssertionError("the next call did not raise")
    except fz.FzError as e:
        assert "index 17 is out of range" in str(e), e
    good = bad.clamp(0, 15)
    (out,) = fd.execute([x, good])
    close(out, torch.gather(x, 1, good), 0, 0, "after the error")
    neg = good.clone()
    neg[0, 0] = -1
    fd.execute([x, neg])
    try:
        fd.check()
        raise AssertionError("check() did not raise for index -1")
    except fz.FzError as e:
        assert "index -1 is out of range" in str(e), e


def main():
    print("fz %s, torch %s on %s, seed %d" % (
        fz.version(), torch.__version__, torch.cuda.get_device_name(DEV),
        SEED))
    return fzcheck.run_tests(globals(), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
