"""The catalogue: everything labkit can measure. Its entries are labkit's own switch
kernels (`asm`, `asm_fpu`...: the only things labkit calls kernels) and the real peer systems
the articles name (plain calls, a syscall, C++20 coroutines, Boost.Context, Boost.Fiber,
Boost.Coroutine2, greenlet, generators, asyncio), what each one saves, and whether it runs
here (or why not, and how to get it). The entries and their systems are labkit.core.systems'
records; this module lays them out and checks the names and stack sizes given for them."""
from __future__ import annotations

from dataclasses import dataclass

from labkit import errors as _errors
from labkit.core import systems as _systems
from labkit.core import validate as _v
from labkit.errors import ParameterError
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str  # "stackful" or "stackless"
    saves: str  # what one switch saves and restores
    returns_by: str  # how control reaches the other context
    note: str


# labkit's kernels, in the C core's order.
KERNEL_NAMES = _systems.KERNELS.names()
# The kernels whose switch copies stack, and so take measure's stack_in_use.
COPIES_STACK = tuple(n for n, row in _systems.kernel_rows().items() if row["handle"] == "copy")
# The C++ peers, in the order of enum lkx_peer (labkit/cxx/peers.h).
PEER_NAMES = _systems.CXX.names()
# Python's peers, timed from Python (labkit.core.pypeers).
PY_PEER_NAMES = _systems.PYTHON.names()
# The built-in entries; the user's switches added in this process come after them
# (labkit.core.systems.all_names()).
ALL_NAMES = _systems.all_names()


def system(name: str) -> str:
    """The system of a kernel or peer: labkit, peer or python (labkit.core.systems)."""
    return _systems.of(name).family


def kernel_index(name: str) -> int:
    """The C core's number for a kernel name (names are checked by labkit.core.validate)."""
    return _systems.kernel_rows()[name]["index"]


def kernel_info(name: str) -> KernelInfo:
    """What a kernel or peer saves and how it returns."""
    s = _systems.of(name)
    return KernelInfo(name, s.kind(name), s.saves(name), s.returns_by(name), s.note(name))


def keeps_fp_control(name: str) -> bool:
    """Whether a switch of labkit's kernel `name` keeps the FP control state (MXCSR and
    the x87 control word; AArch64: FPCR), as the C core's kernel table says."""
    return _systems.kernel_rows()[name]["keeps_fp_control"]


def availability(name: str) -> tuple[bool, str]:
    """(True, "") if the kernel or peer runs on this machine, else (False, why not)."""
    return _systems.of(name).available(name)


def frame_bytes(name: str) -> int:
    """Bytes a suspended context of this kernel keeps on its stack (0 for the peers:
    their frames are their libraries' business)."""
    return int(_systems.kernel_rows()[name]["frame_bytes"]) if name in _systems.KERNELS else 0


def catalogue(peers: bool = True):
    """A DataFrame of every kernel (and, with peers=True, every peer system): name, system
    (labkit, peer or python: labkit.core.systems), kind (stackful, stackless, baseline),
    what one switch saves, how it returns, available here or why not."""
    import pandas as pd

    peers = _v.flag("peers", peers)
    rows = []
    for name in _systems.all_names() if peers else KERNEL_NAMES:
        info = kernel_info(name)
        ok, why = availability(name)
        rows.append({
            "entry": name,
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
    """A known catalogue entry (kernel or peer) that runs here."""
    if not isinstance(name, str):
        raise TypeError(f"entry must be a str naming a kernel or peer, not {type(name).__name__}")
    names = _systems.all_names()
    if name not in names:
        hint = (": a user's switch is added by labkit.add_switch(source), "
                "labkit.add_switch(python='module:factory') or labkit.measure(source=...) in "
                "this process" if name.startswith("user:") else "")
        raise ParameterError("entry", f"must be one of {', '.join(names)}; got {name!r}{hint}")
    ok, why = availability(name)
    if not ok:
        raise _errors.EntryUnavailableError(f"entry {name!r} is not available on this machine: {why}")
    return name


def min_stack_size(kernel_name: str) -> int:
    """Smallest stack a context of this kernel gets: its saved frame plus room for its entry."""
    return _v.round_to_pages(frame_bytes(kernel_name) + _v.ENTRY_HEADROOM)


def check_stack_size(kernel_name: str, value) -> int | None:
    """The stack size in bytes, rounded up to whole pages (None: 64 KiB); None for an
    entry without a stack of its own, or whose stacks labkit does not make (Python peers)."""
    kind = kernel_info(kernel_name).kind
    system = _systems.of(kernel_name)
    if kind != "stackful" or "stack_size" not in system.applies:
        why = ("it has no stack of its own" if kind != "stackful"
               else f"a {system.what}'s stacks are made by its own library, not by labkit")
        if value is not None:
            raise ParameterError(
                "stack_size", f"must be left unset (None) for the {kind} entry "
                f"{kernel_name!r}: {why}; got {value!r}"
            )
        return None
    if value is None:
        value = _v.DEFAULT_STACK_SIZE
    n = _v.integer("stack_size", value)
    lo, hi = min_stack_size(kernel_name), _v.physical_memory()
    if not lo <= n <= hi:
        raise ParameterError(
            "stack_size", f"must be between {lo} bytes (one page at least, plus the "
            f"{kernel_name} frame and room for the entry function) and {hi} bytes "
            f"(this machine's memory); got {n}"
        )
    return _v.round_to_pages(n)
