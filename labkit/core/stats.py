"""Medians and spread over repeats, and pyperf's rule for when a result is too noisy to trust."""
from __future__ import annotations

# pyperf warns when the standard deviation is 10% of the mean or more.
NOISY_CV = 0.10
# Columns carried into a summary row when they are the same for the whole group.
_KEPT = ("kind", "stack_size", "machine_id", "cpu_model", "tsc_ghz", "compiler", "opt_level")


def summarize(df, by=("kernel",), value: str = "ns_per_switch"):
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
                f"WARNING: {label}: std dev is {100 * r['cv']:.0f}% of the mean "
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


def noisy_in(summary, **where) -> list[str]:
    """The groups of a `summarize` table that are noisy, as 'key=value' labels, among the
    rows matching every column=value (or column=[values]) in `where`."""
    sel = summary
    for col, want in where.items():
        if col not in sel.columns:
            raise ValueError(f"{col} must be a column of the summary; it has {list(summary.columns)}")
        sel = sel[sel[col].isin(want if isinstance(want, (list, tuple, set)) else [want])]
    keys = list(summary.columns[:list(summary.columns).index("repeats")]) \
        if "repeats" in summary.columns else list(summary.columns[:1])
    return [", ".join(f"{k}={r[k]}" for k in keys) + f" (cv {r['cv']:.0%})"
            for _, r in sel.iterrows() if r.get("noisy")]
