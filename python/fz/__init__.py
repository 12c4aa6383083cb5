"""fz: a fusion compiler for NVIDIA GPUs, from Python.

A small pure-Python package over libfz's C API (ctypes; nothing to
compile), in the spirit of nvFuser's FusionDefinition:

    import torch, fz
    with fz.FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32,
                             stride_order=[0, 1])   # column-major
        fd.add_output(fd.ops.sum(x, dims=[1]))
    (s,) = fd.execute([x_cuda])

It needs torch (for execute) and libfz.so (found through $FZ_LIBRARY,
next to this package, or in the checkout's build trees; see _lib.py).
"""

from ._lib import FzError, lib
from .fusion import FusionDefinition
from .ops import Ops, Size, Tensor, dtype_name

__all__ = ["FusionDefinition", "FzError", "Ops", "Size", "Tensor",
           "dtype_name", "lib", "version"]


def version():
    """libfz's version string (loads the library)."""
    return lib().fz_version().decode()
