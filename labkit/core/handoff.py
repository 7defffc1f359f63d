"""Hand-offs between OS tasks: two threads (or two processes) passing a turn back and
forth, lmbench lat_ctx style (labkit/csrc/handoff.c), and the cost of yielding the CPU often.
"Kernel" in labkit means a switch kernel (`asm`...); what the OS does here is a hand-off.

On one CPU every hand-off is a context switch. On two CPUs it is a wake-up across cores
(an idle CPU, an inter-processor interrupt; in a VM a halted vCPU): a different thing,
measured and labelled as such. The kernel's own switch counts (voluntary and involuntary)
are reported beside the number of hand-offs the harness made."""
from __future__ import annotations

import os

from labkit.core import counters as _counters
from labkit.core import machine as _machine
from labkit.core import timing as _timing
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.core.stats import floor_net
from labkit.errors import SwitchCountError
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

HANDOFF_MODES = ("thread_futex", "thread_condvar", "thread_pipe", "process_pipe")


def _cpu_pair(cpus):
    if cpus is None:
        return -1, -1
    if not isinstance(cpus, (tuple, list)) or len(cpus) != 2:
        raise TypeError(f"cpus must be a pair (cpu_a, cpu_b) or None, not {cpus!r}")
    a, b = (_v.cpu(c) for c in cpus)
    return (-1 if a is None else a), (-1 if b is None else b)


def placement(cpu_a: int, cpu_b: int) -> str:
    """'same-cpu' (a real switch), 'cross-cpu' (a wake-up), or 'unpinned'."""
    if cpu_a < 0 or cpu_b < 0:
        return "unpinned"
    return "same-cpu" if cpu_a == cpu_b else "cross-cpu"


def measure_handoff(mode: str, *, cpus=(0, 0), switches: int = 20_000,
                          repeats: int = 10, warmup: int = 1, timeout: float | None = None):
    """Time `switches` hand-offs between two OS tasks (`mode`: thread_futex,
    thread_condvar, thread_pipe, process_pipe), pinned to `cpus` = (cpu_a, cpu_b)
    (None: unpinned). One row per repeat: one-way ns and ticks per switch net of the
    same communication without a switch, and the kernel's voluntary/involuntary switch
    counts for both tasks with their ratio to the hand-offs made."""
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, not {type(mode).__name__}")
    if mode not in HANDOFF_MODES:
        raise ValueError(f"mode must be one of {', '.join(HANDOFF_MODES)}; got {mode!r}")
    a, b = _cpu_pair(cpus)
    switches, repeats, warmup = _v.switches(switches), _v.repeats(repeats), _v.warmup(warmup)
    timeout = _v.timeout(timeout) or 60.0 + (repeats + warmup) * switches * 2e-4
    meta = _machine.row_metadata()
    describe = f"kernel switch {mode!r} (cpus={a},{b}, switches={switches}, repeats={repeats})"
    out = _worker.call(
        "labkit.core.handoff", "worker_pingpong", mode=HANDOFF_MODES.index(mode), cpu_a=a, cpu_b=b,
        rounds=switches // 2, warmup=warmup, repeats=repeats,
        describe=describe, timeout=timeout)
    samples = out["samples"]
    counts = _timing.counted_columns(out["counters"], warmup, repeats)
    import pandas as pd

    rows = []
    for i, s in enumerate(samples):
        n = s["switches"]
        if s["counted"] != n or n != switches:
            raise SwitchCountError(f"{describe}: repeat {i} made {n} hand-offs, counted "
                                   f"{s['counted']}, expected {switches}")
        kernel_switches = s["vol_ctxsw"] + s["invol_ctxsw"]
        rows.append({
            "mode": mode, "cpu_a": a, "cpu_b": b, "placement": placement(a, b),
            "repeat": i, "switches": n,
            "ns_per_switch": floor_net(s["loop_ns"], s["base_ns"])[0] / n,
            "ticks_per_switch": floor_net(s["loop_ticks"], s["base_ticks"])[0] / n,
            "below_resolution": floor_net(s["loop_ns"], s["base_ns"])[1],
            "ns_per_switch_raw": s["loop_ns"] / n,
            "baseline_ns_per_switch": s["base_ns"] / n,
            "vol_ctxsw": s["vol_ctxsw"], "invol_ctxsw": s["invol_ctxsw"],
            "kernel_switches": kernel_switches,
            "kernel_per_handoff": kernel_switches / n,
            "counted_switches": s["counted"],
            **counts,
            **meta,
        })
    return pd.DataFrame(rows)


def os_counts_agree(df, low: float = 0.5, high: float = 3.0):
    """Per row: does the kernel's own count of switches agree with the hand-offs made?

    On one CPU the receiver cannot run until the sender stops, so every hand-off is a
    switch (voluntary, or involuntary when the woken task preempts the sender): the
    count per hand-off must lie in [low, high]. Across CPUs each task blocks *at most*
    once per turn: when the answer arrives before the waiter has gone to sleep (a
    descheduled vCPU makes that common on a shared VM) it never blocks and the kernel
    counts nothing. There (and unpinned, where the two may share a CPU or not) only the
    upper bound can be checked."""
    same = df.placement == "same-cpu"
    per = df.kernel_per_handoff
    return (per <= high) & (per >= low).where(same, per >= 0)


def measure_yield(*, units: int = 20_000, every: list[int] = (0, 1, 10, 100), cpu: int = 0,
                  repeats: int = 5, timeout: float | None = None):
    """C002.2: two CPU-bound threads pinned to one CPU, each doing `units` units of fixed
    work (about a microsecond each), calling sched_yield() every k units (k = 0: never).
    One row per (k, repeat): elapsed ns, throughput in units/s, and the kernel's counts."""
    units = _v.integer_in("units", units, 1, 10**8)
    if not isinstance(every, (list, tuple)):
        raise TypeError(f"every must be a list of integers (k values), not {type(every).__name__}")
    ks = [_v.integer("every", k) for k in every]
    if not ks or any(k < 0 for k in ks):
        raise ValueError(f"every must be a non-empty list of integers >= 0; got {list(every)}")
    cpu = _v.cpu(cpu)
    if cpu is None:
        raise ValueError("cpu must be a CPU number: both threads share that one CPU")
    repeats = _v.repeats(repeats)
    meta = _machine.row_metadata()
    import pandas as pd

    rows = []
    for k in ks:
        for i in range(repeats):
            out = _worker.call("labkit.core.handoff", "worker_yield_run", pin=cpu, cpu=cpu,
                               units=units, k=k,
                               describe=f"yield run (units={units}, k={k}, cpu={cpu})",
                               timeout=_v.timeout(timeout) or 120.0 + units * 1e-3)
            s = out["samples"]
            if s["units_done"] != 2 * units:
                raise SwitchCountError(f"yield run (units={units}, k={k}): the two threads did "
                                       f"{s['units_done']} units, expected {2 * units}")
            rows.append({"every": k, "repeat": i, "units_done": s["units_done"],
                         "ns": s["ns"], "units_per_s": s["units_done"] / s["ns"] * 1e9,
                         "ns_per_unit": s["ns"] / s["units_done"],
                         "unit_iters": s["unit_iters"], "vol_ctxsw": s["vol_ctxsw"],
                         "invol_ctxsw": s["invol_ctxsw"],
                         **_timing.counted_columns(out["counters"], 0, 1, baseline=False),
                         "cpu": cpu, **meta})
    return pd.DataFrame(rows)


def two_cpus() -> tuple[int, int] | None:
    """Two distinct CPUs this process may use, or None if it has only one."""
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else None


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_pingpong(mode: int, cpu_a: int, cpu_b: int, rounds: int, warmup: int,
                     repeats: int) -> dict:
    from labkit.core import _core

    return _counters.counted(lambda: _core.handoff_pingpong(mode, cpu_a, cpu_b, rounds, warmup,
                                                            repeats))


def worker_yield_run(cpu: int, units: int, k: int) -> dict:
    from labkit.core import _core

    return _counters.counted(lambda: _core.yield_run(cpu, units, k))
