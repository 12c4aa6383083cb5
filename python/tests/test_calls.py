"""FusionDefinition.execute's call path without torch or a GPU: what a
call hands fz_executor_run (the fz_device_tensor arrays: dtypes, ranks,
sizes, strides, pointers), the outputs it allocates, the symbol pattern
of each input signature, which calls build, which only prepare a new
signature and which only run, and the errors bad inputs get.

A stand-in `torch` module (tensors that carry sizes, strides, a dtype, a
device and a made-up address) is installed for this process; executors
are made on a zeroed fz_device, which nothing here touches (layouts need
no device), and fz_executor_run is replaced by a function that records
its arguments.

    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_calls.py

ctest runs it as unit/python_calls. Plain asserts.
"""

import ctypes
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))

# ---- stand-ins ------------------------------------------------------------------

torch = types.ModuleType("torch")


class Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


for _name in ("float64", "float32", "float16", "bfloat16", "int64", "int32",
              "int8", "bool", "uint8"):
    setattr(torch, _name, Dtype(_name))


class Device:
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index

    def __eq__(self, other):
        return (isinstance(other, Device) and
                (self.type, self.index) == (other.type, other.index))

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type,
                                                               self.index)


class Size(tuple):
    pass


class Tensor:
    next_address = 1 << 20

    def __init__(self, shape, stride=None, dtype=None, device=None):
        shape = tuple(shape)
        if stride is None:
            stride, step = [], 1
            for n in reversed(shape):
                stride.insert(0, step)
                step *= max(n, 1)
        self._shape, self._stride = shape, tuple(stride)
        self.dtype = torch.float32 if dtype is None else dtype
        self._device = Device("cuda", 0) if device is None else device
        Tensor.next_address += 1 << 16
        self._address = Tensor.next_address

    @property
    def shape(self):
        return Size(self._shape)

    def stride(self):
        return self._stride

    def dim(self):
        return len(self._shape)

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    def get_device(self):
        return self._device.index if self.is_cuda else -1

    def data_ptr(self):
        return self._address


made = []   # (what, arguments) of each stand-in tensor the package made


def empty_strided(size, stride, dtype=None, device=None):
    made.append(("empty_strided", (tuple(size), tuple(stride), dtype, device)))
    return Tensor(size, stride, dtype, device)


def tensor(value, dtype=None, device=None):
    made.append(("tensor", (value, dtype, device)))
    return Tensor((), (), dtype, device)


torch.Tensor, torch.Size, torch.device = Tensor, Size, Device
torch.empty_strided, torch.tensor = empty_strided, tensor
torch.cuda = types.SimpleNamespace(current_device=lambda: 0,
                                   is_initialized=lambda: False)
STREAM = 0x7f5a00c0ffee00   # a CUstream past 32 bits, as they are
torch._C = types.SimpleNamespace(
    _cuda_getCurrentRawStream=lambda index: STREAM + index)
sys.modules["torch"] = torch

import fz  # noqa: E402
from fz import _lib, fusion  # noqa: E402

lib = _lib.lib()

# Executors on a device nothing touches (fz_executor_create compiles
# nothing; layouts need no device).
_zero_device = ctypes.create_string_buffer(1 << 16)
fusion._device = lambda index: ctypes.c_void_p(ctypes.addressof(_zero_device))


def _tensor_fields(t):
    return (t.dtype, t.rank, tuple(t.sizes[:t.rank]),
            tuple(t.strides[:t.rank]), t.data)


runs = []   # per fz_executor_run: (inputs, outputs, stream)


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                  ctypes.POINTER(_lib.DeviceTensor), ctypes.c_int,
                  ctypes.POINTER(_lib.DeviceTensor), ctypes.c_int,
                  ctypes.c_void_p, ctypes.POINTER(_lib.Error))
def _record_run(executor, inputs, n, outputs, m, stream, err):
    runs.append(([_tensor_fields(inputs[i]) for i in range(n)],
                 [_tensor_fields(outputs[i]) for i in range(m)], stream))
    return 0


# fz_executor_run is this C-callable recorder (called as libfz's would
# be); calls are counted as the package makes them.
lib.fz_executor_run = _record_run
calls = {"fz_executor_output_layout": 0, "fz_executor_output_layouts": 0,
         "fz_executor_run": 0, "fz_executor_create": 0}
_untyped = _lib.untyped


def _counted_untyped(name):
    fn = _untyped(name)

    def call(*args):
        calls[name] += 1
        return fn(*args)
    return call


def _counted(name):
    fn = getattr(lib, name)

    def call(*args):
        calls[name] += 1
        return fn(*args)
    setattr(lib, name, call)


_lib.untyped = _counted_untyped
_counted("fz_executor_output_layout")
_counted("fz_executor_create")

F32, I32, F64 = torch.float32, torch.int32, torch.float64
CPU, GPU1 = Device("cpu"), Device("cuda", 1)
SYM, B1 = _lib.FZ_EXTENT_SYMBOL, _lib.FZ_EXTENT_BROADCAST
F32_CODE, F64_CODE, I32_CODE = (_lib.DTYPES[n][0] for n in ("f32", "f64",
                                                            "i32"))

# ---- definitions ----------------------------------------------------------------


def softmax():
    with fz.FusionDefinition("softmax") as fd:
        x = fd.define_tensor([-1, -1], F32)
        e = fd.ops.exp(x - fd.ops.amax(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def scaled_rows():
    """Three outputs, one of them column-major, and a scalar."""
    with fz.FusionDefinition("scaled_rows") as fd:
        x = fd.define_tensor([-1, -1], F32)
        w = fd.define_tensor([-1], F32)
        s = fd.define_scalar(F64)
        y = x * w * s
        fd.add_output(y, stride_order=[1, 0])
        fd.add_output(fd.ops.sum(y, dims=[1]))
        fd.add_output(y, stride_order=[0, 1])
    return fd


def mixed_shapes():
    """A named size, a constant, a broadcast axis, a declared order."""
    with fz.FusionDefinition("mixed") as fd:
        a = fd.define_tensor(["N", 4, 1], F32)
        b = fd.define_tensor([-1, -1], F32, stride_order=[0, 1])
        fd.add_output(a + fd.ops.reshape(b, ["N", 4, 1]))
    return fd


def expect_error(kind, message, fd, args):
    try:
        fd.execute(args)
    except kind as e:
        assert str(e) == message, "%r, not %r" % (str(e), message)
        return
    raise AssertionError("no %s (%s)" % (kind.__name__, message))


# ---- tests ------------------------------------------------------------------------


def test_a_call_fills_the_arrays_and_allocates_outputs():
    fd = softmax()
    x = Tensor((6, 10))
    del runs[:], made[:]
    (y,) = fd.execute([x])
    assert made == [("empty_strided", ((6, 10), (10, 1), F32,
                                       Device("cuda", 0)))], made
    assert (y.shape, y.stride(), y.dtype) == ((6, 10), (10, 1), F32)
    (ins, outs, stream), = runs
    assert ins == [(F32_CODE, 2, (6, 10), (10, 1), x.data_ptr())], ins
    assert outs == [(F32_CODE, 2, (6, 10), (10, 1), y.data_ptr())], outs
    assert stream == STREAM


def test_new_sizes_in_a_pattern_only_prepare_a_call():
    fd = softmax()
    fd.execute([Tensor((6, 10))])
    builds = calls["fz_executor_create"]
    layouts = dict(calls)
    x = Tensor((7, 33))
    del runs[:]
    (y,) = fd.execute([x])
    assert calls["fz_executor_create"] == builds    # no new fusion
    assert len(fd._built) == 1 and len(fd._calls) == 2
    # one call for every output's layout, none output by output
    assert calls["fz_executor_output_layouts"] == \
        layouts["fz_executor_output_layouts"] + 1
    assert calls["fz_executor_output_layout"] == \
        layouts["fz_executor_output_layout"]
    assert (y.shape, y.stride()) == ((7, 33), (33, 1))
    assert runs[0][0] == [(F32_CODE, 2, (7, 33), (33, 1), x.data_ptr())]
    # the same sizes again: a run, nothing prepared
    before = dict(calls, fz_executor_run=calls["fz_executor_run"] + 1)
    x2 = Tensor((7, 33))
    (y2,) = fd.execute([x2])
    assert calls == before and len(fd._calls) == 2
    assert runs[1][0] == [(F32_CODE, 2, (7, 33), (33, 1), x2.data_ptr())]
    assert runs[1][1][0][4] == y2.data_ptr() != y.data_ptr()


def test_several_outputs_and_a_scalar():
    fd = scaled_rows()
    x, w = Tensor((5, 3)), Tensor((3,))
    for m, scale in ((5, 2.0), (9, 0.5)):
        x, w = Tensor((m, 3)), Tensor((3,))
        del runs[:], made[:]
        y, s, yt = fd.execute([x, w, scale])
        assert made[0] == ("tensor", (scale, F64, Device("cuda", 0)))
        assert (y.shape, y.stride()) == ((m, 3), (3, 1))
        assert (s.shape, s.stride()) == ((m,), (1,))
        assert (yt.shape, yt.stride()) == ((m, 3), (1, m))
        (ins, outs, _), = runs
        assert ins[:2] == [(F32_CODE, 2, (m, 3), (3, 1), x.data_ptr()),
                           (F32_CODE, 1, (3,), (1,), w.data_ptr())], ins
        assert ins[2][:4] == (F64_CODE, 0, (), ())
        assert [o[:4] for o in outs] == [
            (F32_CODE, 2, (m, 3), (3, 1)), (F32_CODE, 1, (m,), (1,)),
            (F32_CODE, 2, (m, 3), (1, m))], outs
    assert len(fd._built) == 1
    # a 0-dim CUDA tensor for the scalar is passed as it is
    t = Tensor((), (), F64)
    del runs[:], made[:]
    fd.execute([x, w, t])
    assert [k for k, _ in made] == ["empty_strided"] * 3
    assert runs[0][0][2] == (F64_CODE, 0, (), (), t.data_ptr())


def test_patterns():
    fd = softmax()
    pattern = lambda x: fd._pattern([x])[0]  # noqa: E731
    assert pattern(Tensor((6, 10))) == \
        ("f32", (SYM, SYM), ("_S0", "_S1"), (0, 1), (True, True))
    # equal sizes share a symbol; a size-1 axis is a broadcast one
    assert pattern(Tensor((8, 8))) == \
        ("f32", (SYM, SYM), ("_S0", "_S0"), (0, 1), (True, True))
    assert pattern(Tensor((1, 8))) == \
        ("f32", (B1, SYM), (None, "_S0"), (0, 1), (True, True))
    # a transposed tensor: its own allocation order; a padded row
    assert pattern(Tensor((6, 10), (1, 6)))[3:] == ((1, 0), (True, True))
    assert pattern(Tensor((6, 10), (16, 1)))[3:] == ((0, 1), (False, True))
    # an expanded axis (stride 0) goes outside
    assert pattern(Tensor((6, 10), (0, 1)))[3:] == ((0, 1), (False, True))
    assert pattern(Tensor((6, 10), (1, 0)))[3:] == ((1, 0), (False, True))
    fd = mixed_shapes()
    a, b = Tensor((3, 4, 1)), Tensor((3, 4), (1, 3))
    assert fd._pattern([a, b]) == (
        ("f32", (SYM, 4, B1), ("N", None, None), (2, 0, 1),
         (True, True, True)),
        ("f32", (SYM, 4), ("N", None), (1, 0), (True, True)))
    # once executed, the same (the definition's facts are cached then)
    fd.execute([a, b])
    assert fd._pattern([a, b]) == fd._pattern([a, b])
    assert fd._pattern([a, Tensor((3, 4))])[1] == \
        ("f32", (SYM, 4), ("N", None), (1, 0), (False, False))


def test_the_quick_pattern_is_the_pattern():
    # execute's one pass over the signature finds what _pattern finds
    with fz.FusionDefinition("nchw") as fd4:
        x = fd4.define_tensor([-1, -1, -1, -1], F32)
        w = fd4.define_tensor([-1, 1, 1], F32)
        fd4.add_output(x * w)
    with fz.FusionDefinition("constant") as fdc:
        x = fdc.define_tensor([-1, 3], F32)   # a -1 axis of size 3 is 3
        y = fdc.define_tensor([-1], F32)
        fdc.add_output(fdc.ops.sum(x, dims=[1]))
        fdc.add_output(y * 2.0)
    cases = [(softmax(), [Tensor(s, st)]) for s, st in (
        ((6, 10), None), ((6, 10), (1, 6)), ((6, 10), (16, 1)),
        ((6, 10), (0, 1)), ((6, 10), (1, 0)), ((8, 8), None), ((1, 8), None),
        ((8, 1), None), ((1, 1), None), ((0, 5), None), ((5, 0), (1, 1)))]
    cases += [(fd4, [Tensor(s, st), Tensor(ws)]) for s, st, ws in (
        ((2, 3, 4, 5), None, (3, 1, 1)),
        ((2, 3, 4, 5), (60, 1, 15, 3), (3, 1, 1)),      # channels-last
        ((2, 3, 4, 4), (48, 1, 12, 3), (3, 1, 1)),
        ((3, 3, 3, 3), None, (3, 1, 1)),
        ((2, 1, 4, 5), None, (1, 1, 1)),
        ((2, 0, 4, 5), None, (0, 1, 1)), ((0, 3, 4, 5), None, (3, 1, 1)),
        ((2, 3, 4, 5), (0, 20, 5, 1), (3, 1, 1)))]
    cases += [(fdc, [Tensor(s, st), Tensor(ys)]) for s, st, ys in (
        ((4, 3), None, (3,)), ((3, 3), None, (4,)), ((4, 3), (1, 4), (4,)))]
    cases += [(scaled_rows(), [Tensor((5, 3)), Tensor((3,)), 2.0]),
              (scaled_rows(), [Tensor((5, 3)), Tensor((3,)),
                               Tensor((), (), F64)])]
    static = softmax()
    static._static = True
    cases += [(static, [Tensor((6, 10))])]
    rt = fusion._torch()
    for fd, args in cases:
        fd.execute(args)   # makes the definition's facts (fd._info)
        quick = fd._quick_pattern(args, fusion._signature(args), fd._info,
                                  rt)
        assert quick is not None, (fd.name, args)
        dev, pattern, values = quick
        assert pattern == fd._pattern(args), (fd.name, pattern)
        assert dev == Device("cuda", 0)
        (ins, _, _), = runs[-1:]
        assert [t[:4] for t in ins] == [
            (_lib.DTYPES[s.dtype][0], 0, (), ()) if s.shape is None else
            (_lib.DTYPES[s.dtype][0], a.dim(), a.shape, a.stride())
            for s, a in zip(fd._inputs, args)], (fd.name, ins)
    # what the quick pass leaves to the general one
    fd = mixed_shapes()   # a named size
    args = [Tensor((3, 4, 1)), Tensor((3, 4))]
    fd.execute(args)
    assert fd._quick_pattern(args, fusion._signature(args), fd._info,
                             rt) is None
    fd = softmax()
    fd.execute([Tensor((6, 10))])
    for args in ([Tensor((6, 10), device=CPU)], [Tensor((6, 10), dtype=I32)],
                 [Tensor((6,))], [3], [Tensor((6, 10)), Tensor((6, 10))]):
        assert fd._quick_pattern(args, fusion._signature(args), fd._info,
                                 rt) is None, args


def test_one_executor_per_pattern():
    fd = softmax()
    for shape in ((6, 10), (7, 11), (8, 8), (9, 9), (1, 5), (1, 6)):
        fd.execute([Tensor(shape)])
    assert len(fd._built) == 3, len(fd._built)   # distinct, equal, b1
    assert "f32[_S0, _S0]" in [b.text for b in fd._built.values()][1]


def test_bad_inputs():
    fd = sm = softmax()
    fd.execute([Tensor((6, 10))])
    expect_error(ValueError, "fusion softmax takes 1 inputs, got 2", fd,
                 [Tensor((6, 10)), Tensor((6, 10))])
    expect_error(ValueError, "fz runs on CUDA tensors; got one on cpu", fd,
                 [Tensor((6, 10), device=CPU)])
    expect_error(TypeError, "input 3 is not a torch tensor", fd, [3])
    expect_error(TypeError, "an input is torch.int32, the fusion declares "
                 "f32", fd, [Tensor((6, 10), dtype=I32)])
    expect_error(ValueError, "dtype torch.uint8 has no fz equivalent", fd,
                 [Tensor((6, 10), dtype=torch.uint8)])
    expect_error(ValueError, "input 0 has rank 3, the fusion declares 2", fd,
                 [Tensor((6, 10, 2))])
    expect_error(fz.FzError, "fusion softmax output 0: FZ_ERR_ARGUMENT: "
                 "%0: extent product 4294967296 x 4294967296 overflows int64",
                 fd, [Tensor((1 << 32, 1 << 32), (1, 1))])
    fd = scaled_rows()
    expect_error(ValueError, "inputs on cuda:0 and cuda:1", fd,
                 [Tensor((5, 3)), Tensor((3,), device=GPU1), 1.0])
    expect_error(TypeError, "a scalar input takes a number or a 0-dim CUDA "
                 "tensor of f64", fd,
                 [Tensor((5, 3)), Tensor((3,)), Tensor((), (), F32)])
    expect_error(TypeError, "a scalar input takes a number or a 0-dim CUDA "
                 "tensor of f64", fd,
                 [Tensor((5, 3)), Tensor((3,)), Tensor((1,), (1,), F64)])
    fd = mixed_shapes()
    expect_error(ValueError, "input 0 axis 1: size 5, the fusion declares 4",
                 fd, [Tensor((3, 5, 1)), Tensor((3, 4))])
    expect_error(ValueError, "input 0 axis 2: size 2, the fusion declares 1",
                 fd, [Tensor((3, 4, 2)), Tensor((3, 4))])
    with fz.FusionDefinition("named") as fd:
        a = fd.define_tensor(["N"], F32)
        b = fd.define_tensor(["N"], F32)
        fd.add_output(a + b)
    expect_error(ValueError, "size N is 3 and 4 in one call", fd,
                 [Tensor((3,)), Tensor((4,))])
    with fz.FusionDefinition("rank9") as fd9:
        x = fd9.define_tensor([-1] * 9, F32)
        fd9.add_output(x * 2.0)
    expect_error(fz.FzError, "input: FZ_ERR_INVALID: input 0: rank 9 is "
                 "outside [0, 8]", fd9, [Tensor((2,) * 9)])
    # no failed call was kept
    assert len(sm._calls) == 1 and len(fd._calls) == 0


def test_inputs_on_another_device():
    fd = softmax()
    x = Tensor((6, 10), device=GPU1)
    del made[:]
    fd.execute([x])
    assert made[0][1][3] == GPU1
    assert [dev for _, dev in fd._built] == [1]
    assert runs[-1][2] == STREAM + 1   # that device's current stream


def main():
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    for name, fn in tests:
        fn()
        print("ok", name)
    print("%d tests passed" % len(tests))


if __name__ == "__main__":
    main()
