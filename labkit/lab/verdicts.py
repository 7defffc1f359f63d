"""Verdicts by rules written down before measuring (data/claims.csv), never tuned after.

Each claim row says what is measured and two conditions on it: `reproduced_if` and
`contradicted_if` (Python comparisons on named values, `x` by default). A measurement
comes as a value and a 95% interval (a bootstrap over repeats, see `ratio_with_spread`);
named values come as one interval each and the rule is checked at every corner of their
box. The verdict is

- `reproduced` when the reproduced rule holds over the whole interval,
- `contradicted` when the contradicted rule holds over the whole interval,
- `inconclusive` otherwise; the note then names the bound the interval straddles and by
  how much it reaches past it on each side (or says that the rule can only contradict,
  or which value is missing).

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
import re

from labkit.core.results import claims_csv

VERDICTS = ("reproduced", "contradicted", "inconclusive", "not-applicable-here")
CLAIMS_CSV = claims_csv()  # the checkout's data/claims.csv, or the shipped copy
AMENDMENTS_CSV = claims_csv("claims_amendments.csv")
COLUMNS = ["claim_id", "source", "claimed_value", "measured_value", "verdict", "rule", "note",
           "noisy", "original_verdict", "original_rule", "method"]
# What produced the interval; the committed-verdicts test only recomputes rows with it.
METHOD = "bootstrap-bca95"
CONFIDENCE = 0.95
N_RESAMPLES = 4000
# Fixed seed: the interval of the same data is the same interval on every recomputation.
SEED = 20261130
_SAFE = re.compile(r"^[\sA-Za-z_0-9.<>=!()+\-*/]*$")
_NAMES = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_KEYWORDS = {"and", "or", "not", "True", "False"}
# data/claims.csv names the notebook each claim was registered to (`experiment`), and its
# rows are never edited. A notebook split in two since hands each of its claims to one
# part: registered name -> {the part: its claims}.
SPLIT = {
    "07_coroutine_frames": {
        "07a_frames_and_allocators": ("C001.2", "C004.3", "C004.4"),
        "07b_coroutine_memory": ("C004.1", "C004.2", "C004.1a", "C004.1b", "C004.1c",
                                 "C004.1d"),
    },
}


def _notebook(claim_id: str, experiment: str) -> str:
    if experiment not in SPLIT:
        return experiment
    for part, ids in SPLIT[experiment].items():
        if claim_id in ids:
            return part
    raise ValueError(f"{claim_id} is registered to {experiment}, which was split: give it "
                     "one of the parts in labkit.lab.verdicts.SPLIT")


def claims():
    """The claims registry as written before measuring: one row per claim id, and beside
    the registered `experiment` the `notebook` that judges the claim now (the same one,
    unless that notebook was split: SPLIT)."""
    import pandas as pd

    c = pd.read_csv(CLAIMS_CSV, dtype=str).fillna("")
    c["notebook"] = [_notebook(i, e) for i, e in zip(c.claim_id, c.experiment)]
    return c


def amendments():
    """The amendments (data/claims_amendments.csv): claim_id, date, reason, misreading,
    measured_quantity, reproduced_if, contradicted_if. Empty if there is no file."""
    import pandas as pd

    cols = ["claim_id", "date", "reason", "misreading", "measured_quantity",
            "reproduced_if", "contradicted_if"]
    if not AMENDMENTS_CSV.exists():
        return pd.DataFrame(columns=cols)
    return pd.read_csv(AMENDMENTS_CSV, dtype=str).fillna("")


def claim(claim_id: str, *, original: bool = False) -> dict:
    """One claim's row as a dict (ValueError for an unknown id). Unless original=True,
    an amendment's measured quantity and rules replace the original ones, and the row
    carries `amended` (date) and the original rules as `original_reproduced_if` and
    `original_contradicted_if`."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a str such as 'C002.3', not {type(claim_id).__name__}")
    c = claims()
    row = c[c.claim_id == claim_id]
    if row.empty:
        raise ValueError(f"claim_id must be one of the ids in {CLAIMS_CSV}; got {claim_id!r}")
    out = row.iloc[0].to_dict()
    out.update(amended="", original_reproduced_if=out["reproduced_if"],
               original_contradicted_if=out["contradicted_if"])
    if original:
        return out
    a = amendments()
    a = a[a.claim_id == claim_id]
    if not a.empty:
        am = a.iloc[-1]
        out["amended"] = am["date"]
        for col in ("measured_quantity", "reproduced_if", "contradicted_if"):
            if am.get(col, ""):
                out[col] = am[col]
    return out


def _check_rule(rule: str) -> None:
    if not _SAFE.match(rule):
        raise ValueError(f"rule {rule!r} has characters a rule may not use")


def _eval(expr: str, values: dict) -> float | bool:
    _check_rule(expr)
    names = set(_NAMES.findall(expr)) - _KEYWORDS
    missing = names - set(values)
    if missing:
        raise ValueError(f"rule {expr!r} needs values for {sorted(missing)}")
    env = {"True": True, "False": False, **values}
    try:
        return eval(expr, {"__builtins__": {}}, env)  # noqa: S307 - checked above
    except ZeroDivisionError:
        return float("nan")


def _holds(rule: str, values: dict) -> bool:
    return bool(_eval(rule, values))


def _corners(value: dict, low: dict, high: dict) -> list[dict]:
    """The centre and every corner of the box the named intervals span."""
    names = list(value)
    ends = [(low.get(k, value[k]), high.get(k, value[k])) for k in names]
    points = [dict(value)]
    for combo in itertools.product(*ends):
        points.append(dict(zip(names, combo)))
    return points


_ATOM = re.compile(r"^\s*(?P<a>.+?)\s*(?P<op1><=|>=|==|!=|<|>)\s*(?P<b>.+?)"
                   r"(?:\s*(?P<op2><=|>=|<|>)\s*(?P<c>.+?))?\s*$")


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def _bounds(rule: str):
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
    for expr, bound, atom in _bounds(rule):
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


def decide(reproduced_if: str, contradicted_if: str, value, low=None, high=None):
    """(verdict, why) of one pair of rules at a value and its interval; why is empty
    for a decided verdict and says what keeps it open otherwise."""
    as_dict = (lambda v: v if isinstance(v, dict) else {"x": v})
    value = as_dict(value)
    low = as_dict(low) if low is not None else dict(value)
    high = as_dict(high) if high is not None else dict(value)
    if reproduced_if.strip() == "never":
        return "not-applicable-here", ""
    points = _corners(value, low, high)
    missing = _missing(points)
    rep = all(_holds(reproduced_if, p) for p in points)
    con = all(_holds(contradicted_if, p) for p in points)
    if rep and not con:
        return "reproduced", ""
    if con and not rep:
        return "contradicted", ""
    if missing and not (rep or con):
        return "inconclusive", f"missing data: no value for {', '.join(missing)}"
    seen: set = set()
    why = straddles(reproduced_if, points, seen) + straddles(contradicted_if, points, seen)
    if not why and reproduced_if.strip() == "False":
        why = ["this rule can only contradict, and the interval does not meet "
               f"`{contradicted_if}`"]
    if not why:
        why = ["the interval lies between the two rules' regions"]
    return "inconclusive", "; ".join(dict.fromkeys(why))


def judge(claim_id: str, value, *, low=None, high=None, measured: str | None = None,
          noisy: bool = False, note: str = "", original: dict | None = None) -> dict:
    """Apply a claim's written rule to a measurement.

    value, low, high: a number (bound to `x`) or a dict of named numbers, at the point
    estimate and at the two ends of its 95% interval (low/high default to value; NaN is
    missing data). noisy=True (pyperf's rule tripped on a group behind the value) is
    flagged in the row; it does not change the verdict. When the claim has an
    amendment, the original rule is applied too: to `original` (a dict with value, low,
    high and optionally measured) if the amendment measures something else, else to the
    same value. Returns one verdict-table row."""
    c = claim(claim_id)
    import numbers

    import numpy as np

    if not isinstance(noisy, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"noisy must be a bool, not {type(noisy).__name__}")
    noisy = bool(noisy)
    for name, v in (("value", value), ("low", low), ("high", high)):
        if not (v is None and name != "value") and not _is_measure(v):
            raise TypeError(f"{name} must be a number or a dict of named numbers, not {v!r}")
    if original is not None and (not isinstance(original, dict) or "value" not in original):
        raise TypeError("original must be a dict with at least a 'value' (and low, high)")
    verdict, why = decide(c["reproduced_if"], c["contradicted_if"], value, low, high)
    notes = [n for n in (note, why) if n]
    if noisy:
        notes.insert(0, "noisy (std >= 10% of the mean in a group behind it; the interval "
                        "carries it, the verdict is not vetoed)")
    rule = f"reproduced if {c['reproduced_if']}; contradicted if {c['contradicted_if']}"
    orig_verdict, orig_rule = verdict, rule
    if c["amended"]:
        rule = f"amended {c['amended']}: {rule}"
        o = original or {"value": value, "low": low, "high": high}
        orig_verdict, orig_why = decide(c["original_reproduced_if"],
                                        c["original_contradicted_if"],
                                        o["value"], o.get("low"), o.get("high"))
        orig_rule = (f"reproduced if {c['original_reproduced_if']}; "
                     f"contradicted if {c['original_contradicted_if']}")
        if original is not None:
            shown = original.get("measured") or _fmt(o["value"], o.get("low"), o.get("high"))
            notes.append(f"under the original rule: {shown}")
    return {
        "claim_id": claim_id,
        "source": c["source"],
        "claimed_value": f"{c['claimed_value']} ({c['claimed_unit']})",
        "measured_value": measured if measured is not None else _fmt(value, low, high),
        "verdict": verdict,
        "rule": rule,
        "note": "; ".join(notes),
        "noisy": bool(noisy),
        "original_verdict": orig_verdict,
        "original_rule": orig_rule,
        "method": METHOD,
    }


def _is_measure(v) -> bool:
    import numbers

    def number(x):
        return isinstance(x, numbers.Real) and not isinstance(x, bool)

    if isinstance(v, dict):
        return bool(v) and all(isinstance(k, str) and number(x) for k, x in v.items())
    return number(v)


def cannot_measure(claim_id: str, why: str) -> dict:
    """The verdict row for a claim this run could not measure (a missing peer, one CPU):
    `inconclusive`, with the reason, never a pass. A claim whose rule says `never` stays
    `not-applicable-here`."""
    c = claim(claim_id)
    na = c["reproduced_if"].strip() == "never"
    v = "not-applicable-here" if na else "inconclusive"
    rule = f"reproduced if {c['reproduced_if']}; contradicted if {c['contradicted_if']}"
    return {
        "claim_id": claim_id,
        "source": c["source"],
        "claimed_value": f"{c['claimed_value']} ({c['claimed_unit']})",
        "measured_value": "not measured",
        "verdict": v,
        "rule": (f"amended {c['amended']}: " if c["amended"] else "") + rule,
        "note": why,
        "noisy": False,
        "original_verdict": v,
        "original_rule": (f"reproduced if {c['original_reproduced_if']}; "
                          f"contradicted if {c['original_contradicted_if']}"),
        "method": METHOD,
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
    import numpy as np
    from scipy import stats as st

    point = float(statistic(a, b, axis=-1))
    if len(a) < 2 or len(b) < 2:
        return point, -math.inf, math.inf
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return point, point, point
    for method in ("BCa", "percentile"):
        import warnings

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
    import numpy as np

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
    import numpy as np

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
    import numpy as np

    _options(confidence, n_resamples, seed)
    a, b = _sample(a, "a"), _sample(b, "b")

    def diff(x, y, axis=-1):
        return np.median(x, axis=axis) - np.median(y, axis=axis)

    return _bootstrap(a, b, diff, confidence=confidence, n_resamples=n_resamples, seed=seed)


def median_with_spread(a, *, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                       seed: int = SEED) -> tuple[float, float, float]:
    """(median(a), low, high): one sample's median and its bootstrap BCa interval."""
    import numpy as np

    _options(confidence, n_resamples, seed)
    a = _sample(a, "a")
    return _bootstrap(a, np.zeros(2), lambda x, y, axis=-1: np.median(x, axis=axis),
                      confidence=confidence, n_resamples=n_resamples, seed=seed)


def table(rows: list[dict]):
    """The verdict table a notebook ends with."""
    import pandas as pd

    return pd.DataFrame(rows, columns=COLUMNS)
