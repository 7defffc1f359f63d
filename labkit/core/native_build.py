"""Every native target the lab needs, in one table, and the one builder that makes them.

    python -m labkit.core.native_build OUT_DIR        (setup.py runs this for `pip install`)

The targets: the C core at each optimisation level the -O experiment compares
(liblabkit_c-<tag>.so, loaded with ctypes), the callgrind driver (lk_count), the C++ peers
at the same levels (liblabkit_peers-<tag>.so: Boost.Context, Boost.Fiber, C++20
coroutines), and the echo servers with their load generator (notebook 09).

This file imports nothing from labkit, so setup.py can load it before the extension
exists. Each source list is declared once here (the Cython extension and the C self-test
read CORE_SOURCES too), and each program links only the sources it calls. A target whose headers are missing, or that fails to compile, is
skipped: OUT_DIR/<target>.missing.txt says why, starting with "missing here: install ..."
when a package would fix it, and the rest of the lab still builds. OUT_DIR/build.json
records how every target was built (flags, compiler), servers.json the echo servers'.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # labkit/: the native sources and bin/
OUT_NAME = "bin"  # labkit/bin/: the compiled libraries and programs of the table below

# The C core, lowest first (each file calls only those before it). Declared once.
# Guarded stacks, new contexts and the switches themselves: all a stackful program needs.
STACK_SOURCES = ["csrc/stack.c"]
# The switch kernels: the copy stacks and the kernel table.
KERNEL_SOURCES = [*STACK_SOURCES, "csrc/copy_stack.c", "csrc/kernels.c"]
# The kernels with the timing harness, the rings and the FP/vector state saves.
CORE_SOURCES = [*KERNEL_SOURCES, "csrc/harness.c", "csrc/ring.c", "csrc/xstate.c"]
# The correctness checks (registers, FP control state, the stack guard) the tests run.
CHECK_SOURCES = ["csrc/checks.c"]
CORE_HEADERS = ["csrc/labkit_core.h", "csrc/lk_layout.h", "csrc/lk_timer.h",
                "csrc/pingpong_loops.h", "csrc/ring_loops.h", "csrc/switch_platform.h",
                "csrc/switch_x86_64_sysv.h", "csrc/switch_aarch64_aapcs.h", "csrc/xstate.h"]
# The Cython extension labkit.core._core wraps the core, its checks, the kernel-switch
# probes and perf_event_open (labkit.core.counters); it reads the C++ peers' table from
# cxx/peers.h (a header alone: no C++ is compiled into it).
EXTENSION_SOURCES = [*CORE_SOURCES, *CHECK_SOURCES, "csrc/handoff.c", "csrc/perf.c"]
EXTENSION_HEADERS = [*CORE_HEADERS, "csrc/handoff.h", "csrc/perf.h", "cxx/peers.h"]
SELFTEST_SOURCES = ["csrc/selftest.c", *CHECK_SOURCES, *CORE_SOURCES]
# The harness a user's own switch is built with (labkit.core.user_switch): its loops and
# checks, the register and FP-control checks, and the kernels' stacks they call.
USER_SWITCH_SOURCES = ["csrc/user_switch.c", *CHECK_SOURCES, *KERNEL_SOURCES]
USER_SWITCH_HEADERS = CORE_HEADERS
HANDOFF_SELFTEST_SOURCES = ["csrc/handoff_selftest.c", "csrc/handoff.c"]

# The builds the optimisation-level experiment puts side by side (notebook 02).
OPT_LEVELS = {
    "O0": ["-O0"], "O1": ["-O1"], "O2": ["-O2"], "O3": ["-O3"], "Os": ["-Os"],
    "O2-native": ["-O2", "-march=native"],
}
WARN = ["-Wall"]
SERVER_CFLAGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]

URING_HINT = "apt-get install liburing-dev"
ASIO_HINT = "apt-get install libasio-dev"
SERVER_C = ["servers/lk_srv.c", "servers/lk_alloc.c"]  # in every echo server
SERVER_H = ["servers/lk_srv.h"]


def peer_libraries() -> list[tuple[str, str, str]]:
    """(library, header, Debian package) of each line of LKX_LIBRARIES in cxx/peers.h."""
    text = (PACKAGE / "cxx" / "peers.h").read_text()
    block = re.search(r"#define LKX_LIBRARIES\(L\)((?:.*\\\n)*.*)", text)
    return re.findall(r'L\((\w+),\s*"([^"]+)",\s*"([^"]+)"\)', block.group(1)) if block else []


def _targets() -> dict[str, dict]:
    """name -> spec. Spec keys: group, lang (c / c++), tool (a compiler other than $CC/$CXX), sources, c_objects (C files compiled
    apart and linked in a C++ target), headers (inputs that trigger a rebuild), flags,
    shared, libs, needs [(header, how to install)], record (the macro that carries the
    recorded flags into the binary)."""
    t: dict[str, dict] = {}
    libraries = peer_libraries()
    for tag, opt in OPT_LEVELS.items():
        t[f"liblabkit_c-{tag}.so"] = dict(
            group="core", lang="c", sources=[*CORE_SOURCES, "csrc/workload.c", "csrc/frequency.c"],
            headers=[*CORE_HEADERS, "csrc/frequency.h", "csrc/workload.h"], flags=[*opt, *WARN], shared=True,
            record=("LK_CFLAGS", " ".join(opt)))
    t["lk_count"] = dict(group="tools", lang="c", sources=["cxx/count_main.c"],
                         headers=[*CORE_HEADERS, "cxx/peers.h"], flags=["-O2", *WARN], libs=["-ldl"])
    for tag, opt in OPT_LEVELS.items():
        t[f"liblabkit_peers-{tag}.so"] = dict(
            group="peers", lang="c++",
            sources=["cxx/peers.cpp", "cxx/frames.cpp", "cxx/workload.cpp"],
            headers=["cxx/peers.h", "cxx/frames.h", "cxx/workload.h", "csrc/workload.h",
                     *CORE_HEADERS],
            flags=["-std=c++20", *opt, *WARN], shared=True,
            libs=[f"-l{lib}" for lib, _, _ in libraries],
            needs=[(header, f"apt-get install {package}") for _, header, package in libraries],
            record=("LKX_CFLAGS", " ".join(["-std=c++20", *opt])))
    server = dict(group="servers", headers=SERVER_H, flags=SERVER_CFLAGS)
    t["lk_echo_load"] = dict(server, lang="c", sources=["servers/loadgen.c"], headers=[])
    t["callback_epoll"] = dict(server, lang="c", sources=["servers/callback.c", *SERVER_C])
    t["callback_uring"] = dict(server, lang="c", sources=["servers/callback.c", *SERVER_C],
                               defines=["-DLK_URING"], libs=["-luring"],
                               needs=[("liburing.h", URING_HINT)])
    t["stackful_epoll"] = dict(server, lang="c",
                               sources=["servers/stackful.c", *SERVER_C, *STACK_SOURCES],
                               headers=[*SERVER_H, *CORE_HEADERS],
                               record=("LK_CFLAGS", " ".join(SERVER_CFLAGS)))
    cxx_server = dict(server, lang="c++", flags=["-std=c++20", *SERVER_CFLAGS],
                      c_objects=SERVER_C)
    # The five frame strategies of 004_*: default new, a pool, fewer live locals, symmetric
    # transfer, and coroutines reused for every message.
    for name, pool, sym, extra in (("cxx20_new", 0, 0, []), ("cxx20_pool", 1, 0, []),
                                   ("cxx20_lean", 0, 0, ["-DLK_LEAN=1"]),
                                   ("cxx20_pool_sym", 1, 1, []),
                                   ("cxx20_reuse", 1, 1, ["-DLK_REUSE=1"])):
        t[name] = dict(cxx_server, sources=["servers/cxx20.cpp"],
                       defines=[f"-DLK_POOL={pool}", f"-DLK_SYMMETRIC={sym}", *extra,
                                f'-DLK_NAME="{name}"'])
    t["asio_epoll"] = dict(cxx_server, sources=["servers/asio_server.cpp"],
                           defines=['-DLK_NAME="asio_epoll"'], needs=[("asio.hpp", ASIO_HINT)])
    t["asio_uring"] = dict(cxx_server, sources=["servers/asio_server.cpp"],
                           defines=['-DLK_NAME="asio_uring"', "-DASIO_HAS_IO_URING",
                                    "-DASIO_DISABLE_EPOLL"], libs=["-luring"],
                           needs=[("asio.hpp", ASIO_HINT), ("liburing.h", URING_HINT)])
    return t


TARGETS = _targets()


def user_switch_target(source: Path) -> dict:
    """A user's switch (a .c, .cpp or prebuilt .so file defining lk_user_make and
    lk_user_swap) and the lab's harness, as one shared library built with the -O2 build's
    flags (C++ adds the peers' -std=c++20). A source is linked -Bsymbolic: the harness calls
    lk_user_swap directly, as the core calls its kernels, not through the PLT; a prebuilt
    library's switch is another library's, called through the PLT as any would call it."""
    source = Path(source).resolve()
    opt = [*OPT_LEVELS["O2"], *WARN]
    base = dict(group="user", shared=True, headers=USER_SWITCH_HEADERS, libs=["-Wl,-Bsymbolic", "-Wl,-z,defs"],
                record=("LK_CFLAGS", " ".join(OPT_LEVELS["O2"])))
    if source.suffix == ".so":
        return dict(base, lang="c", sources=USER_SWITCH_SOURCES, flags=opt,
                    libs=[str(source), f"-Wl,-rpath,{source.parent}"])
    if source.suffix == ".cpp":
        macro, value = base["record"]
        return dict(base, lang="c++", sources=[str(source)], c_objects=USER_SWITCH_SOURCES,
                    flags=["-std=c++20", *opt], includes=[str(PACKAGE / "csrc")],
                    c_defines=[f'-D{macro}="{value}"'])
    return dict(base, lang="c", sources=[*USER_SWITCH_SOURCES, str(source)], flags=opt)


def build_target(name: str, spec: dict, out: Path) -> tuple[dict | None, str]:
    """Build one target of the builder's form into out/name, whatever its date: (how it
    was built, "") or (None, why not, with the compiler's output)."""
    Path(out).mkdir(parents=True, exist_ok=True)
    with contextlib.redirect_stdout(sys.stderr):  # stdout may be a command's JSON
        return _build_one(name, spec, Path(out))


def selftest_targets(opt: str = "-O2", cc: str | None = None, static: bool = False) -> dict:
    """The C self-tests as targets of the same builder (tests/test_selftest_c.py builds and
    runs them; they are not installed). cc: another C compiler (a cross compiler)."""
    strict = [opt, "-Wall", "-Wextra", "-Werror", *(["-static"] if static else [])]
    base = dict(group="selftest", lang="c", flags=strict, **({"tool": cc} if cc else {}))
    return {"lk_selftest": dict(base, sources=SELFTEST_SOURCES, headers=CORE_HEADERS),
            "lk_handoff_selftest": dict(base, sources=HANDOFF_SELFTEST_SOURCES,
                                        headers=["csrc/handoff.h", "csrc/lk_layout.h"],
                                        flags=[*strict, "-pthread"])}


def _tool(env: str, default: str) -> list[str]:
    return shlex.split(os.environ.get(env) or default)[:1]


def _header(name: str, lang: str = "c++") -> bool:
    """Whether the compiler finds #include <name> (asking it, not guessing paths)."""
    tool = _tool("CXX", "g++") if lang == "c++" else _tool("CC", "gcc")
    cmd = [*tool, "-x", lang, *(["-std=c++20"] if lang == "c++" else []), "-fsyntax-only", "-"]
    try:
        res = subprocess.run(cmd, input=f"#include <{name}>\n", capture_output=True,
                             text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False  # no compiler: the compile step says so
    return res.returncode == 0


def _inputs(spec: dict) -> list[Path]:
    files = [*spec["sources"], *spec.get("c_objects", []), *spec.get("headers", [])]
    return [PACKAGE / f for f in files] + [Path(__file__).resolve()]


def _commands(spec: dict, target: Path, objdir: Path) -> tuple[list[list[str]], str]:
    """The command lines (C objects first, then the compile-and-link), and the flags to
    record with the binary."""
    cc, cxx = _tool("CC", "gcc"), _tool("CXX", "g++")
    flags = list(spec["flags"])
    defines = list(spec.get("defines", []))
    if "record" in spec:
        macro, value = spec["record"]
        defines.append(f'-D{macro}="{value}"')
    includes = [f"-I{PACKAGE / Path(spec['sources'][0]).parent}",
                *(f"-I{d}" for d in spec.get("includes", []))]
    shared = ["-shared", "-fPIC"] if spec.get("shared") else []
    cmds, objects = [], []
    c_flags = [f for f in flags if not f.startswith("-std=")]
    for src in spec.get("c_objects", []):
        obj = objdir / (Path(src).stem + ".o")
        cmds.append([*cc, *c_flags, *shared[1:], *spec.get("c_defines", []), *includes,
                     "-c", "-o", str(obj), str(PACKAGE / src)])
        objects.append(str(obj))
    tool = [spec["tool"]] if "tool" in spec else cxx if spec["lang"] == "c++" else cc
    cmds.append([*tool, *flags, *shared, *defines, *includes, "-o", str(target),
                 *[str(PACKAGE / s) for s in spec["sources"]], *objects,
                 *spec.get("libs", []), *(["-pthread"] if spec.get("shared") else [])])
    recorded = " ".join([*flags, *[d for d in defines if not d.startswith("-DLK")]])
    return cmds, recorded


def _version(tool: str) -> str:
    try:
        res = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=20)
        return res.stdout.splitlines()[0].strip() if res.returncode == 0 else tool
    except (OSError, subprocess.SubprocessError, IndexError):
        return tool


def _build_one(name: str, spec: dict, out: Path) -> tuple[dict | None, str]:
    """Build one target; (info, "") on success, (None, why) otherwise."""
    target = out / name
    with tempfile.TemporaryDirectory(prefix="lk-build-") as tmp:
        cmds, recorded = _commands(spec, target, Path(tmp))
        print("building", target, flush=True)
        for cmd in cmds:
            try:
                res = subprocess.run(cmd, capture_output=True, text=True)
            except OSError as exc:
                return None, (f"missing here: install a compiler ({cmd[0]!r}: {exc}): "
                              "apt-get install gcc g++")
            if res.returncode != 0:
                return None, ("did not build: the compiler failed (details below)\n"
                              f"{shlex.join(cmd)}\n{res.stderr[-3000:]}")
            if res.stderr.strip():
                print(res.stderr, file=sys.stderr)
    return {"target": name, "group": spec["group"], "cflags": recorded,
            "compiler": _version(cmds[-1][0])}, ""


def build(out: Path, targets: dict[str, dict] | None = None) -> dict:
    """Build every target of the table (or `targets`) that is out of date into `out`;
    returns {name: info} of what is there. Never raises for a target that cannot be built:
    its <name>.missing.txt says why."""
    targets = TARGETS if targets is None else targets
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "build.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    found: dict[tuple[str, str], bool] = {}

    def have(h: str, lang: str) -> bool:
        # Ask the compiler once per header: six peer builds need the same Boost.
        if (h, lang) not in found:
            found[h, lang] = _header(h, lang)
        return found[h, lang]

    todo = []
    for name, spec in targets.items():
        target, missing = out / name, out / f"{name}.missing.txt"
        absent = [(h, hint) for h, hint in spec.get("needs", []) if not have(h, spec["lang"])]
        if absent:
            why = "; ".join(f"<{h}> not found" for h, _ in absent)
            packages = sorted({p for _, hint in absent for p in hint.split()[2:]})
            missing.write_text(f"missing here: install {' '.join(packages)} ({why}): "
                               f"apt-get install {' '.join(packages)}, then `make setup`\n")
            target.unlink(missing_ok=True)
            manifest.pop(name, None)
            print(f"skipping {name}: {missing.read_text().strip()}")
            continue
        fresh = (target.exists() and name in manifest
                 and all(p.stat().st_mtime <= target.stat().st_mtime for p in _inputs(spec)))
        if fresh:
            missing.unlink(missing_ok=True)
        else:
            todo.append(name)

    def one(name):
        return name, *_build_one(name, targets[name], out)

    with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        for name, info, err in pool.map(one, todo):
            missing = out / f"{name}.missing.txt"
            if info is None:
                (out / name).unlink(missing_ok=True)
                missing.write_text(err)
                manifest.pop(name, None)
                print(f"warning: {name} did not build (see {missing})")
            else:
                missing.unlink(missing_ok=True)
                manifest[name] = info
    _write_json(manifest_path, manifest)
    # labkit.experiments.echo reads the servers' flags from here.
    _write_json(out / "servers.json",
                {n: {"binary": n, "cflags": i["cflags"], "compiler": i["compiler"]}
                 for n, i in manifest.items() if i.get("group") == "servers"})
    return manifest


def missing_reason(out: Path, name: str) -> str:
    """The first line of <name>.missing.txt ('' when the target was built)."""
    path = Path(out) / f"{name}.missing.txt"
    if not path.exists():
        return ""
    lines = path.read_text().strip().splitlines()
    return lines[0] if lines else "did not build"


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    build(Path(argv[1]).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))


def source_commit(repo: Path) -> str:
    """The git commit of the checkout at `repo`, with '-dirty' if its code (not its
    results: data/ and figures/ change during a run) has uncommitted changes; 'unknown'
    without git. Here so that setup.py (recording a wheel's commit) and labkit.core.machine
    (every row's labkit_commit) ask the same question."""
    def git(*args):
        try:
            res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                                 text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    commit = git("rev-parse", "--short=12", "HEAD")
    if commit is None:
        return "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!data",
                ":!figures")
    return commit + ("-dirty" if dirty else "")
