"""One answer per pair of sides, decided on per-process log ratios.

Each fresh process gives one log(time of A / time of B) (labkit.lab.judging.engine.log_ratios).
While measuring, each pair is judged at every look of the schedule at level alpha / k
(Bonferroni over the k pairs) with the repeated confidence interval of
labkit.core.sequential; a pair's answer is taken at the first look that decides it
(labkit.lab.judging.engine.first_decided_look), else at the last. Across pairs Holm's
step-down procedure then says which differ, in the rounds labkit.lab.registry.effects uses:
with m pairs not yet found to differ, each whose interval at alpha / m excludes 1 differs.
The repeated confidence intervals cover the truth at every look together, so a pair's
interval at the look it stopped at is valid whatever stopped it.

A pair not found to differ is "no difference within ±margin" when its interval at alpha / k
lies inside [1 / (1 + margin), 1 + margin], else undecided, leaning the way its estimate
points. A percentage "faster" is a speed ratio: A is x% faster when B takes (1 + x) times
A's time.
"""
from __future__ import annotations

import math

import numpy as np

from labkit.core import sequential
from labkit.errors import ParameterError
from labkit.lab.judging import engine

MARGIN = 0.05
FASTER, SLOWER, SAME, UNDECIDED = "faster", "slower", "no difference", "undecided"


def check_margin(margin) -> float:
    """The margin as a fraction in (0, 1)."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) \
            or not 0 < margin < 1 or math.isnan(margin):
        raise ParameterError("margin", f"must be a fraction in (0, 1) (0.05 for ±5%); "
                             f"got {margin!r}")
    return float(margin)


def classify(low: float, high: float, margin: float) -> str:
    """What an interval of log(A / B) says on its own: A faster, slower, the same within
    the margin, or undecided."""
    if high < 0:
        return FASTER
    if low > 0:
        return SLOWER
    bound = math.log1p(margin)
    if -bound <= low and high <= bound:
        return SAME
    return UNDECIDED


def _first_look(values, looks, level: float, margin: float) -> int:
    """Processes at the first look whose interval at `level` decides the pair (the last
    look's count when none does; 0 with fewer than 2 processes)."""

    def decide(v, lo, hi):
        said = classify(math.log(lo) if lo > 0 else -math.inf,
                        math.log(hi) if hi > 0 else -math.inf, margin)
        return {"verdict": "inconclusive" if said == UNDECIDED else said}

    found = engine.first_decided_look({"x": values}, looks, decide, alpha=level)
    return 0 if found is None else found[2]


def decide(stats: dict, looks, *, alpha: float = sequential.ALPHA,
           margin: float = MARGIN) -> list[dict]:
    """stats: {(A, B): per-process log(A / B), in process order (NaN where the process did
    not measure both)}. Returns one answer per pair, in order: a, b, outcome (FASTER:
    A is faster; SLOWER; SAME; UNDECIDED), ratio (A / B time) with low/high at the level
    judged, level, processes, leaning, and text."""
    margin = check_margin(margin)
    looks = tuple(looks)
    pairs = list(stats)
    k = len(pairs)
    if not k:
        return []
    base = alpha / k
    cut = {p: np.asarray(stats[p], float) for p in pairs}
    cut = {p: v[:_first_look(v, looks, base, margin)] for p, v in cut.items()}

    def interval(p, level):
        m, lo, hi, _ = sequential.interval(cut[p], looks, level)
        return m, lo, hi

    differs, left = {}, list(pairs)
    while left:  # Holm's rounds
        level = alpha / len(left)
        judged = {p: interval(p, level) for p in left}
        hit = [p for p, (_, lo, hi) in judged.items() if lo > 0 or hi < 0]
        differs.update({p: (judged[p], level) for p in hit})
        if not hit:
            break
        left = [p for p in left if p not in differs]
    out = []
    for p in pairs:
        (m, lo, hi), level = differs.get(p, (interval(p, base), base))
        # Holm's first round is at alpha / k: an interval that excludes 1 there differs.
        said = classify(lo, hi, margin)
        n = int(np.isfinite(cut[p]).sum())
        row = {"a": p[0], "b": p[1], "outcome": said, "ratio": _exp(m), "low": _exp(lo),
               "high": _exp(hi), "level": level, "processes": n, "cap": looks[-1],
               "leaning": None if said != UNDECIDED or math.isnan(m) or m == 0 else
               (p[0] if m < 0 else p[1]) + " faster",
               "margin": margin,
               "method": f"holm over {k} pair{'s' * (k != 1)}; repeated confidence intervals "
                         f"over fresh processes (labkit.core.sequential), margin ±{margin:.0%}"}
        row["text"] = text(row)
        out.append(row)
    return out


def _exp(v: float) -> float:
    if math.isnan(v):
        return math.nan
    return 0.0 if v < -700 else math.inf if v > 700 else math.exp(v)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _gain(ratio: float) -> float:
    """How much faster A is than B when A takes `ratio` times B's time."""
    return 1 / ratio - 1 if ratio > 0 else math.inf


def text(row: dict) -> str:
    """The answer as a person reads it."""
    a, b, r, lo, hi = row["a"], row["b"], row["ratio"], row["low"], row["high"]
    said, n = row["outcome"], row["processes"]
    tail = f"({n} processes, {row['a']}/{row['b']} time = {r:.3g} [{lo:.3g}, {hi:.3g}])"
    if said == FASTER:
        return (f"{a} is faster than {b} by {_pct(_gain(r))} [{_pct(_gain(hi))}, "
                f"{_pct(_gain(lo))}] {tail}")
    if said == SLOWER:
        return f"{b} is faster than {a} by {_pct(r - 1)} [{_pct(lo - 1)}, {_pct(hi - 1)}] {tail}"
    if said == SAME:
        return f"no difference within ±{row['margin']:.0%} between {a} and {b} {tail}"
    lean = f", leaning {row['leaning']}" if row.get("leaning") else ""
    where = "at the cap" if n >= row["cap"] else f"at {n} of {row['cap']} processes (time budget)"
    return f"undecided {where}{lean} {tail}"
