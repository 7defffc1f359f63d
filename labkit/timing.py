"""Timing: labkit.measure times one kernel's ping-pong in a worker process, one row per repeat."""
from __future__ import annotations

from labkit import kernelinfo as _kernels
from labkit import machine as _machine
from labkit import validate as _v
from labkit import worker as _worker


class SwitchCountError(RuntimeError):
    """The two sides' counters disagree with the number of switches the loop should make."""


def _default_timeout(switches: int, runs: int) -> float:
    # Generous: 5 us a switch is 20x the slowest kernel here (ucontext), plus start-up.
    return 60.0 + runs * switches * 5e-6


def measure(kernel: str, *, stack_size: int | None = None, switches: int = 1_000_000,
            repeats: int = 10, warmup: int = 1, cpu: int | None = None,
            prefault: bool = True, timeout: float | None = None):
    """Time `switches` switches between two contexts with `kernel`, `repeats` times after
    `warmup` dropped runs, in a worker process. Returns a DataFrame with one row per repeat:
    ns and cycle-counter ticks per switch with the empty loop's cost subtracted
    (`ns_per_switch`, `ticks_per_switch`), the raw and baseline figures, page faults,
    the switch counters' check, and the machine and build metadata.

    stack_size is in bytes (None: 64 KiB; must stay None for the stackless kernel);
    it is rounded up to whole pages and the real size is recorded. cpu pins the worker
    to one CPU. prefault touches the whole stack before timing."""
    kernel = _v.kernel(kernel)
    size = _v.stack_size(kernel, stack_size)
    switches = _v.switches(switches)
    repeats = _v.repeats(repeats)
    warmup = _v.warmup(warmup)
    cpu = _v.cpu(cpu)
    prefault = _v.flag("prefault", prefault)
    timeout = _v.timeout(timeout) or _default_timeout(switches, repeats + warmup)
    meta = _machine.row_metadata()  # before the run: calibrating the TSC needs the worker too

    describe = (f"kernel {kernel!r} (stack_size={size}, switches={switches}, "
                f"repeats={repeats}, cpu={cpu})")
    samples = _worker.run(
        {"op": "pingpong", "kernel": _kernels.kernel_index(kernel), "stack_size": size or 0,
         "prefault": prefault, "rounds": switches // 2, "warmup": warmup,
         "repeats": repeats, "cpu": cpu},
        describe=describe, timeout=timeout,
    )
    info = _kernels.kernel_info(kernel)
    rows = []
    for i, s in enumerate(samples):
        n = s["switches"]
        if s["counted"] != n or n != switches:
            raise SwitchCountError(
                f"{describe}: repeat {i} expected {switches} switches, the loop made {n} "
                f"and the two contexts counted {s['counted']}"
            )
        rows.append({
            "kernel": kernel,
            "kind": info.kind,
            "repeat": i,
            "switches": n,
            "stack_size_requested": stack_size,
            "stack_size": size,
            "prefault": prefault,
            "cpu": cpu,
            "ns_per_switch": (s["loop_ns"] - s["base_ns"]) / n,
            "ticks_per_switch": (s["loop_ticks"] - s["base_ticks"]) / n,
            "ns_per_switch_raw": s["loop_ns"] / n,
            "baseline_ns_per_switch": s["base_ns"] / n,
            "ticks_per_ns": s["loop_ticks"] / s["loop_ns"] if s["loop_ns"] else float("nan"),
            "minor_faults": s["minor_faults"],
            "counted_switches": s["counted"],
            **meta,
        })
    import pandas as pd

    return pd.DataFrame(rows)
