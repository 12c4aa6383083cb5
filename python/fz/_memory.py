"""fz's scratch memory from PyTorch's caching allocator.

Executors need device memory besides the tensors they are given: split
reductions' partials and counters, and the intermediates of fusions run
as several kernels. Left to itself, libfz keeps a block per input
signature and stream, allocated with cuMemAlloc: memory PyTorch cannot see
(torch.cuda.memory_allocated, empty_cache, out-of-memory handling) and
cannot reuse. Here every executor the package makes takes that memory
from torch.cuda.caching_allocator_alloc per call instead, on the call's
stream, and hands it back with caching_allocator_delete right after the
launches are queued: PyTorch's allocator is stream-ordered, so a block
freed on a stream is only reused by later work on that stream. During
CUDA graph capture PyTorch serves these allocations from the graph's
private pool, so captured fz calls replay correctly.

The callbacks are called by libfz on the thread that runs the executor,
which holds the GIL through the ctypes call, and never raise into C: a
failed allocation returns nonzero and libfz reports FZ_ERR_OUT_OF_MEMORY.
"""

import ctypes

from . import _lib


def _alloc(user, nbytes, stream, out):
    try:
        import torch
        device = user or 0
        ptr = torch.cuda.caching_allocator_alloc(nbytes, device=device,
                                                 stream=stream or 0)
        out[0] = ptr
        return 0
    except Exception:  # reported by libfz as out of memory
        return 1


def _free(user, ptr, nbytes, stream):
    try:
        import torch
        torch.cuda.caching_allocator_delete(ptr)
    except Exception:
        pass  # the process is going down; nothing to give back to


# Kept alive for as long as the module: libfz holds these function pointers.
_ALLOC = _lib.ALLOC_FN(_alloc)
_FREE = _lib.FREE_FN(_free)


def use_torch_allocator(executor, device_index):
    """Points executor's scratch memory at PyTorch's caching allocator on
    device `device_index` (the executor's device)."""
    a = _lib.Allocator(_ALLOC, _FREE, ctypes.c_void_p(device_index or None))
    err = _lib.Error()
    if _lib.lib().fz_executor_set_allocator(executor, ctypes.byref(a),
                                            ctypes.byref(err)) != _lib.FZ_OK:
        _lib.raise_error(err, "connecting PyTorch's allocator")


def stats(executor):
    """fz_executor_get_stats as a dict."""
    s = _lib.ExecutorStats()
    _lib.lib().fz_executor_get_stats(executor, ctypes.byref(s))
    return {name: getattr(s, name) for name, _ in s._fields_}
