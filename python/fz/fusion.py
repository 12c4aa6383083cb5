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
torch.cuda.current_stream().

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
    """A C fusion and its executor for one pattern of symbols."""

    def __init__(self, fusion, executor, text):
        self.fusion = fusion
        self.executor = executor
        self.text = text


def _raw_stream_getter():
    """A function device_index -> the current CUDA stream's handle (int).
    torch.cuda.current_stream() builds a Stream object on every call (a few
    microseconds); torch._C._cuda_getCurrentRawStream, what torch.compile's
    generated code calls, returns the integer directly. Fall back to the
    public call where the private one is missing."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


class _Call:
    """Everything a repeated call with the same sizes, strides and dtypes
    needs, prepared once so that a call does no more than it must: the
    argument arrays of fz_executor_run, filled in but for the pointers; a
    c_uint64 view of each pointer slot (setting .value on it writes the
    array in place, without making a Structure per element as indexing
    does); the output allocations' arguments; the error struct and the
    byref() of everything ctypes passes by pointer."""

    def __init__(self, built, device, inputs, outputs, out_specs, scalars):
        import torch
        self.built = built
        self.device = device
        self.inputs = inputs
        self.outputs = outputs
        self.out_specs = out_specs  # (sizes, strides, torch dtype)
        self.scalars = scalars      # input index -> torch dtype, for numbers
        size = ctypes.sizeof(_lib.DeviceTensor)
        data = _lib.DeviceTensor.data.offset
        self.in_slots = [ctypes.c_uint64.from_buffer(inputs, i * size + data)
                         for i in range(len(inputs))]
        self.out_slots = [ctypes.c_uint64.from_buffer(outputs, i * size + data)
                          for i in range(len(outputs))]
        self.executor = ctypes.c_void_p(built.executor.value)
        self.err = _lib.Error()
        self.err_ref = ctypes.byref(self.err)
        self.empty_strided = torch.empty_strided
        self.stream_of = _raw_stream_getter()
        self.device_index = device.index
        self.run_fn = _lib.lib().fz_executor_run

    def run(self, args, name):
        keep = None
        slots = self.in_slots
        scalars = self.scalars
        for i, a in enumerate(args):
            if scalars and i in scalars and not hasattr(a, "data_ptr"):
                import torch
                a = torch.tensor(a, dtype=scalars[i], device=self.device)
                keep = (keep or []) + [a]
            slots[i].value = a.data_ptr()
        outs = []
        empty = self.empty_strided
        dev = self.device
        for slot, (sizes, strides, dtype) in zip(self.out_slots,
                                                 self.out_specs):
            o = empty(sizes, strides, dtype=dtype, device=dev)
            slot.value = o.data_ptr()
            outs.append(o)
        st = self.run_fn(self.executor, self.inputs, len(args), self.outputs,
                         len(outs), self.stream_of(self.device_index),
                         self.err_ref)
        if st != _lib.FZ_OK:
            _lib.raise_error(self.err, "fusion %s" % name)
        # Numbers made into tensors (`keep`) are freed once the launch is
        # queued: torch's caching allocator gives their memory only to work
        # queued after it on the same stream.
        return outs


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
        constants = set()
        for i, (spec, a) in enumerate(zip(self._inputs, args)):
            if spec.shape is None:
                continue
            if a.dim() != len(spec.shape):
                raise ValueError("input %d has rank %d, the fusion declares %d"
                                 % (i, a.dim(), len(spec.shape)))
            for k, e in enumerate(spec.shape):
                if isinstance(e, int) and e > 1:
                    constants.add(e)
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
            codes, names = [], []
            for k, e in enumerate(spec.shape):
                n = int(a.shape[k])
                if isinstance(e, str):
                    codes.append(_lib.FZ_EXTENT_SYMBOL)
                    names.append(e)
                elif e == -1 and n != 1 and (self._static or n in constants):
                    codes.append(n)  # equal to a declared constant: the same
                    names.append(None)
                elif e == -1 and n != 1:
                    if n not in by_size:
                        by_size[n] = "_S%d" % len(by_size)
                    codes.append(_lib.FZ_EXTENT_SYMBOL)
                    names.append(by_size[n])
                elif e in (-1, 1):
                    if n != 1:
                        raise ValueError("input %d axis %d: size %d, the fusion "
                                         "declares 1" % (len(pattern), k, n))
                    codes.append(_lib.FZ_EXTENT_BROADCAST)
                    names.append(None)
                else:
                    if n != e:
                        raise ValueError("input %d axis %d: size %d, the fusion "
                                         "declares %d" % (len(pattern), k, n, e))
                    codes.append(e)
                    names.append(None)
            order = spec.stride_order
            if order is None:
                order = _order_of(a.shape, a.stride())
            contig = _contiguity(a.shape, a.stride(), order)
            pattern.append((spec.dtype, tuple(codes), tuple(names),
                            tuple(order), tuple(contig)))
        return tuple(pattern)

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
        with self._lock:
            call = self._calls.get(sig)
            if call is None:
                call = self._prepare(args, device)
                if len(self._calls) >= 4096:  # shapes that never repeat
                    self._calls.clear()
                self._calls[sig] = call
            outs = call.run(args, self.name)
            self._last = call.built
            return outs

    def _prepare(self, args, device):
        import torch
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
        pattern = self._pattern(args)
        key = (pattern, dev.index)
        built = self._built.get(key)
        if built is None:
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

        n = len(args)
        inputs = (_lib.DeviceTensor * max(1, n))()
        scalars = {}
        for i, (spec, a) in enumerate(zip(self._inputs, args)):
            t = inputs[i]
            t.dtype = _lib.DTYPES[spec.dtype][0]
            if spec.shape is None:
                t.rank = 0
                scalars[i] = _torch_dtype(t.dtype)
                continue
            t.rank = a.dim()
            for k in range(a.dim()):
                t.sizes[k] = a.shape[k]
                t.strides[k] = a.stride()[k]
        m = len(self._outputs)
        outputs = (_lib.DeviceTensor * max(1, m))()
        out_specs = []
        lib = _lib.lib()
        err = _lib.Error()
        for i in range(m):
            if lib.fz_executor_output_layout(built.executor, inputs, n, i,
                                             ctypes.byref(outputs[i]),
                                             ctypes.byref(err)):
                _lib.raise_error(err, "fusion %s output %d" % (self.name, i))
            o = outputs[i]
            out_specs.append((tuple(o.sizes[:o.rank]), tuple(o.strides[:o.rank]),
                              _torch_dtype(o.dtype)))
        return _Call(built, dev, inputs, outputs, out_specs, scalars)

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
    torch.device per call."""
    sig = []
    for a in args:
        try:
            sig.append((a.dtype, a.shape, a.stride(), a.get_device()))
        except AttributeError:
            sig.append(type(a))
    return tuple(sig)


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
