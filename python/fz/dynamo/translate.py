"""One group of ATen nodes (a partition of an AOTAutograd graph) as an fz
FusionDefinition, and the callable that runs it in the graph's place.

The group's external inputs become fusion inputs (tensors of rank >= 1
as define_tensor, rank-0 tensors and numbers as define_scalar), each
node an fd.ops call, and the nodes used outside the group its outputs.
Extents: a static size is that constant (1: a broadcast axis), a dynamic
one (a SymInt) the symbol dynamo names it by (s0, s1, ...), shared by
every axis of that size, or a run-time size of its own when it is an
expression; shapes that ops are given (view, expand, full) are read from
each node's meta["val"], which AOTAutograd fills with fake tensors.

Exactness: each node's result is cast to its meta dtype where fz's own
promotion (PyTorch's, docs/format.md) would give another; outputs are
allocated in the stride order of their meta strides. An output that is
a view (view, expand, permute, ...) is not computed by fz: its base is,
and the view is taken with ATen after the kernel, so it has eager's
strides. Anything fz cannot express raises Unsupported, and the group
stays ATen; a fusion that fz refuses when it first runs (no scheduler
takes it) falls back to ATen at that point, with the reason recorded.
"""

import ctypes
import operator

from .. import _lib
from ..fusion import FusionDefinition
from ..ops import Size
from . import resize, tables


class Unsupported(Exception):
    """fz cannot take this node or group; the message says why."""


def op_name(target):
    """"aten.add.Tensor" for an OpOverload; the qualified name of any
    other callable."""
    name = str(target)
    if name.startswith(("aten.", "prims.")):
        return name
    return getattr(target, "__name__", name)


def meta_val(node):
    return node.meta.get("val") if hasattr(node, "meta") else None


def is_tensor(v):
    import torch
    return isinstance(v, torch.Tensor)


def hint(size):
    """A size's concrete value: an int, or a backed SymInt's example
    value (its hint; reading it adds no guard)."""
    if isinstance(size, int):
        return size
    node = getattr(size, "node", None)
    value = getattr(node, "hint", None) if node is not None else None
    if callable(value):  # a method in some torch versions
        value = value()
    if value is None:
        raise Unsupported("size %s has no example value (data-dependent)"
                          % (size,))
    return int(value)


def size_key(size):
    """Equal keys for sizes dynamo proves equal: ("c", n) for a constant,
    ("e", expr) for a SymInt."""
    if isinstance(size, int):
        return ("c", size)
    expr = getattr(getattr(size, "node", None), "expr", None)
    if expr is None:
        return ("c", int(size))
    if getattr(expr, "is_Integer", False):
        return ("c", int(expr))
    return ("e", str(expr))


def is_one(size):
    return size_key(size) == ("c", 1)


def check_tensor_meta(v, what):
    """Why fz cannot hold this (fake) tensor, or None."""
    if v.device.type != "cuda":
        return "%s is on %s" % (what, v.device)
    if tables.fz_dtype(v.dtype) is None:
        return "%s has dtype %s" % (what, v.dtype)
    if v.dim() > tables.MAX_RANK:
        return "%s has rank %d (fz: at most %d)" % (what, v.dim(),
                                                     tables.MAX_RANK)
    for s in v.shape:
        if size_key(s) == ("c", 0):
            return "%s is empty" % what
    if v.layout != __import__("torch").strided:
        return "%s is not strided" % what
    return None


# ---- checking a node ---------------------------------------------------------


def node_support(node):
    """Why fz cannot take this call_function node, or None when it can."""
    if node.op != "call_function":
        return "not a call"
    if node.target is operator.getitem:
        src = node.args[0]
        if not hasattr(src, "op") or op_name(src.target) not in tables.MULTI_OUTPUT:
            return "getitem of %s" % getattr(src, "name", src)
        return node_support(src)
    name = op_name(node.target)
    kind = tables.kind_of(name)
    if kind is None:
        return "fz has no translation of %s" % name
    out = meta_val(node)
    outs = out if isinstance(out, (tuple, list)) else [out]
    for k, v in enumerate(outs):
        if not is_tensor(v):
            return "result %d has no tensor meta" % k
        why = check_tensor_meta(v, "the result")
        if why:
            return why
    for a in node.all_input_nodes:
        v = meta_val(a)
        if is_tensor(v):
            if name == "aten.cat.default" and _legacy_empty(v):
                continue  # cat skips it
            why = check_tensor_meta(v, "operand %s" % a.name)
            if why:
                return why
        elif v is None:
            return "operand %s has no meta value" % a.name
    if kind[0] == "bool_only":
        if any(str(meta_val(a).dtype) != "torch.bool"
               for a in node.all_input_nodes if is_tensor(meta_val(a))):
            return "%s on integers is bitwise" % name
    return _special_support(node, name, kind)


def _special_support(node, name, kind):
    if kind[0] != "special":
        return None
    what = kind[1]
    kw = node.kwargs
    first = meta_val(node.args[0]) if node.args and hasattr(
        node.args[0], "meta") else None
    if what == "to_copy":
        import torch
        for k, v in kw.items():
            if k == "device":
                if v is not None and first is not None and \
                        torch.device(v) != first.device:
                    return "_to_copy moves between devices"
            elif k == "layout":
                if v not in (None, torch.strided):
                    return "_to_copy to layout %s" % (v,)
            elif k == "pin_memory":
                if v:
                    return "_to_copy to pinned memory"
            elif k not in ("dtype", "memory_format", "non_blocking"):
                return "_to_copy with %s=%s" % (k, v)
    if what in ("gather", "index_select"):
        why = _index_support(node, what, first)
        if why:
            return why
    if what in ("slice", "narrow", "select", "pad", "cat", "slice_backward"):
        try:
            if what == "cat":
                cat_reading(node)
            elif what == "pad":
                pad_reading(node)
            elif what == "slice_backward":
                slice_backward_reading(node)
            else:
                window(node)
        except Unsupported as e:
            return str(e)
    if what == "gelu" and kw.get("approximate", "none") not in ("none", "tanh"):
        return "gelu approximate=%s" % kw.get("approximate")
    if what in ("sum", "prod", "amax", "amin", "mean", "var", "var_mean"):
        if first is None or first.dim() == 0:
            return "%s of a rank-0 tensor" % what
    if what in ("argmax", "argmin"):
        if first is None or first.dim() == 0:
            return "%s of a rank-0 tensor" % what
        if tables.fz_dtype(first.dtype) == "bool":
            return "%s of bool" % what  # ATen refuses it too
    if what in ("var", "var_mean"):
        if first is not None and tables.fz_dtype(first.dtype) not in (
                "f64", "f32", "f16", "bf16"):
            return "%s of integers" % what
    if what in ("full", "full_like"):
        v = meta_val(node)
        if kw.get("device") is not None and \
                __import__("torch").device(kw["device"]) != v.device:
            return "%s on another device" % what
        if kw.get("layout") not in (None,) and str(kw.get("layout")) != "torch.strided":
            return "%s with layout %s" % (what, kw.get("layout"))
    return None


def _index_support(node, what, first):
    """gather and index_select as fz has them: i64 or i32 indices; gather's
    index as large as the input along the other axes (fz reads them at the
    result's coordinate), index_select's 1-D."""
    index = meta_val(node.args[2]) if len(node.args) > 2 and hasattr(
        node.args[2], "meta") else None
    if first is None or index is None or first.dim() == 0:
        return "%s of a rank-0 tensor or without an index tensor" % what
    if tables.fz_dtype(index.dtype) not in ("i64", "i32"):
        return "%s with %s indices" % (what, index.dtype)
    if node.kwargs.get("sparse_grad"):
        return "gather with sparse_grad"
    dim = node.args[1] % first.dim()
    if what == "index_select":
        return None if index.dim() == 1 else "index_select of a 0-d index"
    if index.dim() != first.dim():
        return "gather with an index of another rank"
    for k in range(first.dim()):
        if k != dim and size_key(index.shape[k]) != size_key(first.shape[k]):
            return "gather with an index smaller than the input along " \
                   "axis %d" % k
    return None


# ---- resize ops ------------------------------------------------------------------
#
# fz's resize ops take their windows and widths as constants fixed when the
# fusion is built, and resize only axes of constant extent. So a bound, a
# width or a cat axis that is a run-time value (a SymInt: a graph value in
# the FX graph), or a resized axis whose size is dynamic, declines the node
# with the reason: it stays ATen and is computed exactly there. An axis
# that a slice keeps whole (x[:, 1:] keeps axis 0) may be dynamic.


def node_arg(node, position, name, default):
    """An argument given by position or by keyword."""
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def _fixed(value, what):
    """value as a bound fixed at compile time (an int, or None where
    allowed), else Unsupported."""
    if value is None or type(value) is int:
        return value
    raise Unsupported("%s with a bound computed at run time (%s)"
                      % (what, getattr(value, "name", value)))


def _constant_extent(size, axis, what):
    key = size_key(size)
    if key[0] != "c":
        raise Unsupported("%s of the dynamic axis %d (size %s): fz resizes "
                          "constant extents only" % (what, axis, key[1]))
    return key[1]


def _legacy_empty(v):
    return v.dim() == 1 and size_key(v.shape[0]) == ("c", 0)


def window(node):
    """A slice, narrow or select node's window as (axis, start, end, step),
    the bounds in range; None when the node keeps the whole tensor.
    Raises Unsupported for a run-time bound or a dynamic axis."""
    what = tables.SPECIAL[op_name(node.target)]
    src = meta_val(node.args[0])
    if not is_tensor(src) or src.dim() == 0:
        raise Unsupported("%s of a rank-0 tensor" % what)
    dim = _fixed(node_arg(node, 1, "dim", 0), what)
    if what == "slice":
        start = _fixed(node_arg(node, 2, "start", None), what)
        end = _fixed(node_arg(node, 3, "end", None), what)
        step = _fixed(node_arg(node, 4, "step", 1), what)
    elif what == "narrow":
        start = _fixed(node_arg(node, 2, "start", None), what)
        length = _fixed(node_arg(node, 3, "length", None), what)
        step = 1
    else:
        index = _fixed(node_arg(node, 2, "index", None), what)
        step = 1
    rank = src.dim()
    if dim is None or not -rank <= dim < rank:
        raise Unsupported("%s along axis %s of a rank-%d tensor"
                          % (what, dim, rank))
    dim %= rank
    if what == "slice" and resize.is_whole_slice(start, end, step):
        return None
    extent = _constant_extent(src.shape[dim], dim, what)
    try:
        if what == "slice":
            start, end = resize.slice_bounds(start, end, step, extent)
        elif what == "narrow":
            start, end = resize.narrow_bounds(start, length, extent)
        else:
            start = resize.select_index(index, extent)
            end = start + 1
    except (TypeError, ValueError) as e:
        raise Unsupported("%s: %s" % (what, e))
    return dim, start, end, step


def pad_reading(node):
    """constant_pad_nd's (widths, value) after checking that fz can take
    them: fixed widths, padded axes of constant extent, a fill value that
    is a number (fz holds it as a double: an integer must be exact)."""
    src = meta_val(node.args[0])
    widths = node.args[1] if len(node.args) > 1 else node.kwargs.get("pad")
    value = node_arg(node, 2, "value", 0)
    if not isinstance(widths, (list, tuple)):
        raise Unsupported("pad widths %r" % (widths,))
    widths = [_fixed(w, "pad") for w in widths]
    if None in widths:
        raise Unsupported("pad widths %r" % (widths,))
    if hasattr(value, "op") or not isinstance(value, (bool, int, float)):
        raise Unsupported("pad with a value computed at run time")
    if type(value) is int and abs(value) > 1 << 53:
        raise Unsupported("pad value %d is not exact as a double" % value)
    if not is_tensor(src) or src.dim() == 0:
        raise Unsupported("pad of a rank-0 tensor")
    try:
        axes = resize.padded_axes(widths, src.dim())
    except (TypeError, ValueError) as e:
        raise Unsupported("pad: %s" % e)
    for k in axes:
        _constant_extent(src.shape[k], k, "pad")
    return widths, value


def slice_backward_reading(node):
    """slice_backward(grad, input_sizes, dim, start, end, step), the
    gradient of a window with step 1, as the constant_pad_nd pad list that
    puts zeros around grad. A step above 1 (a strided scatter) declines."""
    what = "slice_backward"
    grad = meta_val(node.args[0])
    sizes = node_arg(node, 1, "input_sizes", None)
    dim = _fixed(node_arg(node, 2, "dim", 0), what)
    start = _fixed(node_arg(node, 3, "start", None), what)
    end = _fixed(node_arg(node, 4, "end", None), what)
    step = _fixed(node_arg(node, 5, "step", 1), what)
    if not is_tensor(grad) or grad.dim() == 0 or \
            not isinstance(sizes, (list, tuple)) or len(sizes) != grad.dim():
        raise Unsupported("slice_backward to sizes %r" % (sizes,))
    rank = grad.dim()
    if dim is None or not -rank <= dim < rank:
        raise Unsupported("slice_backward along axis %s of rank %d"
                          % (dim, rank))
    dim %= rank
    if step != 1:
        raise Unsupported("slice_backward with step %s (a strided scatter)"
                          % step)
    extent = _fixed(sizes[dim], what)
    _constant_extent(grad.shape[dim], dim, what)
    start, end = resize.slice_bounds(start, end, 1, extent)
    return resize.axis_pad(rank, dim, start, extent - end)


def cat_reading(node):
    """cat's (operand nodes fz concatenates, axis): torch.cat's legacy
    empty operands left out; every operand's extent along the axis must
    be a constant."""
    tensors = node.args[0] if node.args else node.kwargs.get("tensors")
    dim = _fixed(node_arg(node, 1, "dim", 0), "cat")
    if not isinstance(tensors, (list, tuple)) or \
            not all(hasattr(t, "op") and is_tensor(meta_val(t))
                    for t in tensors):
        raise Unsupported("cat of operands that are not tensors")
    shapes = []
    for t in tensors:
        keys = [size_key(s) for s in meta_val(t).shape]
        shapes.append([k[1] if k[0] == "c" else None for k in keys])
    try:
        kept, axis = resize.cat_operands(shapes, dim)
    except (TypeError, ValueError) as e:
        raise Unsupported("cat: %s" % e)
    for k in kept:
        _constant_extent(meta_val(tensors[k]).shape[axis], axis, "cat")
    return [tensors[k] for k in kept], axis


def _operand_nodes(node):
    """The graph values a node reads (a cat's legacy empty operands are
    not read)."""
    if op_name(node.target) == "aten.cat.default":
        return [a for a in node.all_input_nodes
                if not (is_tensor(meta_val(a)) and _legacy_empty(meta_val(a)))]
    return node.all_input_nodes


# ---- building -----------------------------------------------------------------


class _Input:
    """A fusion input: which argument of the group it is and how it is
    passed (a tensor, or a number for a rank-0 value)."""

    def __init__(self, index, handle):
        self.index = index
        self.handle = handle


class Translation:
    """Builds the FusionDefinition of one group of nodes (in graph order),
    whose external inputs are `inputs` (the group's arguments, in order)
    and whose nodes in `outputs` are used outside it."""

    def __init__(self, name, nodes, inputs, outputs):
        self.name = name
        self.nodes = nodes
        self.inputs = inputs
        self.outputs = outputs
        self.members = set(nodes)
        self.arg_index = {n: i for i, n in enumerate(inputs)}
        self.fd = FusionDefinition(name)
        self.ops = self.fd.ops
        self.env = {}             # node -> fz Tensor (or tuple of them)
        self.fz_inputs = []       # _Input, in definition order
        self.symbols = set()      # symbol names bound by tensor inputs
        self.axes = {}            # size key -> Size of an input axis
        self.out_plan = []        # per output: ("fz", k) or ("view", ...)
        self.fz_outputs = []      # nodes fz computes as outputs
        self.translated = []      # nodes fz computes, in order

    # -- entry point

    def build(self):
        plans = [self._plan_output(n) for n in self.outputs]
        if not self.fz_outputs:
            raise Unsupported("the group computes nothing (views only)")
        needed = self._needed()
        used = set()
        for n in needed:
            used.update(_operand_nodes(n))
        with self.fd:
            # Tensor inputs first, so that the symbols of their sizes exist
            # before any op's shape names them.
            for node in self.inputs:
                if node in used and is_tensor(meta_val(node)):
                    self._input(node)
            for node in self.nodes:
                if node in needed:
                    self.env[node] = self._translate(node)
                    self.translated.append(node)
            for node in self.fz_outputs:
                v = meta_val(node)
                order = tables.stride_order([hint(s) for s in v.shape],
                                            [hint(s) for s in v.stride()])
                if order is None:
                    raise Unsupported("output %s has strides %s that no "
                                      "dense layout has" % (node.name,
                                                            tuple(v.stride())))
                self.fd.add_output(self.env[node], stride_order=order)
        self.out_plan = plans
        return self

    # -- outputs

    def _plan_output(self, node):
        """How an output is produced: ("fz", k): fz output k;
        ("view", base plan, chain): ATen view ops on a base, itself an
        fz output or a group input ("arg", i)."""
        chain = []
        n = node
        while n in self.members and op_name(n.target) in tables.VIEWS:
            chain.append(n)
            n = n.args[0]
        if n not in self.members:
            if n not in self.arg_index:
                raise Unsupported("output %s is a view of %s, which is not "
                                  "an input" % (node.name, n.name))
            base = ("arg", self.arg_index[n])
        else:
            if n not in self.fz_outputs:
                self.fz_outputs.append(n)
            base = ("fz", self.fz_outputs.index(n))
        if not chain:
            return base
        steps = []
        for v in reversed(chain):
            args = []
            for a in v.args[1:]:
                args.append(self._replay_arg(a, node))
            steps.append((v.target, args, dict(v.kwargs)))
        return ("view", base, steps)

    def _replay_arg(self, a, output):
        """An argument of a view replayed in ATen: constants as they are,
        group inputs (SymInts) by index."""
        if isinstance(a, (list, tuple)):
            return type(a)(self._replay_arg(x, output) for x in a)
        if hasattr(a, "op"):
            if a in self.arg_index:
                return ("arg", self.arg_index[a])
            raise Unsupported("view output %s depends on %s inside the group"
                              % (output.name, a.name))
        return ("const", a)

    def _needed(self):
        """The group's nodes that the fz outputs depend on."""
        needed = set()
        stack = list(self.fz_outputs)
        while stack:
            n = stack.pop()
            if n in needed or n not in self.members:
                continue
            needed.add(n)
            stack.extend(n.all_input_nodes)
        return needed

    # -- values

    def _input(self, node):
        """The fusion input for an external node, defined on first use."""
        if node in self.env:
            return self.env[node]
        v = meta_val(node)
        index = self.arg_index[node]
        if is_tensor(v):
            name = tables.fz_dtype(v.dtype)
            if v.dim() == 0:
                h = self.fd.define_scalar(name)
            else:
                shape = []
                for s in v.shape:
                    key = size_key(s)
                    if key[0] == "c":
                        shape.append(key[1])
                    elif _is_symbol(s):
                        shape.append(key[1])
                    else:
                        shape.append(-1)
                h = self.fd.define_tensor(shape=shape, dtype=name)
                for axis, s in enumerate(v.shape):
                    key = size_key(s)
                    if key[0] == "e":
                        if _is_symbol(s):
                            self.symbols.add(key[1])
                        self.axes.setdefault(key, Size(h, axis))
        elif isinstance(v, bool):
            h = self.fd.define_scalar("bool")
        elif _is_int(v):
            h = self.fd.define_scalar("i64")
        elif _is_float(v):
            h = self.fd.define_scalar("f64")
        else:
            raise Unsupported("input %s is neither a tensor nor a number"
                              % node.name)
        self.fz_inputs.append(_Input(index, h))
        self.env[node] = h
        return h

    def operand(self, x):
        """An fd.ops operand for an FX argument."""
        if hasattr(x, "op"):
            if x in self.members:
                return self.env[x]
            return self._input(x)
        if isinstance(x, (bool, int, float)):
            return x
        raise Unsupported("operand %r" % (x,))

    def extent(self, size):
        """A shape entry for a size: the constant, the symbol's name, or a
        Size of an input axis of that size."""
        key = size_key(size)
        if key[0] == "c":
            return key[1]
        if key[1] in self.symbols:
            return key[1]
        if key in self.axes:
            return self.axes[key]
        raise Unsupported("size %s is no input's extent" % key[1])

    def coerce(self, t, dtype):
        """t as the torch dtype `dtype` (a cast only where fz's promotion
        gave another dtype)."""
        code = _lib.DTYPES[tables.fz_dtype(dtype)][0]

        def build(b):
            v = b.value(t)
            if b.lib.fz_value_dtype(v) == code:
                return v
            return b.lib.fz_cast(b.fusion, v, code, ctypes.byref(b.err))
        return self.fd._record(t.ndim, "cast", build)

    # -- nodes

    def _translate(self, node):
        if node.target is operator.getitem:
            return self.env[node.args[0]][node.args[1]]
        name = op_name(node.target)
        kind, what = tables.kind_of(name)
        out = meta_val(node)
        if kind == "unary" or (kind == "bool_only" and what == "logical_not"):
            r = getattr(self.ops, what)(self.operand(node.args[0]))
        elif name == "aten.pow.Tensor_Scalar" and \
                out.dtype.is_floating_point and \
                node.args[1] in tables.POW_SPECIAL:
            x = self.operand(node.args[0])
            what = tables.POW_SPECIAL[node.args[1]]
            r = x * x if what == "mul" else getattr(self.ops, what)(x)
        elif kind in ("binary", "bool_only"):
            a = self.operand(node.args[0])
            b = self.operand(node.args[1])
            alpha = _alpha(node)
            if alpha is not None and alpha != 1:
                b = self.ops.mul(b, self.operand(alpha))
            r = getattr(self.ops, what)(a, b)
        else:
            r = getattr(self, "_" + what)(node, out)
        if isinstance(r, tuple):
            return tuple(self.coerce(t, v.dtype) for t, v in zip(r, out))
        return self.coerce(r, out.dtype)

    def _gather(self, node, out):
        dim = node.args[1] % out.dim()
        return self.ops.gather(self.operand(node.args[0]), dim,
                               self.operand(node.args[2]))

    def _index_select(self, node, out):
        dim = node.args[1] % out.dim()
        return self.ops.index_select(self.operand(node.args[0]), dim,
                                     self.operand(node.args[2]))

    def _rsub(self, node, out):
        a = self.operand(node.args[0])
        b = self.operand(node.args[1])
        alpha = _alpha(node)
        if alpha is not None and alpha != 1:
            a = self.ops.mul(a, self.operand(alpha))
        return self.ops.sub(b, a)

    def _where(self, node, out):
        c, a, b = (self.operand(x) for x in node.args[:3])
        return self.ops.where(c, a, b)

    def _clamp(self, node, out):
        x = self.operand(node.args[0])
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
        if lo is not None:
            x = self.ops.maximum(x, self.operand(lo))
        if hi is not None:
            x = self.ops.minimum(x, self.operand(hi))
        return x

    def _clamp_min(self, node, out):
        return self.ops.maximum(self.operand(node.args[0]),
                                self.operand(node.args[1]))

    def _clamp_max(self, node, out):
        return self.ops.minimum(self.operand(node.args[0]),
                                self.operand(node.args[1]))

    def _gelu(self, node, out):
        x = self.operand(node.args[0])
        if node.kwargs.get("approximate", "none") == "none":
            return self.ops.gelu(x)
        # the tanh form, as ATen computes it (in the input's dtype; fz
        # computes f16/bf16 ops in f32 and rounds each result)
        inner = 0.7978845608028654 * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + self.ops.tanh(inner))

    def _to_copy(self, node, out):
        """A copy in the result's dtype: a cast, or a set (a copy) when
        the dtype stays, so that the result is never the operand itself."""
        x = self.operand(node.args[0])
        if meta_val(node.args[0]).dtype == out.dtype:
            return self.ops.set(x)
        return self.ops.cast(x, tables.fz_dtype(out.dtype))

    _convert = _to_copy

    def _clone(self, node, out):
        return self.ops.set(self.operand(node.args[0]))

    def _alias(self, node, out):
        return self.operand(node.args[0])

    # reductions

    def _dims(self, node, position=1):
        src = meta_val(node.args[0])
        dims = node.args[position] if len(node.args) > position else \
            node.kwargs.get("dim")
        return tables.canonical_dims(dims, src.dim())

    def _keepdim(self, node, position=2):
        if len(node.args) > position:
            return bool(node.args[position])
        return bool(node.kwargs.get("keepdim", False))

    def _reduce(self, op, node, out, dims_at=1, keepdim_at=2):
        x = self.operand(node.args[0])
        dims = self._dims(node, dims_at) if dims_at is not None else \
            list(range(meta_val(node.args[0]).dim()))
        keepdim = self._keepdim(node, keepdim_at) if keepdim_at is not None \
            else False
        dtype = tables.fz_dtype(out.dtype)
        src = tables.fz_dtype(meta_val(node.args[0]).dtype)
        if op in ("sum", "prod") and (node.kwargs.get("dtype") is not None
                                      or src == "bool"):
            x = self.ops.cast(x, dtype)
        return getattr(self.ops, op)(x, dims=dims, keepdim=keepdim)

    def _sum(self, node, out):
        if str(node.target).endswith(".default"):
            return self._reduce("sum", node, out, None, None)
        return self._reduce("sum", node, out)

    def _prod(self, node, out):
        if str(node.target).endswith(".default"):
            return self._reduce("prod", node, out, None, None)
        return self._reduce("prod", node, out)

    def _amax(self, node, out):
        return self._reduce("amax", node, out)

    def _amin(self, node, out):
        return self._reduce("amin", node, out)

    def _arg_reduce(self, op, node):
        """aten.argmax/argmin(self, dim=None, keepdim=False)."""
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        return getattr(self.ops, op)(self.operand(node.args[0]), dim=dim,
                                     keepdim=self._keepdim(node))

    def _argmax(self, node, out):
        return self._arg_reduce("argmax", node)

    def _argmin(self, node, out):
        return self._arg_reduce("argmin", node)

    def _wide(self, node):
        """The operand in the dtype ATen accumulates it in (f32 for
        f16/bf16)."""
        x = self.operand(node.args[0])
        if tables.fz_dtype(meta_val(node.args[0]).dtype) in ("f16", "bf16"):
            x = self.ops.cast(x, "f32")
        return x

    def _mean(self, node, out):
        if str(node.target).endswith(".default"):
            dims, keepdim = list(range(meta_val(node.args[0]).dim())), False
        else:
            dims, keepdim = self._dims(node), self._keepdim(node)
        x = self._wide(node)
        if node.kwargs.get("dtype") is not None:
            x = self.ops.cast(x, tables.fz_dtype(out.dtype))
        return self.ops.mean(x, dims, keepdim)

    def _correction(self, node):
        c = node.kwargs.get("correction")
        return 1 if c is None else c

    # var and var_mean: fz's var and mean reductions, one Welford state
    # for both, their count taken at run time (any size, symbolic too).
    # The operand keeps its dtype: f16/bf16 compute in f32 inside, and
    # the results have the operand's dtype, as ATen's.

    def _var(self, node, out):
        dims, keepdim = self._dims(node), self._keepdim(node, position=99)
        return self.ops.var(self.operand(node.args[0]), dims,
                            self._correction(node), keepdim)

    def _var_mean(self, node, out):
        dims, keepdim = self._dims(node), self._keepdim(node, position=99)
        return self.ops.var_mean(self.operand(node.args[0]), dims,
                                 self._correction(node), keepdim)

    # resize ops

    def _slice(self, node, out):
        """slice, narrow and select: one window along one axis (select:
        a window of one, squeezed away)."""
        x = self.operand(node.args[0])
        w = window(node)
        if w is None:
            return x
        dim, start, end, step = w
        rank = meta_val(node.args[0]).dim()
        starts, ends, steps = [None] * rank, [None] * rank, [1] * rank
        starts[dim], ends[dim], steps[dim] = start, end, step
        y = self.ops.slice(x, starts, ends, steps)
        if op_name(node.target) == "aten.select.int":
            y = self.ops.squeeze(y, [dim])
        return y

    _narrow = _slice
    _select = _slice

    def _pad(self, node, out):
        widths, value = pad_reading(node)
        return self.ops.pad(self.operand(node.args[0]), widths, value)

    def _slice_backward(self, node, out):
        return self.ops.pad(self.operand(node.args[0]),
                            slice_backward_reading(node), 0)

    def _cat(self, node, out):
        tensors, axis = cat_reading(node)
        # in the result's dtype first (torch.cat's promotion, read from
        # the meta): a cast only where an operand differs
        operands = [self.coerce(self.operand(t), out.dtype) for t in tensors]
        if len(operands) == 1:
            return self.ops.set(operands[0])  # a copy, as torch.cat's
        return self.ops.cat(operands, axis)

    # shapes

    def _reshape(self, node, out):
        x = self.operand(node.args[0])
        src = meta_val(node.args[0])
        ones = [i for i, s in enumerate(src.shape) if is_one(s)]
        if ones:
            x = self.ops.squeeze(x, ones)
        kept_in = [size_key(s) for s in src.shape if not is_one(s)]
        kept_out = [s for s in out.shape if not is_one(s)]
        if kept_in != [size_key(s) for s in kept_out]:
            if not kept_out:
                raise Unsupported("reshape to a single element")
            x = self.ops.reshape(x, [self.extent(s) for s in kept_out])
        new = [i for i, s in enumerate(out.shape) if is_one(s)]
        if new:
            x = self.ops.broadcast(x, new)
        return x

    def _expand(self, node, out):
        x = self.operand(node.args[0])
        src = list(meta_val(node.args[0]).shape)
        extra = out.dim() - len(src)
        if extra > 0:
            x = self.ops.broadcast(x, list(range(extra)))
            src = [1] * extra + src
        target, grows = [], False
        for s_in, s_out in zip(src, out.shape):
            if is_one(s_in) and not is_one(s_out):
                target.append(self.extent(s_out))
                grows = True
            else:
                target.append(-1)
        return self.ops.expand(x, target) if grows else x

    def _squeeze(self, node, out):
        src = meta_val(node.args[0])
        if len(node.args) > 1:
            dims = tables.canonical_dims(node.args[1], src.dim()) \
                if src.dim() else []
        else:
            dims = list(range(src.dim()))
        dims = [d for d in dims if is_one(src.shape[d])]
        x = self.operand(node.args[0])
        return self.ops.squeeze(x, dims) if dims else x

    def _unsqueeze(self, node, out):
        d = node.args[1] % out.dim()
        return self.ops.broadcast(self.operand(node.args[0]), [d])

    def _permute(self, node, out):
        rank = out.dim()
        dims = [d % rank for d in node.args[1]]
        x = self.operand(node.args[0])
        return x if dims == list(range(rank)) else self.ops.permute(x, dims)

    def _transpose(self, node, out):
        rank = out.dim()
        x = self.operand(node.args[0])
        if rank < 2:
            return x
        if len(node.args) > 1:
            a, b = node.args[1] % rank, node.args[2] % rank
        else:
            a, b = 0, 1
        if a == b:
            return x
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
        return self.ops.permute(x, perm)

    def _filled(self, shape, value, out):
        kept = [self.extent(s) for s in shape if not is_one(s)]
        dtype = tables.fz_dtype(out.dtype)
        if isinstance(value, bool):
            value = float(value)
        x = self.ops.full(kept, value, dtype)
        new = [i for i, s in enumerate(shape) if is_one(s)]
        return self.ops.broadcast(x, new) if new else x

    def _full(self, node, out):
        value = node.args[0] if op_name(node.target) == \
            "aten.scalar_tensor.default" else node.args[1]
        if hasattr(value, "op"):
            raise Unsupported("fill value computed at run time")
        return self._filled(list(out.shape), value, out)

    def _full_like(self, node, out):
        name = op_name(node.target)
        if name == "aten.zeros_like.default":
            value = 0
        elif name == "aten.ones_like.default":
            value = 1
        else:
            value = node.args[1]
        if hasattr(value, "op"):
            raise Unsupported("fill value computed at run time")
        return self._filled(list(out.shape), value, out)


def _alpha(node):
    """add/sub/rsub's alpha: keyword-only in the .Tensor overloads, the
    third positional argument in the .Scalar ones."""
    if "alpha" in node.kwargs:
        return node.kwargs["alpha"]
    return node.args[2] if len(node.args) > 2 else None


def _is_symbol(size):
    expr = getattr(getattr(size, "node", None), "expr", None)
    return bool(getattr(expr, "is_Symbol", False))


def _is_int(v):
    import torch
    return isinstance(v, (int, torch.SymInt))


def _is_float(v):
    import torch
    return isinstance(v, (float, torch.SymFloat))


# ---- validation without a GPU ---------------------------------------------------


class _Example:
    """What FusionDefinition's pattern reads of a tensor (dim, shape,
    stride), from a fake tensor's example sizes."""

    def __init__(self, v):
        self.shape = tuple(hint(s) for s in v.shape)
        self._strides = tuple(hint(s) for s in v.stride())

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._strides


def dry_build(translation):
    """Builds the C fusion for the example sizes (no GPU needed) and
    returns its text, so that what fz's builder refuses (shapes it cannot
    prove equal, ...) is found at compile time. Raises Unsupported."""
    fd = translation.fd
    args = []
    for inp in translation.fz_inputs:
        node = translation.inputs[inp.index]
        v = meta_val(node)
        if is_tensor(v) and v.dim() > 0:
            args.append(_Example(v))
        else:
            args.append(0)
    lib = _lib.lib()
    try:
        try:
            fusion, text = fd._build(fd._pattern(args))
        except Exception as e:
            if type(e).__name__ != "_NeedStatic":
                raise
            fd._static = True
            fusion, text = fd._build(fd._pattern(args))
    except Unsupported:
        raise
    except Exception as e:
        raise Unsupported("fz refused the fusion: %s" % e)
    lib.fz_fusion_destroy(fusion)
    return text
