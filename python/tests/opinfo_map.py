"""How test_opinfo.py turns a PyTorch OpInfo sample into an fz fusion:
the table of fz ops and their OpInfo names, the mapping of a sample's
input, args and kwargs to an fd.ops call (a Plan), and the summary of the
counts. No torch here: tensors are recognized by what they offer (dtype,
dim, shape), dtypes by their names, so that test_opinfo_map.py checks the
mappings and the fusions they build without torch or a GPU.

A sample fz cannot express raises Unsupported with its reason. How a
0-dim tensor takes part is the plan's `rank0`:
  "lift"    it becomes a [1] tensor (fz tensors have rank >= 1), and the
            result is read back as 0-dim where PyTorch's is (`zero_result`);
  "scalar"  it stays rank 0, an fz scalar input (reductions, which fz
            defines on rank-0 values as PyTorch does);
  "refuse"  the sample is unsupported.
"""

import collections

FZ_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32",
             "int8", "bool")
INDEX_DTYPES = ("int64", "int32")   # what fz's gather and index_select take


class Unsupported(Exception):
    """A sample fz cannot express (not a failure)."""


def dtype_of(t):
    """A tensor's dtype by name: "float32" for torch.float32."""
    return str(t.dtype).replace("torch.", "")


def is_tensor(v):
    return hasattr(v, "dtype") and hasattr(v, "dim") and hasattr(v, "shape")


class Torch:
    """A torch constant named in `accepts` (torch.preserve_format), matched
    by name so that this module needs no torch."""

    def __init__(self, name):
        self.name = "torch." + name

    def matches(self, v):
        return str(v) == self.name


class Entry:
    """fd.ops.<fz> computes OpInfo <torch>: `kind` says how a sample's
    input, args and kwargs become operands; `accepts` maps each kwarg the
    fz op implements to the values it implements (those are dropped),
    None to pass every kwarg on to the fz op; `target` is a cast's dtype
    (fz's name)."""

    def __init__(self, fz_name, torch_name, kind, accepts=(), target=None):
        self.fz = fz_name
        self.torch = torch_name
        self.kind = kind
        self.accepts = dict(accepts) if accepts is not None else None
        self.target = target

    @property
    def group(self):
        return GROUP_OF_KIND[self.kind]


GROUP_OF_KIND = {
    "unary": "pointwise", "binary": "pointwise", "where": "pointwise",
    "clamp": "pointwise", "cast": "pointwise", "dropout": "pointwise",
    "reduce": "reduction", "argreduce": "reduction", "var": "reduction",
    "var_mean": "reduction",
    "gather": "indexing", "index_select": "indexing",
    "take_along_dim": "indexing",
    "cat": "resize", "pad": "resize", "narrow": "resize", "slice": "resize",
    "split": "resize",
}
GROUPS = ("pointwise", "reduction", "indexing", "resize")


def _same(names, kind, accepts=()):
    return [Entry(n, n, kind, accepts) for n in names.split()]


TABLE = (
    _same("neg abs exp exp2 log log2 sqrt rsqrt reciprocal sin cos tanh "
          "sigmoid erf floor ceil isnan logical_not bitwise_not", "unary")
    + [Entry("round", "round", "unary", {"decimals": (0,)}),
       Entry("relu", "nn.functional.relu", "unary", {"inplace": (False,)}),
       Entry("gelu", "nn.functional.gelu", "unary",
             {"approximate": ("none",)}),
       Entry("silu", "nn.functional.silu", "unary", {"inplace": (False,)})]
    + _same("log1p expm1 tan atan asin acos sinh cosh asinh acosh atanh "
            "erfc erfinv lgamma trunc sign frac isinf isfinite signbit",
            "unary")
    + [Entry("nan_to_num", "nan_to_num", "unary", None)]
    + [Entry("add", "add", "binary", {"alpha": (1,)}),
       Entry("sub", "sub", "binary", {"alpha": (1,)}),
       Entry("div", "div", "binary", {"rounding_mode": (None,)})]
    + _same("mul pow maximum minimum remainder eq ne lt le gt ge "
            "logical_and logical_or", "binary")
    + _same("atan2 fmod hypot bitwise_and bitwise_or bitwise_xor "
            "bitwise_left_shift bitwise_right_shift logical_xor", "binary")
    + [Entry("where", "where", "where"), Entry("clamp", "clamp", "clamp")]
    + _same("sum prod amax amin mean", "reduce")
    + [Entry("argmax", "argmax", "argreduce"),
       Entry("argmin", "argmin", "argreduce"),
       Entry("var", "var", "var"),
       Entry("var_mean", "var_mean", "var_mean"),
       Entry("gather", "gather", "gather", {"sparse_grad": (False,)}),
       Entry("index_select", "index_select", "index_select"),
       Entry("take_along_dim", "take_along_dim", "take_along_dim"),
       Entry("cat", "cat", "cat"),
       Entry("pad", "nn.functional.pad", "pad"),
       Entry("slice", "narrow", "narrow"),
       Entry("slice", "slice", "slice")]
    # torch.split, chunk and tensor_split: one fd.ops.slice per piece
    + [Entry("slice", n, "split") for n in ("split", "split_with_sizes",
                                            "chunk", "tensor_split")]
    + [Entry("dropout", "nn.functional.dropout", "dropout")]
    + [Entry("cast", name, "cast", {"memory_format":
                                    (Torch("preserve_format"),)}, target)
       for name, target in [("double", "f64"), ("float", "f32"),
                            ("half", "f16"), ("bfloat16", "bf16"),
                            ("long", "i64"), ("int", "i32"),
                            ("char", "i8"), ("bool", "bool")]]
)


class Plan:
    """What a sample becomes. operands: tensors and numbers, in the order
    `call(ops, values)` takes them (a list operand is a list of tensors:
    cat's); call returns an fz Tensor or a tuple of them; key: what the
    call bakes in besides the operands (fusions are cached by it); n: the
    number of elements each result reduces (1: compared as pointwise);
    scale_pows: per result, the power of the input's magnitude its values
    scale with (a variance: 2); check_indices: the fusion gathers, so its
    run is followed by fd.check()."""

    def __init__(self, operands, call, key="", n=1, pointwise=False,
                 rank0="refuse", zero_result=False, condition=None,
                 scale_pows=(1,), check_indices=False):
        self.operands = operands
        self.call = call
        self.key = key
        self.n = n
        self.pointwise = pointwise
        self.rank0 = rank0
        self.zero_result = zero_result
        self.condition = condition
        self.scale_pows = scale_pows
        self.check_indices = check_indices

    def tensors(self):
        return [t for v in self.operands
                for t in (v if isinstance(v, list) else [v]) if is_tensor(t)]


# ---- from a sample to a plan ----------------------------------------------------


def _matches(v, a):
    if isinstance(a, Torch):
        return a.matches(v)
    return v is a or (type(v) is type(a) and v == a)


def _kwargs(sample, entry, consumed=()):
    """The kwargs to pass on to the fz op; Unsupported for any it lacks."""
    kw = {k: v for k, v in sample.kwargs.items() if k not in consumed}
    if "out" in kw:
        raise Unsupported("out=")
    if entry.accepts is None:
        return kw
    for k, v in kw.items():
        if k not in entry.accepts or not any(
                _matches(v, a) for a in entry.accepts[k]):
            raise Unsupported("%s=%r" % (k, v))
    return {}


def _positional(sample, n, what):
    if len(sample.args) != n:
        raise Unsupported("%d positional args for %s" % (len(sample.args), what))
    return list(sample.args)


def _arg(sample, names, defaults):
    """The values of parameters `names` (positional first, then by keyword),
    as PyTorch binds them; Unsupported for extra positional args or one
    given both ways."""
    args = list(sample.args)
    if len(args) > len(names):
        raise Unsupported("%d positional args" % len(args))
    out = []
    for i, (name, default) in enumerate(zip(names, defaults)):
        if i < len(args):
            if name in sample.kwargs:
                raise Unsupported("%s given twice" % name)
            out.append(args[i])
        else:
            out.append(sample.kwargs.get(name, default))
    return out


def _int(v, what):
    """An int argument; a 0-dim integer tensor (narrow's start) is read."""
    if is_tensor(v):
        if v.dim() != 0 or dtype_of(v) not in ("int64", "int32", "int8"):
            raise Unsupported("%s is a %s tensor of rank %d"
                              % (what, dtype_of(v), v.dim()))
        return int(v.item())
    if isinstance(v, bool) or not isinstance(v, int):
        raise Unsupported("%s=%r" % (what, v))
    return v


def _dims(dim, what):
    """A reduction's dims as the fz op takes them: None (every axis) or a
    list ([] is every axis, as in PyTorch's sum, mean and var)."""
    if dim is None:
        return None
    if isinstance(dim, bool):
        raise Unsupported("%s: dim=%r" % (what, dim))
    if isinstance(dim, int):
        return [dim]
    if isinstance(dim, (list, tuple)) and all(
            isinstance(d, int) and not isinstance(d, bool) for d in dim):
        return list(dim)
    raise Unsupported("%s: dim=%r" % (what, dim))


def _count(x, dims):
    """The number of elements a reduction over dims (None: all) reads."""
    if x.dim() == 0:
        return 1
    axes = range(x.dim()) if not dims else dims
    n = 1
    for d in axes:
        n *= x.shape[d]
    return n


def plan(entry, sample):
    kind, name = entry.kind, entry.fz
    if kind == "unary":
        _positional(sample, 0, name)
        kw = _kwargs(sample, entry)
        return Plan([sample.input],
                    lambda ops, v: getattr(ops, name)(v[0], **kw),
                    repr(sorted(kw.items())), pointwise=True, rank0="lift",
                    zero_result=_all_zero_dim([sample.input]))
    if kind == "binary":
        (other,) = _positional(sample, 1, name)
        _kwargs(sample, entry)
        operands = [sample.input, other]
        return Plan(operands,
                    lambda ops, v: getattr(ops, name)(v[0], v[1]),
                    pointwise=True, rank0="lift",
                    zero_result=_all_zero_dim(operands))
    if kind == "where":
        cond, other = _positional(sample, 2, name)
        _kwargs(sample, entry)
        if not (is_tensor(cond) and dtype_of(cond) == "bool"):
            raise Unsupported("where sample without a bool condition first")
        operands = [cond, sample.input, other]
        return Plan(operands, lambda ops, v: ops.where(v[0], v[1], v[2]),
                    pointwise=True, rank0="lift", condition=0,
                    zero_result=_all_zero_dim(operands))
    if kind == "clamp":
        args = list(sample.args) + [None] * (2 - len(sample.args))
        if len(args) > 2:
            raise Unsupported("%d positional args" % len(sample.args))
        lo = sample.kwargs.get("min", args[0])
        hi = sample.kwargs.get("max", args[1])
        _kwargs(sample, entry, consumed=("min", "max"))
        if lo is None or hi is None:
            raise Unsupported("clamp with one bound")
        operands = [sample.input, lo, hi]
        return Plan(operands, lambda ops, v: ops.clamp(v[0], v[1], v[2]),
                    pointwise=True, rank0="lift",
                    zero_result=_all_zero_dim(operands))
    if kind == "cast":
        _positional(sample, 0, name)
        _kwargs(sample, entry)
        target = entry.target
        return Plan([sample.input], lambda ops, v: ops.cast(v[0], target),
                    target, pointwise=True, rank0="lift",
                    zero_result=_all_zero_dim([sample.input]))
    return _PLANNERS[kind](entry, sample)


def _all_zero_dim(operands):
    tensors = [v for v in operands if is_tensor(v)]
    return bool(tensors) and all(t.dim() == 0 for t in tensors)


def _input_tensor(sample):
    if not is_tensor(sample.input):
        raise Unsupported("input is not a tensor")
    return sample.input


def _plan_reduce(entry, sample):
    x = _input_tensor(sample)
    dim, keepdim = _arg(sample, ("dim", "keepdim"), (None, False))
    dtype = sample.kwargs.get("dtype")
    _kwargs(sample, entry, consumed=("dim", "keepdim", "dtype"))
    dims = _dims(dim, entry.fz)
    extra = {}
    if dtype is not None:
        if entry.fz == "mean":
            raise Unsupported("mean(dtype=)")
        if str(dtype).replace("torch.", "") not in FZ_DTYPES:
            raise Unsupported("dtype=%s" % dtype)
        extra["dtype"] = dtype
    name = entry.fz
    return Plan([x], lambda ops, v: getattr(ops, name)(
        v[0], dims=dims, keepdim=bool(keepdim), **extra),
        repr((dims, bool(keepdim), str(dtype))), n=_count(x, dims),
        rank0="scalar")


def _plan_argreduce(entry, sample):
    """argmax/argmin(input, dim=None, keepdim=False): positions are
    compared exactly (n = 1)."""
    x = _input_tensor(sample)
    dim, keepdim = _arg(sample, ("dim", "keepdim"), (None, False))
    _kwargs(sample, entry, consumed=("dim", "keepdim"))
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise Unsupported("%s: dim=%r" % (entry.fz, dim))
    name = entry.fz
    return Plan([x], lambda ops, v: getattr(ops, name)(
        v[0], dim=dim, keepdim=bool(keepdim)),
        repr((dim, bool(keepdim))), rank0="scalar")


def var_arguments(sample):
    """(dims, correction, keepdim) of torch.var / var_mean's forms:
    (input, unbiased) and (input, dim=None, *, correction=1, keepdim=False)
    with the older unbiased= keyword; unbiased picks a correction of 1 or
    0, correction=None is 1."""
    args = list(sample.args)
    kw = dict(sample.kwargs)
    if "out" in kw:
        raise Unsupported("out=")
    unbiased = kw.pop("unbiased", None)
    if args and isinstance(args[0], bool):   # var(input, unbiased)
        if len(args) > 1 or unbiased is not None:
            raise Unsupported("var(input, unbiased, ...)")
        unbiased, args = args[0], []
    names = ("dim", "unbiased", "keepdim")
    if len(args) > len(names):
        raise Unsupported("%d positional args" % len(args))
    bound = dict(zip(names, args))
    for k in bound:
        if k in kw or (k == "unbiased" and unbiased is not None):
            raise Unsupported("%s given twice" % k)
    if "unbiased" in bound:
        unbiased = bound["unbiased"]
    dim = bound.get("dim", kw.pop("dim", None))
    keepdim = bound.get("keepdim", kw.pop("keepdim", False))
    correction = kw.pop("correction", None)
    if kw:
        raise Unsupported("%s=%r" % sorted(kw.items())[0])
    if unbiased is not None and correction is not None:
        raise Unsupported("both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if isinstance(correction, bool) or not isinstance(correction,
                                                      (int, float)):
        raise Unsupported("correction=%r" % (correction,))
    return _dims(dim, "var"), correction, bool(keepdim)


def _plan_var(entry, sample):
    x = _input_tensor(sample)
    dims, correction, keepdim = var_arguments(sample)
    name = entry.fz
    return Plan([x], lambda ops, v: getattr(ops, name)(
        v[0], dims=dims, correction=correction, keepdim=keepdim),
        repr((dims, correction, keepdim)), n=_count(x, dims),
        rank0="scalar", scale_pows=(2, 1) if name == "var_mean" else (2,))


def _index_tensor(index, what):
    if not is_tensor(index):
        raise Unsupported("%s: index is a %s" % (what, type(index).__name__))
    if dtype_of(index) not in INDEX_DTYPES:
        raise Unsupported("%s index (fz indexes with int64 or int32)"
                          % dtype_of(index))
    return index


def _index_range(index):
    """(least, greatest) index, None for an empty one."""
    if index.numel() == 0:
        return None
    return int(index.min().item()), int(index.max().item())


def _check_range(index, extent, what, wraps):
    """Unsupported for an index out of [0, extent): PyTorch raises for one
    (a device-side assert on CUDA, which would end this process), or, where
    it `wraps` negative ones (take_along_dim), reads from the end, which
    fz's gather does not: it reports the index out of range."""
    bounds = _index_range(index)
    if bounds is None:
        return
    lo, hi = bounds
    if lo < 0 and wraps and lo >= -extent and hi < extent:
        raise Unsupported("negative index (%s counts it from the end; fz "
                          "reports it out of range)" % what)
    if lo < 0 or hi >= extent:
        raise Unsupported("index out of range (eager raises)")


def _axis(dim, ndim, what):
    """dim of a rank-ndim tensor (0-dim: 0 and -1 name its one axis)."""
    n = max(ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, int) or \
            not -n <= dim < n:
        raise Unsupported("%s: dim=%r for rank %d" % (what, dim, ndim))
    return dim % n


def _plan_gather(entry, sample):
    """gather(input, dim, index): a 0-dim input or index is lifted to [1];
    the result has the index's shape, 0-dim for a 0-dim index."""
    x = _input_tensor(sample)
    dim, index = _positional(sample, 2, "gather")
    _kwargs(sample, entry)
    _index_tensor(index, "gather")
    if max(x.dim(), 1) != max(index.dim(), 1):
        raise Unsupported("index of rank %d, input of rank %d"
                          % (index.dim(), x.dim()))
    axis = _axis(dim, x.dim(), "gather")
    _check_range(index, x.shape[axis] if x.dim() else 1, "gather", False)
    return Plan([x, index], lambda ops, v: ops.gather(v[0], dim, v[1]),
                repr(dim), rank0="lift", zero_result=index.dim() == 0,
                check_indices=True)


def _plan_index_select(entry, sample):
    """index_select(input, dim, index): a 0-dim index selects one entry
    (as a [1] index); a 0-dim input gives a 0-dim result."""
    x = _input_tensor(sample)
    dim, index = _positional(sample, 2, "index_select")
    _kwargs(sample, entry)
    _index_tensor(index, "index_select")
    if index.dim() > 1:
        raise Unsupported("index of rank %d" % index.dim())
    axis = _axis(dim, x.dim(), "index_select")
    _check_range(index, x.shape[axis] if x.dim() else 1, "index_select",
                 False)
    return Plan([x, index], lambda ops, v: ops.index_select(v[0], dim, v[1]),
                repr(dim), rank0="lift", zero_result=x.dim() == 0,
                check_indices=True)


def _plan_take_along_dim(entry, sample):
    """take_along_dim(input, indices, dim=None): dim=None reads the
    flattened input at the flattened indices (a reshape to [-1] of both,
    then a gather along 0)."""
    x = _input_tensor(sample)
    index, dim = _arg(sample, ("indices", "dim"), (None, None))
    _kwargs(sample, entry, consumed=("indices", "dim"))
    _index_tensor(index, "take_along_dim")
    if dim is None:
        _check_range(index, x.numel(), "take_along_dim", True)

        def flat(ops, v):
            return ops.take_along_dim(ops.reshape(v[0], [-1]),
                                      ops.reshape(v[1], [-1]), 0)
        return Plan([x, index], flat, "flat", check_indices=True)
    if x.dim() != index.dim():
        raise Unsupported("index of rank %d, input of rank %d"
                          % (index.dim(), x.dim()))
    axis = _axis(dim, x.dim(), "take_along_dim")
    _check_range(index, x.shape[axis], "take_along_dim", True)
    return Plan([x, index],
                lambda ops, v: ops.take_along_dim(v[0], v[1], dim), repr(dim),
                check_indices=True)


def _plan_cat(entry, sample):
    """cat(tensors, dim=0). PyTorch skips 1-D empty operands whatever the
    others' rank (its legacy rule); fz's cat takes operands of one rank."""
    tensors = sample.input
    if not isinstance(tensors, (list, tuple)) or not all(
            is_tensor(t) for t in tensors):
        raise Unsupported("input is not a list of tensors")
    (dim,) = _arg(sample, ("dim",), (0,))
    _kwargs(sample, entry, consumed=("dim",))
    tensors = list(tensors)
    ranks = {t.dim() for t in tensors}
    if len(ranks) > 1:
        raise Unsupported("operands of ranks %s (torch.cat skips 1-D empty "
                          "ones)" % sorted(ranks))
    if 0 in ranks:
        raise Unsupported("0-dim operand")
    return Plan([tensors], lambda ops, v: ops.cat(v[0], dim), repr(dim))


def pad_arguments(sample):
    """(widths, value) of nn.functional.pad(input, pad, mode="constant",
    value=None) in constant mode; Unsupported for the other modes."""
    pad, mode, value = _arg(sample, ("pad", "mode", "value"),
                            (None, "constant", None))
    extra = [k for k in sample.kwargs if k not in ("pad", "mode", "value")]
    if extra:
        raise Unsupported("%s=%r" % (extra[0], sample.kwargs[extra[0]]))
    if mode != "constant":
        raise Unsupported("mode=%r (fz pads with a constant)" % (mode,))
    if not isinstance(pad, (list, tuple)) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in pad):
        raise Unsupported("pad=%r" % (pad,))
    if value is not None and (isinstance(value, bool) or
                              not isinstance(value, (int, float))):
        raise Unsupported("value=%r" % (value,))
    return list(pad), 0.0 if value is None else float(value)


def _plan_pad(entry, sample):
    x = _input_tensor(sample)
    widths, value = pad_arguments(sample)
    return Plan([x], lambda ops, v: ops.pad(v[0], widths, value),
                repr((widths, value)))


def window(ndim, dim, start, end, step):
    """fd.ops.slice's (starts, ends, strides) for a window of axis dim and
    every other axis whole."""
    starts, ends, steps = [None] * ndim, [None] * ndim, [1] * ndim
    starts[dim], ends[dim], steps[dim] = start, end, step
    return starts, ends, steps


def narrow_arguments(sample, x):
    """narrow(input, dim, start, length) as a window: start may be
    negative (from the end) or a 0-dim integer tensor."""
    if x.dim() == 0:
        raise Unsupported("0-dim input")
    dim, start, length = _positional(sample, 3, "narrow")
    if sample.kwargs:
        raise Unsupported("kwargs %s" % sorted(sample.kwargs))
    axis = _axis(dim, x.dim(), "narrow")
    start, length = _int(start, "start"), _int(length, "length")
    extent = x.shape[axis]
    if start < 0:
        start += extent
    if not (0 <= start <= extent and 0 <= length <= extent - start):
        raise Unsupported("window out of range (eager raises)")
    return window(x.dim(), axis, start, start + length, 1)


def slice_arguments(sample, x):
    """aten.slice.Tensor(input, dim=0, start=None, end=None, step=1) as a
    window; fd.ops.slice normalizes start and end as x[start:end] does."""
    if x.dim() == 0:
        raise Unsupported("0-dim input")
    dim, start, end, step = _arg(sample, ("dim", "start", "end", "step"),
                                 (0, None, None, 1))
    extra = [k for k in sample.kwargs
             if k not in ("dim", "start", "end", "step")]
    if extra:
        raise Unsupported("%s=%r" % (extra[0], sample.kwargs[extra[0]]))
    axis = _axis(dim, x.dim(), "slice")
    start = None if start is None else _int(start, "start")
    end = None if end is None else _int(end, "end")
    step = _int(step, "step")
    if step < 1:
        raise Unsupported("step=%d" % step)
    return window(x.dim(), axis, start, end, step)


def _plan_window(entry, sample):
    x = _input_tensor(sample)
    get = narrow_arguments if entry.kind == "narrow" else slice_arguments
    starts, ends, steps = get(sample, x)
    return Plan([x], lambda ops, v: ops.slice(v[0], starts, ends, steps),
                repr((starts, ends, steps)))


def _int_list(v, what):
    """A list of ints: a list, tuple or torch.Size of them, or a 1-D
    integer tensor (tensor_split's indices, read)."""
    if is_tensor(v):
        if v.dim() != 1 or dtype_of(v) not in ("int64", "int32", "int8"):
            raise Unsupported("%s is a %s tensor of rank %d"
                              % (what, dtype_of(v), v.dim()))
        return [int(u) for u in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [_int(u, what) for u in v]
    raise Unsupported("%s=%r" % (what, v))


def pieces(op, extent, how):
    """The (start, end) windows torch.<op> cuts an axis of `extent` into:
    split by a size (the last piece shorter) or a list of sizes, chunk
    into n (pieces of ceil(extent / n), fewer where that covers the axis
    sooner), tensor_split into n sections (the first extent % n one
    longer) or at a list of indices (clamped to the axis, so pieces may
    be empty)."""
    if op == "split":
        if isinstance(how, int):
            if how < 0 or (how == 0 and extent > 0):
                raise Unsupported("split size %d" % how)
            if extent == 0:
                return [(0, 0)]
            return [(a, min(a + how, extent)) for a in range(0, extent, how)]
        if sum(how) != extent or any(n < 0 for n in how):
            raise Unsupported("split sizes %r of an axis of %d (eager raises)"
                              % (how, extent))
        ends = [sum(how[:k + 1]) for k in range(len(how))]
        return list(zip([0] + ends[:-1], ends))
    if op == "chunk":
        if how <= 0:
            raise Unsupported("chunks=%d" % how)
        size = -(-extent // how) if extent else 0
        if size == 0:
            return [(0, 0)] if extent == 0 else []
        return [(a, min(a + size, extent)) for a in range(0, extent, size)]
    if isinstance(how, int):   # tensor_split into `how` sections
        if how <= 0:
            raise Unsupported("sections=%d" % how)
        base, extra = divmod(extent, how)
        out, a = [], 0
        for k in range(how):
            n = base + (1 if k < extra else 0)
            out.append((a, a + n))
            a += n
        return out
    if any(i < 0 for i in how):
        raise Unsupported("negative split index")
    cuts = [min(i, extent) for i in how]
    starts = [0] + cuts
    ends = cuts + [extent]
    return [(a, max(a, e)) for a, e in zip(starts, ends)]


def _plan_split(entry, sample):
    """split(input, split_size_or_sections, dim=0), chunk(input, chunks,
    dim=0), tensor_split(input, indices_or_sections, dim=0): a tuple of
    windows of one axis, each an fd.ops.slice and an output."""
    x = _input_tensor(sample)
    if x.dim() == 0:
        raise Unsupported("0-dim input")
    op = entry.torch
    first = {"split": "split_size_or_sections", "chunk": "chunks",
             "split_with_sizes": "split_sizes",
             "tensor_split": "indices_or_sections"}[op]
    names = (first, "dim")
    how, dim = _arg(sample, names, (None, 0))
    extra = [k for k in sample.kwargs if k not in names]
    if extra:
        raise Unsupported("%s=%r" % (extra[0], sample.kwargs[extra[0]]))
    axis = _axis(dim, x.dim(), op)
    if is_tensor(how) and how.dim() == 0:
        how = _int(how, first)
    elif not isinstance(how, int) or isinstance(how, bool):
        if op == "chunk":
            raise Unsupported("chunks=%r" % (how,))
        how = _int_list(how, first)
    if op == "split_with_sizes" and not isinstance(how, list):
        raise Unsupported("split_sizes=%r" % (how,))
    windows = pieces("split" if op == "split_with_sizes" else op,
                     x.shape[axis], how)
    cuts = [window(x.dim(), axis, a, e, 1) for a, e in windows]
    return Plan([x], lambda ops, v: tuple(ops.slice(v[0], *c) for c in cuts),
                repr(cuts))


def _plan_dropout(entry, sample):
    """nn.functional.dropout(input, p=0.5, training=True, inplace=False)
    where it is deterministic: p = 0 keeps every element, p = 1 none.
    Other p draw from fz's own random stream, not torch's (test_random.py
    checks those against dropout's contract); training=False is no
    dropout at all."""
    x = _input_tensor(sample)
    p, training, inplace = _arg(sample, ("p", "training", "inplace"),
                                (0.5, True, False))
    extra = [k for k in sample.kwargs
             if k not in ("p", "training", "inplace")]
    if extra:
        raise Unsupported("%s=%r" % (extra[0], sample.kwargs[extra[0]]))
    if inplace:
        raise Unsupported("inplace=True")
    if not training:
        raise Unsupported("training=False (no dropout)")
    if p not in (0, 1):
        raise Unsupported("0 < p < 1 draws from fz's own random stream")
    return Plan([x], lambda ops, v: ops.dropout(v[0], p, 0, 0)[0], repr(p),
                rank0="lift", zero_result=x.dim() == 0)


_PLANNERS = {
    "reduce": _plan_reduce, "argreduce": _plan_argreduce, "var": _plan_var,
    "var_mean": _plan_var, "gather": _plan_gather,
    "index_select": _plan_index_select,
    "take_along_dim": _plan_take_along_dim, "cat": _plan_cat,
    "pad": _plan_pad, "narrow": _plan_window, "slice": _plan_window,
    "split": _plan_split, "dropout": _plan_dropout,
}


# ---- operands into a FusionDefinition ------------------------------------------


def check_operands(p):
    """The tensors of plan p; Unsupported for operands fz cannot take."""
    tensors = p.tensors()
    if not tensors:
        raise Unsupported("no tensor operand")
    flat = [u for v in p.operands for u in (v if isinstance(v, list) else [v])]
    for v in flat:
        if is_tensor(v):
            if v.device.type != "cuda":
                raise Unsupported("a %s tensor" % v.device.type)
            if dtype_of(v) not in FZ_DTYPES:
                raise Unsupported("a %s tensor" % dtype_of(v))
            if v.dim() > 8:
                raise Unsupported("rank %d" % v.dim())
        elif isinstance(v, bool) or isinstance(v, (int, float)):
            if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63:
                raise Unsupported("integer literal beyond int64")
        else:
            raise Unsupported("a %s operand" % type(v).__name__)
    zero = [t for t in tensors if t.dim() == 0]
    if zero and p.rank0 == "refuse":
        raise Unsupported("0-dim input")
    if p.pointwise:
        # Lifted to [1], a 0-dim tensor would promote as a ranked one: that
        # changes nothing where the ranked operands already have its dtype
        # (PyTorch promotes a 0-dim tensor by category only).
        promoting = [v for i, v in enumerate(p.operands)
                     if i != p.condition and is_tensor(v)]
        ranked = {dtype_of(t) for t in promoting if t.dim() > 0}
        if ranked and any(t.dim() == 0 and dtype_of(t) not in ranked
                          for t in promoting):
            raise Unsupported("0-dim tensor of another dtype than the others")
    return tensors


def define(fd, p):
    """Records plan p in fd (inside `with fd:`): its inputs in the order of
    p.tensors(), its results as outputs. Returns the number of outputs."""
    def one(t):
        if t.dim() == 0 and p.rank0 == "scalar":
            return fd.define_scalar(t.dtype)
        return fd.define_tensor([-1] * max(1, t.dim()), dtype=t.dtype)

    vals = [[one(t) for t in v] if isinstance(v, list) else
            one(v) if is_tensor(v) else v for v in p.operands]
    out = p.call(fd.ops, vals)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for o in outs:
        fd.add_output(o)
    return len(outs)


def fz_inputs(p, tensors):
    """The arguments of execute: lifted 0-dim tensors as [1] ones."""
    return [t.reshape(1) if t.dim() == 0 and p.rank0 == "lift" else t
            for t in tensors]


def operand_key(v):
    if isinstance(v, list):
        return tuple(operand_key(t) for t in v)
    if is_tensor(v):
        return ("t", dtype_of(v), v.dim())
    return ("n", type(v).__name__, repr(v))


# ---- the summary -----------------------------------------------------------------


def summary(rows):
    """The per-op counts that --json writes and the table prints: rows are
    dicts (op, opinfo, dtypes, counts, reasons, failures, seconds) as
    test_opinfo.py gathers them, one per OpInfo entry; sorted by op name,
    then OpInfo name. An entry's passed/failed/unsupported are summed over
    its dtypes."""
    ops = []
    total = collections.Counter()
    for r in sorted(rows, key=lambda r: (r["op"], r["opinfo"])):
        counts = r["counts"]
        reasons = collections.Counter(r["reasons"])
        ops.append({"op": r["op"], "opinfo": r["opinfo"],
                    "dtypes": list(r["dtypes"]),
                    "passed": counts.get("passed", 0),
                    "failed": counts.get("failed", 0),
                    "unsupported": counts.get("unsupported", 0),
                    "unsupported_reasons": dict(reasons.most_common()),
                    "failures": list(r.get("failures", ())),
                    "seconds": round(r.get("seconds", 0.0), 2)})
        for k in ("passed", "failed", "unsupported"):
            total[k] += counts.get(k, 0)
    return {"ops": ops, "entries": len(ops), "passed": total["passed"],
            "failed": total["failed"], "unsupported": total["unsupported"]}
