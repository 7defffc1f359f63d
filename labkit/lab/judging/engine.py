"""The verdict engine for measured times: one statistic per fresh process, a repeated
confidence interval over processes at each look (labkit.core.sequential), and the
claim's written rule applied at the first look that decides.

A design (labkit.experiments.verdict_design) saves its runs with a `worker` column (the process)
and a `looks` column (its schedule). Repeats inside one process are not independent of
each other, so each process is reduced to one number per comparison (log_ratios: the
median of its passes' log ratios) or per entry (per_process: the median of its repeats),
and only those numbers enter the interval (Kalibera and Jones 2013).
"""
from __future__ import annotations

import contextlib
import contextvars
import math

import numpy as np
import pandas as pd

from labkit.core import sequential
from labkit.experiments import verdict_design
from labkit.lab.judging import claims, verdicts

# The open capture() lists, if any: judge() appends what it was handed to the innermost.
_CAPTURE = contextvars.ContextVar("labkit_judge_capture", default=None)

# What a per-process statistic is, and how its interval reads on the rule's scale.
SCALES = {
    "log": (math.log, math.exp),     # ratios and positive magnitudes
    "linear": (lambda v: v, lambda v: v),  # differences
}


def looks_of(runs) -> tuple[int, ...]:
    """The schedule a design recorded with its runs (the `looks` column)."""
    if "looks" in runs and runs["looks"].notna().any():
        return tuple(int(v) for v in str(runs["looks"].dropna().iloc[0]).split())
    return sequential.LOOKS


def per_process(runs, col: str = "ns_per_switch"):
    """A frame with one row per process (`worker`) and one column per side: the median
    of that process's repeats of that side, in process order (verdict_design.per_process)."""
    return verdict_design.per_process(runs, col)


def log_ratios(runs, num: str, den: str, col: str = "ns_per_switch"):
    """log(num / den) per process, in process order (the rows of `per_process`): the
    median over the process's ABBA passes of log(num's k-th repeat / den's k-th repeat).

    ABBA puts the k-th repeat of every side in the same pass, a few calls apart, and a
    shared VM's slow mode comes and goes within a process over tens of milliseconds: a
    pair shares the state of its moment, which the ratio of the two sides' medians does
    not. With one repeat per side (a round of servers) it is the plain log ratio. A pair
    with a value at or below zero has no logarithm and is left out; a process with no
    pair gives NaN."""
    verdict_design.check_runs(runs)
    workers = np.sort(runs.worker.unique())
    sub = runs[runs.side.isin([num, den])]
    if "order" in sub:
        sub = sub.sort_values(["worker", "order"], kind="stable")
    v = sub[col].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(v.where(v > 0))
    k = sub.groupby(["worker", "side"]).cumcount()
    wide = logs.set_axis([sub.worker, k, sub.side]).unstack()
    if num not in wide or den not in wide:
        return np.full(len(workers), np.nan)
    per = (wide[num] - wide[den]).groupby(level=0).median()
    return per.reindex(workers).to_numpy(float)


def _intervals(stats: dict, scales: dict, n: int, looks, alpha: float):
    value, low, high = {}, {}, {}
    each = alpha / len(stats)  # Bonferroni over the named values of one rule
    for name, arr in stats.items():
        m, lo, hi, _ = sequential.interval(arr[:n], looks, each)
        back = SCALES[scales.get(name, "log")][1]
        value[name], low[name], high[name] = _back(back, m), _back(back, lo), _back(back, hi)
    return value, low, high


def _back(fn, v):
    if math.isnan(v):
        return math.nan
    if fn is math.exp and abs(v) > 700:  # beyond a float: the interval is unbounded there
        return 0.0 if v < 0 else math.inf
    return float(fn(v))


def _default_combine(v, lo, hi):
    if len(v) > 1:
        return v, lo, hi
    (k,) = v
    return v[k], lo[k], hi[k]


def first_decided_look(stats: dict, looks, decide, *, scales: dict | None = None,
                       combine=None, alpha: float = sequential.ALPHA):
    """The sequential decision without the registry: at each look passed (the first n
    processes of `stats`), the named intervals, mapped by combine, go to decide(value,
    low, high) -> a dict with `verdict`. Returns (decision, (value, low, high), n, k) at
    the first look whose verdict is not inconclusive, else at the last; None when fewer
    than 2 processes finished."""
    scales = scales or {}
    stats = {k: np.asarray(v, float) for k, v in stats.items()}
    sizes = sequential.look_sizes(min(len(v) for v in stats.values()), looks)
    combine = combine or _default_combine
    out = None
    for k, n in enumerate(sizes):
        vlh = combine(*_intervals(stats, scales, n, looks, alpha))
        d = decide(*vlh)
        out = (d, vlh, n, k)
        if d["verdict"] != "inconclusive":
            break
    return out


@contextlib.contextmanager
def capture():
    """Within the block, each judge() call appends {claim_id, stats, looks, scales,
    combine} to the list it yields: the per-process statistics a rule judges on, for a
    caller that compares them across machines (labkit.lab.registry.effects)."""
    seen: list = []
    token = _CAPTURE.set(seen)
    try:
        yield seen
    finally:
        _CAPTURE.reset(token)


def judge(claim_id: str, stats: dict, *, looks, scales: dict | None = None, combine=None,
          measured=None, note: str = "", noisy: bool = False, original: dict | None = None,
          alpha: float = sequential.ALPHA) -> dict:
    """Judge a claim on per-process statistics, look by look (first_decided_look).

    stats: name -> per-process values (aligned, in process order) on the scale of
    `scales[name]` ("log": the interval is taken on logs and read back with exp; the
    default). combine(value, low, high) maps the named intervals onto the rule's names
    (default: they are the rule's names; one statistic is the rule's `x`). measured(value,
    low, high, n) gives the measured text. original: the same for the rule as first
    written, {"stats": ..., "combine": ..., "measured": ...}, judged at the same look.
    Returns the verdict row, with `processes` and `look`."""
    seen = _CAPTURE.get()
    if seen is not None:
        seen.append({"claim_id": claim_id, "stats": stats, "looks": tuple(looks),
                     "scales": scales or {}, "combine": combine})
    c = claims.claim(claim_id)
    null = verdicts._null(c)
    found = first_decided_look(
        stats, looks, lambda v, lo, hi: verdicts.decide(c["reproduced_if"], c["contradicted_if"],
                                                        v, lo, hi, null=null),
        scales=scales, combine=combine, alpha=alpha)
    if found is None:
        return verdicts.cannot_measure(claim_id, "fewer than 2 processes finished: an "
                                       "interval over processes needs at least 2")
    _, (value, low, high), n, k = found
    kw = {}
    if original is not None:
        ostats = {q: np.asarray(v, float)[:n] for q, v in original["stats"].items()}
        ov, olo, ohi = (original.get("combine") or combine or _default_combine)(
            *_intervals(ostats, original.get("scales", scales or {}), n, looks, alpha))
        kw["original"] = {"value": ov, "low": olo, "high": ohi,
                          "measured": original["measured"](ov, olo, ohi, n)
                          if original.get("measured") else None}
    looks = tuple(looks)
    where = f"look {k + 1} ({n} processes) of looks at {', '.join(map(str, looks))}"
    row = verdicts.judge(
        claim_id, value, low=low, high=high, noisy=noisy,
        measured=measured(value, low, high, n) if measured else None,
        note="; ".join(x for x in (note, f"95% repeated confidence interval over {n} fresh "
                                   "processes") if x),
        method=verdicts.METHOD, processes=n, look=where, **kw)
    if row["verdict"] == "inconclusive" and n < looks[-1]:
        row["note"] += (f"; stopped at {n} of {looks[-1]} processes (the time budget of "
                        "labkit.core.sequential)")
    return row


VALUE_COLUMNS = ("ns_per_switch", "ns_per_pair", "units_per_s", "qps")


def variance_components(runs):
    """Kalibera and Jones's two levels, per side of a design's runs, on the log of its
    measured value (the first of VALUE_COLUMNS it has): the variance between processes
    and within one, the costs of one more process and one more repeat (seconds), and the
    repeats per process that give the narrowest interval for the time,
    r* = sqrt(cost_process / cost_repeat * within / between). A table of text: a value
    that cannot be had says why."""
    c_proc = math.nan
    if "process_s" in runs and "call_s" in runs:
        per = runs.groupby("worker").agg(p=("process_s", "first"), c=("call_s", "sum"))
        c_proc = float((per.p - per.c).median())
    rows = []
    for side, g in runs.groupby("side", sort=False):
        col = next((c for c in VALUE_COLUMNS if c in g and g[c].notna().any()), None)
        if col is None:
            continue
        x = g[col].astype(float)
        v = np.log(x.where(x > 0))
        by = v.groupby(g.worker)
        r = float(by.size().mean())
        one = r < 2  # one repeat per process (a round of servers): no level below it
        within = math.nan if one else float(by.var(ddof=1).mean())
        spread = float(by.mean().var(ddof=1))
        between = spread if one else max(spread - within / r, 0.0)
        c_rep = float(g.call_s.median()) if "call_s" in g else math.nan
        if one:
            best = "1 (one run per process is the design)"
        elif math.isnan(c_proc) or math.isnan(c_rep):
            best = "costs not recorded"
        elif between == 0:
            best = "no process effect measured: repeats are as good as processes"
        else:
            best = f"{math.sqrt(c_proc / c_rep * within / between):.1f}"

        def text(v, why):
            return why if math.isnan(v) else f"{v:.2g}"

        rows.append({"side": side, "value": col, "processes": str(by.ngroups),
                     "repeats per process": f"{r:g}",
                     "between processes (log var)": text(between, "too few processes"),
                     "within a process (log var)": text(
                         within, "one repeat per process" if one else "not measurable"),
                     "one more process (s)": "not recorded" if math.isnan(c_proc)
                     else f"{c_proc:.2f}",
                     "one more repeat (s)": "not recorded" if math.isnan(c_rep)
                     else f"{c_rep:.3f}",
                     "best repeats per process": best})
    return pd.DataFrame(rows)
