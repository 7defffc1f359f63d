"""Build the echo servers and the load generator of notebook 09 into a directory.

    python labkit/servers/build.py OUT_DIR

setup.py's build step runs this with OUT_DIR = labkit/variants. Each binary is rebuilt
only when one of its sources is newer. A server whose library is not installed (liburing,
asio) or that fails to compile is skipped: OUT_DIR/<name>.missing.txt then says why and
what to install, labkit.echo reports it as a row, and this script still exits 0, so the
rest of the lab builds. OUT_DIR/servers.json records how each binary was built, for the
metadata of every measured row.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent / "csrc"
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
CXXFLAGS = ["-std=c++20", *CFLAGS]
COMMON = ["lk_srv.c", "lk_alloc.c"]          # in every server
COMMON_H = ["lk_srv.h"]
KERNELS = [CSRC / "kernels.c"]               # labkit's own switch, for the stackful server
KERNELS_H = sorted(CSRC.glob("*.h"))

URING_HINT = "apt-get install liburing-dev"
ASIO_HINT = "apt-get install libasio-dev"


def _header(name: str) -> bool:
    """Whether the compiler finds #include <name> (asking it, not guessing paths)."""
    cxx = _tool("CXX", "g++")
    try:
        res = subprocess.run([*cxx, "-x", "c++", "-std=c++20", "-fsyntax-only", "-"],
                             input=f"#include <{name}>\n", capture_output=True, text=True,
                             timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False  # no C++ compiler: the compile step below says so
    return res.returncode == 0


def _tool(env: str, default: str) -> list[str]:
    return shlex.split(os.environ.get(env) or default)[:1]


# name -> how to build it: language, sources, extra flags, libraries, headers it needs.
TARGETS = {
    "lk_echo_load": dict(lang="c", sources=["loadgen.c"], common=False),
    "callback_epoll": dict(lang="c", sources=["callback.c"]),
    "callback_uring": dict(lang="c", sources=["callback.c"], defines=["-DLK_URING"],
                           libs=["-luring"], needs=[("liburing.h", URING_HINT)]),
    "stackful_epoll": dict(lang="c", sources=["stackful.c"], extra_sources=KERNELS,
                           extra_headers=KERNELS_H, defines=[f"-I{CSRC}"],
                           kernel_flags=True),
    "cxx20_new": dict(lang="c++", sources=["cxx20.cpp"],
                      defines=["-DLK_POOL=0", "-DLK_SYMMETRIC=0", '-DLK_NAME="cxx20_new"']),
    "cxx20_pool": dict(lang="c++", sources=["cxx20.cpp"],
                       defines=["-DLK_POOL=1", "-DLK_SYMMETRIC=0", '-DLK_NAME="cxx20_pool"']),
    "cxx20_lean": dict(lang="c++", sources=["cxx20.cpp"],
                       defines=["-DLK_POOL=0", "-DLK_SYMMETRIC=0", "-DLK_LEAN=1",
                                '-DLK_NAME="cxx20_lean"']),
    "cxx20_reuse": dict(lang="c++", sources=["cxx20.cpp"],
                        defines=["-DLK_POOL=1", "-DLK_SYMMETRIC=1", "-DLK_REUSE=1",
                                 '-DLK_NAME="cxx20_reuse"']),
    "cxx20_pool_sym": dict(lang="c++", sources=["cxx20.cpp"],
                           defines=["-DLK_POOL=1", "-DLK_SYMMETRIC=1",
                                    '-DLK_NAME="cxx20_pool_sym"']),
    "asio_epoll": dict(lang="c++", sources=["asio_server.cpp"],
                       defines=['-DLK_NAME="asio_epoll"'], needs=[("asio.hpp", ASIO_HINT)]),
    "asio_uring": dict(lang="c++", sources=["asio_server.cpp"],
                       defines=['-DLK_NAME="asio_uring"', "-DASIO_HAS_IO_URING",
                                "-DASIO_DISABLE_EPOLL"],
                       libs=["-luring"],
                       needs=[("asio.hpp", ASIO_HINT), ("liburing.h", URING_HINT)]),
}


def _inputs(spec: dict) -> list[Path]:
    files = [HERE / s for s in spec["sources"]] + list(spec.get("extra_sources", []))
    if spec.get("common", True):
        files += [HERE / s for s in COMMON + COMMON_H]
    files += list(spec.get("extra_headers", []))
    files.append(Path(__file__).resolve())  # a change of flags here rebuilds everything
    return files


def _fresh(target: Path, inputs: list[Path]) -> bool:
    if not target.exists():
        return False
    t = target.stat().st_mtime
    return all(p.stat().st_mtime <= t for p in inputs)


def _command(name: str, spec: dict, target: Path, objdir: Path) -> tuple[list[str], str]:
    """The compile-and-link command line, and the flags to record."""
    cc, cxx = _tool("CC", "gcc"), _tool("CXX", "g++")
    flags = CXXFLAGS if spec["lang"] == "c++" else CFLAGS
    defines = list(spec.get("defines", []))
    if spec.get("kernel_flags"):
        defines.append(f"-DLK_CFLAGS=\"{' '.join(CFLAGS)}\"")
    sources = [str(HERE / s) for s in spec["sources"]] + [str(p) for p in spec.get("extra_sources", [])]
    objects: list[str] = []
    if spec.get("common", True):
        if spec["lang"] == "c":
            sources += [str(HERE / s) for s in COMMON]
        else:  # the C parts stay C: compiled apart by the C compiler, then linked
            objects = [str(objdir / (Path(s).stem + ".o")) for s in COMMON]
    tool = cxx if spec["lang"] == "c++" else cc
    cmd = [*tool, *flags, *defines, f"-I{HERE}", "-o", str(target), *sources, *objects,
           *spec.get("libs", [])]
    return cmd, " ".join([*flags, *[d for d in defines if not d.startswith("-I")]])


def _common_objects(objdir: Path) -> str | None:
    cc = _tool("CC", "gcc")
    for s in COMMON:
        try:
            res = subprocess.run([*cc, *CFLAGS, "-c", "-o", str(objdir / (Path(s).stem + ".o")),
                                  str(HERE / s)], capture_output=True, text=True)
        except OSError as exc:
            return f"missing: cannot run the C compiler {cc[0]!r} ({exc}): apt-get install gcc"
        if res.returncode != 0:
            return res.stderr
    return None


def build(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "servers.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    have = {}
    todo = []
    for name, spec in TARGETS.items():
        target, missing = out / name, out / f"{name}.missing.txt"
        absent = [(h, hint) for h, hint in spec.get("needs", []) if not (have[h] if h in have else have.setdefault(h, _header(h)))]
        if absent:
            why = "; ".join(f"<{h}> not found: {hint}" for h, hint in absent)
            missing.write_text(f"missing: {why}\n")
            target.unlink(missing_ok=True)
            manifest.pop(name, None)
            print(f"echo servers: skipping {name} ({why})")
            continue
        if _fresh(target, _inputs(spec)) and name in manifest:
            missing.unlink(missing_ok=True)
            continue
        todo.append(name)

    with tempfile.TemporaryDirectory(prefix="lk-servers-") as tmp:
        objdir = Path(tmp)
        common_err = None
        if any(TARGETS[n]["lang"] == "c++" for n in todo):
            common_err = _common_objects(objdir)

        def one(name: str):
            spec = TARGETS[name]
            target, missing = out / name, out / f"{name}.missing.txt"
            if common_err and spec["lang"] == "c++":
                first = common_err.strip().splitlines()[0] if common_err.strip() else ""
                if first.startswith("missing:"):
                    return name, None, common_err
                return name, None, ("did not build: lk_srv.c/lk_alloc.c did not compile "
                                    f"(details below)\n{common_err[-3000:]}")
            cmd, recorded = _command(name, spec, target, objdir)
            print("building", target)
            try:
                res = subprocess.run(cmd, capture_output=True, text=True)
            except OSError as exc:
                return name, None, (f"missing: cannot run the compiler {cmd[0]!r} ({exc}): "
                                    "apt-get install gcc g++")
            if res.returncode != 0:
                return name, None, ("did not build: the compiler failed (details below)\n"
                                    f"{shlex.join(cmd)}\n{res.stderr[-3000:]}")
            if res.stderr.strip():
                print(res.stderr, file=sys.stderr)
            return name, {"binary": name, "cflags": recorded,
                          "compiler": _version(cmd[0])}, None

        workers = max(1, min(len(todo), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for name, info, err in pool.map(one, todo):
                missing = out / f"{name}.missing.txt"
                if err:
                    (out / name).unlink(missing_ok=True)
                    missing.write_text(err)
                    manifest.pop(name, None)
                    print(f"warning: echo server {name} did not build (see {missing})")
                else:
                    missing.unlink(missing_ok=True)
                    manifest[name] = info
    tmp_manifest = manifest_path.with_suffix(".json.tmp")
    tmp_manifest.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp_manifest, manifest_path)
    return manifest


def _version(tool: str) -> str:
    try:
        res = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=20)
        return res.stdout.splitlines()[0].strip() if res.returncode == 0 else tool
    except (OSError, subprocess.SubprocessError, IndexError):
        return tool


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    build(Path(argv[1]).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
