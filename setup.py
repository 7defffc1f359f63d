"""Build labkit's compiled core: one Cython extension around C with inline-assembly kernels,
and the same C core built at every optimisation level the -O experiment compares
(labkit/variants/liblabkit_c-<tag>.so, loaded with ctypes inside a worker process).

The optimisation flags are set here, in one place, and recorded in each binary
(lk_cflags) so that every measured row can say how it was built. Override the
extension's with LABKIT_CFLAGS="-O3 -march=native".
"""
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEFAULT_CFLAGS = "-O2"
extra = shlex.split(os.environ.get("LABKIT_CFLAGS", DEFAULT_CFLAGS))
# Python's own CFLAGS come first on the command line; ours come last and win.
python_cflags = sysconfig.get_config_var("CFLAGS") or ""
recorded = " ".join([python_cflags, *extra]).strip()

core = Extension(
    "labkit._core",
    sources=["labkit/_core.pyx", "labkit/csrc/kernels.c", "labkit/csrc/harness.c",
             "labkit/csrc/ring.c", "labkit/csrc/kswitch.c"],
    depends=[
        "labkit/csrc/labkit_core.h",
        "labkit/csrc/lk_timer.h",
        "labkit/csrc/switch_platform.h",
        "labkit/csrc/switch_x86_64_sysv.h",
        "labkit/csrc/switch_aarch64_aapcs.h",
    ],
    include_dirs=["labkit"],
    extra_compile_args=[*extra, "-Wall", "-pthread", f"-DLK_CFLAGS=\"{recorded}\""],
    extra_link_args=["-pthread"],
)

C_CORE = ["labkit/csrc/kernels.c", "labkit/csrc/harness.c", "labkit/csrc/ring.c",
          "labkit/csrc/frequency.c"]
# The builds the optimisation-level experiment puts side by side (notebook 02).
VARIANTS = {
    "O0": ["-O0"], "O1": ["-O1"], "O2": ["-O2"], "O3": ["-O3"], "Os": ["-Os"],
    "O2-native": ["-O2", "-march=native"],
}


PEERS = ["labkit/cxx/peers.cpp", "labkit/cxx/frames.cpp"]
PEERS_LIBS = ["-lboost_context", "-lboost_fiber"]


def _fresh(target: Path, sources) -> bool:
    return target.exists() and all(target.stat().st_mtime >= Path(p).stat().st_mtime
                                   for p in sources)


class BuildWithVariants(build_ext):
    """build_ext, then the C core once per optimisation level as a plain shared library,
    and the C++ peers (Boost.Context, Boost.Fiber, C++20 coroutines) at the same levels
    when Boost is installed; without it the peers are reported missing at run time."""

    def run(self):
        super().run()
        # An editable install (pip install -e) builds in place too: not into a temporary
        # build_lib that would be thrown away after a second, useless build.
        in_place = self.inplace or getattr(self, "editable_mode", False)
        root = Path(".") if in_place else Path(self.build_lib)
        out = root / "labkit" / "variants"
        out.mkdir(parents=True, exist_ok=True)
        cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")[:1]
        headers = list(Path("labkit/csrc").glob("*.h"))
        for tag, flags in VARIANTS.items():
            target = out / f"liblabkit_c-{tag}.so"
            if _fresh(target, C_CORE + headers):
                continue
            cmd = [*cc, *flags, "-shared", "-fPIC", "-Wall", "-o", str(target), *C_CORE,
                   f"-DLK_CFLAGS=\"{' '.join(flags)}\""]
            print("building", target)
            subprocess.run(cmd, check=True)
        driver = out / "lk_count"
        if not _fresh(driver, ["labkit/csrc/count_main.c"] + headers):
            print("building", driver)
            subprocess.run([*cc, "-O2", "-Wall", "-o", str(driver), "labkit/csrc/count_main.c",
                            "-ldl"], check=True)
        self._build_peers(out, headers)
        self._build_servers(out)

    def _build_servers(self, out: Path):
        """The echo servers and the load generator (labkit/servers/build.py decides how)."""
        script = Path("labkit/servers/build.py")
        if script.exists():
            subprocess.run([sys.executable, str(script), str(out)], check=True)

    def _build_peers(self, out: Path, headers):
        cxx = shlex.split(os.environ.get("CXX") or "g++")[:1]
        missing = out / "peers-missing.txt"
        for tag, flags in VARIANTS.items():
            target = out / f"liblabkit_peers-{tag}.so"
            if _fresh(target, PEERS + headers + [str(p) for p in Path("labkit/cxx").glob("*.h")]):
                continue
            cmd = [*cxx, "-std=c++20", *flags, "-shared", "-fPIC", "-Wall", "-o", str(target),
                   *PEERS, *PEERS_LIBS, f"-DLKX_CFLAGS=\"-std=c++20 {' '.join(flags)}\""]
            print("building", target)
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                # Boost missing (or no C++20 compiler): the lab still builds; each peer
                # then reports why it is missing and how to get it.
                missing.write_text(res.stderr[-4000:])
                print(f"warning: the C++ peers did not build (see {missing}); install "
                      "libboost-context-dev libboost-fiber-dev and g++ >= 11, then "
                      "`make setup`")
                for stale in out.glob("liblabkit_peers-*.so"):
                    stale.unlink()
                return
        missing.unlink(missing_ok=True)


setup(
    name="labkit",
    version="0.1.0",
    description="A lab that measures what a context switch costs",
    packages=["labkit", "labkit.articles"],
    package_data={"labkit": ["*.pyi", "*.pxd", "csrc/*.h", "csrc/*.c", "variants/*"]},
    ext_modules=cythonize([core], language_level=3),
    cmdclass={"build_ext": BuildWithVariants},
    python_requires=">=3.11",
)
