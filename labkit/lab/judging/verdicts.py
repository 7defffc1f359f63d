"""Verdicts by rules written down before measuring (data/claims.csv), never tuned after.

Each claim row says what is measured and two conditions on it: `reproduced_if` and
`contradicted_if` (Python comparisons on named values, `x` by default). A measurement
comes as a value and an interval (for timings, the repeated confidence interval over
fresh processes of labkit.lab.judging.engine; for exact counts, none); named values come as one
interval each and the rule is checked at every corner of their box. The verdict is

- `reproduced` / `contradicted` when that rule holds over the whole interval,
- `in-between` when neither holds anywhere on it: decided, the effect lies in the gap
  between the two regions, and the note says whether weaker or stronger than claimed,
- `inconclusive` when the interval straddles a bound; the row's `straddle` names the
  bound and how far the interval reaches past it, `lean` which way it leans,
- `not-measured` when a system it needs is missing (the note says what to install).

Noise (pyperf's rule: std >= 10% of the mean) does not decide anything by itself: a noisy
group already gives a wider bootstrap interval, and `judge(..., noisy=True)` flags the row
(`noisy` column, and the note says so). `never` in both rules means `not-applicable-here`;
`False` as a rule means that side can never be reached (an upper bound cannot confirm).

Amendments live beside the originals in data/claims_amendments.csv: the original rule is
never edited. A claim with an amendment is judged under both rules; the row's `verdict` is
the amended one and `original_verdict` the one under the rule written first.
"""
from __future__ import annotations

import itertools
import math
import numbers
import re
import warnings

import numpy as np
import pandas as pd
from scipy import stats as st

from labkit.core import sequential
from labkit.lab.judging import claims, rule_expr

VERDICTS = ("reproduced", "contradicted", "in-between", "inconclusive", "not-measured",
            "not-applicable-here")
# One line each, for the report's legend.
LEGEND = {
    "reproduced": "the interval lies wholly inside the claim's region",
    "contradicted": "the interval lies wholly inside the refutation's region",
    "in-between": "decided: the interval lies wholly between the two regions; the effect "
                  "is real but weaker or stronger than claimed (the note says which)",
    "inconclusive": "at the stopping rule's cap the interval still straddles a bound; the "
                    "note says which bound and which way it leans",
    "not-measured": "a system it needs is missing here; the note says what to install",
    "not-applicable-here": "needs hardware this machine lacks (AArch64 timing, hardware "
                           "counters)",
}
COLUMNS = ["claim_id", "source", "claimed_value", "measured_quantity", "measured_value",
           "verdict", "rule", "note",
           "noisy", "original_verdict", "original_rule", "method", "straddle", "lean",
           "processes", "look"]
# What produced the interval. An exact count (bytes, instructions) has none. METHOD: a
# 95% repeated confidence interval (O'Brien-Fleming spending) over fresh processes, each
# giving one statistic that pairs the sides' repeats of the same ABBA pass.
EXACT = "exact"
METHOD = "rci-obf95-paired-processes"
# The method in words, for the report and the README's "How a verdict is reached".
METHOD_TEXT = (
    f"{METHOD}: every fresh worker process measures each side of a comparison several "
    "times in ABBA order (A B B A, starting at a side drawn at random), so that the k-th "
    "repeats of two sides run a few calls apart and form a pair; the process gives one "
    "number, the median over its pairs of log(A / B). The processes, not the repeats, are "
    "the unit: the interval is taken over their numbers, at each look of a schedule "
    "written before measuring (a full run's: "
    + ", ".join(map(str, sequential.LOOKS[:3])) + " ... processes). At each look it is a "
    f"{100 * (1 - sequential.ALPHA):.0f}% repeated confidence interval, the mean of the "
    "processes' numbers plus or minus a critical value times its standard error (carried "
    "to Student's t); the critical value comes from spending the "
    f"{sequential.ALPHA:.0%} error over the looks with a Lan-DeMets function of "
    "O'Brien-Fleming type: wide at the first looks, near the fixed-sample width at the "
    "last, so that the intervals of all looks cover the truth together with probability "
    f"at least {1 - sequential.ALPHA:.0%}. A design stops at the first look where no "
    "claim's interval straddles a bound of its rule, or at its cap, and the rule is "
    "applied to the interval taken back to the measured quantity's scale (exp of a log "
    f"ratio). A decided verdict is thus wrong with probability at most "
    f"{sequential.ALPHA:.0%}, whichever look decided it.")
CONFIDENCE = 0.95
N_RESAMPLES = 4000
# Fixed seed: the interval of the same data is the same interval on every recomputation.
SEED = 20261130


def with_measured_quantity(table):
    """A verdict table (a notebook's, or the ledger) with its `measured_quantity` column,
    joined from the claims registry where the table lacks it or a row leaves it empty
    (verdict files written before the column existed)."""
    if "claim_id" not in table:
        raise ValueError("table must be a verdict table with a claim_id column")
    q = claims.measured_quantities()
    joined = table.claim_id.map(q).fillna("")
    out = table.copy()
    if "measured_quantity" in out:
        have = out["measured_quantity"].fillna("").astype(str)
        out["measured_quantity"] = have.where(have != "", joined)
    else:
        at = list(out.columns).index("claimed_value") + 1 if "claimed_value" in out \
            else len(out.columns)
        out.insert(at, "measured_quantity", joined)
    return out


def _eval(expr: str, values: dict) -> float | bool:
    try:
        return rule_expr.evaluate(expr, values)
    except ZeroDivisionError:
        return float("nan")


def _holds(rule: str, values: dict) -> bool:
    return bool(_eval(rule, values))


def _corners(value: dict, low: dict, high: dict, cuts=None) -> list[dict]:
    """The centre and every corner of the box the named intervals span; with `cuts`
    (name -> the numbers a rule compares that name with), also the points at and beside each cut that
    lies inside a name's interval, so that a rule holding at both ends of an interval
    but not in its middle (x < 1 or x > 3) is seen."""
    names = list(value)
    axes = []
    for k in names:
        lo, hi = low.get(k, value[k]), high.get(k, value[k])
        vals = [lo, hi]
        for c in (cuts or {}).get(k, ()):
            if lo < c < hi:
                step = max(abs(c), 1.0) * 1e-9
                vals += [c - step, c, c + step]
        axes.append(vals)
    points = [dict(value)]
    for combo in itertools.product(*axes):
        points.append(dict(zip(names, combo)))
    return points


_ATOM = re.compile(r"^\s*(?P<a>.+?)\s*(?P<op1><=|>=|==|!=|<|>)\s*(?P<b>.+?)"
                   r"(?:\s*(?P<op2><=|>=|<|>)\s*(?P<c>.+?))?\s*$")


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def bounds_of(rule: str):
    """(expression, bound, atom text) for every comparison of an expression with a number."""
    out = []
    for atom in re.split(r"\band\b|\bor\b", rule):
        atom = atom.strip().strip("()").strip()
        atom = re.sub(r"^not\s+", "", atom)
        m = _ATOM.match(atom)
        if not m:
            continue
        a, b, c = m.group("a"), m.group("b"), m.group("c")
        if c is not None:  # a chain: 1.05 <= x <= 1.5
            for num in (a, c):
                if _number(num) is not None:
                    out.append((b, _number(num), atom))
        elif _number(b) is not None and _number(a) is None:
            out.append((a, _number(b), atom))
        elif _number(a) is not None and _number(b) is None:
            out.append((b, _number(a), atom))
    return out


def straddles(rule: str, points: list[dict], seen: set | None = None) -> list[str]:
    """For each bound of `rule` that the measured points lie on both sides of: which
    bound, and how far the interval reaches below and above it. `seen` collects the
    (expression, bound) pairs already named, so a bound both rules share is named once."""
    out = []
    seen = set() if seen is None else seen
    for expr, bound, atom in bounds_of(rule):
        if (expr, bound) in seen:
            continue
        try:
            vals = [float(_eval(expr, p)) for p in points]
        except (ValueError, TypeError):
            continue
        vals = [v for v in vals if not math.isnan(v)]
        if not vals:
            continue
        lo, hi = min(vals), max(vals)
        if lo < bound < hi or (lo == bound < hi) or (lo < bound == hi):
            seen.add((expr, bound))
            out.append(f"{expr} in [{lo:.3g}, {hi:.3g}] straddles the bound {bound:g} of "
                       f"`{atom}`: {bound - lo:.3g} below it, {hi - bound:.3g} above")
    return out


def _missing(points: list[dict]) -> list[str]:
    return sorted({k for p in points for k, v in p.items() if isinstance(v, float)
                   and math.isnan(v)})


def _direction(reproduced_if: str, points: list[dict], null: float | None) -> str:
    """Where an interval in the gap lies against the claimed region: smaller or larger
    than claimed and, against the null (1 for a ratio, 0 otherwise), weaker or stronger."""
    if len(points[0]) != 1 or null is None:
        return "between the claimed region and the contradicted one"
    (name,) = points[0]
    vals = [float(p[name]) for p in points]
    lo, hi = min(vals), max(vals)
    bounds = [b for e, b, _ in bounds_of(reproduced_if) if e.strip() == name]
    if not bounds:
        return "between the claimed region and the contradicted one"
    nearest = min(bounds, key=lambda b: min(abs(b - lo), abs(b - hi)))
    side = "smaller" if hi <= nearest else "larger"
    mid = (lo + hi) / 2

    def size(v):
        if null == 1:
            return abs(math.log(v)) if v > 0 else math.inf
        return abs(v - null)

    strength = "weaker" if size(mid) < size(nearest) else "stronger"
    return (f"{strength} than claimed: {name} in [{lo:.3g}, {hi:.3g}] is {side} than the "
            f"claimed region's bound {nearest:g} and outside the contradicted region")


def decide(reproduced_if: str, contradicted_if: str, value, low=None, high=None, *,
           null: float | None = None) -> dict:
    """One pair of rules at a value and its interval: a dict of `verdict`, `why` (what
    keeps it open, or what an in-between result means), `straddle` (the bounds the
    interval straddles, empty when decided) and `lean` (for an inconclusive verdict:
    'not reproduced', 'not contradicted' or 'either way').

    reproduced / contradicted: the rule holds over the whole interval (every corner of the
    box of named intervals); in-between: neither holds anywhere on it (decided: the effect
    lies between the two regions; `null`, 1 for a ratio, says whether weaker or stronger);
    inconclusive: the interval straddles a bound."""
    as_dict = (lambda v: v if isinstance(v, dict) else {"x": v})
    value = as_dict(value)
    low = as_dict(low) if low is not None else dict(value)
    high = as_dict(high) if high is not None else dict(value)
    out = {"verdict": "inconclusive", "why": "", "straddle": "", "lean": ""}
    if reproduced_if.strip() == "never":
        return {**out, "verdict": "not-applicable-here"}
    cuts: dict = {}
    for expr, b, _ in bounds_of(reproduced_if) + bounds_of(contradicted_if):
        cuts.setdefault(expr.strip(), set()).add(b)
    points = _corners(value, low, high, cuts)
    rep = [_holds(reproduced_if, p) for p in points]
    con = [_holds(contradicted_if, p) for p in points]
    if all(rep) and not any(con):
        return {**out, "verdict": "reproduced"}
    if all(con) and not any(rep):
        return {**out, "verdict": "contradicted"}
    # A rule can decide on the parts it has (one failing part refutes); else a missing
    # part leaves the claim not measured.
    missing = _missing(points)
    if missing:
        return {**out, "verdict": "not-measured",
                "why": f"missing data: no value for {', '.join(missing)}"}
    if not any(rep) and not any(con):
        if reproduced_if.strip() == "False":
            why = (f"not contradicted: the interval lies outside `{contradicted_if}`, and "
                   "this rule can only contradict")
        else:
            why = _direction(reproduced_if, points, null)
        return {**out, "verdict": "in-between", "why": why}
    seen: set = set()
    bounds = straddles(reproduced_if, points, seen) + straddles(contradicted_if, points, seen)
    if not bounds:
        bounds = ["the interval reaches both rules' regions"]
    lean = ("not contradicted" if any(rep) and not any(con) else
            "not reproduced" if any(con) and not any(rep) else "either way")
    straddle = "; ".join(dict.fromkeys(bounds))
    return {**out, "straddle": straddle, "lean": lean,
            "why": f"leans {lean}: {straddle}"}


def _null(c: dict) -> float | None:
    """What 'no effect' is for this claim's measured quantity, to tell weaker from
    stronger: 1 for a ratio, 0 for a difference, a share or a count."""
    unit = c.get("claimed_unit", "").lower()
    return 1.0 if "ratio" in unit else 0.0


def judge(claim_id: str, value, *, low=None, high=None, measured: str | None = None,
          noisy: bool = False, note: str = "", original: dict | None = None,
          method: str = EXACT, processes: int | None = None, look: str = "") -> dict:
    """Apply a claim's written rule to a measurement.

    value, low, high: a number (bound to `x`) or a dict of named numbers, at the point
    estimate and at the two ends of its interval (low/high default to value, as for an
    exact count; NaN is missing data). noisy=True (pyperf's rule tripped on a group
    behind the value) is flagged in the row; it does not change the verdict. When the
    claim has an amendment, the original rule is applied too: to `original` (a dict with
    value, low, high and optionally measured) if the amendment measures something else,
    else to the same value. method, processes and look say what produced the interval
    (labkit.lab.judging.engine). Returns one verdict-table row."""
    c = claims.claim(claim_id)

    if not isinstance(noisy, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"noisy must be a bool, not {type(noisy).__name__}")
    noisy = bool(noisy)
    for name, v in (("value", value), ("low", low), ("high", high)):
        if not (v is None and name != "value") and not _is_measure(v):
            raise TypeError(f"{name} must be a number or a dict of named numbers, not {v!r}")
    if original is not None and (not isinstance(original, dict) or "value" not in original):
        raise TypeError("original must be a dict with at least a 'value' (and low, high)")
    d = decide(c["reproduced_if"], c["contradicted_if"], value, low, high, null=_null(c))
    notes = [n for n in (d["why"], note) if n]
    if noisy:
        notes.append("noisy (std >= 10% of the mean in a group behind it; the interval "
                     "carries it, the verdict is not vetoed)")
    rule = claims.rule_text(c["reproduced_if"], c["contradicted_if"], c["amended"])
    orig_rule = claims.rule_text(c["original_reproduced_if"], c["original_contradicted_if"])
    orig_verdict = d["verdict"]
    if c["amended"]:
        o = original or {"value": value, "low": low, "high": high}
        orig_verdict = decide(c["original_reproduced_if"], c["original_contradicted_if"],
                              o["value"], o.get("low"), o.get("high"), null=_null(c))["verdict"]
        if original is not None:
            shown = original.get("measured") or _fmt(o["value"], o.get("low"), o.get("high"))
            notes.append(f"under the original rule: {shown}")
    return {
        "claim_id": claim_id,
        "source": c["source"],
        "claimed_value": claims.claimed(c),
        "measured_quantity": c["measured_quantity"],
        "measured_value": measured if measured is not None else _fmt(value, low, high),
        "verdict": d["verdict"],
        "rule": rule,
        "note": "; ".join(notes),
        "noisy": bool(noisy),
        "original_verdict": orig_verdict,
        "original_rule": orig_rule,
        "method": method,
        "straddle": d["straddle"],
        "lean": d["lean"],
        "processes": "" if processes is None else int(processes),
        "look": look,
    }


def _is_measure(v) -> bool:
    def number(x):
        return isinstance(x, numbers.Real) and not isinstance(x, bool)

    if isinstance(v, dict):
        return bool(v) and all(isinstance(k, str) and number(x) for k, x in v.items())
    return number(v)


def cannot_measure(claim_id: str, why: str) -> dict:
    """The verdict row for a claim this run could not measure (a missing peer, one CPU):
    `not-measured`, with the reason (what to install), never a pass and never
    `inconclusive`. A claim whose rule says `never` stays `not-applicable-here`."""
    c = claims.claim(claim_id)
    na = c["reproduced_if"].strip() == "never"
    v = "not-applicable-here" if na else "not-measured"
    return {
        "claim_id": claim_id,
        "source": c["source"],
        "claimed_value": claims.claimed(c),
        "measured_quantity": c["measured_quantity"],
        "measured_value": "not measured",
        "verdict": v,
        "rule": claims.rule_text(c["reproduced_if"], c["contradicted_if"], c["amended"]),
        "note": why,
        "noisy": False,
        "original_verdict": v,
        "original_rule": claims.rule_text(c["original_reproduced_if"],
                                          c["original_contradicted_if"]),
        "method": "",
        "straddle": "",
        "lean": "",
        "processes": "",
        "look": "",
    }


def _fmt(value, low, high) -> str:
    if isinstance(value, dict):
        if isinstance(low, dict) and isinstance(high, dict):
            return ", ".join(f"{k}={v:.3g} [{low.get(k, v):.3g}, {high.get(k, v):.3g}]"
                             for k, v in value.items())
        return ", ".join(f"{k}={v:.3g}" for k, v in value.items())
    spread = f" [{low:.3g}, {high:.3g}]" if low is not None and high is not None else ""
    return f"{value:.3g}{spread}"


def _bootstrap(a, b, statistic, *, confidence: float, n_resamples: int, seed: int):
    """Point estimate and BCa interval of statistic(a, b) over independent resamples
    of a and b. Falls back to the percentile interval where BCa is undefined (every
    resample equal), and to the point itself when both samples are constant."""
    point = float(statistic(a, b, axis=-1))
    if len(a) < 2 or len(b) < 2:
        return point, -math.inf, math.inf
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return point, point, point
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = st.bootstrap((a, b), statistic, vectorized=True, paired=False,
                               method=method, confidence_level=confidence,
                               n_resamples=n_resamples, random_state=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isnan(lo) or math.isnan(hi)):
            return point, min(lo, point), max(hi, point)
    return point, -math.inf, math.inf


def _sample(x, name):
    try:
        arr = np.asarray(x, float).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers (repeats), not {type(x).__name__}") from None
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one measured repeat; got none")
    return arr


def _options(confidence, n_resamples, seed):
    if not isinstance(confidence, float) or not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be a float in [0.5, 1); got {confidence!r}")
    if not isinstance(n_resamples, int) or isinstance(n_resamples, bool) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an int of at least 100; got {n_resamples!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")


def ratio_with_spread(a, b, *, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                      seed: int = SEED) -> tuple[float, float, float]:
    """(median(a) / median(b), low, high): the ratio of the two samples' medians and its
    bootstrap BCa interval (95% by default), a and b resampled independently. The
    interval narrows as repeats are added. When b's median is at or below zero the ratio
    means nothing: (NaN or the ratio, -inf, inf); fewer than 2 repeats on a side give
    (-inf, inf) too, so no rule can hold over it."""
    _options(confidence, n_resamples, seed)
    a, b = _sample(a, "a"), _sample(b, "b")
    if np.median(b) <= 0:
        return float("nan"), -math.inf, math.inf

    def ratio(x, y, axis=-1):
        den = np.median(y, axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.median(x, axis=axis) / den

    value, lo, hi = _bootstrap(a, b, ratio, confidence=confidence, n_resamples=n_resamples,
                               seed=seed)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return value, -math.inf, math.inf
    return value, lo, hi


def difference_with_spread(a, b, *, confidence: float = CONFIDENCE,
                           n_resamples: int = N_RESAMPLES,
                           seed: int = SEED) -> tuple[float, float, float]:
    """(median(a) - median(b), low, high): the difference of medians and its bootstrap
    BCa interval (95% by default), a and b resampled independently."""
    _options(confidence, n_resamples, seed)
    a, b = _sample(a, "a"), _sample(b, "b")

    def diff(x, y, axis=-1):
        return np.median(x, axis=axis) - np.median(y, axis=axis)

    return _bootstrap(a, b, diff, confidence=confidence, n_resamples=n_resamples, seed=seed)


def table(rows: list[dict]):
    """The verdict table a notebook ends with."""
    return with_measured_quantity(pd.DataFrame(rows, columns=COLUMNS))
