"""The switch kernels labkit can measure: what each one saves, and whether it runs here."""
from __future__ import annotations

from dataclasses import dataclass

from labkit import _core


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str  # "stackful" or "stackless"
    saves: str  # what one switch saves and restores
    returns_by: str  # how control reaches the other context
    note: str


_INFO = {
    "asm": KernelInfo(
        "asm", "stackful",
        "callee-saved GPRs (x86-64: rbx rbp r12-r15; AArch64: x19-x29 lr d8-d15) + stack pointer",
        "pop + indirect jmp", "the minimal stackful switch; does NOT keep FP control state"),
    "asm_ret": KernelInfo(
        "asm_ret", "stackful", "same as asm", "ret",
        "asm ending in ret: the return-stack predictor guesses the wrong target"),
    "asm_fpu": KernelInfo(
        "asm_fpu", "stackful", "asm + MXCSR + x87 control word (AArch64: + FPCR)",
        "pop + indirect jmp", "what Boost.Context's jump_fcontext saves by default"),
    "asm_fxsave": KernelInfo(
        "asm_fxsave", "stackful", "asm + whole x87/SSE state, 512 B (fxsave64/fxrstor64)",
        "pop + indirect jmp", "saves FP registers the ABI does not ask for (claim C002.3)"),
    "asm_xsave": KernelInfo(
        "asm_xsave", "stackful", "asm + every XCR0 state component (xsave64/xrstor64)",
        "pop + indirect jmp", "x87, SSE, AVX, AVX-512...: the most a switch could save"),
    "ucontext": KernelInfo(
        "ucontext", "stackful",
        "glibc swapcontext: GPRs, FP environment, MXCSR and the signal mask",
        "glibc setcontext", "makes a rt_sigprocmask system call on every switch"),
    "stackless": KernelInfo(
        "stackless", "stackless", "nothing: the state lives in a heap/struct frame",
        "return from the state machine",
        "a C state machine resumed through a function pointer the compiler cannot inline"),
}

KERNEL_NAMES = tuple(_INFO)


def _table() -> dict[str, dict]:
    return {row["name"]: row for row in _core.kernel_table()}


def kernel_index(name: str) -> int:
    """The C core's number for a kernel name (names are checked by labkit.validate)."""
    return _table()[name]["index"]


def kernel_info(name: str) -> KernelInfo:
    """What a kernel saves and how it returns."""
    return _INFO[name]


def availability(name: str) -> tuple[bool, str]:
    """(True, "") if the kernel runs on this machine, else (False, why not)."""
    row = _table()[name]
    return row["available"], row["why_not"]


def frame_bytes(name: str) -> int:
    """Bytes a suspended context of this kernel keeps on its stack."""
    return int(_table()[name]["frame_bytes"])


def kernels():
    """A DataFrame of every kernel: name, kind, what it saves, how it returns, available here or why not."""
    import pandas as pd

    table = _table()
    rows = []
    for name, info in _INFO.items():
        row = table[name]
        rows.append({
            "kernel": name,
            "kind": info.kind,
            "saves": info.saves,
            "returns_by": info.returns_by,
            "frame_bytes": row["frame_bytes"],
            "available": row["available"],
            "why_not": row["why_not"],
            "note": info.note,
        })
    return pd.DataFrame(rows)
