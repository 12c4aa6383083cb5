# lit configuration: every .fz file under test/lit is a test; RUN lines use
# fuse-opt (and later fuse-run) from the build, FileCheck and `not` from LLVM.
import os
import shutil
import lit.formats

config.name = "fz"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".fz", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.join(config.fz_source_dir, "test/lit")
config.test_exec_root = config.fz_lit_exec_root

config.environment["PATH"] = os.pathsep.join(
    [config.fz_bin_dir, config.llvm_bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%fz_src", config.fz_source_dir))
config.substitutions.append(("%examples", os.path.join(config.fz_source_dir, "examples")))

# PTX is assembled by ptxas only where it is installed: RUN lines use
# `%if ptxas %{ ... %}` and the %ptxas substitution.
ptxas = shutil.which("ptxas")
for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
    if not ptxas and home and os.path.exists(os.path.join(home, "bin", "ptxas")):
        ptxas = os.path.join(home, "bin", "ptxas")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# Kernels with transcendentals link libdevice. Tests that compile them say
# `REQUIRES: libdevice` and are reported UNSUPPORTED (not passed) on a
# machine without CUDA's libdevice; the search follows lib/nvptx/libdevice.c.
for var in ("FZ_LIBDEVICE", "CUDA_HOME", "CUDA_PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
def _libdevice():
    if "FZ_LIBDEVICE" in os.environ:
        p = os.environ["FZ_LIBDEVICE"]
        return os.path.isfile(p) or os.path.isfile(os.path.join(p, "libdevice.10.bc"))
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    dirs = [os.path.join(h, "nvvm", "libdevice") for h in homes if h]
    dirs.append("/usr/lib/nvidia-cuda-toolkit/libdevice")
    return any(os.path.isfile(os.path.join(d, "libdevice.10.bc")) for d in dirs)
if _libdevice():
    config.available_features.add("libdevice")
