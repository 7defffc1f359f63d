"""The row claims of the article tables (C000.2a ...): each judged by its rule in
data/claims.csv from the data its own notebook wrote, and saved for the ledger."""
from __future__ import annotations

import math

import numpy as np

from labkit.core import results
from labkit.lab import experiment
from labkit.lab.experiment import COROUTINE_MEMORY, ECHO_SERVERS
from labkit.lab.judging import claims, ledger, rules, verdicts
from labkit.lab.report.articles.anatomy import _anatomy
from labkit.lab.report.articles.measured import STRATEGIES, _csv, _echo, _mem, _noisy, _reuse_ratio


def _judge(cid: str, r: tuple, *, noisy: bool = False, note: str = "", why: str = "") -> dict:
    m, lo, hi = r
    if m is None or math.isnan(m):
        return verdicts.cannot_measure(cid, why or "no data for it in this run")
    if math.isinf(lo) or math.isinf(hi) or math.isnan(lo) or math.isnan(hi):
        lo = hi = None
        noisy = True
    return verdicts.judge(cid, float(m), low=None if lo is None else float(lo),
                          high=None if hi is None else float(hi), noisy=noisy, note=note)


def _j_anatomy(cid):
    a = _anatomy()
    what = "stores" if cid == "C000.6a" else "loads"
    if not a:
        return verdicts.cannot_measure(cid, "objdump or Boost.Context's library is missing")
    return verdicts.judge(cid, float(a[what]), note=f"counted in {a['library']}'s "
                          f"jump_fcontext ({a['instructions']} instructions)")


def _j_allocs():
    d = _csv(ECHO_SERVERS.data)
    s = {k: _echo(d, k) for k in ("cxx20_pool_sym", "callback_epoll", "cxx20_new")}
    if any(v is None or not len(v) for v in s.values()):
        return verdicts.cannot_measure("C001.1b", "an echo server is missing from this run")
    plain = s["cxx20_new"].allocs_per_msg.median()
    others = max(s["callback_epoll"].allocs_per_msg.median(),
                 s["cxx20_pool_sym"].allocs_per_msg.median())
    x = int(plain > 0 and plain >= 10 * others)
    return verdicts.judge("C001.1b", x, measured=f"x={x}: allocations per message plain "
                          f"{plain:.3g}, callbacks and optimised at most {others:.3g}")


def _j_mem(cid):
    st = next(s for s in STRATEGIES if s[6] == cid)
    d = _csv(COROUTINE_MEMORY.data)
    a, b = _mem(d, *st[1]), _mem(d, "conn256", "heap")
    if a is None or b is None:
        return verdicts.cannot_measure(cid, f"no run of {st[1][0]} frames from "
                                       f"{st[1][1]!r} in notebook 07b's data")

    r = np.asarray(a, float)[:, None] / np.asarray(b, float)[None, :]
    return _judge(cid, (float(np.median(a) / np.median(b)), float(r.min()), float(r.max())),
                  noisy=_noisy(a, b),
                  note=f"RSS of 1M suspended {st[1][0]}/{st[1][1]} over conn256/heap; resident "
                       "bytes are near exact: the spread is the range over repeats")


def _j_reuse():
    """C004.1d: the reuse design (P reused coroutines serving n connections) over default
    new for the same n; resident bytes, so the spread is the range over repeats."""
    r, lo, hi, how = _reuse_ratio()
    if math.isnan(r):
        return verdicts.cannot_measure("C004.1d", how)
    d = _csv(COROUTINE_MEMORY.data)
    a, b = _mem(d, "conn192", "pool"), _mem(d, "conn256", "heap")
    original = None
    if a is not None and b is not None and len(a) and len(b):
        o = np.asarray(a, float)[:, None] / np.asarray(b, float)[None, :]
        original = {"value": float(np.median(a) / np.median(b)), "low": float(o.min()),
                    "high": float(o.max()),
                    "measured": f"1M suspended conn192/pool over conn256/heap = "
                                f"{np.median(a) / np.median(b):.3g}"}
    return verdicts.judge("C004.1d", float(r), low=float(lo), high=float(hi),
                          note="RSS of " + how + "; resident bytes are near exact: the spread "
                               "is the range over repeats", original=original)


def _from_design(cid):
    """A row claim its notebook's verdict design decides (labkit.lab.judging.rules),
    recomputed from the saved runs."""
    row = rules.recompute(cid)
    if row is None:
        return verdicts.cannot_measure(cid, "its notebook's verdict design has not run")
    return row


# Every row claim this module judges (the other claims come from their notebook's
# verdict file): claim id -> a function of the data CSVs.
ROW_JUDGES = {
    **{c: (lambda c=c: _from_design(c)) for c in (
        "C000.2a", "C000.2b", "C000.2c", "C000.2d", "C000.3a", "C000.4a", "C000.7a", "C001.1a",
        "C001.1c", "C003.3a", "C004.1e", "C004.1f", "C004.1g", "C004.1h")},
    "C000.6a": lambda: _j_anatomy("C000.6a"),
    "C000.6b": lambda: _j_anatomy("C000.6b"),
    "C000.6c": lambda: verdicts.cannot_measure(
        "C000.6c", "needs branch-miss counters (perf), which this VM does not expose"),
    "C001.1b": _j_allocs,
    **{c: (lambda c=c: _j_mem(c)) for c in ("C004.1a", "C004.1b", "C004.1c")},
    "C004.1d": _j_reuse,
}


def article_verdicts(notebook: str):
    """The verdict table of the row claims (ROW_JUDGES) that `notebook` judges,
    judged from the data that notebook wrote: what its 'article's table' section saves
    as data/<notebook>_article_verdicts.csv for the ledger."""
    if not isinstance(notebook, (str, experiment.Experiment)):
        raise TypeError(f"notebook must be a notebook name such as '01_stack_size', "
                        f"not {type(notebook).__name__}")
    notebook = getattr(notebook, "name", notebook)
    c = claims.registry()
    if notebook not in set(c.notebook):
        raise ValueError(f"notebook must be one of {sorted(set(c.notebook))}, "
                         f"got {notebook!r}")
    ids = [i for i in c[c.notebook == notebook].claim_id if i in ROW_JUDGES]
    return verdicts.table([ROW_JUDGES[i]() for i in ids])


def save_article_verdicts(notebook: str):
    """Judge the row claims of `notebook` and save them as
    data/<notebook>_article_verdicts.csv; returns the table."""
    t = article_verdicts(notebook)
    results.save_csv(t, experiment.of(notebook).article_verdicts)
    return t


def verdict_of(cid: str) -> dict:
    """The verdict row of one claim, as the ledger has it: judged here for a row claim,
    from both notebooks' data for a claim the ledger judges itself (ledger.JUDGED_HERE),
    otherwise read from its notebook's verdict file, or, for a claim newer than that file,
    judged by its rule on the saved data ({} when that notebook has not run).
    The row carries `measured_quantity` (joined from the registry for an older file)."""
    if cid in ROW_JUDGES:
        row = ROW_JUDGES[cid]()
    elif cid in ledger.JUDGED_HERE:
        row = rules.recompute(cid) or {}
    else:
        nb = claims.claim(cid)["notebook"]
        d = _csv(experiment.of(nb).verdicts)
        if d is not None and cid in set(d.claim_id):
            row = d[d.claim_id == cid].iloc[0].fillna("").to_dict()
        else:  # a claim newer than its notebook's verdict file: its rule on the saved data
            row = (rules.recompute(cid) if cid in rules.RULES else None) or {}
        if not row:
            return {}
    if row and not row.get("measured_quantity"):
        row = {**row, "measured_quantity": claims.measured_quantities().get(cid, "")}
    return row


def judged_on(row: dict) -> str:
    """What a verdict stands on, in one phrase: 'contradicted on 1 [0.997, 1.01] over 64
    processes' (the value and interval the rule was applied to, and the fresh processes
    behind it); an exact count says so; a claim not measured shows its verdict alone."""
    v = row.get("verdict", "") or "not-measured"
    value = str(row.get("measured_value", "") or "")
    if v in ("not-measured", "not-applicable-here") or value in ("", "not measured"):
        return v
    n = str(row.get("processes", "") or "")
    n = n[:-2] if n.endswith(".0") else n
    how = (f" over {n} processes" if n else
           " (exact count)" if row.get("method") == verdicts.EXACT else "")
    return f"{v} on {value}{how}"
