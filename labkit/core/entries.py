"""The catalogue: everything labkit can measure. Its entries are labkit's own switch
kernels (`asm`, `asm_fpu`...: the only things labkit calls kernels) and the real peer systems
the articles name (plain calls, a syscall, C++20 coroutines, Boost.Context, Boost.Fiber,
Boost.Coroutine2),
what each one saves, and whether it runs here (or why not, and how to get it)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from labkit.core import _core
from labkit import errors as _errors
from labkit.core import validate as _v


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str  # "stackful" or "stackless"
    saves: str  # what one switch saves and restores
    returns_by: str  # how control reaches the other context
    note: str


# What each kernel saves, how it returns, and a note: the prose of the catalogue. The
# kernels themselves, their order and their properties are the C core's kernel table
# (LK_KERNELS in labkit/csrc/labkit_core.h).
_PROSE = {
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


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, dict]:
    # What the compiled core knows does not change while the process runs.
    return {row["name"]: row for row in _core.kernel_table()}


# labkit's kernels, in the C core's order.
KERNEL_NAMES = tuple(_table())
# The kernels whose switch copies stack, and so take measure's stack_in_use.
COPIES_STACK = tuple(n for n, row in _table().items() if row["handle"] == "copy")

# The peers, in the order of enum lkx_peer (labkit/cxx/peers.h).
_PEER_KIND = {
    "direct_call": "baseline", "indirect_call": "baseline", "virtual_call": "baseline",
    "syscall_getppid": "baseline", "cxx20_generator": "stackless",
    "cxx20_symmetric": "stackless", "boost_fcontext": "stackful", "boost_fiber": "stackful",
    "boost_fibers_yield": "stackful", "boost_coroutine2": "stackful",
}
PEER_NAMES = tuple(_PEER_KIND)
# Python's peers, timed from Python (labkit.core.pypeers).
PY_PEER_NAMES = ("greenlet_switch", "generator_send", "asyncio_task")
ALL_NAMES = KERNEL_NAMES + PEER_NAMES + PY_PEER_NAMES


def is_peer(name: str) -> bool:
    """A C++ peer (built from labkit/cxx/peers.cpp)."""
    return name in _PEER_KIND


def is_py_peer(name: str) -> bool:
    """A Python peer (labkit.core.pypeers)."""
    return name in PY_PEER_NAMES


def system(name: str) -> str:
    return "peer" if is_peer(name) else "python" if is_py_peer(name) else "labkit"


def _peer_info(name: str) -> KernelInfo:
    if is_py_peer(name):
        from labkit.core import pypeers

        kind, saves = pypeers.PY_PEERS[name]
        return KernelInfo(name, kind, saves, "(CPython's own)",
                          "timed from Python with the same method and statistics")
    from labkit.core import native

    saves = native.peer_saves(name) if not native.peers_missing_reason() else "(not built here)"
    return KernelInfo(name, _PEER_KIND[name], saves, "(the peer's own)",
                      "a real system, measured by the same harness method as labkit's kernels")


def kernel_index(name: str) -> int:
    """The C core's number for a kernel name (names are checked by labkit.core.validate)."""
    return _table()[name]["index"]


def kernel_info(name: str) -> KernelInfo:
    """What a kernel or peer saves and how it returns."""
    if system(name) != "labkit":
        return _peer_info(name)
    kind = "stackful" if _table()[name]["stackful"] else "stackless"
    return KernelInfo(name, kind, *_PROSE[name])


def keeps_fp_control(name: str) -> bool:
    """Whether a switch of labkit's kernel `name` keeps the FP control state (MXCSR and
    the x87 control word; AArch64: FPCR), as the C core's kernel table says."""
    return _table()[name]["keeps_fp_control"]


def availability(name: str) -> tuple[bool, str]:
    """(True, "") if the kernel or peer runs on this machine, else (False, why not)."""
    if is_py_peer(name):
        from labkit.core import pypeers

        return pypeers.available(name)
    if is_peer(name):
        from labkit.core import native

        why = native.peers_missing_reason() or native.peer_why_not(name)
        return not why, why
    row = _table()[name]
    return row["available"], row["why_not"]


def frame_bytes(name: str) -> int:
    """Bytes a suspended context of this kernel keeps on its stack (0 for the peers:
    their frames are their libraries' business)."""
    return int(_table()[name]["frame_bytes"]) if system(name) == "labkit" else 0


def catalogue(peers: bool = True):
    """A DataFrame of every kernel (and, with peers=True, every peer system): name, system
    (labkit or peer), kind (stackful, stackless, baseline), what one switch saves, how it
    returns, available here or why not."""
    import pandas as pd

    peers = _v.flag("peers", peers)
    rows = []
    for name in ALL_NAMES if peers else KERNEL_NAMES:
        info = kernel_info(name)
        ok, why = availability(name)
        rows.append({
            "kernel": name,
            "system": system(name),
            "kind": info.kind,
            "saves": info.saves,
            "returns_by": info.returns_by,
            "frame_bytes": frame_bytes(name),
            "available": ok,
            "why_not": why,
            "note": info.note,
        })
    return pd.DataFrame(rows)


# ---- argument checks that need the catalogue ----

def check_name(name) -> str:
    """A known kernel name that runs here."""
    if not isinstance(name, str):
        raise TypeError(f"kernel must be a str naming a kernel, not {type(name).__name__}")
    if name not in ALL_NAMES:
        raise ValueError(
            f"kernel must be one of {', '.join(ALL_NAMES)}; got {name!r}"
        )
    ok, why = availability(name)
    if not ok:
        raise _errors.KernelUnavailableError(f"kernel {name!r} is not available on this machine: {why}")
    return name


def min_stack_size(kernel_name: str) -> int:
    """Smallest stack a context of this kernel gets: its saved frame plus room for its entry."""
    return _v.round_to_pages(frame_bytes(kernel_name) + _v.ENTRY_HEADROOM)


def check_stack_size(kernel_name: str, value) -> int | None:
    """The stack size in bytes, rounded up to whole pages (None: 64 KiB); None for a stackless kernel."""
    kind = kernel_info(kernel_name).kind
    if kind != "stackful":
        if value is not None:
            raise ValueError(
                f"stack_size must be left unset (None) for the {kind} kernel "
                f"{kernel_name!r}: it has no stack of its own; got {value!r}"
            )
        return None
    if value is None:
        value = _v.DEFAULT_STACK_SIZE
    n = _v.integer("stack_size", value)
    lo, hi = min_stack_size(kernel_name), _v.physical_memory()
    if not lo <= n <= hi:
        raise ValueError(
            f"stack_size must be between {lo} bytes (one page at least, plus the "
            f"{kernel_name} frame and room for the entry function) and {hi} bytes "
            f"(this machine's memory); got {n}"
        )
    return _v.round_to_pages(n)
