"""Tests of the package that need neither torch nor a GPU: the version,
the libdevice search, and the torch.compile backend's tables (every op
they name exists in fd.ops or has a translation; layouts; plan parsing).

    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_package.py

ctest runs it as unit/python. Plain asserts; no pytest needed.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))

import fz  # noqa: E402
from fz import _libdevice  # noqa: E402
from fz.dynamo import tables  # noqa: E402
from fz.dynamo.translate import Translation  # noqa: E402
from fz.ops import Ops  # noqa: E402


def test_version():
    assert fz.__version__ == fz.version(), (fz.__version__, fz.version())
    assert fz.version() == "0.1.0"


def test_backend_is_lazy():
    # the backend's entry points resolve without importing torch
    assert callable(fz.backend) and callable(fz.explain)
    assert fz.backend.__module__ == "fz.dynamo"


def test_backend_attributes_in_a_fresh_process():
    # fz.dynamo loaded by attribute access alone, as `import fz;
    # fz.backend` in a new process does (above, the imports at the top
    # have loaded it already)
    import subprocess
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        os.pardir)
    code = ("import sys; sys.path.insert(0, %r); import fz; "
            "print(fz.dynamo.NAME, callable(fz.backend), "
            "callable(fz.explain))" % here)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["fz", "True", "True"], out.stdout


def _touch(root, *parts):
    path = os.path.join(root, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").close()
    return path


def test_libdevice_search():
    with tempfile.TemporaryDirectory() as site:
        if any(os.path.isfile(p) for p in _libdevice.library_places({})):
            # this machine has a toolkit libfz finds itself: nothing is set
            assert _libdevice.configure({}, [site]) is None
            return
        env = {}
        assert _libdevice.configure(env, [site]) is None and not env
        triton = _touch(site, "triton", "backends", "nvidia", "lib",
                        "libdevice.10.bc")
        env = {}
        found = _libdevice.configure(env, [site])
        if _libdevice.extra_places([])[:1]:  # a /usr/local/cuda-X.Y exists
            return
        assert found == triton and env["FZ_LIBDEVICE"] == triton, env
        nvcc = _touch(site, "nvidia", "cuda_nvcc", "nvvm", "libdevice",
                      "libdevice.10.bc")
        env = {}
        assert _libdevice.configure(env, [site]) == nvcc, env
        # FZ_LIBDEVICE set by the user is left alone
        env = {"FZ_LIBDEVICE": "/elsewhere/libdevice.10.bc"}
        assert _libdevice.configure(env, [site]) is None
        assert env["FZ_LIBDEVICE"] == "/elsewhere/libdevice.10.bc"
        # a CUDA_HOME toolkit is libfz's own find
        home = tempfile.mkdtemp(dir=site)
        _touch(home, "nvvm", "libdevice", "libdevice.10.bc")
        env = {"CUDA_HOME": home}
        assert _libdevice.configure(env, [site]) is None and \
            "FZ_LIBDEVICE" not in env


def test_tables_name_real_ops():
    known = set(Ops._UNARY) | set(Ops._BINARY) | set(Ops._ALIASES)
    for table in (tables.UNARY, tables.BINARY, tables.BOOL_ONLY):
        for aten, op in table.items():
            assert op in known, (aten, op)
    for aten, kind in tables.SPECIAL.items():
        assert hasattr(Translation, "_" + kind), (aten, kind)
    assert tables.VIEWS <= set(tables.SPECIAL), tables.VIEWS - set(tables.SPECIAL)
    assert tables.MULTI_OUTPUT <= set(tables.SPECIAL)
    names = [set(t) for t in (tables.UNARY, tables.BINARY, tables.BOOL_ONLY,
                              tables.SPECIAL)]
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            assert not names[i] & names[j], names[i] & names[j]
    for name in tables.DECOMPOSE:
        assert tables.kind_of("aten.%s.default" % name) is None, name


def test_kinds():
    assert tables.kind_of("aten.add.Tensor") == ("binary", "add")
    assert tables.kind_of("aten.mm.default") is None
    assert tables.is_compute("aten.exp.default")
    assert not tables.is_compute("aten.view.default")
    assert not tables.is_compute("aten.mm.default")
    assert tables.fz_dtype("torch.bfloat16") == "bf16"
    assert tables.fz_dtype("torch.complex64") is None
    assert tables.fz_dtype("torch.uint8") is None


def test_stride_order():
    so = tables.stride_order
    assert so([2, 3, 4], [12, 4, 1]) == [2, 1, 0]
    assert so([3, 2], [1, 3]) == [0, 1]                  # x.t()
    assert so([2, 3, 4], [12, 1, 3]) == [2, 0, 1]        # channels-last-like
    assert so([2, 1, 4], [4, 4, 1]) == [2, 1, 0]         # size-1 axis
    assert so([4, 3], [0, 1]) is None                    # expanded
    assert so([4, 3], [8, 1]) is None                    # sliced rows
    assert so([], []) == []


def test_canonical_dims():
    cd = tables.canonical_dims
    assert cd(None, 3) == [0, 1, 2]
    assert cd([], 2) == [0, 1]
    assert cd(-1, 3) == [2]
    assert cd([2, -3], 3) == [0, 2]


def test_schedulers_of():
    text = ("plan @f inner-persistent kernel=fz_k0\n  space [R4, 8]\n"
            "plan @f pointwise kernel=fz_k1\n")
    assert tables.schedulers_of(text) == ["inner-persistent", "pointwise"]
    assert tables.schedulers_of(None) == []


def main():
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    for name, fn in tests:
        fn()
        print("ok", name)
    print("%d tests passed" % len(tests))


if __name__ == "__main__":
    main()
