"""The parts of building the wheel that pyproject.toml cannot say:

- libfz.so goes into the package (fz/libfz.so, where fz/_lib.py looks
  second), copied at build time from $FZ_LIBRARY, else from the
  checkout's build/lib/libfz.so, and stripped of its debugging symbols
  (`strip --strip-unneeded`; FZ_WHEEL_STRIP=0 keeps them);
- the wheel is tagged py3-none-<platform>: the Python code runs on any
  Python 3, but the library is native, so the wheel is not pure.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 carries bdist_wheel itself
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))


def find_library():
    env = os.environ.get("FZ_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise SystemExit("FZ_LIBRARY=%s: no such file" % env)
        return env
    built = os.path.join(os.path.dirname(HERE), "build", "lib", "libfz.so")
    if os.path.isfile(built):
        return built
    raise SystemExit("libfz.so not found: set FZ_LIBRARY to its path, or "
                     "run scripts/wheel.sh, which builds it and the wheel")


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "fz", "libfz.so")
        shutil.copyfile(find_library(), target)
        os.chmod(target, 0o755)
        if os.environ.get("FZ_WHEEL_STRIP", "1") != "0":
            subprocess.run(["strip", "--strip-unneeded", target], check=True)


class NativeDistribution(Distribution):
    """Installs into platlib, the wheel's root (Root-Is-Purelib: false),
    as a package carrying a native library must."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(distclass=NativeDistribution,
      cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
