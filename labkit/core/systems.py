"""The systems labkit measures, one record each: labkit's own switch kernels, the C++ peers,
the Python peers, and a user's own switches in C and in Python. A record says what its
entries are called and what kind each is, whether one runs here (and what to install when
it does not), which of measure's parameters apply to it, how measure turns a call into a
job and which worker function runs that job, the library and builds its code comes from,
and what the callgrind driver (cxx/count_main.c) calls it. The catalogue (entries),
measure (timing, which hands the job's flags to the row metadata), callgrind, the explorer
and the tests read these records; none of them tells the systems apart by itself.

The kernels come from the C core's kernel table (LK_KERNELS in csrc/labkit_core.h, read
through _core.kernel_table()), the C++ peers from the peers' table (LKX_PEERS in
cxx/peers.h, read through _core.peer_table(), so the catalogue lists them even where their
library is not built), the Python peers from labkit.core.pypeers, the user's own
switches from those labkit.core.user_switch has built and checked in this process, and the
user's own Python-level switches from those labkit.core.user_pyswitch has imported and
checked in this process."""
from __future__ import annotations

import functools
import zlib
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from labkit.core import _core
from labkit.core import counters as _counters
from labkit.core import validate as _v
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

FP_CONTROL_MODES = {"as-is": 0, "same": 1, "differ": 2}
# The parameters of measure (and "ring": measure_ring) that mean something for some
# systems only.
PARAMETERS = ("stack_size", "prefault", "build", "fp_control", "stack_in_use", "ring")

@dataclass(frozen=True)
class Job:
    """How measure runs one entry, once its system's own arguments are checked."""
    function: str           # the worker_* function of this module that times it
    args: dict              # that function's arguments beyond the common ones
    build: str | None       # the -O build (None: the extension's own code, or CPython)
    cflags: str | None      # that build's flags, for the rows (None: the extension's)
    prefault: bool | None
    fp_control: str
    build_column: str       # the rows' build column
    meta: dict = field(default_factory=dict)  # metadata the machine cannot tell


@dataclass(frozen=True)
class System:
    family: str                      # the catalogue's `system` column; lk_count's too
    what: str                        # one entry of it, in messages ("C++ peer")
    names: Callable[[], tuple]       # its entries, in the order its C or Python side has
    kind: Callable[[str], str]       # "stackful", "stackless" or "baseline"
    saves: Callable[[str], str]      # what one switch saves or does
    returns_by: Callable[[str], str]
    note: Callable[[str], str]
    available: Callable[[str], tuple]  # (True, "") or (False, why not and what to install)
    applies: frozenset               # which of PARAMETERS mean something for it
    job: Callable[..., Job]          # (name, stack size, prefault, build, fp_control) -> Job
    library: str | None = None       # its -O builds, "lib...-{build}.so" in labkit/bin/
    index: Callable[[str, str], int] | None = None  # (name, build) -> the C side's number
    count_driver: str | None = None  # lk_count's name for it; None: callgrind cannot count it
    # (name, build) -> the library's path, where it is not labkit/bin/'s `library`
    locate: Callable[[str, str], Path] | None = None
    # name -> (module, worker function, its arguments) of its ring; None: no ring
    ring: Callable[[str], tuple[str, str, dict]] | None = None

    def __contains__(self, name) -> bool:
        return name in self.names()

    def library_path(self, name: str, build: str) -> Path:
        """The library that holds `name` built as `build` (callgrind loads it)."""
        if self.locate is not None:
            return self.locate(name, build)
        from labkit.core import native

        return native.BIN_DIR / self.library.format(build=build)


# ---- labkit's kernels: the C core's kernel table ----

@functools.lru_cache(maxsize=1)
def kernel_rows() -> dict[str, dict]:
    """{name: row} of the C core's kernel table, in its order. What the compiled core knows
    does not change while the process runs."""
    return {row["name"]: row for row in _core.kernel_table()}


# What each kernel saves, how it returns, and a note: the kernels' prose in the catalogue.
# The kernels themselves, their order and their properties are the C core's kernel table.
KERNEL_PROSE = {
    "asm": (
        "callee-saved GPRs (x86-64: rbx rbp r12-r15; AArch64: x19-x29 lr d8-d15) + stack pointer",
        "pop + indirect jmp", "the minimal stackful switch; does NOT keep FP control state"),
    "asm_ret": (
        "same as asm", "ret",
        "asm ending in ret: the return-stack predictor guesses the wrong target"),
    "asm_fpu": (
        "asm + MXCSR + x87 control word (AArch64: + FPCR)",
        "pop + indirect jmp", "what Boost.Context's jump_fcontext saves by default"),
    "asm_fxsave": (
        "asm + whole x87/SSE state, 512 B (fxsave64/fxrstor64)",
        "pop + indirect jmp", "saves FP registers the ABI does not ask for (claim C002.3)"),
    "asm_xsave": (
        "asm + every XCR0 state component (xsave64/xrstor64)",
        "pop + indirect jmp", "x87, SSE, AVX, AVX-512...: the most a switch could save"),
    "ucontext": (
        "glibc swapcontext: GPRs, FP environment, MXCSR and the signal mask",
        "glibc setcontext", "makes a rt_sigprocmask system call on every switch"),
    "stackless": (
        "nothing: the state lives in a heap/struct frame",
        "return from the state machine",
        "a C state machine resumed through a function pointer the compiler cannot inline"),
    "libco_design": (
        "libco's design (not libco): 14 slots in a context struct: rsp, return address, rbx, "
        "rcx, rdx, rsi, rdi, rbp, r8, r9, r12-r15 (caller-saved ones the ABI does not ask "
        "for); no MXCSR, no x87 control word",
        "push + ret",
        "WeChat libco's x86-64 switch written again from its description; does NOT keep FP "
        "control state; x86-64 only"),
    "copy_stack": (
        "asm_fpu's registers, on a run stack shared by the coroutines; switching to one that "
        "is not on it copies the owner's used stack out and its own back in",
        "pop + indirect jmp",
        "libco's shared stacks, libaco's copy stacks: a switch costs in proportion to the "
        "bytes in use (measure's stack_in_use); a suspended coroutine keeps only those bytes"),
}


def _kernel_job(kernel, size, prefault, build, fp_control) -> Job:
    """A labkit kernel: the extension's ping-pong, or one -O build's through ctypes."""
    if size is not None:  # stackful: labkit allocates the stacks, so it can prefault them
        prefault = True if prefault is None else _v.flag("prefault", prefault)
        if prefault and size > _v.physical_memory() // 2:
            raise ValueError(
                f"stack_size = {size} bytes would be prefaulted, more than half of this "
                f"machine's memory ({_v.physical_memory()} bytes): pass prefault=False "
                "(only touched pages are committed) or a smaller stack_size")
    else:
        _no_prefault(kernel, prefault)
    build = _build(build, None)
    fp_control = _fp_control(kernel, fp_control, settable=True)
    return Job(function="worker_pingpong",
               args=dict(kernel=kernel_rows()[kernel]["index"], build=build,
                         prefault=bool(prefault), fpctl_mode=FP_CONTROL_MODES[fp_control]),
               build=build, cflags=_core_cflags(build) if build else None, prefault=prefault,
               fp_control=fp_control, build_column=build or "extension")


def _core_cflags(build: str) -> str:
    from labkit.core import native

    return native.cflags(build)


KERNELS = System(
    family="labkit", what="labkit kernel",
    names=lambda: tuple(kernel_rows()),
    kind=lambda n: "stackful" if kernel_rows()[n]["stackful"] else "stackless",
    saves=lambda n: KERNEL_PROSE[n][0], returns_by=lambda n: KERNEL_PROSE[n][1],
    note=lambda n: KERNEL_PROSE[n][2],
    available=lambda n: (kernel_rows()[n]["available"], kernel_rows()[n]["why_not"]),
    applies=frozenset(PARAMETERS),
    job=_kernel_job,
    library="liblabkit_c-{build}.so",
    index=lambda n, build=None: kernel_rows()[n]["index"],
    count_driver="labkit",
    ring=lambda n: ("labkit.core.timing", "worker_ring", {"kernel": kernel_rows()[n]["index"]}),
)


# ---- the C++ peers: labkit/cxx/peers.cpp, in liblabkit_peers-<build>.so ----

@functools.lru_cache(maxsize=1)
def peer_rows() -> dict[str, dict]:
    """{name: row} of the peers' table, in the order of enum lkx_peer: each peer's kind,
    what it saves, and whether measure's fp_control can set both contexts' FP control
    words apart."""
    return {row["name"]: row for row in _core.peer_table()}


def fp_control_settable() -> tuple[str, ...]:
    """The entries, of every system, whose fp_control can be other than "as-is"."""
    return KERNELS.names() + tuple(n for n, row in peer_rows().items() if row["fp_control"])


def _peer_available(name: str) -> tuple[bool, str]:
    from labkit.core import native

    why = native.peers_missing_reason() or native.peer_why_not(name)
    return not why, why


def _cxx_peer_job(kernel, size, prefault, build, fp_control) -> Job:
    """A C++ peer: always from one -O build of the peers library."""
    from labkit.core import native

    _no_prefault(kernel, prefault)
    build = _build(build, native.DEFAULT_BUILD)
    fp_control = _fp_control(kernel, fp_control, settable=peer_rows()[kernel]["fp_control"])
    return Job(function="worker_peer_pingpong",
               args=dict(peer=kernel, build=build, fpctl_mode=FP_CONTROL_MODES[fp_control]),
               build=build, cflags=native.peers_cflags(build), prefault=prefault,
               fp_control=fp_control, build_column=build)


def _peer_index(name: str, build: str) -> int:
    from labkit.core import native

    return native.peer_names(build).index(name)


CXX = System(
    family="peer", what="C++ peer",
    names=lambda: tuple(peer_rows()),
    kind=lambda n: peer_rows()[n]["kind"],
    saves=lambda n: peer_rows()[n]["saves"], returns_by=lambda n: "(the peer's own)",
    note=lambda n: "a real system, measured by the same harness method as labkit's kernels",
    available=_peer_available,
    applies=frozenset({"stack_size", "build", "fp_control"}),
    job=_cxx_peer_job,
    library="liblabkit_peers-{build}.so",
    index=_peer_index,
    count_driver="peer",
)


# ---- the Python peers: labkit.core.pypeers, timed by CPython ----

def _py_peer_job(kernel, size, prefault, build, fp_control) -> Job:
    """A Python peer: timed by CPython itself, so no build and no FP control."""
    _no_prefault(kernel, prefault)
    if build is not None:
        raise ValueError(f"build must be None for the Python peer {kernel!r}: CPython is "
                         "what it is")
    fp_control = _fp_control(kernel, fp_control, settable=False)
    return Job(function="worker_py_pingpong", args=dict(peer=kernel), build=None, cflags=None,
               prefault=prefault, fp_control=fp_control, build_column="cpython",
               meta={"cflags": f"CPython {platform.python_version()}", "opt_level": "n/a"})


def _pypeers():
    from labkit.core import pypeers

    return pypeers


PYTHON = System(
    family="python", what="Python peer",
    names=lambda: tuple(_pypeers().PY_PEERS),
    kind=lambda n: _pypeers().PY_PEERS[n][0],
    saves=lambda n: _pypeers().PY_PEERS[n][1], returns_by=lambda n: "(CPython's own)",
    note=lambda n: "timed from Python with the same method and statistics",
    available=lambda n: _pypeers().available(n),
    applies=frozenset(),
    job=_py_peer_job,
)


# ---- the user's own switches: labkit.core.user_switch builds and checks them ----

@dataclass(frozen=True)
class UserSwitch:
    """A user's switch that built and passed the correctness checks."""
    name: str                # the entry, "user:<name>"
    source: str              # the user's .c, .cpp or .so file
    library: str             # the harness and the switch, built into the results folder
    keeps_fp_control: bool   # what the FP control check found
    cflags: str
    compiler: str
    sha256: str              # of the source as built


# The user's switches added in this process, by entry name.
USER_SWITCHES: dict[str, UserSwitch] = {}
USER_PREFIX = "user:"
USER_CHECK_TIMEOUT = 60.0  # seconds a check of a user's switch, C or Python, may take
_USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def user_entry(name, default: str) -> str:
    """The catalogue entry of a user's switch, C or Python: "user:<name>", name (default
    when None) a letter or _ then up to 63 letters, digits, _ . or -."""
    if name is None:
        name = default
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not _USER_NAME.fullmatch(name):
        raise ValueError(f"name must be a letter or _ then up to 63 letters, digits, _ . or -; "
                         f"got {name!r}")
    return USER_PREFIX + name


def _user_job(name, size, prefault, build, fp_control) -> Job:
    """A user's switch: its own library, one -O2 build, stacks labkit makes."""
    u = USER_SWITCHES[name]
    prefault = True if prefault is None else _v.flag("prefault", prefault)
    if build is not None:
        raise ValueError(f"build must be None for the user switch {name!r}: it is built once, "
                         "with the flags of the C core's O2 build")
    fp_control = _fp_control(name, fp_control, settable=True)
    return Job(function="worker_user_pingpong",
               args=dict(library=u.library, prefault=bool(prefault),
                         fpctl_mode=FP_CONTROL_MODES[fp_control]),
               build="O2", cflags=u.cflags, prefault=prefault, fp_control=fp_control,
               build_column="O2",
               meta={"compiler": u.compiler, "source": u.source, "source_sha256": u.sha256})


def _user_library(name: str, build: str) -> Path:
    if build != "O2":
        raise ValueError(f"build must be 'O2' for the user switch {name!r}: it is built once, "
                         f"with the O2 build's flags; got {build!r}")
    return Path(USER_SWITCHES[name].library)


USER = System(
    family="user", what="user switch",
    names=lambda: tuple(USER_SWITCHES),
    kind=lambda n: "stackful",
    saves=lambda n: f"what the user's lk_user_swap saves ({USER_SWITCHES[n].source})",
    returns_by=lambda n: "(the user's own)",
    note=lambda n: ("the user's switch; checked: callee-saved registers, stack alignment at "
                    "entry, stacks left alone; FP control words "
                    + ("kept per context" if USER_SWITCHES[n].keeps_fp_control else "shared")),
    available=lambda n: ((True, "") if Path(USER_SWITCHES[n].library).exists() else
                         (False, f"its library is gone: add it again from {USER_SWITCHES[n].source}")),
    applies=frozenset({"stack_size", "prefault", "fp_control", "ring"}),
    job=_user_job,
    library="<results>/user_switches/<name>-<hash>.so",
    index=lambda n, build=None: 0,
    count_driver="user",
    locate=_user_library,
    ring=lambda n: ("labkit.core.systems", "worker_user_ring",
                    {"library": USER_SWITCHES[n].library}),
)


# ---- the user's own Python-level switches: labkit.core.user_pyswitch imports and checks them ----

@dataclass(frozen=True)
class UserPythonSwitch:
    """A user's Python switch that imported, had the shape and counted every switch."""
    name: str                # the entry, "user:<name>"
    path: str                # its factory, "package.module:factory"
    sys_path: tuple          # the module search path it was found on, for the workers
    source: str              # the module's file ("" for a module without one)
    sha256: str              # of that file as checked


# The user's Python switches added in this process, by entry name.
USER_PY_SWITCHES: dict[str, UserPythonSwitch] = {}


def _user_python_job(name, size, prefault, build, fp_control) -> Job:
    """A user's Python switch: timed by CPython, as the Python peers are."""
    u = USER_PY_SWITCHES[name]
    _no_prefault(name, prefault)
    if build is not None:
        raise ValueError(f"build must be None for the user's Python switch {name!r}: CPython "
                         "is what it is")
    fp_control = _fp_control(name, fp_control, settable=False)
    return Job(function="worker_user_py_pingpong",
               args=dict(path=u.path, sys_path=list(u.sys_path)), build=None, cflags=None,
               prefault=prefault, fp_control=fp_control, build_column="cpython",
               meta={"cflags": f"CPython {platform.python_version()}", "opt_level": "n/a",
                     "source": u.source or u.path, "source_sha256": u.sha256})


USER_PYTHON = System(
    family="user_python", what="user's Python switch",
    names=lambda: tuple(USER_PY_SWITCHES),
    kind=lambda n: "stackful",  # swap works from any depth of fn's calls
    saves=lambda n: f"what the user's swap saves ({USER_PY_SWITCHES[n].path})",
    returns_by=lambda n: "(the user's own)",
    note=lambda n: ("the user's Python switch, timed from Python as the Python peers are; "
                    "checked: it imports, has the shape (make, swap) and counts every switch"),
    available=lambda n: (True, ""),
    applies=frozenset(),
    job=_user_python_job,
)


# Every system, in the catalogue's order.
SYSTEMS = {s.family: s for s in (KERNELS, CXX, PYTHON, USER, USER_PYTHON)}
# The systems whose entries CPython runs: no stacks, builds or FP control words of labkit's.
PYTHON_LEVEL = ("python", "user_python")


def all_names() -> tuple[str, ...]:
    return tuple(n for s in SYSTEMS.values() for n in s.names())


def of(name: str) -> System:
    """The system an entry belongs to (names are checked by labkit.core.entries)."""
    for s in SYSTEMS.values():
        if name in s:
            return s
    raise ValueError(f"entry must be one of {', '.join(all_names())}; got {name!r}")


# ---- the argument checks the job builders share ----

def _no_prefault(kernel, prefault) -> None:
    if prefault is not None:
        raise ValueError(f"prefault must be left unset (None) for {kernel!r}: only labkit's "
                         f"stackful kernels allocate their own stacks; got {prefault!r}")


def _fp_control(kernel, fp_control, settable: bool) -> str:
    """fp_control checked; only 'as-is' where the entry cannot set both contexts' words."""
    fp_control = _v.choice("fp_control", fp_control, FP_CONTROL_MODES)
    if not settable and fp_control != "as-is":
        peers = [n for n in fp_control_settable() if n not in KERNELS]
        raise ValueError(f"fp_control must be 'as-is' for the peer {kernel!r}: only labkit's "
                         f"own kernels and {', '.join(peers)} can set the FP control "
                         "words of both contexts")
    return fp_control


def _build(build, default: str | None):
    """build checked against the builds present; None: `default` (None: the extension)."""
    from labkit.core import native

    if build is None:
        return default
    return native.check_build(build, none_means="the extension")


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_pingpong(kernel: int, build: str | None, stack_size: int, prefault: bool, rounds: int,
                    warmup: int, repeats: int, fpctl_mode: int, stack_in_use: int = 0) -> dict:
    """A labkit kernel's ping-pong: the extension's own code, or one -O build's."""
    if build:
        from labkit.core import native

        return _counters.counted(lambda: native.pingpong(
            build, kernel, stack_size, prefault, rounds, warmup, repeats, fpctl_mode,
            stack_in_use))
    return _counters.counted(lambda: _core.pingpong(
        kernel, stack_size, prefault, rounds, warmup, repeats, fpctl_mode, stack_in_use))


def worker_peer_pingpong(peer: str, build: str, stack_size: int, rounds: int, warmup: int,
                         repeats: int, fpctl_mode: int) -> dict:
    """A C++ peer's ping-pong, from one -O build of the peers library."""
    from labkit.core import native

    return _counters.counted(lambda: native.peer_pingpong(
        build, peer, stack_size, rounds, warmup, repeats, fpctl_mode))


def worker_user_pingpong(library: str, stack_size: int, prefault: bool, rounds: int,
                         warmup: int, repeats: int, fpctl_mode: int) -> dict:
    """A user's switch's ping-pong, from the library labkit.core.user_switch built."""
    from labkit.core import native

    return _counters.counted(lambda: native.user_library(library).samples(
        "lk_pingpong_fp", "lk_sample", repeats, 0, stack_size, int(prefault), rounds, warmup,
        repeats, fpctl_mode))


def worker_user_ring(library: str, n: int, asymmetric: bool, stack_size: int,
                     colour_step: int, prefault: bool, laps: int, warmup: int,
                     repeats: int) -> dict:
    """A ring (or, asymmetric, a scheduler) of n contexts switched by a user's switch."""
    from labkit.core import native

    return _counters.counted(lambda: native.user_library(library).samples(
        "lk_ring", "lk_sample", repeats, 0, n, int(asymmetric), stack_size, colour_step,
        int(prefault), laps, warmup, repeats))


def worker_user_py_pingpong(path: str, sys_path: list, stack_size: int, rounds: int,
                            warmup: int, repeats: int) -> dict:
    """A user's Python switch's ping-pong (stack_size is unused: its stacks are its own)."""
    return _counters.counted(lambda: _pypeers().user_pingpong(path, sys_path, rounds, warmup,
                                                              repeats))


def worker_py_pingpong(peer: str, stack_size: int, rounds: int, warmup: int,
                       repeats: int) -> dict:
    """A Python peer's ping-pong (stack_size is unused: CPython keeps its own)."""
    return _counters.counted(lambda: _pypeers().pingpong(peer, rounds, warmup, repeats))


# One colour per entry, the same in every figure: labkit's kernels warm, the C++ peers'
# calls grey and the syscall gold (black stays free for marks and references), their
# coroutines green and fibres blue, the Python peers purple.
ENTRY_COLOURS = {
    "asm": "#d62728", "asm_ret": "#ff9896", "asm_fpu": "#ff7f0e", "asm_fxsave": "#ffbb78",
    "asm_xsave": "#8c564b", "ucontext": "#e377c2", "stackless": "#bcbd22",
    "libco_design": "#c49c94", "copy_stack": "#637939",
    "direct_call": "#7f7f7f", "indirect_call": "#c7c7c7", "virtual_call": "#525252",
    "syscall_getppid": "#bd9e39", "cxx20_generator": "#2ca02c", "cxx20_symmetric": "#98df8a",
    "boost_fcontext": "#1f77b4", "boost_fiber": "#aec7e8", "boost_fibers_yield": "#17becf",
    "boost_coroutine2": "#393b79",
    "greenlet_switch": "#9467bd", "generator_send": "#c5b0d5", "asyncio_task": "#7b4173",
}
# Colours for anything else a figure groups by (a user's switch, a stack size, an OS
# hand-off), none of them an entry's, picked by the name's hash so a name keeps its colour
# (colours() moves one aside when another name of the same figure has it).
OTHER_COLOURS = ("#f7b6d2", "#8c6d31", "#843c39", "#5254a3", "#6b6ecf", "#b5cf6b",
                 "#e7ba52", "#d6616b", "#ce6dbd", "#9c9ede", "#3182bd", "#31a354")


def colour(name) -> str:
    """The colour `name` is drawn in when alone: the entry's own, or one of OTHER_COLOURS
    that stays the name's from figure to figure and run to run (two names can share it:
    a figure of several names takes colours())."""
    key = str(name)
    if key in ENTRY_COLOURS:
        return ENTRY_COLOURS[key]
    return OTHER_COLOURS[zlib.crc32(key.encode()) % len(OTHER_COLOURS)]


def colours(names) -> dict:
    """One colour per name of one figure, no two alike: each entry its own, each other
    name its colour() unless a name before it took that, then the next free one of
    OTHER_COLOURS. ValueError when there are more other names than OTHER_COLOURS."""
    keys = list(dict.fromkeys(str(n) for n in names))
    others = [k for k in keys if k not in ENTRY_COLOURS]
    if len(others) > len(OTHER_COLOURS):
        raise ValueError(f"names: {len(others)} names that are not entries, but only "
                         f"{len(OTHER_COLOURS)} colours for them ({', '.join(others)})")
    taken, given = set(), {}
    for k in others:
        i = OTHER_COLOURS.index(colour(k))
        while OTHER_COLOURS[i] in taken:
            i = (i + 1) % len(OTHER_COLOURS)
        taken.add(OTHER_COLOURS[i])
        given[k] = OTHER_COLOURS[i]
    return {k: ENTRY_COLOURS.get(k) or given[k] for k in keys}
