"""What an idle process costs a measurement beside it: `asm_fpu` and `thread_futex` timed
with the process running and with it stopped (SIGSTOP), in pairs of blocks.

The pairs alternate their order (ABBA: without-with, with-without, ...), so that whatever
the second block of a pair gains or loses (a warm cache, a resumed process catching up)
falls on both conditions alike. Each pair gives one ratio of medians, with/without; the
ratios' geometric mean and its bootstrap interval say what the idle process costs, and its
own context switches and CPU time while it runs say how idle it is.

Who starts the idle process is the caller's business (labkit.lab.room.noise starts a
room's scheduler and a joined worker): `start()` is a context manager that yields its pid and
ends it on exit.
"""
from __future__ import annotations

import os
import signal
import time

from labkit.core import procfs
from labkit.core import validate as _v
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

KERNELS = ("asm_fpu", "thread_futex")
WITH, WITHOUT = "with", "without"


def abba(blocks: int) -> list[str]:
    """The conditions of `blocks` pairs of blocks, in order: even pairs start without the
    idle process, odd ones with it."""
    return [c for b in range(blocks) for c in ((WITHOUT, WITH) if b % 2 == 0 else (WITH, WITHOUT))]


def paired_ratio(pair_ratios, *, n: int = 4000, seed: int = 0) -> tuple[float, float, float]:
    """The geometric mean of per-pair ratios (each B block over the A block beside it)
    with a 95% interval: scipy.stats.bootstrap when installed, else a percentile
    bootstrap over the pairs. Pairing cancels the machine's slow drifts (other users' load
    comes and goes), which pooling all repeats would not."""
    import numpy as np

    logs = np.log(np.asarray(pair_ratios, float))
    if logs.size < 2:
        raise ValueError(f"pair_ratios must hold two or more ratios, got {logs.size}")
    point = float(np.exp(logs.mean()))
    try:
        from scipy import stats

        ci = stats.bootstrap((logs,), np.mean, n_resamples=n, method="percentile",
                             random_state=seed).confidence_interval
        lo, hi = ci.low, ci.high
    except ImportError:
        rng = np.random.default_rng(seed)
        means = rng.choice(logs, (n, logs.size)).mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
    return point, float(np.exp(lo)), float(np.exp(hi))


def _switches_and_cpu(pid: int) -> tuple[int, float]:
    """Context switches of every thread of `pid` (each one a wake-up or a preemption) and
    its CPU seconds so far."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    return procfs.context_switches(pid), t.user + t.system


def _resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def idle_process_cost(start, *, blocks: int = 10, repeats: int = 5, cpu: int = 0,
                      switches: int = 1_000_000, futex_switches: int = 20_000):
    """Measure asm_fpu and thread_futex on `cpu` with and without the idle process that
    `start()` starts (a context manager yielding its pid), `blocks` ABBA pairs of
    `repeats` repeats each. Returns one row per kernel: the ratio with/without (geometric
    mean of the pairs) and its 95% interval, the idle process's own context switches per
    second and CPU share while it ran, and the machine's metadata; the raw rows are in
    `.attrs["raw"]`."""
    import pandas as pd

    from labkit.core.handoff import measure_handoff
    from labkit.core.machine import machine_info
    from labkit.core.timing import measure

    if not callable(start):
        raise TypeError(f"start must be a callable returning a context manager that yields "
                        f"a pid, not {type(start).__name__}")
    blocks = _v.integer_in("blocks", blocks, 2, 1000)
    repeats = _v.integer_in("repeats", repeats, 3, 1000)
    switches = _v.switches(switches)
    futex_switches = _v.integer_in("futex_switches", futex_switches, 2, _v.MAX_SWITCHES)
    cpu = _v.cpu(cpu)
    if cpu is None:
        raise ValueError("cpu must be a CPU number: both conditions measure on that CPU")
    rows, idle = [], []
    load_before = os.getloadavg()
    with start() as pid:
        try:
            for i, cond in enumerate(abba(blocks)):
                os.kill(pid, signal.SIGSTOP if cond == WITHOUT else signal.SIGCONT)
                time.sleep(1.0)  # a resumed process catches up on what it missed first
                before, t0 = _switches_and_cpu(pid), time.monotonic()
                a = measure("asm_fpu", switches=switches, repeats=repeats, cpu=cpu)
                f = measure_handoff("thread_futex", cpus=(cpu, cpu),
                                    switches=futex_switches, repeats=repeats)
                after, t1 = _switches_and_cpu(pid), time.monotonic()
                if cond == WITH:
                    idle.append(((after[0] - before[0]) / (t1 - t0),
                                 (after[1] - before[1]) / (t1 - t0)))
                for kernel, df in zip(KERNELS, (a, f)):
                    rows.append(pd.DataFrame({"entry": kernel, "condition": cond,
                                              "block": i // 2,
                                              "ns_per_switch": df["ns_per_switch"].to_numpy()}))
        finally:
            _resume(pid)  # a stopped process cannot act on the signal that ends it
    raw = pd.concat(rows, ignore_index=True)
    info = machine_info()
    load_after = os.getloadavg()
    med = raw.groupby(["entry", "block", "condition"]).ns_per_switch.median().unstack()
    out = []
    for kernel, g in med.groupby(level="entry"):
        ratio, lo, hi = paired_ratio(g[WITH] / g[WITHOUT])
        k = raw[raw.entry == kernel]
        out.append({"entry": kernel, "ratio_with_to_without": ratio, "ci95_low": lo,
                    "ci95_high": hi, "within_2pct": lo >= 0.98 and hi <= 1.02,
                    "median_ns_without": float(k[k.condition == WITHOUT].ns_per_switch.median()),
                    "median_ns_with": float(k[k.condition == WITH].ns_per_switch.median()),
                    "blocks": blocks, "repeats": repeats,
                    "idle_switches_per_s": round(sum(x for x, _ in idle) / len(idle), 1),
                    "idle_cpu_share": round(sum(c for _, c in idle) / len(idle), 5),
                    "cpu": cpu, "load_before": round(load_before[0], 2),
                    "load_after": round(load_after[0], 2), "machine_id": info["machine_id"],
                    "cpu_model": info["cpu_model"], "cpu_count": info["cpu_count"],
                    "virtualization": info["virtualization"],
                    "kernel_release": info["kernel_release"], "tsc_ghz": info["tsc_ghz"],
                    "labkit_commit": info["labkit_commit"]})
    summary = pd.DataFrame(out)
    summary.attrs["raw"] = raw
    return summary
