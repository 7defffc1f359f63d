"""Correctness checks of the kernels, each run in a worker process: do the registers the
ABI says must survive a switch survive it, is the FP control state kept, and where does
a context's stack end."""
from __future__ import annotations

from labkit.core import entries as _entries
from labkit.core import validate as _v
from labkit.core import worker as _worker
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).


def _stackful(kernel) -> str:
    kernel = _entries.check_name(kernel)
    if _entries.kernel_info(kernel).kind != "stackful":
        raise ValueError(f"kernel must be a stackful kernel for this check; {kernel!r} "
                         "is stackless (it has no registers of its own to keep)")
    return kernel


def check_registers(kernel: str):
    """Fill every callee-saved register with sentinels on both sides of a switch and read
    them back after it. A DataFrame: register, side, value loaded, value found, survived."""
    import pandas as pd

    kernel = _stackful(kernel)
    rows = _worker.call("labkit.core.checks", "worker_regtest", kernel=_entries.kernel_index(kernel),
                        describe=f"register check of kernel {kernel!r}", timeout=60)
    return pd.DataFrame(register_rows(kernel, rows))


def register_rows(entry: str, rows: list) -> list[dict]:
    """The register check's answer (one dict a register, both sides' sentinels and what
    was found) as one row a register and side: what check_registers shows."""
    out = []
    for r in rows:
        for side, a, b in (("main", "main_in", "main_out"), ("other", "other_in", "other_out")):
            out.append({"entry": entry, "register": r["register"], "side": side,
                        "loaded": r[a], "found": r[b], "survived": r[a] == r[b]})
    return out


def check_fp_control(kernel: str) -> dict:
    """Set different FP control words (x86-64: MXCSR and x87 CW; AArch64: FPCR) in two
    contexts and switch between them. Returns what each side set and found afterwards
    (status flags masked out: they are caller-saved), and `kept`: whether both survived."""
    kernel = _stackful(kernel)
    r = _worker.call("labkit.core.checks", "worker_fptest", kernel=_entries.kernel_index(kernel),
                     describe=f"FP control check of kernel {kernel!r}", timeout=60)
    return fp_verdict(kernel, r)


def fp_verdict(entry: str, r: dict) -> dict:
    """The FP control check's answer with `kept` (both sides found what they set, status
    flags masked out) and `entry`: what check_fp_control returns."""
    mask = r["mask"]

    def same(a, b):
        return all((x ^ y) & m == 0 for x, y, m in zip(a, b, mask))

    return {**r, "kept": same(r["main_set"], r["main_after"])
            and same(r["other_set"], r["other_after"]), "entry": entry}


def probe_stack(kernel: str, stack_size: int, use_bytes: int) -> int:
    """Run a context with a `stack_size`-byte stack that uses about `use_bytes` of it.
    Returns use_bytes if it fit; past the end it faults on the guard page and this raises
    labkit.KernelCrashError (the caller survives)."""
    kernel = _stackful(kernel)
    size = _entries.check_stack_size(kernel, stack_size)
    # Up to the stack and well past it (into the guard page is the point of some probes),
    # but not past what a C size can hold.
    n = _v.integer_in("use_bytes", use_bytes, 0, 1 << 40)
    return _worker.call(
        "labkit.core.checks", "worker_stack_probe", kernel=_entries.kernel_index(kernel),
        stack_size=size, use_bytes=n,
        describe=f"kernel {kernel!r} (stack_size={size}, use_bytes={n})", timeout=60)


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_regtest(kernel: int) -> list:
    from labkit.core import _core

    return _core.regtest(kernel)


def worker_fptest(kernel: int) -> dict:
    from labkit.core import _core

    return _core.fptest(kernel)


def worker_stack_probe(kernel: int, stack_size: int, use_bytes: int) -> int:
    from labkit.core import _core

    return _core.stack_probe(kernel, stack_size, use_bytes)
