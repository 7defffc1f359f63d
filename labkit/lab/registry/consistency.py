"""A bundle checked against itself: its verdict runs (one row per fresh process) against its
own measurements (the notebooks' repeats) wherever both measured the same design at the
same settings. A publisher who scales the runs and recomputes the verdicts to match passes
the recomputation; the measurements it left alone then tell on it.

Genuine bundles differ between the two by at most about one spread (the wider 10-90%
range of the two sets' log ns per switch): 1.05 on the committed data and the two
reference bundles with runs. A setting is flagged beyond SPREADS spreads and RATIO.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

SPREADS = 3.0
RATIO = 1.5
VALUE = "ns_per_switch"
MIN_ROWS = 3  # on each side: a median of fewer says little
# The columns that say what was measured (a design's settings), where both tables have them.
SETTINGS = ("entry", "kind", "pattern", "contexts", "stack_size_requested", "prefault", "build",
            "fp_control", "placement", "mode", "allocator", "every", "work", "coroutines",
            "batch", "server", "style", "backend", "connections", "message_bytes", "cpu_a",
            "cpu_b", "laps")
FLAG = "runs and measurements disagree"


def comparisons(runs, measurements):
    """One row per (notebook, settings) both tables measured with MIN_ROWS positive values:
    rows, ratio of the medians (runs / measurements), spread, and `apart` (|log ratio| in
    spreads)."""

    cols = ["notebook", "settings", "runs", "measurements", "ratio", "spread", "apart"]
    out = []
    if runs is None or measurements is None or runs.empty or measurements.empty \
            or "notebook" not in runs or "notebook" not in measurements:
        return pd.DataFrame(columns=cols)
    for nb, r in runs.groupby("notebook"):
        m = measurements[measurements.notebook == nb]
        if VALUE not in r or VALUE not in m:
            continue
        rv, mv = (pd.to_numeric(t[VALUE], errors="coerce") for t in (r, m))
        r, m = r[rv > 0].assign(_v=rv[rv > 0]), m[mv > 0].assign(_v=mv[mv > 0])
        keys = [k for k in SETTINGS if k in r and k in m and r[k].notna().any()]
        if not keys or r.empty or m.empty:
            continue
        rk, mk = _keys(r, keys), _keys(m, keys)
        for key, rg in r.groupby(rk):
            mg = m[mk == key]
            if len(rg) < MIN_ROWS or len(mg) < MIN_ROWS:
                continue
            lr, lm = np.log(rg._v.astype(float)), np.log(mg._v.astype(float))
            d = float(lr.median() - lm.median())
            spread = max(float(lr.quantile(.9) - lr.quantile(.1)),
                         float(lm.quantile(.9) - lm.quantile(.1)), 1e-9)
            out.append((nb, key, len(rg), len(mg), math.exp(d), spread, abs(d) / spread))
    return pd.DataFrame(out, columns=cols)


def _keys(df, keys):
    # As text, so 8388608.0 in one table meets 8388608 in the other.
    text = df[keys].astype(str).apply(lambda c: c.str.replace(r"\.0$", "", regex=True))
    return text.agg(" ".join, axis=1)


def flag(b: dict) -> str:
    """'' for a bundle whose runs agree with its measurements; else FLAG and the settings
    furthest apart ('runs and measurements disagree: 01_stack_size boost_fiber ... runs x5.6
    of the measurements, 25 spreads; and 1 more')."""
    c = comparisons(b.get("runs"), b.get("measurements"))
    if c.empty:
        return ""
    bad = c[(c.apart > SPREADS) & ((c.ratio > RATIO) | (c.ratio < 1 / RATIO))]
    if bad.empty:
        return ""
    worst = bad.sort_values("apart").iloc[-1]
    more = f"; and {len(bad) - 1} more" if len(bad) > 1 else ""
    return (f"{FLAG}: {worst.notebook} {worst.settings}: runs x{worst.ratio:.3g} of the "
            f"measurements, {worst.apart:.0f} spreads{more}")


__all__ = ["FLAG", "RATIO", "SPREADS", "comparisons", "flag"]
