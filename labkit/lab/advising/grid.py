"""The calibration grid: the advisor's prediction beside the workload experiment's
measurement (labkit.experiments.workload) at every point of W x N x u, for several designs.

The model predicts from the other notebooks' data (evidence.FILES, this machine's rows);
nothing the grid measures enters its terms. One input is measured on the spot at each
point, in workers of its own and never in the grid's processes (one before them, one
after, the smaller taken): the step, what a coroutine's work between two switches costs
when called without switching (W of busy loop and u bytes of its context touched, N
contexts round robin), which is what a user profiles as "my work between switches". Its
cache cost (N contexts x u bytes) is the user's, not the switch's. It is taken for each
design with its own layout of contexts (cold.layout_of). The model's cold switches
among N contexts are measured on the spot too, just before the points of that N and u: a
stack's beside each W's busy work (cold.cold_work) and with none, the others with none.

The prediction's interval is a prediction interval for the measurement: the model's own
(its terms' measurement noise only, kept as model_low and model_high) widened by the
model's error where the switch weighs as much and the model's inputs were as steady,
log(measured / model) at the grid's *other* points nearest in predicted share of switching
and in the model's own spread (model_error.request_residuals, leave one point out). The interval
under the original rule, nearest in share alone, is kept beside it (original_*)."""
from __future__ import annotations

import dataclasses
import itertools
import math
import time

import numpy as np
import pandas as pd

from labkit.core.machine import machine_info
from labkit.core.units import parse_time
from labkit.experiments import workload as wl
from labkit.lab.advising import cold, evidence, inputs, model, model_error, taxonomy
from labkit.lab.running import sweep

# Three W spanning two orders of magnitude and more, three N up to 100,000 and three u up
# to 4 KiB, over five designs of different kinds: enough points to see where the model
# misses and why.
DESIGNS = ("asm_fpu", "boost_fcontext", "ucontext", "copy_stack", "cxx20_generator")
WORK = ("0ns", "100cycles", "20us")
ALIVE = (64, 10_000, 100_000)
IN_USE = (0, 1024, 4096)
QUICK = {"designs": ("asm_fpu", "cxx20_generator"), "work": ("0ns", "20us"),
         "alive": (64,), "in_use": (0, 1024)}
STACK_SIZE = 64 << 10   # the stackful designs' stack in the experiment and the prediction
SUSPENSIONS = 1         # per request
COVERAGE = 0.95         # of the prediction interval
TARGETS = {"coverage": 0.90, "time_error": 0.10, "memory_error": 0.05, "half_width": 0.20}

COLUMNS = ("design", "work", "work_ns", "alive", "stack_in_use", "step_ns", "step_first_ns",
           "step_second_ns", "step_design", "predicted_ns", "predicted_low", "predicted_high",
           "original_ns", "original_low", "original_high", "original_covered",
           "measured_ns", "measured_low", "measured_high", "processes", "error", "covered",
           "model_ns", "model_low", "model_high", "model_share", "model_error",
           "predicted_switch_ns", "predicted_switch_low", "predicted_switch_high",
           "measured_switch_ns", "measured_switch_low", "measured_switch_high",
           "predicted_bytes", "measured_bytes", "memory_error", "seconds",
           "warm_step_ns", "advice_ns", "advice_low", "advice_high", "advice_error",
           "advice_covered", "advice_model_ns", "advice_model_low", "advice_model_high",
           "advice_share", "advice_touch_ns", "advice_bytes", "advice_memory_error")
# The headline: what labkit.advise answers (advice_*); the step-fed model (predicted_*,
# model_*, original_*) is kept beside it as a diagnosis.
SCORED = ("advice", "predicted")


def _work(work: str) -> dict:
    amount, unit = parse_time("work", work)
    return {"work_cycles": amount} if unit == "cycles" else {"work_ns": amount}


def _workload_ns(kw: dict, ghz: float) -> float:
    return kw["work_ns"] if "work_ns" in kw else kw["work_cycles"] / ghz


def work_in_ns(work: str) -> float:
    """ns of a grid W ("100cycles" at this machine's TSC rate): the busy part of its step."""
    return _workload_ns(_work(work), machine_info()["tsc_ghz"])


def stack_size_for(design: str) -> int | None:
    """The stack the grid gives a design: STACK_SIZE where the workload experiment runs it
    on a stack (copy_stack's shared one too), None for heap frames."""
    return STACK_SIZE if wl._stackful(design) else None


def step_cost(design: str, kw: dict, alive: int, in_use: int, requests: int) -> float:
    """ns of one step without switching: the median of the work-only loop of one call of
    the workload experiment for `design`, in a worker of its own."""
    df = wl.run_workload(design, alive=alive, stack_in_use=in_use,
                         switches_per_request=SUSPENSIONS, requests=requests,
                         stack_size=stack_size_for(design),
                         repeats=3, **kw)
    return float(df.work_only_ns_per_request.median()) / SUSPENSIONS


def warm_step(design: str, kw: dict, in_use: int, requests: int) -> float:
    """ns of the work a user states for a grid point: its step (W and u bytes touched)
    timed in one warm context, without switching; the smaller of two workers."""
    return step_estimate(*(step_cost(design, kw, 1, in_use, requests) for _ in range(2)))


def step_estimate(first: float, second: float) -> float:
    """The step of a point from its two workers' timings: the smaller, since a busy loop
    only grows when something else takes its CPU (docs/advisor_calibration.md: the
    geometric mean, judged against it)."""
    return min(float(first), float(second))


def point(designs, work: str, alive: int, in_use: int, *, processes: int = 3,
          samples: int = 3, ev=None, seed: int = 0, warm=None) -> list[dict]:
    """One grid point: its measurement over `processes` fresh processes (every design,
    ABBA), each design's advice given the work in one warm context (`warm`: ns by layout,
    warm_step's; measured here when not given) and the step-fed prediction. Rows of
    COLUMNS but those finish() adds."""
    ev = ev or evidence.load()
    kw = _work(work)
    w_ns = work_in_ns(work)
    requests = wl.requests_for(w_ns, SUSPENSIONS)
    began = time.perf_counter()
    reps = list(dict.fromkeys(cold.layout_of(d) for d in designs))
    warm = warm or {r: warm_step(r, kw, in_use, requests) for r in reps}
    # The step is timed in a worker before the grid's processes and in another after.
    before = {r: step_cost(r, kw, alive, in_use, requests) for r in reps}
    runs = wl.measure_point(list(designs), processes=processes, repeats=1, samples=samples,
                            seed=seed, alive=alive, stack_in_use=in_use,
                            switches_per_request=SUSPENSIONS, requests=requests, **kw)
    after = {r: step_cost(r, kw, alive, in_use, requests) for r in reps}
    seconds = time.perf_counter() - began
    summ = wl.summary(runs).set_index("design")
    rows = []
    for d in designs:
        rep = cold.layout_of(d)
        m = summ.loc[d]
        meas_bytes = (m.rss_bytes_per_coroutine + m.page_table_bytes_per_coroutine) * alive
        step = step_estimate(before[rep], after[rep])
        rows.append({
            "design": d, "work": work, "work_ns": w_ns, "alive": alive, "stack_in_use": in_use,
            "step_ns": step, "step_first_ns": before[rep], "step_second_ns": after[rep],
            "step_design": rep, **prediction(d, step, alive, in_use, ev, busy_ns=w_ns),
            "warm_step_ns": warm[rep], **advice(d, warm[rep], alive, in_use, ev),
            "measured_ns": m.ns_per_request, "measured_low": m.ns_per_request_low,
            "measured_high": m.ns_per_request_high, "processes": int(m.processes),
            "measured_switch_ns": m.ns_per_switch, "measured_switch_low": m.ns_per_switch_low,
            "measured_switch_high": m.ns_per_switch_high,
            "measured_bytes": meas_bytes, "seconds": seconds})
    return rows


def prediction(design: str, step_ns: float, alive: int, in_use: int, ev=None, *,
               busy_ns: float) -> dict:
    """The model's prediction for one grid point, without the model's error: the step as
    the work between switches, `busy_ns` (the point's W) as its busy part, the
    experiment's 64 KiB stacks for a design with stacks."""
    ev = ev or evidence.load()
    w = _workload(design, alive, in_use, busy_ns, step_ns)
    p = model.predict_full(design, w, ev, model_error=False)
    return {"model_ns": p["ns_per_request"]["value"], "model_low": p["ns_per_request"]["low"],
            "model_high": p["ns_per_request"]["high"], "model_share": p["switch_share"]["value"],
            "predicted_switch_ns": p["ns_per_switch"]["value"],
            "predicted_switch_low": p["ns_per_switch"]["low"],
            "predicted_switch_high": p["ns_per_switch"]["high"],
            "predicted_bytes": p["memory"]["total"]}


def advice_workload(design: str, warm_ns: float, alive: int, in_use: int):
    """What a user puts to labkit.advise at a grid point: the work in one warm context, N,
    u and the grid's stack size."""
    return inputs.workload(work=float(warm_ns), suspensions=SUSPENSIONS, alive=int(alive),
                          stack_in_use=int(in_use), stack_size=stack_size_for(design))


def advice(design: str, warm_ns: float, alive: int, in_use: int, ev=None) -> dict:
    """labkit.advise's answer at a grid point without the model's error (finish() adds it
    from the grid's other points): given only the work a user states (warm_step), N, u
    and the stack size."""
    ev = ev or evidence.load()
    p = model.predict_full(design, advice_workload(design, warm_ns, alive, in_use), ev,
                           model_error=False)
    t = p["ns_per_request"]
    return {"advice_model_ns": t["value"], "advice_model_low": t["low"],
            "advice_model_high": t["high"], "advice_share": p["switch_share"]["value"],
            "advice_touch_ns": p["touch_ns"]["value"], "advice_bytes": p["memory"]["total"]}


def repredict(grid, ev=None):
    """The grid's measurements with the advisor's predictions made again (the model or its
    evidence changed; nothing is measured but what the advisor measures now)."""
    new = pd.DataFrame([{**prediction(r.design, r.step_ns, r.alive, r.stack_in_use, ev,
                                      busy_ns=r.work_ns),
                         **(advice(r.design, r.warm_step_ns, r.alive, r.stack_in_use, ev)
                            if "warm_step_ns" in grid else {})}
                        for r in grid.itertuples()], index=grid.index)
    return finish(grid.assign(**{c: new[c] for c in new}))


def cold_at_no_work(grid, ev):
    """The grid predicted again with every cold switch read as measured with no work
    between switches: what reading a stack's beside the point's busy work is worth, scored
    on the same measurements (docs/advisor_calibration.md). `ev` must hold the grid's cold
    switches (its run's, or cold._cold_from_rows); a local one measures those it lacks."""
    return repredict(grid.assign(work_ns=0.0), ev).assign(work_ns=grid.work_ns)


def _workload(design: str, alive: int, in_use: int, busy_ns: float, step_ns: float = 0.0):
    """The model's workload at a grid point for `design`: the step as the work between
    switches, `busy_ns` its busy part, the grid's stack."""
    return dataclasses.replace(
        inputs.workload(work=float(step_ns), suspensions=SUSPENSIONS, alive=int(alive),
                       stack_in_use=int(in_use), stack_size=stack_size_for(design)),
        busy_ns=float(busy_ns))


def cold_needs(designs, busy, alive, in_use, ev, warm=None) -> list[tuple]:
    """The cold switches (cold.cold_need) the step-fed predictions of `designs` read at
    every busy work (ns) of `busy`, N of `alive` and u of `in_use`, on the grid's stacks,
    and the advice's at each warm work of `warm` ({layout: [ns, ...]}); once each."""
    step = (cold.cold_need(d, _workload(d, n, u, b), ev)
            for d in designs for b in busy for n in alive for u in in_use)
    given = (cold.cold_need(d, advice_workload(d, x, n, u), ev)
             for d in designs for x in (warm or {}).get(cold.layout_of(d), ())
             for n in alive for u in in_use)
    return list(dict.fromkeys(need for need in (*step, *given) if need))


def run_grid(*, quick: bool = False, designs=None, work=None, alive=None, in_use=None,
             processes: int = 3, samples: int = 3, ev=None, progress=None):
    """Every point of the grid (quick: QUICK's few points), measured and predicted, as a
    frame of COLUMNS. `progress`: a callable given one line per point."""
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False, not {type(quick).__name__}")
    pick = QUICK if quick else {"designs": DESIGNS, "work": WORK, "alive": ALIVE,
                                "in_use": IN_USE}
    designs = tuple(designs or pick["designs"])
    for d in designs:
        taxonomy.check(d)
    axes = [tuple(work or pick["work"]), tuple(alive or pick["alive"]),
            tuple(in_use or pick["in_use"])]

    ev = ev or evidence.load()
    seeds = {p: i for i, p in enumerate(itertools.product(*axes))}
    # No work is among them whatever the grid's W: cold_at_no_work reads those.
    busy = sorted({0.0, *(work_in_ns(wk) for wk in axes[0])})
    rows = []
    started = time.time()
    sweep._report_progress("calibration grid", 0, len(seeds), started)  # the status line
    # The cold switches of one N and u are measured just before that N and u's points, not
    # all before the grid: the VM's state moves with the grid's own churn of memory.
    reps = list(dict.fromkeys(cold.layout_of(d) for d in designs))
    warm = {}  # (layout, W, u): the work a user states, which N does not change
    for n, u in itertools.product(axes[1], axes[2]):
        for wk in axes[0]:
            kw = _work(wk)
            for r in reps:
                if (r, wk, u) not in warm:
                    warm[r, wk, u] = warm_step(r, kw, u, wl.requests_for(work_in_ns(wk),
                                                                         SUSPENSIONS))
        if ev.local:
            stated = {r: [warm[r, wk, u] for wk in axes[0]] for r in reps}
            cold.measure_cold(ev, cold_needs(designs, busy, [n], [u], ev, stated))
        for wk in axes[0]:
            i = seeds[wk, n, u]
            rows += point(designs, wk, n, u, processes=processes, samples=samples, ev=ev,
                          seed=i, warm={r: warm[r, wk, u] for r in reps})
            sweep._report_progress("calibration grid", len(rows) // len(designs),
                                   len(seeds), started)
            if progress:
                progress(f"point {len(rows) // len(designs)} of {len(seeds)}: W={wk} N={n} "
                         f"u={u}: {rows[-1]['seconds']:.1f} s")
    rows.sort(key=lambda r: seeds[r["work"], r["alive"], r["stack_in_use"]])  # W outermost
    return finish(pd.DataFrame(rows))


def calibrate(ev, grid) -> None:
    """Let the evidence's predictions carry the model's error measured by `grid` (this
    machine's, just run) instead of the one data/ held."""
    ev.frames[model_error.CALIBRATION] = grid


def _intervals(g, rule: str, seed: int, of: str = "step"):
    """(median, low, high) of each point's prediction under the error rule `rule`, of the
    advice's model or the step-fed one (model_error.MODEL_COLUMNS)."""
    ns, sh, lo_, hi_ = model_error.MODEL_COLUMNS[of]
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(evidence.DRAWS)
    pred, low, high = (np.full(len(g), math.nan) for _ in range(3))
    for i, label in enumerate(g.index):
        r = g.iloc[i]
        spread = model_error.own_spread(r[lo_], r[hi_])
        res = model_error.request_residuals(g, r[sh], spread, leave_out=label, rule=rule, of=of)
        # the model's own interval as a log-normal spread, then the model's error
        t = model_error.with_error(r[ns] * np.exp(spread * z), res, rng)
        pred[i], low[i], high[i] = np.percentile(
            t, [50, 100 * (1 - COVERAGE) / 2, 100 * (1 + COVERAGE) / 2])
    return pred, low, high


def finish(grid, seed: int = 0):
    """Add the prediction interval (predicted_*, under model_error.ERROR_RULE), error and covered
    to a grid of model predictions (model_*, model_share) and measurements (measured_*);
    and beside them the interval under the original rule (original_*: neighbours by share
    alone); and, where the grid holds the advice's model (advice_model_*), the advice's
    interval (advice_*) with its error and coverage, as labkit.advise gives it."""
    g = grid.copy()
    g["predicted_ns"], g["predicted_low"], g["predicted_high"] = _intervals(
        g, model_error.ERROR_RULE, seed)
    g["original_ns"], g["original_low"], g["original_high"] = _intervals(g, "share", seed)
    g["error"] = g.predicted_ns / g.measured_ns - 1
    g["model_error"] = g.model_ns / g.measured_ns - 1
    g["covered"] = (g.predicted_low <= g.measured_ns) & (g.measured_ns <= g.predicted_high)
    g["original_covered"] = (g.original_low <= g.measured_ns) & (g.measured_ns <= g.original_high)
    g["memory_error"] = g.predicted_bytes / g.measured_bytes - 1
    if "advice_model_ns" in g:
        g["advice_ns"], g["advice_low"], g["advice_high"] = _intervals(
            g, model_error.ERROR_RULE, seed, of="advice")
        g = advice_errors(g)
    return g[[c for c in COLUMNS if c in g] + [c for c in g if c not in COLUMNS]]


def advice_errors(g):
    """`g` with the advice's error, coverage and memory error beside its measurement."""
    return g.assign(advice_error=g.advice_ns / g.measured_ns - 1,
                    advice_covered=(g.advice_low <= g.measured_ns)
                    & (g.measured_ns <= g.advice_high),
                    advice_memory_error=g.advice_bytes / g.measured_bytes - 1)


def interval_score(low, high, measured, coverage: float = COVERAGE):
    """Gneiting and Raftery's interval score on the log scale (JASA 2007, eq. 43): the
    interval's width plus 2 / alpha times how far the measurement falls outside it.
    Lower is better; it rewards a narrow interval only where the measurement stays in."""
    a = 1 - coverage
    lo, hi, y = (np.log(np.asarray(x, float)) for x in (low, high, measured))
    return (hi - lo) + 2 / a * np.maximum(lo - y, 0) + 2 / a * np.maximum(y - hi, 0)


def scores(grid, on: str = "advice", targets: dict = TARGETS):
    """Per design and overall: points, coverage, median |error| of time and memory, median
    half-width (a fraction of the prediction), the model's own coverage and error, and
    whether each of `targets` (the grid's, docs/advisor_calibration.md) is met. `on`:
    "advice", what labkit.advise answers (the headline), or "predicted", the step-fed
    diagnosis."""
    if on not in SCORED:
        raise ValueError(f"on must be one of {', '.join(SCORED)}; got {on!r}")
    if on == "advice":
        return _scores_of_advice(grid, targets)
    need = {"design", "predicted_ns", "predicted_low", "predicted_high", "measured_ns",
            "predicted_bytes", "measured_bytes"}
    if missing := need - set(grid.columns):
        raise ValueError(f"grid lacks the columns {sorted(missing)}")
    g = grid
    if "covered" not in g:
        g = g.assign(error=g.predicted_ns / g.measured_ns - 1,
                     covered=(g.predicted_low <= g.measured_ns) & (g.measured_ns <= g.predicted_high),
                     memory_error=g.predicted_bytes / g.measured_bytes - 1)

    def one(x) -> dict:
        half = (x.predicted_high - x.predicted_low) / 2 / x.predicted_ns
        out = {"points": len(x), "coverage": float(x.covered.mean()),
               "median_time_error": float(np.median(np.abs(x.error))),
               "median_memory_error": float(np.nanmedian(np.abs(x.memory_error))),
               "median_half_width": float(np.median(half))}
        out["interval_score"] = float(np.mean(interval_score(
            x.predicted_low, x.predicted_high, x.measured_ns)))
        if "original_low" in x:
            half0 = (x.original_high - x.original_low) / 2 / x.original_ns
            inside = (x.original_low <= x.measured_ns) & (x.measured_ns <= x.original_high)
            out["original_coverage"] = float(inside.mean())
            out["original_median_half_width"] = float(np.median(half0))
            out["original_interval_score"] = float(np.mean(interval_score(
                x.original_low, x.original_high, x.measured_ns)))
        if "model_ns" in x and "model_error" not in x:
            x = x.assign(model_error=x.model_ns / x.measured_ns - 1)
        if "model_ns" in x:
            out["model_coverage"] = float(((x.model_low <= x.measured_ns)
                                           & (x.measured_ns <= x.model_high)).mean())
            out["median_model_error"] = float(np.median(np.abs(x.model_error)))
        return out

    rows = [{"design": d, **one(x)} for d, x in g.groupby("design", sort=False)]
    rows.append({"design": "all", **one(g)})
    t = pd.DataFrame(rows)
    t["targets_met"] = ((t.coverage >= targets["coverage"])
                        & (t.median_time_error <= targets["time_error"])
                        & (t.median_memory_error <= targets["memory_error"])
                        & (t.median_half_width <= targets["half_width"]))
    return t


def _scores_of_advice(grid, targets):
    """scores() of the advice's columns, read as the step-fed ones are."""
    need = {"design", "advice_ns", "advice_low", "advice_high", "advice_model_ns",
            "advice_model_low", "advice_model_high", "advice_bytes", "measured_ns",
            "measured_bytes"}
    if missing := need - set(grid.columns):
        raise ValueError(f"grid lacks the columns {sorted(missing)}")
    as_step = {"advice_ns": "predicted_ns", "advice_low": "predicted_low",
               "advice_high": "predicted_high", "advice_model_ns": "model_ns",
               "advice_model_low": "model_low", "advice_model_high": "model_high",
               "advice_bytes": "predicted_bytes"}
    return scores(grid[list(need)].rename(columns=as_step), on="predicted", targets=targets)
