"""Build labkit: the Cython extension labkit.core._core, then every native target of the table in
labkit/core/native_build.py (the C core at each optimisation level, the C++ peers, the echo
servers, lk_count) into labkit/bin/. `pip install .` and `pip install -e .` both run it;
the metadata is in pyproject.toml.

The extension's optimisation flags are set here and recorded in the binary (lk_cflags),
so that every measured row can say how it was built. Override them with
LABKIT_CFLAGS="-O3 -march=native".
"""
import importlib.util
import json
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# The table is plain Python that imports nothing from labkit: load it by path, before
# the extension it describes exists.
_spec = importlib.util.spec_from_file_location("labkit_native_build",
                                               HERE / "labkit" / "core" / "native_build.py")
native_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native_build)

DEFAULT_CFLAGS = "-O2"
extra = shlex.split(os.environ.get("LABKIT_CFLAGS", DEFAULT_CFLAGS))
# Python's own CFLAGS come first on the command line; ours come last and win.
python_cflags = sysconfig.get_config_var("CFLAGS") or ""
recorded = " ".join([python_cflags, *extra]).strip()

core = Extension(
    "labkit.core._core",
    sources=["labkit/core/_core.pyx", *(f"labkit/{s}" for s in native_build.EXTENSION_SOURCES)],
    depends=[f"labkit/{h}" for h in native_build.EXTENSION_HEADERS],
    include_dirs=["labkit"],
    extra_compile_args=[*extra, "-Wall", "-pthread", f"-DLK_CFLAGS=\"{recorded}\""],
    extra_link_args=["-pthread"],
)


def missing_python_headers(include_dir: str | os.PathLike | None) -> str | None:
    """One line saying which package to install when the running interpreter's headers
    (Python.h in sysconfig's include dir) are missing; None when they are there."""
    if include_dir is not None and (Path(include_dir) / "Python.h").is_file():
        return None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return (f"error: Python.h not found in {include_dir}: the extension needs {sys.executable}'s "
            f"development headers; install python3-dev (Debian/Ubuntu: apt-get install "
            f"python3-dev, or python{version}-dev for this Python {version}) and build again")


class BuildEverything(build_ext):
    """build_ext, then every target of labkit/core/native_build.py's table into labkit/bin/.
    A target whose library is missing is skipped with its reason, never failing the
    install; missing Python headers stop the build with the package to install."""

    def run(self):
        hint = missing_python_headers(sysconfig.get_path("include"))
        if hint:
            raise SystemExit(hint)  # one line, not the compiler's "Python.h: No such file"
        super().run()
        # An editable install builds in place: not into a temporary build_lib that would
        # be thrown away.
        in_place = self.inplace or getattr(self, "editable_mode", False)
        root = HERE if in_place else Path(self.build_lib)
        out = root / "labkit" / native_build.OUT_NAME
        native_build.build(out)
        if not in_place:
            # An installed labkit has no git beside it: the commit it was built from.
            (out / "source.json").write_text(json.dumps({"labkit_commit": native_build.source_commit(HERE)}))


class BuildPyWithShipped(build_py):
    """build_py, plus the claims registry, the notebooks and the glossary as package data
    (labkit/shipped/, laid out as the checkout: data/, notebooks/, docs/, so the notebooks'
    ../docs/glossary.md links hold there too), so that an installed labkit outside a
    checkout finds them. The checkout's files stay the one source: these are copies."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads them from the checkout itself
        shipped = Path(self.build_lib) / "labkit" / "shipped"
        shutil.rmtree(shipped, ignore_errors=True)
        (shipped / "data").mkdir(parents=True)
        for name in ("claims.csv", "claims_amendments.csv"):
            shutil.copy2(HERE / "data" / name, shipped / "data" / name)
        shutil.copytree(HERE / "notebooks", shipped / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        (shipped / "docs").mkdir()
        shutil.copy2(HERE / "docs" / "glossary.md", shipped / "docs" / "glossary.md")


if __name__ == "__main__":  # as pip's build backend runs it; a test imports the helpers
    setup(
        ext_modules=cythonize([core], language_level=3),
        cmdclass={"build_ext": BuildEverything, "build_py": BuildPyWithShipped},
    )
