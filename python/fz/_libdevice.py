"""Pointing libfz at libdevice (libdevice.10.bc, NVIDIA's math library,
which kernels using exp, tanh, erf, pow, ... link) on machines where the
library's own search (lib/nvptx/libdevice.c: $FZ_LIBDEVICE, $CUDA_HOME,
$CUDA_PATH, /usr/local/cuda, Debian's nvidia-cuda-toolkit) finds nothing:
a GPU machine with only the driver and a pip-installed PyTorch. Such a
machine has libdevice in a pip wheel: nvidia-cuda-nvcc-cu12 (and its
successors) ship nvidia/cuda_nvcc/nvvm/libdevice/, and Triton bundles a
copy (triton/backends/nvidia/lib/, third_party/cuda/lib/ before Triton
3). `import fz` sets FZ_LIBDEVICE to the first of those when it is unset
and the library's own places hold none; the library reads the variable
when it first compiles a kernel that needs libdevice.
"""

import glob
import os
import sys

NAME = "libdevice.10.bc"

# Relative to a site-packages folder.
_WHEEL_PLACES = [
    ("nvidia", "cuda_nvcc", "nvvm", "libdevice"),
    ("nvidia", "cu13", "nvvm", "libdevice"),
    ("triton", "backends", "nvidia", "lib"),
    ("triton", "third_party", "cuda", "lib"),
]


def library_places(environ=None):
    """Where libfz itself looks when FZ_LIBDEVICE is unset, in its order."""
    env = os.environ if environ is None else environ
    places = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = env.get(var)
        if root:
            places.append(os.path.join(root, "nvvm", "libdevice", NAME))
    places.append("/usr/local/cuda/nvvm/libdevice/" + NAME)
    places.append("/usr/lib/nvidia-cuda-toolkit/libdevice/" + NAME)
    return places


def extra_places(path_entries=None):
    """Places libfz does not look at: versioned toolkits
    (/usr/local/cuda-12.4) and pip wheels on sys.path."""
    places = sorted(glob.glob("/usr/local/cuda-*/nvvm/libdevice/" + NAME),
                    reverse=True)
    for entry in sys.path if path_entries is None else path_entries:
        if not entry or not os.path.isdir(entry):
            continue
        for parts in _WHEEL_PLACES:
            places.append(os.path.join(entry, *parts, NAME))
    return places


def configure(environ=None, path_entries=None):
    """Sets FZ_LIBDEVICE in environ (os.environ) when it is unset, libfz's
    own places hold no libdevice and another place does. Returns the path
    set, or None."""
    env = os.environ if environ is None else environ
    if env.get("FZ_LIBDEVICE"):
        return None
    if any(os.path.isfile(p) for p in library_places(env)):
        return None
    for p in extra_places(path_entries):
        if os.path.isfile(p):
            env["FZ_LIBDEVICE"] = p
            return p
    return None
