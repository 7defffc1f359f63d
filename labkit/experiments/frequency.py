"""Switch frequency and batching (notebook 08, claim C000.7): what share of the time goes to
switching when coroutines do W ticks of work between switches, and how stack size and
batching tasks per resumption change it.

A scheduler resumes `coroutines` coroutines round-robin with labkit's asm_fpu kernel (what
Boost's jump_fcontext saves); each resumption runs `batch` tasks and yields back. A task
is a calibrated busy loop of W cycle-counter ticks: one dependent chain ("dependent",
which leaves an out-of-order core room to run a switch beside it), or independent adds
that fill the core's issue width ("independent", where a switch cannot hide). The same
tasks are also run without any switch (the work-only baseline), interleaved with each
timed run in the same process (work-only, switching, switching, work-only, half the tasks
each), so that

    share_switching = (total - work_only) / total,    throughput = tasks / total.

A single row's difference has no interval: its net figures are floored at 0 (and
`below_resolution` says where). switch_cost gives the net over repeats with its
interval, and says when the two kinds of work disagree.

The C side is labkit/csrc/frequency.c, compiled into the C core's optimisation-level
builds and called through labkit.core.native in the worker process (worker_* functions here)."""
from __future__ import annotations

import math
import numbers
import os

from labkit.core import entries as _entries
from labkit.core import machine as _machine
from labkit.core import native as _native
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.core import stats as _stats
from labkit.core.stats import NOISY_CV, floor_net
from labkit.core.timing import SwitchCountError
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

KERNEL = "asm_fpu"
# In the order of enum lk_freq_work (labkit/csrc/frequency.h).
WORKS = {
    "dependent": "one serial multiply-add chain (latency-bound: idle ports beside it)",
    "independent": "six independent add chains (issue-bound: no idle slot beside it)",
}
DEFAULT_BUILD = _native.DEFAULT_BUILD
MAX_WORK_CYCLES = 10_000_000
MAX_COROUTINES = 4096
MAX_BATCH = 4096
MAX_TASKS = 10**9
# How many units the calibration times (a few milliseconds), and how often.
CALIBRATION_UNITS = 1 << 20
CALIBRATION_TRIES = 7
# A guess at what a task costs beyond its work (the call, and a share of a switch), only
# used to size runs to a time budget, never in a result.
_OVERHEAD_TICKS = 60

# ---- run in the worker process (labkit.core.worker.call) ----

def worker_run(build: str, work_cycles: int, stack_size: int, coroutines: int, batch: int,
               tasks: int, warmup: int, repeats: int, cpu: int | None,
               work: str = "dependent") -> dict:
    """Calibrate the busy loop, then run lk_freq_run; the raw samples as dicts."""
    before = os.sched_getaffinity(0)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    try:
        lib = _native.core(build)
        kind = list(WORKS).index(work)
        per_unit = lib.lk_freq_ticks_per_unit(kind, CALIBRATION_UNITS, CALIBRATION_TRIES)
        if not per_unit > 0:
            raise RuntimeError("the busy loop's calibration gave no ticks per unit")
        units = round(work_cycles / per_unit) if work_cycles else 0
        samples = lib.samples("lk_freq_run", "lk_freq_sample", repeats, stack_size, coroutines,
                              batch, kind, units, tasks, warmup, repeats)
    finally:
        # The worker is shared: leave it as free to move as it was.
        os.sched_setaffinity(0, before)
    return {"ticks_per_unit": per_unit, "units": units,
            "samples": samples}


# ---- the caller's side ----

def setup_label(stack_size: int, batch: int) -> str:
    """'1 MiB, 1 task/switch', '64 KiB, 32 tasks/switch': the name of a combination."""
    from labkit.core.plots import bytes_label

    return f"{bytes_label(stack_size)}, {batch} task{'s' if batch != 1 else ''}/switch"


def tasks_for(work_cycles: int, *, seconds: float, coroutines: int = 64, batch: int = 32,
              tsc_ghz: float | None = None) -> int:
    """A task count for one timed loop of about `seconds` at W = work_cycles ticks: a
    multiple of batch * coroutines, so that with batches of `batch` every coroutine runs the same
    number of whole batches, and at least one round of them (all stacks in play)."""
    w = _work_cycles(work_cycles)
    n = _coroutines(coroutines)
    b = _batch(batch)
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise TypeError(f"seconds must be a number, not {type(seconds).__name__}")
    if not 0 < seconds <= 3600:
        raise ValueError(f"seconds must be > 0 and at most 3600; got {seconds}")
    ghz = tsc_ghz if tsc_ghz is not None else _machine.machine_info()["tsc_ghz"]
    step = b * n
    want = seconds * ghz * 1e9 / (w + _OVERHEAD_TICKS)
    return min(max(step, math.ceil(want / step) * step), MAX_TASKS // step * step)


def measure(work_cycles: int, *, stack_size: int, batch: int = 1, coroutines: int = 64,
            tasks: int | None = None, repeats: int = 10, warmup: int = 1,
            cpu: int | None = None, build: str = DEFAULT_BUILD, work: str = "dependent",
            timeout: float | None = None):
    """Run `tasks` tasks of `work_cycles` cycle-counter ticks of busy `work` (WORKS) on `coroutines`
    coroutines with stacks of `stack_size` bytes, `batch` tasks per resumption, `repeats`
    times after `warmup` dropped runs, in a worker process; and the same tasks without
    switching, interleaved with each run (work-only, switching, switching, work-only). One row per repeat: total and work-only time, the
    share of time switching, throughput, and the counters that prove every switch and
    every task happened (SwitchCountError otherwise).

    tasks must be a multiple of batch (None: about 1 ms of work, see tasks_for). build
    names one of the C core's builds (labkit.builds()), -O2 by default."""
    w = _work_cycles(work_cycles)
    size = _entries.check_stack_size(KERNEL, stack_size)
    b = _batch(batch)
    n = _coroutines(coroutines)
    if tasks is None:
        # Short loops: on a shared machine, fewer of them are cut by preemption.
        tasks = tasks_for(w, seconds=0.001, coroutines=n, batch=math.lcm(b, 32))
    t = _v.integer("tasks", tasks)
    if not b <= t <= MAX_TASKS or t % b:
        raise ValueError(f"tasks must be a multiple of batch ({b}) from {b} to {MAX_TASKS}; "
                         f"got {t}")
    repeats, warmup = _v.repeats(repeats), _v.warmup(warmup)
    cpu = _v.cpu(cpu)
    build = _build(build)
    work = _v.choice("work", work, WORKS)
    if timeout is None:
        # Generous: 0.5 GHz for the work, 5 us for each task's share of switching.
        timeout = 60 + (repeats + warmup) * 2 * t * (w / 0.5e9 + 5e-6)
    else:
        timeout = _v.timeout(timeout)
    meta = _machine.row_metadata(build)  # before the run: it may calibrate in the worker
    describe = (f"switch frequency (work_cycles={w}, work={work!r}, stack_size={size}, "
                f"batch={b}, coroutines={n}, tasks={t}, repeats={repeats}, cpu={cpu}, "
                f"build={build})")
    got = _worker.call("labkit.experiments.frequency", "worker_run", describe=describe,
                       timeout=timeout, build=build, work_cycles=w, stack_size=size, coroutines=n, batch=b,
                       tasks=t, warmup=warmup, repeats=repeats, cpu=cpu, work=work)
    common = {"entry": KERNEL, "build": build, "coroutines": n, "stack_size_requested": stack_size,
              "stack_size": size, "batch": b, "setup": setup_label(size, b),
              "work": work, "work_cycles": w, "work_units": got["units"],
              "ticks_per_unit": got["ticks_per_unit"], "tasks": t, "resumptions": t // b,
              "cpu": cpu}
    return _frame(got["samples"], common, describe, meta)


def _frame(samples, common, describe, meta):
    import pandas as pd

    t, resumptions = common["tasks"], common["resumptions"]
    rows = []
    for i, s in enumerate(samples):
        if (s["switches"] != 2 * resumptions or s["counted"] != s["switches"]
                or s["tasks"] != t or s["tasks_counted"] != t or s["work_tasks_counted"] != t):
            raise SwitchCountError(
                f"{describe}: repeat {i} expected {2 * resumptions} switches and {t} tasks; "
                f"the loop made {s['switches']} switches, the contexts counted "
                f"{s['counted']}, the coroutines ran {s['tasks_counted']} tasks and the "
                f"work-only loop {s['work_tasks_counted']}")
        total, work = s["total_ns"], s["work_ns"]
        net, below = floor_net(total, work)
        rows.append({
            **common,
            "repeat": i,
            "switches": s["switches"],
            "counted_switches": s["counted"],
            "tasks_counted": s["tasks_counted"],
            "switches_per_task": s["switches"] / t,
            "total_ns": total,
            "total_ticks": s["total_ticks"],
            "work_only_ns": work,
            "work_only_ticks": s["work_ticks"],
            # Floored at 0: one run's difference has no interval of its own, so a run
            # that came out below its baseline says only "too small to see" (the raw
            # times stay beside it; switch_cost gives the interval over repeats).
            "share_switching": net / total if total else 0.0,
            "below_resolution": below,
            "throughput_mtasks_s": t / total * 1e3 if total else float("nan"),
            "ns_per_task": total / t,
            "work_ns_per_task": work / t,
            "work_ticks_per_task": s["work_ticks"] / t,
            "ns_per_switch": net / s["switches"],
            "minor_faults": s["minor_faults"],
            "preemptions": s["preemptions"],
            **meta,
        })
    return pd.DataFrame(rows)


def before_after(df, *, work_cycles: int, before: tuple[int, int], after: tuple[int, int]):
    """The named values of C000.7's rule from measured rows: share_before, share_after
    (medians of the share of time switching) and gain (throughput after / before), at one
    W, for before = (stack_size, batch) and after = (stack_size, batch).

    Returns (value, low, high, noisy): low and high are the two corners of the spread
    (quartiles over repeats) that most and least favour the claim, so that a rule that
    holds at one corner but not the other comes out inconclusive. noisy is pyperf's rule
    (std >= 10% of the mean) on the measured times, total and work-only, of either point."""
    import numpy as np

    def pick(stack_size, batch):
        sel = df[(df.work_cycles == work_cycles) & (df.stack_size == stack_size)
                 & (df.batch == batch)]
        if sel.empty:
            raise ValueError(f"no rows at work_cycles={work_cycles}, stack_size={stack_size}, "
                             f"batch={batch}")
        return sel

    b, a = pick(*before), pick(*after)
    sb = np.quantile(b.share_switching, [0.25, 0.5, 0.75])
    sa = np.quantile(a.share_switching, [0.25, 0.5, 0.75])
    tb = np.quantile(b.throughput_mtasks_s, [0.25, 0.5, 0.75])
    ta = np.quantile(a.throughput_mtasks_s, [0.25, 0.5, 0.75])
    value = {"share_before": sb[1], "share_after": sa[1], "gain": ta[1] / tb[1]}
    favours = {"share_before": sb[2], "share_after": sa[0], "gain": ta[2] / tb[0]}
    against = {"share_before": sb[0], "share_after": sa[2], "gain": ta[0] / tb[2]}

    def noisy(x):
        x = np.asarray(x, float)
        return len(x) > 1 and x.std(ddof=1) >= NOISY_CV * abs(x.mean())

    is_noisy = any(noisy(sel[col]) for sel in (b, a) for col in ("total_ns", "work_only_ns"))
    return value, favours, against, bool(is_noisy)


def switch_cost(df, *, work_cycles: int, stack_size: int, batch: int) -> dict:
    """What switching costs at one point, from its rows, for each kind of work measured
    there (WORKS): ns per switch (labkit.core.stats.net of total over work-only, per
    switch) and the share of time switching (stats.share), each a median with its
    quartiles over repeats, floored at 0, `resolved` False where the interval reaches 0.

    `hidden` is True when both kinds were measured and the independent work's ns per
    switch lies wholly above the dependent work's interval: the dependent chain left the
    core room to run the switch in its shadow, so its subtraction cannot see the switch
    (False when they agree, None when one kind is missing). `note` says it in words."""
    sel = df[(df.work_cycles == work_cycles) & (df.stack_size == stack_size)
             & (df.batch == batch)]
    if "work" not in sel:
        sel = sel.assign(work="dependent")
    out = {}
    for kind in WORKS:
        g = sel[sel.work == kind]
        if len(g):
            out[kind] = {
                "ns_per_switch": _stats.net(g.total_ns, g.work_only_ns, per=float(g.switches.iloc[0])),
                "share": _stats.share(g.total_ns, g.work_only_ns),
            }
    if not out:
        raise ValueError(f"no rows at work_cycles={work_cycles}, stack_size={stack_size}, "
                         f"batch={batch}")
    dep, ind = out.get("dependent"), out.get("independent")
    hidden = None
    if dep and ind:
        hidden = ind["ns_per_switch"]["low"] > dep["ns_per_switch"]["high"]
    words = [f"{k} work: {_stats.net_text(v['ns_per_switch'])} per switch, share "
             f"{_stats.net_text(v['share'], '%', scale=100)}" for k, v in out.items()]
    if hidden:
        words.append("hidden by out-of-order overlap: the dependent chain's subtraction "
                     "does not see what the switch costs")
    return {**out, "hidden": hidden, "note": "; ".join(words)}


# ---- argument checks ----

def _work_cycles(value) -> int:
    return _v.integer_in("work_cycles", value, 0, MAX_WORK_CYCLES, " cycle-counter ticks")


def _batch(value) -> int:
    return _v.integer_in("batch", value, 1, MAX_BATCH, " tasks per switch")


def _coroutines(value) -> int:
    return _v.integer_in("coroutines", value, 1, MAX_COROUTINES)


def _build(value) -> str:
    return _native.check_build(value)

# --- the sweep of notebook 08 --------------------------------------------------------------
# The four set-ups: 1 MiB and 64 KiB stacks, one task and 32 tasks per switch.
SWEEP_STACKS, SWEEP_BATCHES = [1 << 20, 64 << 10], [1, 32]


def sweep_runs(sweep, work_cycles, *, rounds: int, tasks: dict, coroutines: int, repeats: int,
               cpu, work: str = "dependent"):
    """The four set-ups at every W, `rounds` passes one after the other. Dependent work is
    the sweep the figures and the verdict read (a `point` column names set-up and W);
    independent work is measured at the W given beside it. `sweep` runs the points: the
    lab hands in its own (labkit.lab.running.sweep.for_notebook: checkpointed and
    resumable), called sweep(measure_one, points, desc=..., checkpoint=PART)."""
    independent = work == "independent"
    runs = sweep(
        lambda rotation, work_cycles, stack_size, batch: measure(
            work_cycles, stack_size=stack_size, batch=batch, coroutines=coroutines,
            tasks=tasks[work_cycles], repeats=repeats, cpu=cpu, work=work),
        [dict(rotation=r, work_cycles=w, stack_size=s, batch=b) for r in range(rounds)
         for w in work_cycles for s in SWEEP_STACKS for b in SWEEP_BATCHES],
        desc="independent work" if independent else "frequency",
        checkpoint="independent" if independent else None,
    )
    if not independent:
        runs["point"] = runs.setup + ", W=" + runs.work_cycles.astype(str)
    return runs
