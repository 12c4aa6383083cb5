"""What the torch.compile backend knows about ATen, as plain data (no
torch import, so that tests check it without torch).

Ops are named as str(OpOverload) prints them: "aten.add.Tensor",
"prims.convert_element_type.default". Each table maps an op to what fz
does with it; translate.py turns a table entry into fd.ops calls, and an
op in no table is left to ATen.
"""

# Pointwise ops with one tensor operand: ATen op -> fz op (python/fz/ops.py).
UNARY = {
    "aten.neg.default": "neg",
    "aten.abs.default": "abs",
    "aten.exp.default": "exp",
    "aten.exp2.default": "exp2",
    "aten.log.default": "log",
    "aten.log2.default": "log2",
    "aten.sqrt.default": "sqrt",
    "aten.rsqrt.default": "rsqrt",
    "aten.reciprocal.default": "reciprocal",
    "aten.sin.default": "sin",
    "aten.cos.default": "cos",
    "aten.tanh.default": "tanh",
    "aten.sigmoid.default": "sigmoid",
    "aten.erf.default": "erf",
    "aten.relu.default": "relu",
    "aten.silu.default": "silu",
    "aten.floor.default": "floor",
    "aten.ceil.default": "ceil",
    "aten.round.default": "round",
    "aten.logical_not.default": "logical_not",
    "aten.isnan.default": "isnan",
}

# Pointwise ops with two operands (tensors or numbers): ATen op -> fz op.
# add and sub take alpha (other is multiplied by it first).
BINARY = {
    "aten.add.Tensor": "add",
    "aten.add.Scalar": "add",
    "aten.sub.Tensor": "sub",
    "aten.sub.Scalar": "sub",
    "aten.mul.Tensor": "mul",
    "aten.mul.Scalar": "mul",
    "aten.div.Tensor": "div",
    "aten.div.Scalar": "div",
    "aten.pow.Tensor_Tensor": "pow",
    "aten.pow.Tensor_Scalar": "pow",
    "aten.pow.Scalar": "pow",
    "aten.maximum.default": "maximum",
    "aten.minimum.default": "minimum",
    "aten.remainder.Tensor": "remainder",
    "aten.remainder.Scalar": "remainder",
    "aten.eq.Tensor": "eq",
    "aten.eq.Scalar": "eq",
    "aten.ne.Tensor": "ne",
    "aten.ne.Scalar": "ne",
    "aten.lt.Tensor": "lt",
    "aten.lt.Scalar": "lt",
    "aten.le.Tensor": "le",
    "aten.le.Scalar": "le",
    "aten.gt.Tensor": "gt",
    "aten.gt.Scalar": "gt",
    "aten.ge.Tensor": "ge",
    "aten.ge.Scalar": "ge",
    "aten.logical_and.default": "logical_and",
    "aten.logical_or.default": "logical_or",
}

# Bitwise ops that are logical ones on bool tensors (and left to ATen on
# integers, where they are bitwise).
BOOL_ONLY = {
    "aten.bitwise_not.default": "logical_not",
    "aten.bitwise_and.Tensor": "logical_and",
    "aten.bitwise_or.Tensor": "logical_or",
}

# Ops with their own translation in translate.py, by kind.
SPECIAL = {
    "aten.gather.default": "gather",
    "aten.index_select.default": "index_select",
    "aten.rsub.Scalar": "rsub",
    "aten.rsub.Tensor": "rsub",
    "aten.where.self": "where",
    "aten.clamp.default": "clamp",
    "aten.clamp.Tensor": "clamp",
    "aten.clamp_min.default": "clamp_min",
    "aten.clamp_max.default": "clamp_max",
    "aten.gelu.default": "gelu",
    "aten._to_copy.default": "to_copy",
    "prims.convert_element_type.default": "convert",
    "aten.clone.default": "clone",
    "aten.alias.default": "alias",
    "aten.sum.dim_IntList": "sum",
    "aten.sum.default": "sum",
    "aten.prod.dim_int": "prod",
    "aten.prod.default": "prod",
    "aten.amax.default": "amax",
    "aten.amin.default": "amin",
    "aten.argmax.default": "argmax",
    "aten.argmin.default": "argmin",
    "aten.mean.dim": "mean",
    "aten.mean.default": "mean",
    "aten.var.correction": "var",
    "aten.var_mean.correction": "var_mean",
    "aten.view.default": "reshape",
    "aten._unsafe_view.default": "reshape",
    "aten.reshape.default": "reshape",
    "aten.expand.default": "expand",
    "aten.squeeze.default": "squeeze",
    "aten.squeeze.dim": "squeeze",
    "aten.squeeze.dims": "squeeze",
    "aten.unsqueeze.default": "unsqueeze",
    "aten.permute.default": "permute",
    "aten.transpose.int": "transpose",
    "aten.t.default": "transpose",
    "aten.full.default": "full",
    "aten.scalar_tensor.default": "full",
    "aten.full_like.default": "full_like",
    "aten.zeros_like.default": "full_like",
    "aten.ones_like.default": "full_like",
    # resize ops (windows, pads, concatenation: translate.py, resize.py)
    "aten.slice.Tensor": "slice",
    "aten.narrow.default": "narrow",
    "aten.select.int": "select",
    "aten.constant_pad_nd.default": "pad",
    "aten.cat.default": "cat",
    "aten.slice_backward.default": "slice_backward",
}

# Ops whose result is a view of their first operand: free in ATen, so a
# fusion never computes them as outputs (it returns their base and the
# view is taken in ATen, which also gives eager's strides), and a group
# of only such ops is not worth a kernel.
VIEWS = {
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
    "aten.expand.default", "aten.squeeze.default", "aten.squeeze.dim",
    "aten.squeeze.dims", "aten.unsqueeze.default", "aten.permute.default",
    "aten.transpose.int", "aten.t.default", "aten.alias.default",
    # Windows are views too: inside a fusion fz reads the window where its
    # consumer needs it, but a window that leaves the group must stay a
    # view of its base (AOTAutograd rebuilds an output that aliases an
    # input or an intermediate from that base, by its strides and storage
    # offset: a fresh tensor there would be read at the wrong place).
    "aten.slice.Tensor", "aten.narrow.default", "aten.select.int",
}

# Ops that return a tuple (reached through operator.getitem).
MULTI_OUTPUT = {"aten.var_mean.correction"}

# torch dtypes (their str() without "torch.") fz has, as fz names.
DTYPES = {
    "float64": "f64", "float32": "f32", "float16": "f16",
    "bfloat16": "bf16", "int64": "i64", "int32": "i32", "int8": "i8",
    "bool": "bool",
}

MAX_RANK = 8

# Decompositions applied while AOTAutograd traces (torch._decomp): ops
# that fz cannot express as one op but whose decompositions are made of
# ops in the tables above (normalizations, softmax, activations and their
# backwards), so that they fuse. Names of aten op packets; a name this
# torch does not have is skipped.
DECOMPOSE = [
    "native_layer_norm", "native_layer_norm_backward",
    "native_group_norm", "native_group_norm_backward",
    "native_batch_norm", "native_batch_norm_backward",
    "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training",
    "_fused_rms_norm", "_fused_rms_norm_backward",
    "_softmax", "_softmax_backward_data",
    "_log_softmax", "_log_softmax_backward_data",
    "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "threshold_backward",
    "hardtanh", "hardtanh_backward", "hardsigmoid", "hardsigmoid_backward",
    "hardswish", "hardswish_backward", "leaky_relu", "leaky_relu_backward",
    "elu", "elu_backward", "softplus", "softplus_backward",
    "mse_loss", "mse_loss_backward",
    # cross-entropy's forward: a gather of log_softmax, where and sums
    "nll_loss_forward",
]

# pow(x, exponent) that ATen computes without pow (and so exactly), as fz
# ops: exponent -> the fz op applied to x (mul: x * x).
POW_SPECIAL = {2: "mul", 0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal"}


def fz_dtype(torch_dtype_name):
    """The fz name of a torch dtype ("torch.float32" or "float32"), or
    None when fz has no such dtype."""
    return DTYPES.get(str(torch_dtype_name).replace("torch.", ""))


def kind_of(op_name):
    """How translate.py handles an op: ("unary"|"binary"|"bool_only"|
    "special", fz op or special kind), or None when fz has no
    translation for it."""
    if op_name in UNARY:
        return "unary", UNARY[op_name]
    if op_name in BINARY:
        return "binary", BINARY[op_name]
    if op_name in BOOL_ONLY:
        return "bool_only", BOOL_ONLY[op_name]
    if op_name in SPECIAL:
        return "special", SPECIAL[op_name]
    return None


def is_compute(op_name):
    """Whether the op does work a kernel is worth launching for."""
    return kind_of(op_name) is not None and op_name not in VIEWS


def schedulers_of(plan_text):
    """The scheduler of each kernel in an executor's plan text
    (fz_executor_last_plan: one "plan @NAME SCHEDULER kernel=..." line
    per kernel, in launch order)."""
    names = []
    for line in (plan_text or "").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "plan" and parts[1].startswith("@"):
            names.append(parts[2])
    return names


def stride_order(sizes, strides):
    """nvFuser's stride_order of a strided layout given as ints (axis i's
    rank, 0 innermost), or None when the layout is not dense in any axis
    order (an expanded or sliced view). Size-1 axes are placed as
    PyTorch places them: by their stride like any other axis, ties
    keeping the axis order (the later axis inside)."""
    rank = len(sizes)
    # outermost first: larger stride outside; ties: earlier axis outside
    order = sorted(range(rank), key=lambda d: (-strides[d], d))
    expected = 1
    for d in reversed(order):
        if sizes[d] != 1 and strides[d] != expected:
            return None
        if sizes[d] != 1:
            expected = strides[d] * sizes[d]
    ranks = [0] * rank
    for position, d in enumerate(order):
        ranks[d] = rank - 1 - position
    return ranks


def canonical_dims(dims, rank):
    """Reduction dims as PyTorch reads them: None or [] is every axis;
    negatives count from the end. Sorted, without repeats."""
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    dims = list(dims)
    if not dims:
        return list(range(rank))
    if rank == 0:
        return []
    return sorted({d % rank for d in dims})
