"""Medians and spread over repeats, pyperf's rule for when a result is too noisy to trust,
and net figures (a loop's time less its baseline's) that are never shown negative."""
from __future__ import annotations
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

# pyperf warns when the standard deviation is 10% of the mean or more.
NOISY_CV = 0.10
# Columns carried into a summary row when they are the same for the whole group.
_KEPT = ("kind", "stack_size", "machine_id", "cpu_model", "tsc_ghz", "compiler", "opt_level")


def summarize(df, by=("entry",), value: str = "ns_per_switch"):
    """One row per group: repeats, median, quartiles, IQR, min, max, mean, std, coefficient
    of variation, the median of ticks per switch if present, and a `noisy` flag (std >= 10%
    of the mean, pyperf's rule). The metadata columns that are constant in a group are kept."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame of measured rows (as labkit.measure "
                        f"returns), not {type(df).__name__}")
    if not isinstance(by, (str, list, tuple)):
        raise TypeError(f"by must be a column name or a list of them, not {type(by).__name__}")
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [*by, value] if c not in df.columns]
    if missing:
        raise ValueError(f"by and value must name columns of df; missing {missing}, "
                         f"df has {list(df.columns)[:12]}{' ...' if len(df.columns) > 12 else ''}")
    rows = []
    for key, g in df.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        v = g[value].astype(float)
        mean, std = v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0
        q1, med, q3 = v.quantile([0.25, 0.5, 0.75])
        row = dict(zip(by, key))
        row.update({
            "repeats": len(v),
            "median": med,
            "q1": q1,
            "q3": q3,
            "iqr": q3 - q1,
            "min": v.min(),
            "max": v.max(),
            "mean": mean,
            "std": std,
            "cv": std / mean if mean else float("nan"),
        })
        if value == "ns_per_switch" and "ticks_per_switch" in g:
            row["median_ticks"] = g["ticks_per_switch"].median()
        row["noisy"] = bool(abs(std) >= NOISY_CV * abs(mean)) if mean else True
        for col in _KEPT:
            if col in g and col not in row and g[col].nunique(dropna=False) == 1:
                row[col] = g[col].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)


def group_quartiles(df, by, cols):
    """Per group of `by`: `<col>_q1` and `<col>_q3` of each column of `cols` over repeats."""
    import pandas as pd

    g = df.groupby(list(by), sort=False)
    return pd.concat([g[c].quantile(q).rename(f"{c}_{name}") for c in cols
                      for q, name in ((0.25, "q1"), (0.75, "q3"))], axis=1).reset_index()


def noise_warnings(summary) -> list[str]:
    """pyperf-style warnings, one per noisy group, to print before the results."""
    # The group keys are the columns before "repeats" (see summarize).
    keys = list(summary.columns[:list(summary.columns).index("repeats")]) \
        if "repeats" in summary.columns else list(summary.columns[:1])
    out = []
    for _, r in summary.iterrows():
        if r.get("noisy"):
            label = ", ".join(f"{k}={r[k]}" for k in keys)
            out.append(
                f"WARNING: {label}: std dev is {100 * abs(r['cv']):.0f}% of the mean "
                f"(>= {100 * NOISY_CV:.0f}%): the result may be unstable; "
                "run more repeats or on a quieter machine"
            )
    return out


def quartiles(values) -> tuple[float, float, float]:
    """(median, q1, q3) of a sample: what a figure's bar shows (scatter, not uncertainty)."""
    import numpy as np

    v = np.asarray(values, float).ravel()
    if v.size == 0:
        raise ValueError("values must hold at least one repeat; got none")
    q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    return float(med), float(q1), float(q3)


def is_noisy(values) -> bool:
    """pyperf's rule on one sample: std >= 10% of |mean| (a single repeat is not noisy)."""
    import numpy as np

    v = np.asarray(values, float).ravel()
    if v.size < 2:
        return False
    mean = v.mean()
    return bool(mean == 0 or v.std(ddof=1) >= NOISY_CV * abs(mean))


def floor_net(raw, baseline):
    """Per row: (net, below) with net = raw - baseline floored at 0 and below True where
    the difference was <= 0. A single difference of two noisy times has no interval, so
    one that comes out negative says only "too small to see here"; the floor keeps the
    median of many rows what it was whenever that median is positive (a median commutes
    with a monotone map). Works on numbers and on numpy/pandas arrays alike."""
    import numpy as np

    d = np.asarray(raw, float) - np.asarray(baseline, float)
    if np.isnan(d).any():
        raise ValueError("raw and baseline must be numbers, not NaN")
    net, below = np.maximum(d, 0.0), d <= 0
    return (float(net), bool(below)) if d.ndim == 0 else (net, below)


def net(raw, baseline, *, per=1.0) -> dict:
    """The net of a loop over its baseline from paired samples (raw[i] and baseline[i]
    measured together, in one process, one right after the other), divided by `per`
    (switches, pairs, ...): the median of the paired differences with their quartiles
    as its interval, never negative.

    Returns median, low, high (floored at 0), resolved (the whole interval above 0),
    bound (when not resolved: the net is below this; the interval's upper end, or its
    width when the whole interval is below 0) and the raw and baseline medians."""
    import numpy as np

    r, b = np.asarray(raw, float).ravel(), np.asarray(baseline, float).ravel()
    if r.size == 0 or r.size != b.size:
        raise ValueError(f"raw and baseline must be paired samples of the same length >= 1; "
                         f"got {r.size} and {b.size}")
    if np.isnan(r).any() or np.isnan(b).any():
        raise ValueError("raw and baseline must be numbers, not NaN")
    if isinstance(per, bool) or not np.isscalar(per) or not per > 0:
        raise ValueError(f"per must be a number > 0, got {per!r}")
    d = (r - b) / per
    med, q1, q3 = quartiles(d)
    resolved = q1 > 0
    bound = 0.0 if resolved else float(max(q3, q3 - q1, 0.0))
    return {"median": max(med, 0.0), "low": max(q1, 0.0), "high": max(q3, 0.0),
            "resolved": bool(resolved), "bound": bound, "repeats": int(d.size),
            "raw": float(np.median(r) / per), "baseline": float(np.median(b) / per)}


def share(total, part_without) -> dict:
    """The share of `total` that is not in `part_without` (the same work measured
    without the thing whose share is asked), from paired samples: median and quartiles
    of (total - part) / total per pair, each clipped into [0, 1]; resolved and bound as
    in `net`."""
    import numpy as np

    t, w = np.asarray(total, float).ravel(), np.asarray(part_without, float).ravel()
    if t.size == 0 or t.size != w.size:
        raise ValueError(f"total and part_without must be paired samples of the same length "
                         f">= 1; got {t.size} and {w.size}")
    if not (t > 0).all():
        raise ValueError("total must be > 0 in every pair")
    med, q1, q3 = quartiles((t - w) / t)
    clip = lambda v: float(min(max(v, 0.0), 1.0))  # noqa: E731
    resolved = q1 > 0
    return {"median": clip(med), "low": clip(q1), "high": clip(q3), "resolved": bool(resolved),
            "bound": 0.0 if resolved else clip(max(q3, q3 - q1, 0.0)), "repeats": int(t.size)}


def net_text(figure: dict, unit: str = "ns", *, scale: float = 1.0, digits: int = 3) -> str:
    """A net figure (`net` or `share`) for a table: 'median [low, high] unit', or
    'below resolution (< bound unit)' when its interval reaches 0."""
    def g(v):
        return f"{v * scale:.{digits}g}"

    sep = "" if unit == "%" else " "
    if not figure["resolved"]:
        if figure["bound"] == 0:
            return f"0{sep}{unit} (no difference seen)"
        return f"below resolution (< {g(figure['bound'])}{sep}{unit})"
    return f"{g(figure['median'])} [{g(figure['low'])}, {g(figure['high'])}]{sep}{unit}"
