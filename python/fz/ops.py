"""The recording side of a FusionDefinition: tensor handles, fd.ops, and
the replay of a recording into a C fusion (_Build).

An op call checks what it can in Python (ranks, dims), returns a Tensor
handle, and records a function that creates the op through the C API when
the fusion is built for a call (see fusion.py for why building waits).
Operands may be Tensors, Python numbers (weakly typed literals, as in
PyTorch) or Sizes; shapes may hold ints, symbol names and Sizes.
"""

import ctypes
import math
import re

from . import _lib

# ---- dtypes ----------------------------------------------------------------

_TORCH_NAMES = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int8": "i8", "bool": "bool",
}


def dtype_name(dtype):
    """fz's name ("f32") for a torch dtype, or an fz name given as is."""
    if isinstance(dtype, str):
        if dtype in _lib.DTYPES:
            return dtype
        if dtype in _TORCH_NAMES:
            return _TORCH_NAMES[dtype]
        raise ValueError("unknown dtype %r" % dtype)
    name = str(dtype).replace("torch.", "")
    if name in _TORCH_NAMES:
        return _TORCH_NAMES[name]
    raise ValueError("dtype %r has no fz equivalent" % (dtype,))


def _dtype_code(dtype):
    return _lib.DTYPES[dtype_name(dtype)][0]


def _torch_dtype(code):
    import torch
    name = _lib.DTYPE_NAMES[code]
    for tname, fname in _TORCH_NAMES.items():
        if fname == name:
            return getattr(torch, tname)
    raise ValueError(name)


# ---- handles -----------------------------------------------------------------


class Size:
    """The run-time size of axis `axis` of `tensor`."""

    def __init__(self, tensor, axis):
        self.tensor = tensor
        self.axis = axis

    def __repr__(self):
        return "%r.size(%d)" % (self.tensor, self.axis)


class Tensor:
    """A value of a fusion being defined (an input or an op's result).
    Arithmetic operators map to fd.ops (x + y is fd.ops.add(x, y))."""

    def __init__(self, fd, index, ndim, what):
        self.fd = fd
        self.index = index
        self.ndim = ndim
        self.what = what

    def __repr__(self):
        return "<fz.Tensor %d: %s, rank %d>" % (self.index, self.what, self.ndim)

    def size(self, axis):
        if not -self.ndim <= axis < self.ndim:
            raise IndexError("axis %d of a rank-%d tensor" % (axis, self.ndim))
        return Size(self, axis % self.ndim)

    @property
    def shape(self):
        return [Size(self, a) for a in range(self.ndim)]

    def __add__(self, o): return self.fd.ops.add(self, o)
    def __radd__(self, o): return self.fd.ops.add(o, self)
    def __sub__(self, o): return self.fd.ops.sub(self, o)
    def __rsub__(self, o): return self.fd.ops.sub(o, self)
    def __mul__(self, o): return self.fd.ops.mul(self, o)
    def __rmul__(self, o): return self.fd.ops.mul(o, self)
    def __truediv__(self, o): return self.fd.ops.div(self, o)
    def __rtruediv__(self, o): return self.fd.ops.div(o, self)
    def __pow__(self, o): return self.fd.ops.pow(self, o)
    def __rpow__(self, o): return self.fd.ops.pow(o, self)
    def __neg__(self): return self.fd.ops.neg(self)
    def __abs__(self): return self.fd.ops.abs(self)
    def __invert__(self): return self.fd.ops.bitwise_not(self)
    def __and__(self, o): return self.fd.ops.bitwise_and(self, o)
    def __rand__(self, o): return self.fd.ops.bitwise_and(o, self)
    def __or__(self, o): return self.fd.ops.bitwise_or(self, o)
    def __ror__(self, o): return self.fd.ops.bitwise_or(o, self)
    def __xor__(self, o): return self.fd.ops.bitwise_xor(self, o)
    def __rxor__(self, o): return self.fd.ops.bitwise_xor(o, self)
    def __lshift__(self, o): return self.fd.ops.bitwise_left_shift(self, o)
    def __rshift__(self, o): return self.fd.ops.bitwise_right_shift(self, o)


# ---- building the C fusion ---------------------------------------------------


class _Build:
    """One replay of the recording into a C fusion, for one pattern of
    symbols (static: every extent is a constant)."""

    def __init__(self, lib, fusion, static):
        self.lib = lib
        self.fusion = fusion
        self.static = static
        self.values = {}
        self.err = _lib.Error()

    def check(self, ptr, what):
        if not ptr:
            _lib.raise_error(self.err, what)
        return ptr

    def check_status(self, status, what):
        if status != _lib.FZ_OK:
            _lib.raise_error(self.err, what)

    def axis(self, value, axis):
        """(extent code or constant, symbol name or None, broadcast)."""
        extent = ctypes.c_int64()
        symbol = ctypes.c_char_p()
        broadcast = ctypes.c_bool()
        self.check_status(self.lib.fz_value_axis(
            self.fusion, value, axis, ctypes.byref(extent),
            ctypes.byref(symbol), ctypes.byref(broadcast),
            ctypes.byref(self.err)), "axis")
        name = symbol.value.decode() if symbol.value else None
        return extent.value, name, broadcast.value

    def size_operand(self, size):
        """A Size as an operand: a constant extent is an integer literal;
        a symbol's is `symbol N`, its value read at run time (an i64
        zero-dim tensor), so that the fusion serves every size."""
        extent, name, _ = self.axis(self.values[size.tensor.index], size.axis)
        if extent >= 0:
            return self.lib.fz_literal_int(self.fusion, extent)
        return self.check(self.lib.fz_build_symbol(
            self.fusion, name.encode(), ctypes.byref(self.err)), "size")

    def weak_sizes(self, operands, vals):
        """vals (the C values of a pointwise op's operands) with each Size
        that became a symbol read cast so that the op promotes as PyTorch
        promotes a Python int. A symbol read is an i64 zero-dim tensor
        where PyTorch's size is weak; the two give the same dtype except
        when the op's integer operands are all zero-dim and narrower than
        i64 (an i32 scalar plus x.size(0) is i32 in PyTorch): then the
        read is cast to the widest of them, which is the conversion the
        weak int would have had."""
        lib = self.lib
        floats = ("f64", "f32", "f16", "bf16")
        zero_dim_ints = []
        for x, v in zip(operands, vals):
            if not isinstance(x, Tensor):
                continue
            name = _lib.DTYPE_NAMES[lib.fz_value_dtype(v)]
            if name in floats or (name != "bool" and
                                  lib.fz_value_rank(v) > 0):
                return vals
            if name != "bool":
                zero_dim_ints.append(name)
        if not zero_dim_ints or "i64" in zero_dim_ints:
            return vals
        to = _lib.DTYPES["i32" if "i32" in zero_dim_ints else "i8"][0]
        out = []
        for x, v in zip(operands, vals):
            if isinstance(x, Size) and lib.fz_value_dtype(v) == \
                    _lib.DTYPES["i64"][0] and lib.fz_value_rank(v) == 0 and \
                    self.axis(self.values[x.tensor.index], x.axis)[0] < 0:
                v = self.check(lib.fz_cast(self.fusion, v, to,
                                           ctypes.byref(self.err)), "size")
            out.append(v)
        return out

    def size_extent(self, size):
        """A Size as an extent entry: (code, symbol name)."""
        extent, name, broadcast = self.axis(self.values[size.tensor.index],
                                            size.axis)
        if broadcast and extent == 1:
            return 1, None
        return extent, name

    def extents(self, shape, what):
        """Extent codes and symbol names for a shape of ints, strings and
        Sizes; -1 (infer) is resolved by the caller."""
        codes, names = [], []
        for e in shape:
            if isinstance(e, Size):
                c, n = self.size_extent(e)
            elif isinstance(e, str):
                c, n = _lib.FZ_EXTENT_SYMBOL, e
            elif isinstance(e, int) and e >= 0:
                c, n = e, None
            else:
                raise ValueError("%s: extent %r is not a size, a symbol name "
                                 "or a Size" % (what, e))
            codes.append(c)
            names.append(n)
        return codes, names

    def value(self, x):
        """The C value of an operand: a Tensor, a Python number (a weak
        literal, as in PyTorch) or a Size (see size_operand)."""
        lib = self.lib
        if isinstance(x, Tensor):
            return self.values[x.index]
        if isinstance(x, Size):
            return self.size_operand(x)
        if isinstance(x, bool):
            return lib.fz_literal_bool(self.fusion, x)
        if isinstance(x, int):
            return lib.fz_literal_int(self.fusion, x)
        if isinstance(x, float):
            return lib.fz_literal_float(self.fusion, x)
        raise TypeError("operand %r is not an fz.Tensor, a number or a Size"
                        % (x,))


class _NeedStatic(Exception):
    """An op needs sizes that symbols cannot express: the fusion is rebuilt
    with fixed sizes. Reshape expresses products and quotients of symbols
    as derived extents (`_S0*_S1`, `_S2/4`, `_S0/_S1`), so what is left is
    a reshape whose target's element count cannot be proven equal to the
    operand's (target sizes taken from other tensors that agree only at
    run time: x [_S0, _S1] to [y.size(0)]), a -1 that would be a fraction
    of constants, and the resize ops (slice, pad, cat) on a symbolic
    axis."""


def _rank(x):
    return x.ndim if isinstance(x, Tensor) else 0


def _norm_dims(dims, ndim, what):
    out = []
    for d in dims:
        if not isinstance(d, int) or not -ndim <= d < ndim:
            raise ValueError("%s: dim %r is out of range for rank %d"
                             % (what, d, ndim))
        out.append(d % ndim)
    if len(set(out)) != len(out):
        raise ValueError("%s: repeated dim in %r" % (what, dims))
    return out


class Ops:
    """fd.ops: every op fz has, with nvFuser's names where they differ
    (maximum/minimum are binary; max/min, like amax/amin, reduce)."""

    _UNARY = ["neg", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt",
              "reciprocal", "sin", "cos", "tanh", "sigmoid", "erf", "relu",
              "gelu", "silu", "floor", "ceil", "round", "isnan",
              "log1p", "expm1", "tan", "atan", "asin", "acos", "sinh", "cosh",
              "asinh", "acosh", "atanh", "erfc", "erfinv", "lgamma", "trunc",
              "sign", "frac", "isinf", "isfinite", "signbit", "bitwise_not"]
    _BINARY = ["add", "sub", "mul", "div", "pow", "eq", "ne", "lt", "le",
               "gt", "ge", "atan2", "fmod", "hypot", "bitwise_and",
               "bitwise_or", "bitwise_xor", "bitwise_left_shift",
               "bitwise_right_shift"]
    _ALIASES = {"logical_not": "not", "maximum": "max", "minimum": "min",
                "remainder": "mod", "logical_and": "and", "logical_or": "or",
                "logical_xor": "xor", "arctan2": "atan2"}

    def __init__(self, fd):
        self._fd = fd

    def __getattr__(self, name):
        if name in Ops._UNARY:
            return lambda x: self._pointwise(name, [x])
        if name in Ops._BINARY:
            return lambda a, b: self._pointwise(name, [a, b])
        if name in Ops._ALIASES:
            op = Ops._ALIASES[name]
            if op == "not":
                return lambda x: self._pointwise(op, [x])
            return lambda a, b: self._pointwise(op, [a, b])
        raise AttributeError("fz has no op %r" % name)

    # -- pointwise, with PyTorch's broadcasting of lower-rank operands

    def _pointwise(self, op, operands):
        fd = self._fd
        for x in operands:
            if isinstance(x, Tensor) and x.fd is not fd:
                raise ValueError("%s: operand from another FusionDefinition" % op)
        ndim = max(_rank(x) for x in operands)

        def build(b):
            vals = []
            for x in operands:
                v = b.value(x)
                r = _rank(x)
                if 0 < r < ndim:  # right-aligned, as PyTorch broadcasts
                    dims = _lib.ints(range(ndim - r))
                    v = b.check(b.lib.fz_broadcast(b.fusion, v, ndim - r, dims,
                                                   ctypes.byref(b.err)), op)
                vals.append(v)
            vals = b.weak_sizes(operands, vals)
            return b.lib.fz_build_pointwise(b.fusion, op.encode(), len(vals),
                                            _lib.pointers(vals),
                                            ctypes.byref(b.err))
        return fd._record(ndim, op, build)

    def where(self, cond, a, b):
        return self._pointwise("where", [cond, a, b])

    def nan_to_num(self, x, nan=0.0, posinf=None, neginf=None):
        """torch.nan_to_num: infinities default to the dtype's largest
        finite values; integer and bool tensors come back as copies."""
        if not isinstance(x, Tensor) or x.fd is not self._fd:
            raise ValueError("nan_to_num: operand must be a tensor of this "
                             "FusionDefinition")

        def bound(v):
            return None if v is None else ctypes.byref(ctypes.c_double(v))

        def build(b):
            return b.lib.fz_build_nan_to_num(
                b.fusion, b.value(x), float(nan), bound(posinf), bound(neginf),
                ctypes.byref(b.err))
        return self._fd._record(x.ndim, "nan_to_num", build)

    def fma(self, a, b, c):
        return self._pointwise("fma", [a, b, c])

    def clamp(self, x, min, max):
        return self._pointwise("clamp", [x, min, max])

    # -- reductions

    def _reduce(self, op, x, dims, keepdim, dtype=None):
        if dtype is not None:  # as torch.sum(x, dtype=...): cast, then reduce
            x = self.cast(x, dtype)
        if dims is None:
            dims = list(range(x.ndim))
        if isinstance(dims, int):
            dims = [dims]
        if x.ndim == 0:  # as torch: 0 and -1 name a scalar, nothing reduces
            if len(dims) > 1 or any(d not in (0, -1) for d in dims):
                raise ValueError("%s: dims %r do not fit a rank-0 tensor"
                                 % (op, dims))
        else:
            if not dims:  # as torch: an empty dim list reduces every axis
                dims = list(range(x.ndim))
            dims = _norm_dims(dims, x.ndim, op)
        ndim = x.ndim if keepdim or not x.ndim else x.ndim - len(dims)

        def build(b):
            return b.lib.fz_build_reduction(
                b.fusion, op.encode(), b.value(x), len(dims), _lib.ints(dims),
                keepdim, ctypes.byref(b.err))
        r = self._fd._record(ndim, op, build)
        # torch returns `dtype` itself; fz sums and multiplies integers in
        # i64, whose low bits are what `dtype`'s wrapping arithmetic gives.
        if dtype is not None and op in ("sum", "prod") and \
                dtype_name(dtype) in ("i32", "i8", "bool"):
            r = self.cast(r, dtype)
        return r

    def sum(self, x, dims=None, keepdim=False, dtype=None):
        return self._reduce("sum", x, dims, keepdim, dtype)

    def prod(self, x, dims=None, keepdim=False, dtype=None):
        return self._reduce("prod", x, dims, keepdim, dtype)

    def amax(self, x, dims=None, keepdim=False, dtype=None):
        return self._reduce("amax", x, dims, keepdim, dtype)

    def amin(self, x, dims=None, keepdim=False, dtype=None):
        return self._reduce("amin", x, dims, keepdim, dtype)

    max = amax
    min = amin

    def argmax(self, x, dim=None, keepdim=False):
        """torch.argmax: the i64 position of the greatest element along
        `dim`, or (dim=None) the flat row-major index over every axis;
        ties and NaN go to the first position."""
        return self._arg_reduce("argmax", x, dim, keepdim)

    def argmin(self, x, dim=None, keepdim=False):
        """torch.argmin, as argmax with the least element."""
        return self._arg_reduce("argmin", x, dim, keepdim)

    def _arg_reduce(self, op, x, dim, keepdim):
        if dim is not None and not isinstance(dim, int):
            raise ValueError("%s: dim must be an int or None, not %r"
                             % (op, dim))
        # dim=None: every axis (a rank-0 operand's position is 0)
        dims = list(range(x.ndim)) if dim is None else [dim]
        return self._reduce(op, x, dims, keepdim)

    def mean(self, x, dims=None, keepdim=False):
        """sum / (number of elements reduced), as torch.mean. The count is
        the product of the reduced extents: constants multiply into one
        literal (all of it, when every extent is constant), and each
        symbol's is read at run time (`symbol N`), so that one fusion
        serves every size. The sum is a dimensioned tensor or, over every
        axis, a zero-dim one of a float dtype or i64: either way the i64
        count does not change the quotient's dtype from the literal's."""
        if isinstance(dims, int):
            dims = [dims]
        if dims is None or (not dims and x.ndim):  # dim=[]: every axis
            dims = list(range(x.ndim))
        if x.ndim == 0:  # as torch: 0 and -1 name a scalar; a count of 1
            s = self._reduce("sum", x, dims, keepdim)
            dims = []
        else:
            dims = _norm_dims(dims, x.ndim, "mean")
            s = self._reduce("sum", x, dims, keepdim)
        fd = self._fd

        def build(b):
            lib, err = b.lib, ctypes.byref(b.err)
            constant, count = 1, None
            for d in dims:
                extent, name, _ = b.axis(b.values[x.index], d)
                if extent >= 0:
                    constant *= extent
                    continue
                n = b.check(lib.fz_build_symbol(b.fusion, name.encode(), err),
                            "mean")
                count = n if count is None else b.check(
                    lib.fz_build_pointwise(b.fusion, b"mul", 2,
                                           _lib.pointers([count, n]), err),
                    "mean")
            c = lib.fz_literal_int(b.fusion, constant)
            if count is None:
                count = c
            elif constant != 1:
                count = b.check(lib.fz_build_pointwise(
                    b.fusion, b"mul", 2, _lib.pointers([count, c]), err),
                    "mean")
            return lib.fz_build_pointwise(
                b.fusion, b"div", 2, _lib.pointers([b.values[s.index], count]),
                err)
        return fd._record(s.ndim, "mean", build)

    # -- moments: var and mean from one Welford state

    def _moment_dims(self, x, dims, op):
        if isinstance(dims, int):
            dims = [dims]
        if x.ndim == 0:  # as torch: 0 and -1 name a scalar
            dims = list(dims or [])
            if len(dims) > 1 or any(d not in (0, -1) for d in dims):
                raise ValueError("%s: dims %r do not fit a rank-0 tensor"
                                 % (op, dims))
            return dims
        if not dims:  # None or []: every axis, as torch.var
            return list(range(x.ndim))
        return _norm_dims(dims, x.ndim, op)

    def var(self, x, dims=None, correction=1, keepdim=False):
        """torch.var(x, dims, correction=correction, keepdim=keepdim):
        the squared distances from the mean summed, over max(0, count -
        correction). Floating-point tensors only; f16 and bf16 compute in
        f32. The count is counted at run time, so sizes may be symbolic."""
        dims = self._moment_dims(x, dims, "var")
        ndim = x.ndim if keepdim or not x.ndim else x.ndim - len(dims)
        correction = float(correction)

        def build(b):
            return b.lib.fz_build_var(
                b.fusion, b.value(x), len(dims), _lib.ints(dims), correction,
                keepdim, ctypes.byref(b.err))
        return self._fd._record(ndim, "var", build)

    def var_mean(self, x, dims=None, correction=1, keepdim=False):
        """(var, mean), as torch.var_mean: the two are computed from one
        Welford state in one pass over x (the `mean` reduction, not
        sum / count)."""
        dims = self._moment_dims(x, dims, "var_mean")
        v = self.var(x, dims, correction, keepdim)
        ndim = x.ndim if keepdim or not x.ndim else x.ndim - len(dims)

        def build(b):
            return b.lib.fz_build_reduction(
                b.fusion, b"mean", b.value(x), len(dims), _lib.ints(dims),
                keepdim, ctypes.byref(b.err))
        return v, self._fd._record(ndim, "mean", build)

    # -- casts and shape ops

    def cast(self, x, dtype):
        code = _dtype_code(dtype)

        def build(b):
            return b.lib.fz_cast(b.fusion, b.value(x), code, ctypes.byref(b.err))
        return self._fd._record(_rank(x), "cast", build)

    def set(self, x):
        return self._fd._record(x.ndim, "set", lambda b: b.lib.fz_set(
            b.fusion, b.value(x), ctypes.byref(b.err)))

    def broadcast(self, x, dims):
        """Inserts size-1 (b1) axes: `dims` are their positions in the
        result, or (nvFuser's form) one bool per result axis, True where
        an axis is new."""
        dims = list(dims)
        if dims and all(isinstance(d, bool) for d in dims):
            if len(dims) - sum(dims) != x.ndim:
                raise ValueError("broadcast: %d False entries for a rank-%d "
                                 "operand" % (len(dims) - sum(dims), x.ndim))
            dims = [i for i, d in enumerate(dims) if d]
        ndim = x.ndim + len(dims)
        dims = sorted(_norm_dims(dims, ndim, "broadcast"))

        def build(b):
            return b.lib.fz_broadcast(b.fusion, b.value(x), len(dims),
                                      _lib.ints(dims), ctypes.byref(b.err))
        return self._fd._record(ndim, "broadcast", build)

    def broadcast_in_dim(self, x, shape, broadcast_dims):
        """nvFuser's broadcast_in_dim: input axis i becomes result axis
        broadcast_dims[i]; the other result axes are new, and are expanded
        to `shape` where it gives a size other than 1 or -1."""
        shape = list(shape)
        if len(broadcast_dims) != x.ndim:
            raise ValueError("broadcast_in_dim: %d broadcast_dims for a "
                             "rank-%d operand" % (len(broadcast_dims), x.ndim))
        kept = _norm_dims(list(broadcast_dims), len(shape), "broadcast_in_dim")
        new = [d for d in range(len(shape)) if d not in kept]
        y = self.broadcast(x, new) if new else x
        if all(isinstance(shape[d], int) and shape[d] in (1, -1) for d in new):
            return y
        return self.expand(y, [shape[d] if d in new else -1
                               for d in range(len(shape))])

    def squeeze(self, x, dims):
        if isinstance(dims, int):
            dims = [dims]
        dims = sorted(_norm_dims(list(dims), x.ndim, "squeeze"))

        def build(b):
            return b.lib.fz_squeeze(b.fusion, b.value(x), len(dims),
                                    _lib.ints(dims), ctypes.byref(b.err))
        return self._fd._record(x.ndim - len(dims), "squeeze", build)

    def permute(self, x, dims):
        dims = _norm_dims(list(dims), x.ndim, "permute")
        if len(dims) != x.ndim:
            raise ValueError("permute: %d dims for rank %d" % (len(dims), x.ndim))

        def build(b):
            return b.lib.fz_permute(b.fusion, b.value(x), _lib.ints(dims),
                                    ctypes.byref(b.err))
        return self._fd._record(x.ndim, "permute", build)

    def expand(self, x, shape):
        """To `shape` (one entry per axis; -1 keeps the axis, as in
        torch.Tensor.expand): only size-1 (b1) axes grow."""
        shape = list(shape)
        if len(shape) != x.ndim:
            raise ValueError("expand: %d sizes for rank %d" % (len(shape), x.ndim))

        def build(b):
            codes, names = [], []
            for e in shape:
                if isinstance(e, int) and e == -1:
                    codes.append(_lib.FZ_EXTENT_SYMBOL)
                    names.append(None)
                else:
                    c, n = b.extents([e], "expand")
                    codes.append(c[0])
                    names.append(n[0])
            return b.lib.fz_build_expand(b.fusion, b.value(x),
                                         _lib.int64s(codes),
                                         _lib.strings(names),
                                         ctypes.byref(b.err))
        return self._fd._record(x.ndim, "expand", build)

    def reshape(self, x, new_shape):
        """Row-major reshape, like torch.reshape. One entry may be -1: the
        operand's element count over the other entries, which may be a
        derived extent ([N, K] -> [-1] is [N*K]; [M] -> [-1, 4] is
        [M/4, 4], checked to divide when sizes are bound). See _NeedStatic
        for what still fixes the sizes."""
        new_shape = list(new_shape)
        if sum(1 for e in new_shape if isinstance(e, int) and e == -1) > 1:
            raise ValueError("reshape: more than one -1 in %r" % (new_shape,))

        def build(b):
            v = b.value(x)
            known = [e for e in new_shape if not (isinstance(e, int) and e == -1)]
            codes, names = b.extents(known, "reshape")
            if len(known) < len(new_shape):
                code, name = _infer_extent(b, v, x.ndim, codes, names)
                at = next(i for i, e in enumerate(new_shape)
                          if isinstance(e, int) and e == -1)
                codes.insert(at, code)
                names.insert(at, name)
            r = b.lib.fz_build_reshape(b.fusion, v, len(codes),
                                       _lib.int64s(codes), _lib.strings(names),
                                       ctypes.byref(b.err))
            if not r and not b.static:
                raise _NeedStatic(b.err.message.decode())
            return r
        return self._fd._record(len(new_shape), "reshape", build)

    def full(self, shape, fill_value, dtype):
        shape = list(shape)
        code = _dtype_code(dtype)

        def build(b):
            codes, names = b.extents(shape, "full")
            return b.lib.fz_build_full(b.fusion, code, len(codes),
                                       _lib.int64s(codes), _lib.strings(names),
                                       float(fill_value), ctypes.byref(b.err))
        return self._fd._record(len(shape), "full", build)

    def iota(self, length, start=0, step=1, dtype="i64"):
        code = _dtype_code(dtype)

        def build(b):
            codes, names = b.extents([length], "iota")
            return b.lib.fz_build_iota(b.fusion, code, codes[0],
                                       None if names[0] is None
                                       else names[0].encode(),
                                       float(start), float(step),
                                       ctypes.byref(b.err))
        return self._fd._record(1, "iota", build)

    # -- random numbers (docs/format.md, "rand and randn")

    def _random(self, op, shape, dtype, seed, offset, like=None):
        """rand/randn of `shape`; dtype None takes f64 for an f64 `like`
        and f32 otherwise (dropout's draw)."""
        fd = self._fd
        for x in (seed, offset):
            if isinstance(x, Tensor):
                if x.fd is not fd or x.ndim != 0:
                    raise ValueError("%s: seed and offset must be i64 scalars "
                                     "of this FusionDefinition or ints" % op)
            elif not isinstance(x, int) or isinstance(x, bool):
                raise TypeError("%s: seed and offset must be i64 scalars or "
                                "ints, not %r" % (op, x))
        shape = list(shape)
        code = None if dtype is None else _dtype_code(dtype)

        def build(b):
            c = code
            if c is None:
                f64 = _lib.DTYPES["f64"][0]
                c = f64 if b.lib.fz_value_dtype(b.values[like.index]) == f64 \
                    else _lib.DTYPES["f32"][0]
            codes, names = b.extents(shape, op)
            return b.lib.fz_build_random(
                b.fusion, op.encode(), c, len(codes), _lib.int64s(codes),
                _lib.strings(names), b.value(seed), b.value(offset),
                ctypes.byref(b.err))
        return fd._record(len(shape), op, build)

    def rand(self, shape, dtype="f32", seed=0, offset=0):
        """Uniform in [0, 1): element i (row-major) depends only on
        (seed, offset, i); seed and offset are i64 scalar tensors or ints.
        The stream is fz's own (Philox4x32-10), not torch's."""
        return self._random("rand", shape, dtype, seed, offset)

    def randn(self, shape, dtype="f32", seed=0, offset=0):
        """Standard normal, by Box-Muller on rand's words; as rand."""
        return self._random("randn", shape, dtype, seed, offset)

    def dropout(self, x, p, seed, offset):
        """(out, mask) of dropout in training: mask = rand < 1 - p (rand
        in f32, f64 for an f64 x), out = where(mask, x / (1 - p), 0). As
        torch.nn.functional.dropout: p = 0 returns x unchanged (mask all
        true), p = 1 returns x * 0 (mask all false)."""
        if not isinstance(x, Tensor) or x.fd is not self._fd:
            raise ValueError("dropout: x must be a tensor of this "
                             "FusionDefinition")
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError("dropout probability has to be between 0 and 1, "
                             "but got %r" % p)
        if p == 0.0:
            return self.set(x), self.full(x.shape, True, "bool")
        if p == 1.0:
            return self.mul(x, 0.0), self.full(x.shape, False, "bool")
        u = self._random("rand", x.shape, None, seed, offset, like=x)
        keep = self.lt(u, 1.0 - p)
        return self.where(keep, self.div(x, 1.0 - p), 0.0), keep

    # -- indexing

    def _index(self, op, x, index, dim, ndim):
        def build(b):
            return b.lib.fz_build_gather(b.fusion, op.encode(), b.value(x),
                                         b.value(index), dim,
                                         ctypes.byref(b.err))
        return self._fd._record(ndim, op, build)

    def gather(self, x, dim, index):
        """torch.gather(x, dim, index): index (i64 or i32) has x's rank and
        is the result's shape; its sizes along the other axes must equal
        x's (fz reads them at the result's coordinate). An index out of
        range raises at the next call or at FusionDefinition.check()."""
        if index.ndim != x.ndim:
            raise ValueError("gather: index has rank %d, input rank %d"
                             % (index.ndim, x.ndim))
        dim = _norm_dims([dim], x.ndim, "gather")[0]
        return self._index("gather", x, index, dim, x.ndim)

    def take_along_dim(self, x, index, dim):
        """torch.take_along_dim(x, index, dim): a gather after x and index
        are broadcast against each other along every axis but dim (a size-1
        axis of one stretches to the other's size)."""
        if index.ndim != x.ndim:
            raise ValueError("take_along_dim: index has rank %d, input rank "
                             "%d" % (index.ndim, x.ndim))
        dim = _norm_dims([dim], x.ndim, "take_along_dim")[0]

        def stretch(b, v, other, axes):
            codes, names = [], []
            for a in range(x.ndim):
                if a in axes:
                    c, n, _ = b.axis(other, a)
                else:
                    c, n = _lib.FZ_EXTENT_SYMBOL, None
                codes.append(c)
                names.append(n)
            return b.check(b.lib.fz_build_expand(
                b.fusion, v, _lib.int64s(codes), _lib.strings(names),
                ctypes.byref(b.err)), "take_along_dim")

        def build(b):
            xv, iv = b.value(x), b.value(index)
            grow_x, grow_i = [], []
            for a in range(x.ndim):
                if a == dim:
                    continue
                xb, ib = b.axis(xv, a)[2], b.axis(iv, a)[2]
                if xb and not ib:
                    grow_x.append(a)
                elif ib and not xb:
                    grow_i.append(a)
            if grow_x:
                xv = stretch(b, xv, iv, grow_x)
            if grow_i:
                iv = stretch(b, iv, xv, grow_i)
            return b.lib.fz_build_gather(b.fusion, b"gather", xv, iv, dim,
                                         ctypes.byref(b.err))
        return self._fd._record(x.ndim, "take_along_dim", build)

    def index_select(self, x, dim, index):
        """torch.index_select(x, dim, index): a 1-D index (i64 or i32)
        selects along dim."""
        if index.ndim != 1:
            raise ValueError("index_select: index must be 1-D, not rank %d"
                             % index.ndim)
        dim = _norm_dims([dim], x.ndim, "index_select")[0]
        return self._index("index_select", x, index, dim, x.ndim)
    # -- resize ops, PyTorch's semantics: indices are normalized here
    # (negative ones count from the end, out-of-range ones clamp, as
    # x[a:b:c] does), and cat promotes its operands' dtypes as torch.cat

    def slice(self, x, start_indices, end_indices, strides=None):
        """x[start:end:stride] on every axis (one entry per axis; None in
        start or end: the axis's start or end). Strides must be >= 1."""
        n = x.ndim
        starts, ends = list(start_indices), list(end_indices)
        steps = [1] * n if strides is None else list(strides)
        if not len(starts) == len(ends) == len(steps) == n:
            raise ValueError("slice: %d axes need %d starts, ends and strides"
                             % (n, n))
        for s in steps:
            if not isinstance(s, int) or s < 1:
                raise ValueError("slice: stride %r must be an int >= 1" % (s,))

        def build(b):
            v = b.value(x)
            lo, hi = [], []
            for k in range(n):
                whole = (starts[k] in (None, 0) and steps[k] == 1 and
                         (ends[k] is None or ends[k] >= _SLICE_END))
                if whole:
                    lo.append(0)
                    hi.append(_SLICE_END)
                    continue
                extent = _constant_extent(b, v, k, "slice")
                a, e, _ = slice(starts[k], ends[k], steps[k]).indices(extent)
                lo.append(a)
                hi.append(max(a, e))
            return b.lib.fz_build_slice(b.fusion, v, _lib.int64s(lo),
                                        _lib.int64s(hi), _lib.int64s(steps),
                                        ctypes.byref(b.err))
        return self._fd._record(n, "slice", build)

    def pad(self, x, pad_widths, value=0.0):
        """torch.nn.functional.pad(x, pad_widths, value=value): widths in
        pairs from the last axis backward (left, right of the last axis,
        then of the one before, ...); negative widths crop."""
        widths = list(pad_widths)
        if len(widths) % 2 or len(widths) > 2 * x.ndim:
            raise ValueError("pad: %d widths for rank %d" % (len(widths), x.ndim))
        low, high = [0] * x.ndim, [0] * x.ndim
        for i in range(len(widths) // 2):
            low[x.ndim - 1 - i] = int(widths[2 * i])
            high[x.ndim - 1 - i] = int(widths[2 * i + 1])

        def build(b):
            v = b.value(x)
            for k in range(x.ndim):
                if low[k] or high[k]:
                    _constant_extent(b, v, k, "pad")
            return b.lib.fz_build_pad(b.fusion, v, _lib.int64s(low),
                                      _lib.int64s(high), float(value),
                                      ctypes.byref(b.err))
        return self._fd._record(x.ndim, "pad", build)

    def cat(self, tensors, dim=0):
        """torch.cat(tensors, dim): every operand of one rank, promoted to
        their common dtype."""
        tensors = list(tensors)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise ValueError("cat: needs one tensor or more")
        ndim = tensors[0].ndim
        if any(t.ndim != ndim for t in tensors):
            raise ValueError("cat: operands of different ranks")
        axis = _norm_dims([dim], ndim, "cat")[0]

        def build(b):
            vals = [b.value(t) for t in tensors]
            codes = [b.lib.fz_value_dtype(v) for v in vals]
            to = codes[0]
            if any(c != to for c in codes):
                import torch
                want = _torch_dtype(codes[0])
                for c in codes[1:]:
                    want = torch.promote_types(want, _torch_dtype(c))
                to = _dtype_code(want)
            for i, v in enumerate(vals):
                _constant_extent(b, v, axis, "cat")
                if codes[i] != to:
                    vals[i] = b.check(b.lib.fz_cast(b.fusion, v, to,
                                                    ctypes.byref(b.err)), "cat")
            array = (ctypes.c_void_p * len(vals))(*vals)
            return b.lib.fz_build_cat(b.fusion, len(vals), array, axis,
                                      ctypes.byref(b.err))
        return self._fd._record(ndim, "cat", build)


# ---- resize ops ----------------------------------------------------------------

_SLICE_END = (1 << 63) - 1  # FZ_SLICE_END


def _constant_extent(b, v, axis, what):
    """Axis `axis` of v as a constant, or _NeedStatic (a ValueError once
    static) when it is a symbol: resizing an axis needs its size."""
    extent, _, _ = b.axis(v, axis)
    if extent >= 0:
        return extent
    if b.static:
        raise ValueError("%s: axis %d has no fixed size" % (what, axis))
    raise _NeedStatic("%s of a symbolic axis" % what)



def _monomial_mul(num, den, powers, code, name, power):
    """(num, den, powers) times an extent (a constant, or a symbol whose
    name may be a derived extent `A*B/4`) to the power +1 or -1."""
    if code >= 0:
        terms = [(str(code), 1)]
    else:
        terms, sign = [], 1
        for tok in re.findall(r"[*/]|[^*/]+", name):
            if tok in "*/":
                sign = 1 if tok == "*" else -1
            else:
                terms.append((tok, sign))
    for t, p in terms:
        p *= power
        if t.isdigit():
            if p > 0:
                num *= int(t)
            else:
                den *= int(t)
        else:
            powers[t] = powers.get(t, 0) + p
    return num, den, powers


def _infer_extent(b, v, ndim, codes, names):
    """The extent a -1 in a reshape stands for: the operand's extents
    divided by the target's known ones, a constant, a symbol or a derived
    extent (`_S0*_S1`, `_S2/4`) whose integrality is checked when sizes
    are bound."""
    def fail(why):
        if b.static:
            return ValueError("reshape: cannot infer -1: " + why)
        return _NeedStatic(why)

    num, den, powers = 1, 1, {}
    for a in range(ndim):
        e, n, _ = b.axis(v, a)
        num, den, powers = _monomial_mul(num, den, powers, e, n, 1)
    for c, n in zip(codes, names):
        if c == 0:
            raise fail("a target extent is 0")
        num, den, powers = _monomial_mul(num, den, powers, c, n, -1)
    g = math.gcd(num, den)
    num, den = num // g, den // g
    if num == 0:
        return 0, None
    ups = [t for t, p in sorted(powers.items()) for _ in range(max(p, 0))]
    downs = [t for t, p in sorted(powers.items()) for _ in range(max(-p, 0))]
    if not ups and not downs:
        if den != 1:
            raise fail("the constant extents do not divide")
        return num, None
    if len(ups) == 1 and not downs and num == den == 1:
        return _lib.FZ_EXTENT_SYMBOL, ups[0]
    text = "*".join(([str(num)] if num != 1 or not ups else []) + ups)
    text += "".join("/" + t for t in downs + ([str(den)] if den != 1 else []))
    return _lib.FZ_EXTENT_SYMBOL, text
