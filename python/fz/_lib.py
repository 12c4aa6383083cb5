"""Loading libfz.so and declaring the C API for ctypes.

Only the public C API is used (include/fz/fz.h, and the handle-taking
builder calls of include/fz/ir.h). Every handle is an opaque pointer
(c_void_p); the only structs mirrored here are the two small public ones,
fz_error and fz_device_tensor, whose layout fz.h fixes.

Where the library comes from, first match wins:
  1. $FZ_LIBRARY, a path to libfz.so;
  2. libfz.so next to this package (python/fz/libfz.so), as a wheel or a
     copied tree would ship it;
  3. the build trees of this checkout: <repo>/build/lib/libfz.so, then any
     <repo>/build*/lib/libfz.so, newest first.
libfz.so carries LLVM inside and needs only libc, libm, libstdc++ and
libgcc_s, so it loads on a GPU machine that has no LLVM; the CUDA driver
is opened by the library itself, on first use.
"""

import ctypes
import glob
import os

FZ_MAX_RANK = 8
FZ_EXTENT_SYMBOL = -1
FZ_EXTENT_BROADCAST = -2

# fz_status, in the order of FZ_STATUS_LIST (fz.h).
STATUS_NAMES = [
    "FZ_OK", "FZ_ERR_PARSE", "FZ_ERR_INVALID", "FZ_ERR_ARGUMENT",
    "FZ_ERR_UNSUPPORTED", "FZ_ERR_NO_DEVICE", "FZ_ERR_CUDA", "FZ_ERR_LLVM",
    "FZ_ERR_OUT_OF_MEMORY", "FZ_ERR_IO", "FZ_ERR_INTERNAL",
]
FZ_OK = 0
FZ_ERR_NO_DEVICE = STATUS_NAMES.index("FZ_ERR_NO_DEVICE")

# fz_dtype, in the order of FZ_DTYPE_LIST (fz.h): name -> (enum, bytes).
DTYPES = {
    "f64": (0, 8), "f32": (1, 4), "f16": (2, 2), "bf16": (3, 2),
    "i64": (4, 8), "i32": (5, 4), "i8": (6, 1), "bool": (7, 1),
}
DTYPE_NAMES = {code: name for name, (code, _) in DTYPES.items()}


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024),
                ("line", ctypes.c_int), ("col", ctypes.c_int)]


class DeviceTensor(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("sizes", ctypes.c_int64 * FZ_MAX_RANK),
        ("strides", ctypes.c_int64 * FZ_MAX_RANK),
        ("data", ctypes.c_uint64),
    ]


assert (DeviceTensor.sizes.offset, DeviceTensor.strides.offset,
        DeviceTensor.data.offset, ctypes.sizeof(DeviceTensor)) == (
            8, 8 + 8 * FZ_MAX_RANK, 8 + 16 * FZ_MAX_RANK,
            16 + 16 * FZ_MAX_RANK), "fz_device_tensor's layout (fz.h)"


# fz_allocator (fz.h): alloc(user, bytes, stream, out) -> int, free(user,
# ptr, bytes, stream).
ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64))
FREE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64,
                           ctypes.c_size_t, ctypes.c_void_p)


class Allocator(ctypes.Structure):
    _fields_ = [("alloc", ALLOC_FN), ("free", FREE_FN),
                ("user", ctypes.c_void_p)]


class ExecutorStats(ctypes.Structure):
    _fields_ = [("runs", ctypes.c_int64),
                ("signature_misses", ctypes.c_int64),
                ("kernels_compiled", ctypes.c_int64),
                ("kernels_from_disk", ctypes.c_int64),
                ("signatures_evicted", ctypes.c_int64),
                ("signatures_kept", ctypes.c_int),
                ("kernels_kept", ctypes.c_int),
                ("miss_seconds", ctypes.c_double)]


def device_tensor_format(rank):
    """The struct module's format of one fz_device_tensor of this rank
    without its data pointer (native byte order, no implicit padding):
    dtype, rank, the first `rank` sizes, the first `rank` strides; the
    unused sizes and strides and the data pointer are pad bytes, which
    struct writes as zeros. Filling a whole array of them with one
    Struct.pack_into costs less than setting the fields one by one
    through ctypes."""
    unused = 8 * (FZ_MAX_RANK - rank)
    axes = "%dq%dx" % (rank, unused) if rank else "%dx" % unused
    return "ii" + axes + axes + "8x"


# Every fz_device_tensor whole: dtype, rank, sizes, strides, data.
DEVICE_TENSOR_FIELDS = "ii%dq%dqQ" % (FZ_MAX_RANK, FZ_MAX_RANK)


class FzError(RuntimeError):
    """A call into libfz failed: .status is the fz_status name (e.g.
    "FZ_ERR_INVALID"), the message is libfz's own."""

    def __init__(self, status, message, context=None):
        self.status = status
        self.message = message
        text = "%s: %s" % (status, message)
        if context:
            text = "%s: %s" % (context, text)
        super().__init__(text)


def raise_error(err, context=None):
    status = err.status
    name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else str(status)
    raise FzError(name, err.message.decode("utf-8", "replace"), context)


_P = ctypes.c_void_p
_I = ctypes.c_int
_I64 = ctypes.c_int64
_D = ctypes.c_double
_B = ctypes.c_bool
_S = ctypes.c_char_p
_E = ctypes.POINTER(Error)
_PI64 = ctypes.POINTER(ctypes.c_int64)
_PI = ctypes.POINTER(ctypes.c_int)
_PB = ctypes.POINTER(ctypes.c_bool)
_PS = ctypes.POINTER(ctypes.c_char_p)
_PT = ctypes.POINTER(DeviceTensor)

# name: (restype, argtypes). Pointer results are c_void_p so that 64-bit
# handles are never truncated to int.
PROTOTYPES = {
    "fz_version": (_S, []),
    "fz_status_name": (_S, [_I]),
    "fz_fusion_create": (_P, [_S]),
    "fz_fusion_destroy": (None, [_P]),
    "fz_print": (_P, [_P]),  # malloc'd char *: freed with libc free
    "fz_verify": (_I, [_P, _E]),
    "fz_run_pass": (_I, [_P, _S, _E]),
    "fz_fusion_add_tensor": (_P, [_P, _S, _I, _I, _PI64, _PS, _PI, _PB, _E]),
    "fz_fusion_add_scalar": (_P, [_P, _S, _I, _E]),
    "fz_build_pointwise": (_P, [_P, _S, _I, ctypes.POINTER(_P), _E]),
    "fz_build_reduction": (_P, [_P, _S, _P, _I, _PI, _B, _E]),
    "fz_build_var": (_P, [_P, _P, _I, _PI, _D, _B, _E]),
    "fz_build_expand": (_P, [_P, _P, _PI64, _PS, _E]),
    "fz_build_reshape": (_P, [_P, _P, _I, _PI64, _PS, _E]),
    "fz_build_full": (_P, [_P, _I, _I, _PI64, _PS, _D, _E]),
    "fz_build_iota": (_P, [_P, _I, _I64, _S, _D, _D, _E]),
    "fz_build_random": (_P, [_P, _S, _I, _I, _PI64, _PS, _P, _P, _E]),
    "fz_build_symbol": (_P, [_P, _S, _E]),
    "fz_build_slice": (_P, [_P, _P, _PI64, _PI64, _PI64, _E]),
    "fz_build_pad": (_P, [_P, _P, _PI64, _PI64, _D, _E]),
    "fz_build_cat": (_P, [_P, _I, ctypes.POINTER(_P), _I, _E]),
    "fz_build_nan_to_num": (_P, [_P, _P, _D, ctypes.POINTER(_D), ctypes.POINTER(_D), _E]),
    "fz_build_gather": (_P, [_P, _S, _P, _P, _I, _E]),
    "fz_literal_float": (_P, [_P, _D]),
    "fz_literal_int": (_P, [_P, _I64]),
    "fz_literal_bool": (_P, [_P, _B]),
    "fz_cast": (_P, [_P, _P, _I, _E]),
    "fz_broadcast": (_P, [_P, _P, _I, _PI, _E]),
    "fz_squeeze": (_P, [_P, _P, _I, _PI, _E]),
    "fz_permute": (_P, [_P, _P, _PI, _E]),
    "fz_set": (_P, [_P, _P, _E]),
    "fz_value_set_layout": (_I, [_P, _PI, _PB, _E]),
    "fz_add_output": (_I, [_P, _P, _E]),
    "fz_fusion_num_inputs": (_I, [_P]),
    "fz_fusion_num_outputs": (_I, [_P]),
    "fz_fusion_output": (_P, [_P, _I]),
    "fz_value_name": (_S, [_P]),
    "fz_value_set_name": (_I, [_P, _P, _S, _E]),
    "fz_value_dtype": (_I, [_P]),
    "fz_value_rank": (_I, [_P]),
    "fz_value_axis": (_I, [_P, _P, _I, _PI64, _PS, _PB, _E]),
    "fz_device_open": (_I, [_I, ctypes.POINTER(_P), _E]),
    "fz_device_close": (None, [_P]),
    "fz_executor_create": (_I, [_P, _P, ctypes.POINTER(_P), _E]),
    "fz_executor_destroy": (None, [_P]),
    "fz_executor_output_layout": (_I, [_P, _PT, _I, _I, _PT, _E]),
    "fz_executor_output_layouts": (_I, [_P, _PT, _I, _PT, _I, _E]),
    "fz_executor_run": (_I, [_P, _PT, _I, _PT, _I, _P, _E]),
    "fz_executor_check": (_I, [_P, _P, _E]),
    "fz_executor_set_allocator": (_I, [_P, ctypes.POINTER(Allocator), _E]),
    "fz_executor_set_signature_limit": (_I, [_P, _I, _E]),
    "fz_executor_get_stats": (None, [_P, ctypes.POINTER(ExecutorStats)]),
    "fz_executor_last_plan": (_S, [_P]),
    "fz_executor_last_ptx": (_S, [_P]),
}


def candidate_paths():
    """Where libfz.so is looked for, in order (see the module docstring)."""
    paths = []
    env = os.environ.get("FZ_LIBRARY")
    if env:
        paths.append(env)
    here = os.path.dirname(os.path.abspath(__file__))
    paths.append(os.path.join(here, "libfz.so"))
    repo = os.path.dirname(os.path.dirname(here))
    paths.append(os.path.join(repo, "build", "lib", "libfz.so"))
    others = glob.glob(os.path.join(repo, "build*", "lib", "libfz.so"))
    others.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    paths.extend(p for p in others if p not in paths)
    return paths


_lib = None


def lib():
    """The loaded library, with every prototype declared. Loaded once."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in candidate_paths():
        if not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            if path == os.environ.get("FZ_LIBRARY"):
                break
            continue
        for name, (restype, argtypes) in PROTOTYPES.items():
            fn = getattr(handle, name)
            fn.restype = restype
            fn.argtypes = argtypes
        handle.path = path
        _lib = handle
        return _lib
    raise OSError("libfz.so not found; set FZ_LIBRARY. Tried:\n  " +
                  "\n  ".join(tried))


_libc = None


def untyped(name):
    """libfz's function `name` without declared argument types (it
    returns an int, as fz_status): ctypes passes each argument as what it
    is (a ctypes object its pointer or value, byref() a pointer, an int a
    C int) instead of calling each declared type's from_param, some
    thousands of instructions less per call. For the calls every new
    input signature and every execute makes (fz_executor_output_layouts,
    fz_executor_run), with arguments prepared as ctypes objects."""
    handle = lib()
    return handle._FuncPtr(ctypes.cast(getattr(handle, name), _P).value)


def free(ptr):
    """Frees a malloc'd pointer libfz returned (fz_print)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
        _libc.free.argtypes = [ctypes.c_void_p]
        _libc.free.restype = None
    _libc.free(ptr)


def int64s(values):
    return (ctypes.c_int64 * max(1, len(values)))(*values)


def ints(values):
    return (ctypes.c_int * max(1, len(values)))(*values)


def bools(values):
    return (ctypes.c_bool * max(1, len(values)))(*values)


def strings(values):
    return (ctypes.c_char_p * max(1, len(values)))(
        *[None if v is None else v.encode() for v in values])


def pointers(values):
    return (ctypes.c_void_p * max(1, len(values)))(*values)
