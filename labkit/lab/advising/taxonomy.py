"""The taxonomy of the designs the advisor judges: one record each, derived from the
catalogue, of how a design keeps a suspended coroutine, the layout of contexts its
measurements come from, the FP state it keeps, its guard page, where its frame lives and
how its memory is probed."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import labkit
from labkit.core import entries, systems, validate
from labkit.errors import ParameterError
from labkit.experiments import workload

THREAD_PREFIX = "thread_"
# The switch a user's C switch is laid out as: it runs on the stacks labkit makes, as
# labkit's kernels do.
USER_LIKE = "asm_fpu"
# What the catalogue does not record of a design, declared once here.
#   like:    the design it is built on or laid out as, whose measurement stands for its
#            own where the lab has none of it (the workload experiment's layout of
#            contexts, notebook 06's FP-control cost);
#   vectors: the vector state its switch saves whole, as xsave's components ("legacy":
#            fxsave's x87/SSE area; "all": every component of XCR0);
#   copies:  its switch copies stack out, so a pointer into a suspended one goes stale;
#   syscall: the system call it makes on every switch.
_DECLARED = {
    "asm_fxsave": dict(like="asm_fpu", vectors="legacy"),
    "asm_xsave": dict(like="asm_fpu", vectors="all"),
    # swapcontext reloads MXCSR and the x87 control word as asm_fpu does
    "ucontext": dict(like="asm_fpu", syscall="rt_sigprocmask"),
    # asm_fpu's registers, on a run stack the coroutines share
    "copy_stack": dict(like="asm_fpu"),
    # Boost.Fiber and Coroutine2 switch with fcontext, on Boost's malloc'd stacks
    "boost_fiber": dict(like="boost_fcontext"),
    "boost_fibers_yield": dict(like="boost_fcontext"),
    "boost_coroutine2": dict(like="boost_fcontext"),
    "cxx20_symmetric": dict(like="cxx20_generator"),
    # greenlet copies slices of the C stack to the heap when it switches
    "greenlet_switch": dict(copies=True),
}
# Where a suspended coroutine's state lives, and how its memory is probed, by family.
FRAME_LIVES = {"stack": "its own stack", "copy": "its used stack, copied out to the heap",
               "frame": "a heap frame", "python": "the Python heap",
               "thread": "its thread's stack"}
MEMORY_PROBE = {"stack": "stacks (notebook 07b)", "thread": "stacks (notebook 07b)",
                "copy": "copy-stack coroutines (notebook 07b)",
                "frame": "C++20 heap frames (notebook 07b)",
                "python": "tracemalloc, measured now"}


@dataclass(frozen=True)
class Design:
    name: str
    family: str             # "stack", "copy", "frame", "python" or "thread"
    system: str             # the catalogue's system: labkit, peer, python, user...
    layout: str | None      # the workload experiment's design laid out as this one
    like: str               # whose measurement stands for its own where it has none
    guard_page: bool        # each stack has a PROT_NONE page below it
    keeps_fp_control: bool  # each coroutine keeps its own FP control words
    vectors: str | None     # the vector state a switch saves whole (vector_term)
    copies: bool            # a switch copies stack out
    syscall: str | None     # a system call made on every switch
    frame_bytes: int        # bytes a suspended context keeps on its stack (labkit's)
    min_stack: int          # the smallest stack it accepts (0: any)
    frame: str              # where a suspended coroutine's state lives (FRAME_LIVES)
    memory: str             # how its memory is probed (MEMORY_PROBE)

    @property
    def stackful(self) -> bool:
        """Whether each coroutine has a stack of its own (a thread's too)."""
        return self.family in ("stack", "thread")


def names() -> list[str]:
    """Every design the advisor judges: the catalogue's entries that switch (its baselines
    left out) and the OS threads' hand-offs of notebook 05."""
    threads = (m for m in labkit.HANDOFF_MODES if m.startswith(THREAD_PREFIX))
    return [*_switching(systems.all_names()), *threads]


@functools.lru_cache(maxsize=8)
def _switching(entries_: tuple) -> tuple:
    """The entries of the catalogue that switch (a user's switch added changes the key)."""
    return tuple(n for n in entries_ if entries.kernel_info(n).kind != "baseline")


def check(design) -> str:
    """`design`, if the advisor judges it; a TypeError or ValueError names it otherwise."""
    if not isinstance(design, str):
        raise TypeError(f"design must be a str, not {type(design).__name__}")
    known = names()
    if design not in known:
        raise ParameterError("design", f"must be one of {', '.join(known)}; got {design!r}")
    return design


def _family(name: str, system: str) -> str:
    if name.startswith(THREAD_PREFIX):
        return "thread"
    if system in systems.PYTHON_LEVEL:
        return "python"
    if name in entries.COPIES_STACK:
        return "copy"
    return "stack" if entries.kernel_info(name).kind == "stackful" else "frame"


def _keeps_fp_control(name: str, family: str, system: str) -> bool:
    if family == "thread":
        return True
    if family in ("frame", "python"):
        return False  # one thread's MXCSR, shared by every coroutine on it
    if system == "labkit":
        return entries.keeps_fp_control(name)
    if system == "user":
        return systems.USER_SWITCHES[name].keeps_fp_control  # as its check found
    return True  # Boost's fcontext saves MXCSR and the x87 control word by default


def _layout(name: str, family: str, like: str) -> str | None:
    if family in ("python", "thread"):
        return name if name in workload.designs() else None
    if name in workload.designs():
        return name
    return like if like in workload.designs() else None


def of(design) -> Design:
    """The record of a design the advisor judges (a wrong name is named in the error)."""
    name = check(design)
    system = "thread" if name.startswith(THREAD_PREFIX) else entries.system(name)
    family = _family(name, system)
    declared = _DECLARED.get(name, {})
    like = declared.get("like", USER_LIKE if system == "user" else name)
    return Design(
        name=name, family=family, system=system, layout=_layout(name, family, like),
        like=like,
        # labkit mmaps each stack with a guard page, as threads' stacks have; Boost's
        # fixedsize_stack is plain malloc
        guard_page=family == "thread" or (family == "stack" and system in ("labkit", "user")),
        keeps_fp_control=_keeps_fp_control(name, family, system),
        vectors="vector" if family == "thread" else declared.get("vectors"),
        copies=family == "copy" or declared.get("copies", False),
        syscall=declared.get("syscall"),
        frame_bytes=entries.frame_bytes(name) if family == "stack" else 0,
        min_stack=(entries.min_stack_size(name)
                   if family == "stack" and system == "labkit" else 0),
        frame=FRAME_LIVES[family], memory=MEMORY_PROBE[family])


def stack_size(design: str, w) -> int | None:
    """The stack a design gets under workload `w`: the workload's, or the smallest
    whole-page size that holds the stack in use, the design's saved frame and the calls
    made from the switch's entry (validate.ENTRY_HEADROOM; at least the design's minimum).
    None for designs without a stack of their own."""
    d = of(design)
    if not d.stackful:
        return None
    if w.stack_size is not None:
        return validate.round_to_pages(w.stack_size)
    frame = d.frame_bytes + validate.ENTRY_HEADROOM if d.family == "stack" else 0
    size = max(validate.round_to_pages(max(w.stack_in_use + frame, 1)), d.min_stack)
    if d.family == "thread":
        size = max(size, os.sysconf("SC_THREAD_STACK_MIN"))
    return size
