"""FusionDefinition: define a fusion with Python calls, run it on torch
tensors.

    import torch, fz
    with fz.FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32)
        b = fd.define_tensor(shape=[-1], dtype=torch.float32)
        y = fd.ops.gelu(x + b)           # b is broadcast over rows
        fd.add_output(y)
        fd.add_output(fd.ops.sum(y, dims=[1]))
    y, s = fd.execute([x_cuda, b_cuda])

How it works. The calls inside the `with` block only record the program
(and track each tensor's rank, to check dims as they are given). The C
fusion is built at `execute`, from the recording and the inputs at hand,
because fz needs to know which extents are equal when it builds an op (it
proves `x + y` well-shaped from the extents' symbols), and nvFuser-style
definitions say `-1` for every size. So at execute:
  - every `-1` axis gets a symbol named by its size: axes of equal size
    share a symbol, an axis of size 1 becomes a broadcast (b1) axis, as in
    PyTorch's broadcasting; string entries are symbols by that name;
  - an input without `stride_order` gets the layout of the tensor passed
    (its strides' order), so outputs follow inputs as in PyTorch;
  - the fusion is built through the C API, canonicalized, given allocation
    orders ("alloc-order" pass), and handed to an executor for the device.
Builds are cached by that pattern (not by the sizes themselves: one
compiled kernel serves every size with the same pattern), and calls by
the exact sizes, strides and dtypes of the inputs, so a repeated call only
fills in pointers, allocates outputs (torch.empty_strided, in the layout
the executor reports, so PyTorch owns the memory) and launches on
torch.cuda.current_stream(). A call with new sizes of a built pattern
reads the inputs once (_quick_pattern: checks, pattern and the argument
array together) and asks libfz for every output's layout in one call.

A `Size` (`x.size(1)`, `x.shape[1]`) stands for a run-time size: in
reshape/expand/full/iota shapes it is the axis' extent (a symbol), and as
an operand (`x / x.size(1)`, `mean`'s count) it is read at run time
(`symbol N`), so the fusion still serves every size. A reshape that needs
size arithmetic ([N, K] -> [N*K], [M] -> [M/4, 4]) uses derived extents
(`N*K`, computed when sizes are bound). Only what symbols cannot express
(see ops._NeedStatic) makes the definition static: from then on each call
builds for its exact sizes.
"""

import ctypes
import struct
import threading

from . import _lib, _memory
from .ops import Ops, Tensor, _Build, _NeedStatic, _torch_dtype, dtype_name

# ---- devices -----------------------------------------------------------------

_devices = {}
_devices_lock = threading.Lock()


def _device(index):
    """The fz_device for a CUDA ordinal, opened once per process and kept:
    executors on it live as long as their FusionDefinition."""
    with _devices_lock:
        if index not in _devices:
            lib = _lib.lib()
            handle = ctypes.c_void_p()
            err = _lib.Error()
            if lib.fz_device_open(index, ctypes.byref(handle),
                                  ctypes.byref(err)) != _lib.FZ_OK:
                _lib.raise_error(err, "opening CUDA device %d" % index)
            _devices[index] = handle
        return _devices[index]


# ---- the definition ----------------------------------------------------------


class _Input:
    def __init__(self, tensor, dtype, shape, stride_order, name):
        self.tensor = tensor
        self.dtype = dtype          # fz name
        self.shape = shape          # None for a scalar
        self.stride_order = stride_order
        self.name = name


class _Built:
    """A C fusion and its executor for one pattern of symbols, the error
    struct its calls share (they run one at a time, under the definition's
    lock), and the C calls they make, without argument conversions
    (_lib.untyped): every argument is a ctypes object already."""

    def __init__(self, fusion, executor, text):
        self.fusion = fusion
        self.executor = executor
        self.text = text
        self.err = _lib.Error()
        self.err_ref = ctypes.byref(self.err)
        self.run = _lib.untyped("fz_executor_run")
        self.output_layouts = _lib.untyped("fz_executor_output_layouts")


def _raw_stream_getter(torch):
    """A function device_index -> the current CUDA stream's handle (int).
    torch.cuda.current_stream() builds a Stream object on every call (a few
    microseconds); torch._C._cuda_getCurrentRawStream, what torch.compile's
    generated code calls, returns the integer directly. Fall back to the
    public call where the private one is missing."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


class _Torch:
    """What calls take from torch, looked up once per process: `import
    torch` inside a function goes through the import machinery on every
    call, and torch.device(...) and dtype lookups build or search each
    time."""

    def __init__(self):
        import torch
        self.torch = torch
        self.Tensor = torch.Tensor
        self.empty_strided = torch.empty_strided
        self.stream_of = _raw_stream_getter(torch)
        self.devices = {}   # CUDA ordinal -> torch.device
        self.dtypes = {}    # fz dtype code -> torch dtype
        self.streams = {}   # stream handle -> c_void_p (fz_executor_run's)

    def stream(self, handle):
        """The c_void_p an untyped call passes for this stream handle (a
        Python int would go as a C int)."""
        if len(self.streams) >= 1024:  # streams made and dropped
            self.streams.clear()
        p = self.streams[handle] = ctypes.c_void_p(handle)
        return p

    def cuda(self, index):
        d = self.devices.get(index)
        if d is None:
            d = self.devices[index] = self.torch.device("cuda", index)
        return d

    def dtype(self, code):
        d = self.dtypes.get(code)
        if d is None:
            d = self.dtypes[code] = _torch_dtype(code)
        return d


_TORCH = None


def _torch():
    global _TORCH
    if _TORCH is None:
        _TORCH = _Torch()
    return _TORCH


class _Inputs:
    """What every new signature checks and fills in, fixed once the
    definition is complete. entries: per input, its spec, its fz dtype
    name, whether it is declared all -1 (the common nvFuser style, whose
    pattern needs no case analysis per axis), (dtype code, rank) (rank 0
    for a scalar) and the torch dtype it must have. pack: the Struct that
    fills a call's input array in one pack_into; in_data, out_data: where
    the data pointers go in the arrays (as 64-bit words); unpack: reads
    the outputs' layouts back."""

    def __init__(self, specs, outputs, rt):
        self.count = len(specs)
        ranks = [0 if s.shape is None else len(s.shape) for s in specs]
        codes = [_lib.DTYPES[s.dtype][0] for s in specs]
        self.heads = list(zip(codes, ranks))
        self.scalars = {i: rt.dtype(codes[i])
                        for i, s in enumerate(specs) if s.shape is None}
        self.constants = _constants(specs)
        self.entries = [
            (s, s.dtype, s.shape is not None and
             all(type(e) is int and e == -1 for e in s.shape), head,
             rt.dtype(head[0]))
            for s, head in zip(specs, self.heads)]
        fits = all(r <= _lib.FZ_MAX_RANK for r in ranks)  # else no build
        named = any(isinstance(e, str) for s in specs for e in s.shape or ())
        self.quick = fits and not named   # see _quick_pattern
        # "_S0", "_S1", ...: at most one name per axis
        self.symbol_names = [_symbol_name(i) for i in range(sum(ranks))]
        self.pack = struct.Struct("=" + "".join(
            _lib.device_tensor_format(r) for r in ranks)) if fits else None
        self.in_array = ctypes.c_uint64 * (_WORDS * max(1, len(specs)))
        self.in_data = [i * _WORDS + _DATA_WORD for i in range(len(specs))]
        m = self.num_outputs = len(outputs)
        self.out_array = ctypes.c_uint64 * (_WORDS * max(1, m))
        self.out_data = [i * _WORDS + _DATA_WORD for i in range(m)]
        self.unpack = struct.Struct(
            "=" + _lib.DEVICE_TENSOR_FIELDS * max(1, m))


_SIZE = ctypes.sizeof(_lib.DeviceTensor)
_WORDS = _SIZE // 8
_DATA_WORD = _lib.DeviceTensor.data.offset // 8
_FIELDS = len(struct.unpack("=" + _lib.DEVICE_TENSOR_FIELDS,
                            bytes(_SIZE)))  # values per fz_device_tensor
_SIZES = 2                                  # where sizes start in them
_STRIDES = _SIZES + _lib.FZ_MAX_RANK


class _Call:
    """Everything a repeated call with the same sizes, strides and dtypes
    needs, prepared once so that a call does no more than it must: the
    argument arrays of fz_executor_run (as 64-bit words), filled in but
    for the pointers, and the index of each pointer; each output's
    empty_strided arguments; fz_executor_run's arguments but the stream
    and the error struct."""

    __slots__ = ("built", "device", "inputs", "in_data", "outputs",
                 "out_alloc", "scalars")

    def __init__(self, built, device, inputs, in_data, outputs, out_alloc,
                 scalars):
        self.built = built
        self.device = device
        self.inputs = inputs        # c_uint64 array: fz_device_tensor[]
        self.in_data = in_data      # index of each input's data pointer
        self.outputs = outputs
        self.out_alloc = out_alloc  # (index of data, sizes, strides, dtype)
        self.scalars = scalars      # input index -> torch dtype, for numbers

    def run(self, args, name):
        # Numbers made into tensors (in args) are freed once the launch is
        # queued: torch's caching allocator gives their memory only to work
        # queued after it on the same stream.
        if self.scalars:
            args = self._numbers_as_tensors(args)
        words = self.inputs
        for k, a in zip(self.in_data, args):
            words[k] = a.data_ptr()
        outs = []
        rt = _TORCH
        empty = rt.empty_strided
        dev = self.device
        words = self.outputs
        for k, sizes, strides, dtype in self.out_alloc:
            o = empty(sizes, strides, dtype=dtype, device=dev)
            words[k] = o.data_ptr()
            outs.append(o)
        handle = rt.stream_of(dev.index)
        stream = rt.streams.get(handle)
        if stream is None:
            stream = rt.stream(handle)
        built = self.built
        if built.run(built.executor, self.inputs, len(self.in_data), words,
                     len(outs), stream, built.err_ref) != _lib.FZ_OK:
            _lib.raise_error(built.err, "fusion %s" % name)
        return outs

    def _numbers_as_tensors(self, args):
        args = list(args)
        for i, dtype in self.scalars.items():
            if not hasattr(args[i], "data_ptr"):
                args[i] = _TORCH.torch.tensor(args[i], dtype=dtype,
                                              device=self.device)
        return args


class FusionDefinition:
    """A fusion defined in Python, run on torch CUDA tensors. Use as a
    context manager (as nvFuser's): define inputs, ops and outputs inside
    the block; execute after it. One FusionDefinition may be executed from
    several threads (calls are serialized)."""

    def __init__(self, name="fusion", propagate_layout=True):
        self.name = name
        self.propagate_layout = propagate_layout
        self.ops = Ops(self)
        self._inputs = []
        self._records = []   # (tensor index, what, build function)
        self._tensors = []
        self._outputs = []   # (Tensor, alloc_order or None)
        self._defining = False
        self._done = False
        self._built = {}     # (pattern, device) -> _Built
        self._calls = {}     # exact signature -> _Call
        self._info = None    # _Inputs, once the definition is complete
        self._lock = threading.Lock()
        self._last = None
        self._static = False  # -1 extents become fixed sizes (see reshape)

    def __enter__(self):
        if self._done:
            raise RuntimeError("this FusionDefinition is already defined")
        self._defining = True
        return self

    def __exit__(self, kind, value, tb):
        self._defining = False
        if kind is None:
            if not self._outputs:
                raise ValueError("the fusion has no outputs (fd.add_output)")
            self._done = True
        return False

    def _check_defining(self):
        if self._done:
            raise RuntimeError("definitions go inside `with fd:`; this fusion "
                               "is complete")

    def _record(self, ndim, what, build):
        self._check_defining()
        t = Tensor(self, len(self._tensors), ndim, what)
        self._tensors.append(t)
        self._records.append((t, what, build))
        return t

    # -- inputs and outputs

    def define_tensor(self, shape, dtype="f32", stride_order=None,
                      contiguity=None, name=None):
        """An input tensor. shape: one entry per axis: -1 (a size known at
        run time), 1 (a broadcast axis), another int (a fixed size), or a
        string (a named size, shared by every axis with that name).
        stride_order (nvFuser's): stride_order[i] ranks axis i's stride, 0
        for the innermost; omitted, the layout of the tensor given to
        execute is used. contiguity is accepted for nvFuser compatibility
        and ignored (the strides of each call are used)."""
        self._check_defining()
        shape = list(shape)
        for e in shape:
            if not (isinstance(e, str) or (isinstance(e, int) and e >= -1)):
                raise ValueError("define_tensor: extent %r" % (e,))
        if not shape:
            raise ValueError("define_tensor: rank 0; use define_scalar")
        order = None
        if stride_order is not None:
            so = list(stride_order)
            if sorted(so) != list(range(len(shape))):
                raise ValueError("define_tensor: stride_order %r is not a "
                                 "permutation of 0..%d" % (so, len(shape) - 1))
            order = sorted(range(len(shape)), key=lambda d: -so[d])
        t = Tensor(self, len(self._tensors), len(shape), "input")
        self._tensors.append(t)
        self._inputs.append(_Input(t, dtype_name(dtype), shape, order, name))
        return t

    def define_scalar(self, dtype="f64", name=None):
        """A scalar input: pass a Python number (or a 0-dim CUDA tensor) to
        execute. (A Python number used directly in an op is a literal.)"""
        self._check_defining()
        t = Tensor(self, len(self._tensors), 0, "scalar")
        self._tensors.append(t)
        self._inputs.append(_Input(t, dtype_name(dtype), None, None, name))
        return t

    def from_pytorch(self, tensor, static_sizes=False):
        """An input shaped like `tensor`: its dtype, its layout, -1 sizes
        (or its exact sizes with static_sizes)."""
        shape = [(s if static_sizes else -1) for s in tensor.shape]
        return self.define_tensor(shape, tensor.dtype, None)

    def add_output(self, tensor, stride_order=None):
        """Makes tensor an output, allocated in the layout stride_order
        asks for (as define_tensor's), else the one fz propagates from the
        inputs."""
        self._check_defining()
        if not isinstance(tensor, Tensor) or tensor.fd is not self:
            raise ValueError("add_output: not a tensor of this fusion")
        order = None
        if stride_order is not None:
            so = list(stride_order)
            if sorted(so) != list(range(tensor.ndim)):
                raise ValueError("add_output: stride_order %r" % (so,))
            order = sorted(range(tensor.ndim), key=lambda d: -so[d])
        self._outputs.append((tensor, order))

    # -- building

    def _pattern(self, args):
        """The symbol pattern of these inputs (checking that a named
        symbol has one size in a call). An axis of a -1 extent is named
        by its size (or is that size, once the fusion is static)."""
        if len(args) != len(self._inputs):
            raise ValueError("fusion %s takes %d inputs, got %d"
                             % (self.name, len(self._inputs), len(args)))
        sizes = {}      # symbol -> size
        by_size = {}    # size -> symbol, for -1 axes
        constants = _constants(self._inputs)
        for i, (spec, a) in enumerate(zip(self._inputs, args)):
            if spec.shape is None:
                continue
            if a.dim() != len(spec.shape):
                raise ValueError("input %d has rank %d, the fusion declares %d"
                                 % (i, a.dim(), len(spec.shape)))
            for k, e in enumerate(spec.shape):
                if isinstance(e, str):
                    n = int(a.shape[k])
                    if sizes.setdefault(e, n) != n:
                        raise ValueError("size %s is %d and %d in one call"
                                         % (e, sizes[e], n))
                    by_size.setdefault(n, e)
        pattern = []
        for spec, a in zip(self._inputs, args):
            if spec.shape is None:
                pattern.append((spec.dtype, None))
                continue
            codes, names = self._axis_symbols(len(pattern), spec, a.shape,
                                              self._static, constants,
                                              by_size)
            order = spec.stride_order
            if order is None:
                order = _order_of(a.shape, a.stride())
            contig = _contiguity(a.shape, a.stride(), order)
            pattern.append((spec.dtype, codes, names, tuple(order),
                            tuple(contig)))
        return tuple(pattern)

    @staticmethod
    def _axis_symbols(index, spec, shape, static, constants, by_size):
        """codes and names of input `index`'s axes (any declared shape)."""
        codes, names = [], []
        for k, e in enumerate(spec.shape):
            n = int(shape[k])
            if isinstance(e, str):
                codes.append(_lib.FZ_EXTENT_SYMBOL)
                names.append(e)
            elif e == -1 and n != 1 and (static or n in constants):
                codes.append(n)  # equal to a declared constant: the same
                names.append(None)
            elif e == -1 and n != 1:
                if n not in by_size:
                    by_size[n] = _symbol_name(len(by_size))
                codes.append(_lib.FZ_EXTENT_SYMBOL)
                names.append(by_size[n])
            elif e in (-1, 1):
                if n != 1:
                    raise ValueError("input %d axis %d: size %d, the fusion "
                                     "declares 1" % (index, k, n))
                codes.append(_lib.FZ_EXTENT_BROADCAST)
                names.append(None)
            else:
                if n != e:
                    raise ValueError("input %d axis %d: size %d, the fusion "
                                     "declares %d" % (index, k, n, e))
                codes.append(e)
                names.append(None)
        return tuple(codes), tuple(names)

    def _build(self, pattern):
        lib = _lib.lib()
        fusion = lib.fz_fusion_create(self.name.encode())
        b = _Build(lib, fusion, self._static)
        try:
            for spec, p in zip(self._inputs, pattern):
                name = spec.name.encode() if spec.name else None
                code = _lib.DTYPES[spec.dtype][0]
                if p[1] is None:
                    v = lib.fz_fusion_add_scalar(fusion, name, code,
                                                 ctypes.byref(b.err))
                else:
                    _, codes, names, order, contig = p
                    v = lib.fz_fusion_add_tensor(
                        fusion, name, code, len(codes), _lib.int64s(codes),
                        _lib.strings(names), _lib.ints(order),
                        _lib.bools(contig), ctypes.byref(b.err))
                b.values[spec.tensor.index] = b.check(v, "input")
            for t, what, build in self._records:
                b.values[t.index] = b.check(build(b), "fd.ops.%s" % what)
            laid_out = set()
            for t, order in self._outputs:
                v = b.values[t.index]
                # An input is copied to become an output; so is a value
                # given a second layout.
                if t.what in ("input", "scalar") or (
                        order is not None and v in laid_out):
                    v = b.check(lib.fz_set(fusion, v, ctypes.byref(b.err)),
                                "add_output")
                if order is not None:
                    laid_out.add(v)
                    b.check_status(lib.fz_value_set_layout(
                        v, _lib.ints(order), None, ctypes.byref(b.err)),
                        "add_output")
                b.check_status(lib.fz_add_output(fusion, v, ctypes.byref(b.err)),
                               "add_output")
            passes = ["canonicalize"]
            if self.propagate_layout:
                passes.append("alloc-order")
            for p in passes:
                b.check_status(lib.fz_run_pass(fusion, p.encode(),
                                               ctypes.byref(b.err)), p)
            text = lib.fz_print(fusion)
            text_str = ctypes.string_at(text).decode() if text else ""
            if text:
                _lib.free(text)
            return fusion, text_str
        except BaseException:
            lib.fz_fusion_destroy(fusion)
            raise

    # -- running

    def execute(self, inputs, device=None):
        """Runs the fusion on `inputs` (torch CUDA tensors of any strides, in
        define order; Python numbers or 0-dim CUDA tensors for scalars) on
        torch.cuda.current_stream(), and returns the outputs as new torch
        tensors, in add_output order."""
        if self._defining or not self._outputs:
            raise RuntimeError("execute a FusionDefinition after the `with` "
                               "block that defines it (and adds outputs)")
        self._done = True
        args = inputs if type(inputs) in (list, tuple) else list(inputs)
        sig = _signature(args)
        # acquire/release: half the cost of `with` on this path
        lock = self._lock
        lock.acquire()
        try:
            call = self._calls.get(sig)
            if call is None:
                call = self._prepare(args, device, sig)
                if len(self._calls) >= 4096:  # shapes that never repeat
                    self._calls.clear()
                self._calls[sig] = call
            outs = call.run(args, self.name)
            self._last = call.built
        finally:
            lock.release()
        return outs

    def _prepare(self, args, device, sig):
        """The _Call for a new signature: checks the inputs, finds (or
        builds) the fusion of their pattern, fills fz_executor_run's
        input array and asks for every output's layout."""
        rt = _TORCH or _torch()
        info = self._info
        if info is None:
            info = self._info = _Inputs(self._inputs, self._outputs, rt)
        quick = self._quick_pattern(args, sig, info, rt)
        if quick is not None:
            dev, pattern, values = quick
        else:
            dev = self._check_inputs(args, device, rt)
            pattern = self._pattern(args)
            values = []
            for head, a in zip(info.heads, args):
                values += head
                if head[1]:
                    values += a.shape
                    values += a.stride()
        built = self._built.get((pattern, dev.index))
        if built is None:
            built = self._build_executor(args, dev, pattern)
        n = len(args)
        inputs = info.in_array()
        info.pack.pack_into(inputs, 0, *values)
        m = info.num_outputs
        outputs = info.out_array()
        if built.output_layouts(built.executor, inputs, n, outputs, m,
                                built.err_ref):
            self._raise_layout_error(built, inputs, n)
        got = info.unpack.unpack_from(outputs)
        out_alloc = []
        dtype = rt.dtypes.get
        for data, at in zip(info.out_data, range(0, m * _FIELDS, _FIELDS)):
            sizes = at + _SIZES
            strides = at + _STRIDES
            rank = got[at + 1]
            out_alloc.append((data, got[sizes:sizes + rank],
                              got[strides:strides + rank],
                              dtype(got[at]) or rt.dtype(got[at])))
        # (a tuple: the garbage collector stops tracking it once it holds
        # only untracked objects; a call may be kept for long)
        return _Call(built, dev, inputs, info.in_data, outputs,
                     tuple(out_alloc), info.scalars)

    def _quick_pattern(self, args, sig, info, rt):
        """(device, pattern, the input array's values) in one pass over
        the signature, for inputs that are what the definition declares
        (CUDA tensors of its dtypes and ranks on one device, numbers or
        0-dim CUDA tensors for scalars) and whose -1 axes need no named
        symbol (nor a rank past FZ_MAX_RANK); None for anything else,
        which the general path checks (and reports) as it always has. The
        pattern is _pattern's; a dtype is compared by identity (torch's
        dtypes are singletons)."""
        if not info.quick or len(args) != info.count:
            return None
        Tensor = rt.Tensor
        static = self._static
        constants = info.constants
        simple = not (static or constants)  # -1 axes: symbols or b1
        index = None
        by_size = {}
        setdefault = by_size.setdefault
        symbol_names = info.symbol_names
        pattern = []
        values = []
        for a, key, (spec, name, plain, head, dtype) in zip(args, sig,
                                                            info.entries):
            rank = head[1]
            if not isinstance(a, Tensor):
                if rank:
                    return None
                pattern.append((name, None))
                values += head
                continue
            dt, shape, stride, device_index = key
            if dt is not dtype or not a.is_cuda or len(shape) != rank:
                return None
            if not rank:
                pattern.append((name, None))
                values += head
                continue
            if index is None:
                index = device_index
            elif device_index != index:
                return None
            ones = 1 in shape
            if plain and simple and not ones:
                # every axis a symbol named by its size (written out for
                # ranks 1 and 2, left to right: cheaper than a loop)
                codes = _SYMBOLS[rank]
                if rank == 1:
                    names = (setdefault(shape[0], symbol_names[len(by_size)]),)
                elif rank == 2:
                    names = (setdefault(shape[0], symbol_names[len(by_size)]),
                             setdefault(shape[1], symbol_names[len(by_size)]))
                else:
                    names = []
                    for n in shape:
                        names.append(setdefault(n,
                                                symbol_names[len(by_size)]))
                    names = tuple(names)
            else:
                try:
                    codes, names = self._axis_symbols(
                        len(pattern), spec, shape, static, constants, by_size)
                except ValueError:  # raised in order by the general path
                    return None
            # Exactly row-major strides, no size 1: the logical order,
            # every axis contiguous (what _order_of and _contiguity find,
            # at more cost).
            order = spec.stride_order
            if order is None and not ones and (
                    stride[0] == 1 if rank == 1 else
                    stride[1] == 1 and stride[0] == shape[1] if rank == 2 else
                    _row_major(shape, stride)):
                order, contig = _IDENTITY[rank], _DENSE[rank]
            else:
                if order is None:
                    order = _order_of(shape, stride)
                order = tuple(order)
                contig = tuple(_contiguity(shape, stride, order))
            pattern.append((name, codes, names, order, contig))
            values += head
            values += shape
            values += stride
        if index is None:  # scalars only: the device comes from elsewhere
            return None
        dev = rt.devices.get(index) or rt.cuda(index)
        return dev, tuple(pattern), values

    def _check_inputs(self, args, device, rt):
        """The inputs' device, after checking every input's kind, dtype
        and device (raising on the first that is wrong)."""
        torch = rt.torch
        dev = None
        for a in args:
            if isinstance(a, torch.Tensor) and a.dim() > 0:
                if a.device.type != "cuda":
                    raise ValueError("fz runs on CUDA tensors; got one on %s"
                                     % a.device)
                if dev is not None and a.device != dev:
                    raise ValueError("inputs on %s and %s" % (dev, a.device))
                dev = a.device
        if dev is None:
            dev = torch.device("cuda", torch.cuda.current_device()
                               if device is None else device)
        for spec, a in zip(self._inputs, args):
            if spec.shape is None:
                if isinstance(a, torch.Tensor) and (
                        a.dim() != 0 or dtype_name(a.dtype) != spec.dtype or
                        a.device.type != "cuda"):
                    raise TypeError("a scalar input takes a number or a 0-dim "
                                    "CUDA tensor of %s" % spec.dtype)
                continue
            if not isinstance(a, torch.Tensor):
                raise TypeError("input %r is not a torch tensor" % (a,))
            if dtype_name(a.dtype) != spec.dtype:
                raise TypeError("an input is %s, the fusion declares %s"
                                % (a.dtype, spec.dtype))
        return dev

    def _build_executor(self, args, dev, pattern):
        """Builds the fusion of `pattern` and its executor on `dev`."""
        key = (pattern, dev.index)
        try:
            fusion, text = self._build(pattern)
        except _NeedStatic:
            # From now on every call builds for its exact sizes.
            self._static = True
            pattern = self._pattern(args)
            key = (pattern, dev.index)
            fusion, text = self._build(pattern)
        lib = _lib.lib()
        ex = ctypes.c_void_p()
        err = _lib.Error()
        if lib.fz_executor_create(fusion, _device(dev.index),
                                  ctypes.byref(ex), ctypes.byref(err)):
            lib.fz_fusion_destroy(fusion)
            _lib.raise_error(err, "fusion %s" % self.name)
        try:
            _memory.use_torch_allocator(ex, dev.index)
        except Exception:
            lib.fz_executor_destroy(ex)
            lib.fz_fusion_destroy(fusion)
            raise
        built = _Built(fusion, ex, text)
        self._built[key] = built
        return built

    def _raise_layout_error(self, built, inputs, n):
        """fz_executor_output_layouts failed: the error, as the first
        output asked for alone reports it (with its index)."""
        lib = _lib.lib()
        err = _lib.Error()
        out = _lib.DeviceTensor()
        inputs = ctypes.cast(inputs, ctypes.POINTER(_lib.DeviceTensor))
        for i in range(len(self._outputs)):
            if lib.fz_executor_output_layout(built.executor, inputs, n, i,
                                             ctypes.byref(out),
                                             ctypes.byref(err)):
                _lib.raise_error(err, "fusion %s output %d" % (self.name, i))
        _lib.raise_error(built.err, "fusion %s" % self.name)

    # -- introspection

    def fusion_text(self):
        """The fusion the last execute ran, in fz's text format (after
        canonicalize and alloc-order), or None before the first run."""
        return self._last.text if self._last else None

    def stats(self):
        """What this definition's executors have done, summed: runs,
        signature_misses (calls with new sizes or strides), kernels_compiled
        (LLVM work), kernels_from_disk (PTX from the disk cache),
        signatures_evicted, signatures_kept, kernels_kept, miss_seconds
        (host time in signature misses). See fz_executor_get_stats."""
        total = {}
        for b in list(self._built.values()):
            for k, v in _memory.stats(b.executor).items():
                total[k] = total.get(k, 0) + v
        return total

    def check(self):
        """Waits for this definition's kernels on the current stream and
        raises FzError (FZ_ERR_INVALID) if one of them met a gather index
        out of range ("%p = gather: index 17 is out of range [0, 16) of
        axis 1 of %x"). Without it, the next execute raises once the GPU
        has passed the bad call (fz_executor_check)."""
        import torch
        lib = _lib.lib()
        err = _lib.Error()
        for (_, dev), b in list(self._built.items()):
            stream = torch.cuda.current_stream(dev).cuda_stream
            if lib.fz_executor_check(b.executor, stream,
                                     ctypes.byref(err)) != _lib.FZ_OK:
                _lib.raise_error(err, "fusion %s" % self.name)

    def last_plan(self):
        """The kernel plan of the last run (fz_executor_last_plan)."""
        if not self._last:
            return None
        p = _lib.lib().fz_executor_last_plan(self._last.executor)
        return p.decode() if p else None

    def last_ptx(self):
        if not self._last:
            return None
        p = _lib.lib().fz_executor_last_ptx(self._last.executor)
        return p.decode() if p else None

    def close(self):
        """Frees the compiled kernels and C fusions (after the GPU is done
        with them). Also done when the FusionDefinition is collected."""
        built, self._built, self._calls = self._built, {}, {}
        if not built:
            return
        try:
            import torch
            if torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception:
            pass
        lib = _lib.lib()
        for b in built.values():
            lib.fz_executor_destroy(b.executor)
            lib.fz_fusion_destroy(b.fusion)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _signature(args):
    """The exact-call key: dtype, sizes, strides and device of every
    tensor, the Python type of every number. (Pointer alignment, which
    also selects a kernel, is the executor's own business: it keys its
    cache by it.) get_device() is an int, where .device would build a
    torch.device per call. (A loop: cheaper than a comprehension before
    Python 3.12.)"""
    sig = []
    try:
        for a in args:
            sig.append((a.dtype, a.shape, a.stride(), a.get_device()))
    except AttributeError:  # a number among the tensors
        sig = []
        for a in args:
            try:
                sig.append((a.dtype, a.shape, a.stride(), a.get_device()))
            except AttributeError:
                sig.append(type(a))
    return tuple(sig)


def _constants(specs):
    """The extents declared as numbers above 1: a -1 axis of one of these
    sizes takes the number, not a symbol."""
    return {e for spec in specs for e in spec.shape or ()
            if isinstance(e, int) and e > 1}


_SYMBOL, _BROADCAST = _lib.FZ_EXTENT_SYMBOL, _lib.FZ_EXTENT_BROADCAST
_SYMBOL_NAMES = ["_S%d" % i for i in range(64)]
_SYMBOLS = [(_SYMBOL,) * r for r in range(_lib.FZ_MAX_RANK + 1)]


def _symbol_name(i):
    """The symbol of the i-th distinct size of a call's -1 axes."""
    return _SYMBOL_NAMES[i] if i < 64 else "_S%d" % i


def _row_major(sizes, strides):
    """Are these exactly the dense row-major strides of sizes? Without a
    size 1 the allocation order is then the logical one and every axis is
    contiguous, which _order_of and _contiguity would find at more cost
    (a size 0 makes the strides outside it 0, which _order_of keeps in
    logical order too)."""
    expected = 1
    for k in range(len(sizes) - 1, -1, -1):
        if strides[k] != expected:
            return False
        expected *= sizes[k]
    return True


_IDENTITY = [tuple(range(r)) for r in range(_lib.FZ_MAX_RANK + 1)]
_DENSE = [(True,) * r for r in range(_lib.FZ_MAX_RANK + 1)]


def _order_of(sizes, strides):
    """Allocation order (outermost first) of a strided tensor: by stride,
    larger outside; stride-0 (expanded) and size-1 axes, whose place does
    not matter, keep their logical order relative to each other and go
    outside; ties keep the logical order (row-major for dense tensors)."""
    rank = len(sizes)

    def key(d):
        if sizes[d] == 1 or strides[d] == 0:
            return (0, 0, d)
        return (1, -strides[d], d)
    return sorted(range(rank), key=key)


def _contiguity(sizes, strides, order):
    """Per allocated position: is its stride the dense one (the next
    inner allocated axis' stride times its size; 1 for the innermost)?
    Size-1 axes are contiguous whatever their stride."""
    flags = [True] * len(order)
    expected = 1
    for p in range(len(order) - 1, -1, -1):
        d = order[p]
        if sizes[d] == 1:
            continue
        flags[p] = strides[d] == expected
        expected = strides[d] * sizes[d]
    return flags
