"""The held-out set: workloads off the calibration grid, drawn once from a fixed seed
before any of them was measured, each run by the workload experiment and set beside the
advice labkit.advise gives for it (data/advisor_holdout.csv, `labkit holdout`). The grid
tunes the advice's error; these workloads check it where it was not tuned.

The draw (SEED, COUNT), for each workload in turn:
    N   log-uniform on [2, 200,000] contexts, rounded to a whole number;
    u   uniform on [0, 8 KiB], whole bytes;
    W   no work for one workload in five, else log-uniform on [10 ns, 50 µs];
    the stack a user gives the stackful designs: log-uniform from the smallest whole-page
        stack that holds u, every grid design's saved frame and the entry's headroom up to
        256 KiB; a power of two (rounded up) for half of them, whole KiB for the others.
The copy stack keeps its shared stack of the grid (grid.STACK_SIZE) and heap frames none.
Each workload is measured and advised as a grid point is (grid.point): the work a user
states timed in one warm context, the designs over fresh processes in ABBA order.
"""
from __future__ import annotations

import math
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from labkit.core import machine, validate
from labkit.experiments import workload as wl
from labkit.lab.advising import cold, evidence, grid, inputs, model, taxonomy
from labkit.lab.analysis import your_workload as yw
from labkit.lab.experiment import YOUR_WORKLOAD
from labkit.lab.running import sweep

DATA = YOUR_WORKLOAD.own("advisor_holdout")  # data/advisor_holdout.csv
SEED = 48        # fixed before the set is measured, so the set cannot be chosen by its results
COUNT = 24
ALIVE = (2, 200_000)
IN_USE = (0, 8 << 10)
WORK_NS = (10.0, 50_000.0)
NO_WORK = 0.2    # the share of workloads with no work at all
STACK_MAX = 256 << 10
QUICK = {"count": 3, "designs": ("asm_fpu", "cxx20_generator")}


def _smallest_stack(u: int, designs) -> int:
    records = [taxonomy.of(d) for d in designs]
    need = [validate.round_to_pages(u + r.frame_bytes + validate.ENTRY_HEADROOM)
            for r in records if r.family == "stack"]
    return max(need or [validate.page_size()])


def draw(count: int = COUNT, seed: int = SEED, designs=None):
    """The held-out workloads: a frame of work_ns, alive, stack_in_use and stack_size, one
    row each, drawn as the module says."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a whole number of at least 1; got {count!r}")
    designs = tuple(designs or grid.DESIGNS)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        n = int(round(math.exp(rng.uniform(*np.log(ALIVE)))))
        u = int(rng.integers(IN_USE[0], IN_USE[1] + 1))
        w = 0.0 if rng.random() < NO_WORK else float(math.exp(rng.uniform(*np.log(WORK_NS))))
        lo = _smallest_stack(u, designs)
        s = math.exp(rng.uniform(math.log(lo), math.log(STACK_MAX)))
        size = (1 << math.ceil(math.log2(s))) if rng.random() < 0.5 else 1024 * math.ceil(s / 1024)
        rows.append({"workload": i, "work_ns": round(w, 1), "alive": max(2, n),
                     "stack_in_use": u, "stack_size": int(max(size, lo))})
    return pd.DataFrame(rows)


def _stack_for(design: str, given: int):
    """The stack a design runs on in the experiment: the user's for a stack of its own, the
    grid's shared stack for the copy stack, none for heap frames."""
    return int(given) if taxonomy.of(design).family == "stack" else grid.stack_size_for(design)


def measure(row, designs, *, processes: int = 3, samples: int = 3, ev=None,
            seed: int = 0) -> list[dict]:
    """One held-out workload: every design measured over fresh processes and advised,
    given the work timed in one warm context, N, u and the stack size. Rows as the grid's
    advice columns, beside the measurement."""
    ev = ev or evidence.load()
    kw = {"work_ns": float(row.work_ns)}
    n, u, given = int(row.alive), int(row.stack_in_use), int(row.stack_size)
    requests = wl.requests_for(float(row.work_ns), grid.SUSPENSIONS)
    began = time.perf_counter()
    sizes = {d: _stack_for(d, given) for d in designs}
    # the work a user states depends on the layout alone: timed once for designs sharing one
    layouts = {d: cold.layout_of(d) for d in designs}
    timed = {r: grid.warm_step(r, kw, u, requests) for r in dict.fromkeys(layouts.values())}
    warm = {d: timed[layouts[d]] for d in designs}

    def stated(d):
        return inputs.workload(work=warm[d], suspensions=grid.SUSPENSIONS, alive=n,
                              stack_in_use=u, stack_size=given)

    if ev.local:
        cold.measure_cold(ev, [c for d in designs if (c := cold.cold_need(d, stated(d), ev))])
    runs = wl.measure_point(list(designs), processes=processes, repeats=1, samples=samples,
                            seed=seed, stack_sizes=sizes, alive=n, stack_in_use=u,
                            switches_per_request=grid.SUSPENSIONS, requests=requests, **kw)
    seconds = time.perf_counter() - began
    summ = wl.summary(runs).set_index("design")
    rows = []
    for d in designs:
        m = summ.loc[d]
        own = model.predict_full(d, stated(d), ev, model_error=False)
        full = model.predict_full(d, stated(d), ev)
        t, o = full["ns_per_request"], own["ns_per_request"]
        rows.append({
            "workload": int(row.workload), "design": d, "work_ns": float(row.work_ns),
            "alive": n, "stack_in_use": u, "stack_size": given, "run_stack_size": sizes[d],
            "warm_step_ns": warm[d], "advice_ns": t["value"], "advice_low": t["low"],
            "advice_high": t["high"], "advice_model_ns": o["value"],
            "advice_model_low": o["low"], "advice_model_high": o["high"],
            "advice_share": own["switch_share"]["value"], "advice_touch_ns": own["touch_ns"]["value"],
            "advice_bytes": full["memory"]["total"],
            "measured_ns": m.ns_per_request, "measured_low": m.ns_per_request_low,
            "measured_high": m.ns_per_request_high, "processes": int(m.processes),
            "measured_bytes": (m.rss_bytes_per_coroutine + m.page_table_bytes_per_coroutine) * n,
            "guard_pages": bool(m.guard_pages), "seconds": seconds})
    return rows


def run(*, quick: bool = False, designs=None, processes: int = 3, samples: int = 3, ev=None,
        progress=None):
    """Every held-out workload (quick: QUICK's few) measured and advised: a frame with the
    advice's error and coverage per row (advice_error, advice_covered)."""
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False, not {type(quick).__name__}")
    designs = tuple(designs or (QUICK["designs"] if quick else grid.DESIGNS))
    for d in designs:
        taxonomy.check(d)
    work = draw(designs=grid.DESIGNS)  # the set is one whatever the designs measured
    if quick:
        work = work.head(QUICK["count"])
    ev = ev or evidence.load(quick=quick)
    rows, started = [], time.time()
    for k, r in enumerate(work.itertuples(), 1):
        sweep._report_progress("held-out workloads", k - 1, len(work), started)
        rows += measure(r, designs, processes=processes, samples=samples, ev=ev, seed=k)
        if progress:
            progress(f"workload {k} of {len(work)}: W={r.work_ns:g} ns N={r.alive} "
                     f"u={r.stack_in_use} stack {r.stack_size}: {rows[-1]['seconds']:.1f} s")
    return grid.advice_errors(pd.DataFrame(rows))


TARGETS = {"coverage": 0.85, "time_error": 0.15, "memory_error": 0.10, "half_width": 0.25}


def scores(g):
    """grid.scores of the advice, with the held-out set's own targets (TARGETS)."""
    return grid.scores(g, targets=TARGETS)


def figure(g, info=None):
    """The advice against the measurement for the held-out workloads, drawn as the grid's
    calibration figure is (figures/10_your_workload-holdout.png); returns its path."""
    paths = yw.calibration_figure(
        g.assign(work=[f"{w:g} ns" for w in g.work_ns]), info or machine.machine_info(),
        name="holdout", title="The advice against the workload experiment on the held-out "
        "workloads (labkit holdout)", targets=TARGETS)
    plt.close("all")
    return paths[0]
