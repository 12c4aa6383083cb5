"""fz: a fusion compiler for NVIDIA GPUs, from Python.

A small pure-Python package over libfz's C API (ctypes; nothing to
compile), in the spirit of nvFuser's FusionDefinition:

    import torch, fz
    with fz.FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=torch.float32,
                             stride_order=[0, 1])   # column-major
        fd.add_output(fd.ops.sum(x, dims=[1]))
    (s,) = fd.execute([x_cuda])

and a torch.compile backend (fz.dynamo):

    compiled = torch.compile(model, backend="fz")
    print(fz.explain(model, *example_inputs))

It needs torch (for execute and the backend) and libfz.so (found through
$FZ_LIBRARY, next to this package, or in the checkout's build trees; see
_lib.py). `import fz` itself works without torch.
"""

from . import _libdevice
from ._lib import FzError, lib
from ._version import __version__
from .fusion import FusionDefinition
from .ops import Ops, Size, Tensor, dtype_name

__all__ = ["FusionDefinition", "FzError", "Ops", "Size", "Tensor",
           "__version__", "backend", "dtype_name", "explain", "lib",
           "version"]

_libdevice.configure()


def version():
    """libfz's version string (loads the library)."""
    return lib().fz_version().decode()


def __getattr__(name):
    # The torch.compile side imports torch; it is loaded on first use.
    if name in ("backend", "explain", "dynamo"):
        # import_module, not `from . import dynamo`: the latter asks this
        # module for the attribute first, which would land here again.
        import importlib
        dynamo = importlib.import_module(__name__ + ".dynamo")
        return dynamo if name == "dynamo" else getattr(dynamo, name)
    raise AttributeError("module 'fz' has no attribute %r" % name)


def _register_backend():
    """Makes backend="fz" known to torch.compile when torch is installed
    (the wheel's torch_dynamo_backends entry point does the same for an
    installed fz that was never imported)."""
    import importlib.util
    try:
        if importlib.util.find_spec("torch") is None:
            return
    except (ImportError, ValueError):
        return
    try:
        import importlib
        importlib.import_module(__name__ + ".dynamo").register()
    except Exception as e:  # a torch that fails to import: fz still works
        import warnings
        warnings.warn("fz: backend=\"fz\" not registered: %s" % e)


_register_backend()
