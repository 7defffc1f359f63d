"""Machine effects, decided: does a claim's value really differ between two machines?

A claim judged on one per-process statistic (the log of a ratio, say -O3 / -O2, one per
fresh process) has on each machine a set of independent processes. The machine effect is
the difference of the two machines' means on the log scale, read back as a ratio of
ratios (machine A's ratio over machine B's). Its interval takes, as the verdicts do, the
repeated-confidence critical value of labkit.core.sequential at the look each machine
stopped at (the wider of the two: each machine's processes were collected under that
stopping rule), with Welch's standard error of the difference.

Across comparisons (claims x machine pairs) the error rate is held by Holm's step-down
procedure (METHOD), in its form without p-values: with m comparisons not yet rejected,
every one whose interval at alpha / m excludes 1 is rejected, and again with the new m,
until a round rejects none. That is Holm's procedure exactly (a p-value is at most alpha / m
when, and only when, the interval at alpha / m excludes 1, the critical value being
monotone in alpha), and it needs critical values only at the levels alpha / m, each
computed once (_critical), where ordering by p-values needed a root search in alpha per
comparison. A comparison rejected in the round of m is shown at level alpha / m (Holm's
sequential form would show the second rejected of that round at alpha / (m - 1), and so
on: a slightly narrower interval). A comparison
rejected there is a "machine effect"; one that is not is "no machine effect (within ±m%)"
when its interval at alpha / k (Bonferroni, Holm's most demanding level) lies inside
[1/(1+m), 1+m], and "undecided" otherwise. tests/test_registry.py calibrates this on
simulated machines of known truth.

The statistic is the rule's own: the claim's rule (labkit.lab.judging.rules) runs on the
machine's runs and the per-process values it hands the engine are the ones compared.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from labkit.core import sequential
from labkit.lab.judging import engine, rules

METHOD = "holm"
METHODS = ("holm", "bonferroni")
MARGIN = 0.05  # "no machine effect" means within ±5% (a ratio of ratios in [1/1.05, 1.05])
EFFECT, NO_EFFECT, UNDECIDED = "machine effect", "no machine effect", "undecided"


def rule_statistic(claim_id: str, runs) -> tuple:
    """(per-process log values, looks) the claim's rule judges on these runs; ValueError
    for a claim not judged on one log-scale statistic per process."""
    if claim_id not in rules.RULES:
        raise ValueError(f"claim_id must be one of {sorted(rules.RULES)}; got {claim_id!r}")
    with engine.capture() as seen:  # what the rule hands the engine
        rules.RULES[claim_id][0](runs)
    seen = [s for s in seen if s["claim_id"] == claim_id]
    if not seen:
        raise ValueError(f"claim_id {claim_id}: its rule judged no per-process statistic on "
                         "these runs (a side missing, or an exact count)")
    stats, scales = seen[-1]["stats"], seen[-1]["scales"]
    if len(stats) != 1 or seen[-1]["combine"] or any(scales.get(k, "log") != "log"
                                                     for k in stats):
        raise ValueError(f"claim_id {claim_id}: judged on {len(stats)} statistics or a "
                         "combination of them, not one ratio per process: no ratio of ratios")
    (values,) = stats.values()
    return np.asarray(values, float), seen[-1]["looks"]


def compare(a, b, looks_a, looks_b, alpha: float) -> dict:
    """The difference of means of two machines' per-process log statistics, with its
    interval at level alpha: {d, low, high, z, n_a, n_b} (log scale)."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return {"d": math.nan, "low": -math.inf, "high": math.inf, "z": 0.0,
                "n_a": int(a.size), "n_b": int(b.size)}
    d = float(a.mean() - b.mean())
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    c = max(_critical(int(a.size), tuple(looks_a), float(alpha)),
            _critical(int(b.size), tuple(looks_b), float(alpha)))
    z = abs(d) / se if se > 0 else math.inf
    return {"d": d, "low": d - c * se, "high": d + c * se, "z": z,
            "n_a": int(a.size), "n_b": int(b.size)}


def decide(comparisons: list[dict], *, alpha: float = sequential.ALPHA, margin: float = MARGIN,
           method: str = METHOD) -> list[dict]:
    """Decide each comparison ({a, b, looks_a, looks_b, ...}: per-process log statistics
    of two machines) together: `outcome`, `ratio` with `low`/`high` (A's ratio over B's) at
    the level it was judged, and `method`."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if not 0 < margin < 1:
        raise ValueError(f"margin must be a fraction in (0, 1); got {margin!r}")
    k = len(comparisons)
    base = [compare(c["a"], c["b"], c["looks_a"], c["looks_b"], alpha / max(k, 1))
            for c in comparisons]
    effect, left = {}, list(range(k))
    while left:  # Holm's rounds (the module's docstring); Bonferroni: one round at alpha / k
        level = alpha / len(left) if method == "holm" else alpha / k
        judged = {i: compare(comparisons[i]["a"], comparisons[i]["b"], comparisons[i]["looks_a"],
                             comparisons[i]["looks_b"], level) for i in left}
        hit = [i for i, r in judged.items() if r["low"] > 0 or r["high"] < 0]
        effect.update({i: (judged[i], level) for i in hit})
        if not hit or method != "holm":
            break
        left = [i for i in left if i not in effect]
    bound = math.log1p(margin)
    out = []
    for i, c in enumerate(comparisons):
        r, level = effect.get(i, (base[i], alpha / max(k, 1)))
        if i in effect:
            outcome = EFFECT
        elif -bound <= r["low"] and r["high"] <= bound:
            outcome = f"{NO_EFFECT} (within ±{margin:.0%})"
        else:
            outcome = UNDECIDED
        extra = {key: v for key, v in c.items() if key not in ("a", "b", "looks_a", "looks_b")}
        out.append({**extra, "outcome": outcome, "ratio": _exp(r["d"]), "low": _exp(r["low"]),
                    "high": _exp(r["high"]), "level": level, "processes": (r["n_a"], r["n_b"]),
                    "method": f"{method} over {k} comparison{'s' * (k != 1)}; repeated "
                    f"confidence intervals (labkit.core.sequential), margin ±{margin:.0%}"})
    return out


@functools.lru_cache(maxsize=4096)
def _critical(n: int, looks: tuple, alpha: float) -> float:
    """sequential.critical_value, kept: a decision asks for the same few (processes, looks,
    level) many times, and each new level costs a boundary computation."""
    return sequential.critical_value(n, looks, alpha)


def _exp(v: float) -> float:
    if math.isnan(v):
        return math.nan
    return 0.0 if v < -700 else math.inf if v > 700 else math.exp(v)


def between(runs_by_machine: dict, claim_ids, *, alpha: float = sequential.ALPHA,
            margin: float = MARGIN, method: str = METHOD) -> list[dict]:
    """Machine effects of each claim between every pair of machines: runs_by_machine maps
    a machine's label to {notebook: its verdict runs}; a claim the rule cannot reduce to
    one ratio per process on a machine is left out for that machine."""
    comparisons = []
    for claim_id in claim_ids:
        notebook = rules.RULES[claim_id][1][0].removesuffix("_verdict_runs")
        have = {}
        for label, runs in runs_by_machine.items():
            frame = runs.get(notebook)
            if frame is None or frame.empty:
                continue
            try:
                have[label] = rule_statistic(claim_id, frame)
            except ValueError:
                continue
        for la, lb in itertools.combinations(sorted(have), 2):
            comparisons.append({"claim_id": claim_id, "machine_a": la, "machine_b": lb,
                                "a": have[la][0], "looks_a": have[la][1],
                                "b": have[lb][0], "looks_b": have[lb][1]})
    return decide(comparisons, alpha=alpha, margin=margin, method=method)


def differing(rows, runs) -> list:
    """Claims with a rule whose verdicts differ between machines that carry runs (rows:
    query.claims; runs: query.verdict_runs)."""
    if rows.empty:
        return []
    rows = rows[rows.label.isin(runs)]
    n = rows.groupby("claim_id").verdict.nunique()
    return [c for c in n[n > 1].index if c in rules.RULES]


def line(r: dict) -> str:
    """One decision as a person reads it."""
    return (f"{r['claim_id']}: {r['outcome']}: {r['machine_a']} / {r['machine_b']} = "
            f"{r['ratio']:.3g} [{r['low']:.3g}, {r['high']:.3g}] (ratio of the machines' "
            f"ratios; {r['processes'][0]} and {r['processes'][1]} processes; {r['method']})")
