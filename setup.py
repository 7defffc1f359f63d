"""Build labkit's compiled core: one Cython extension around C with inline-assembly kernels.

The optimisation flags of the core are set here, in one place, and recorded
in the binary (lk_cflags) so that every measured row can say how it was built.
Override them with LABKIT_CFLAGS="-O3 -march=native" (the -O experiments do).
"""
import os
import shlex
import sysconfig

from Cython.Build import cythonize
from setuptools import Extension, setup

DEFAULT_CFLAGS = "-O2"
extra = shlex.split(os.environ.get("LABKIT_CFLAGS", DEFAULT_CFLAGS))
# Python's own CFLAGS come first on the command line; ours come last and win.
python_cflags = sysconfig.get_config_var("CFLAGS") or ""
recorded = " ".join([python_cflags, *extra]).strip()

core = Extension(
    "labkit._core",
    sources=["labkit/_core.pyx", "labkit/csrc/kernels.c", "labkit/csrc/harness.c",
             "labkit/csrc/ring.c"],
    depends=[
        "labkit/csrc/labkit_core.h",
        "labkit/csrc/lk_timer.h",
        "labkit/csrc/switch_platform.h",
        "labkit/csrc/switch_x86_64_sysv.h",
        "labkit/csrc/switch_aarch64_aapcs.h",
    ],
    include_dirs=["labkit"],
    extra_compile_args=[*extra, "-Wall", f"-DLK_CFLAGS=\"{recorded}\""],
)

setup(
    name="labkit",
    version="0.1.0",
    description="A lab that measures what a context switch costs",
    packages=["labkit"],
    package_data={"labkit": ["*.pyi", "*.pxd", "csrc/*.h", "csrc/*.c"]},
    ext_modules=cythonize([core], language_level=3),
    python_requires=">=3.11",
)
