"""Verdicts by rules written down before measuring (data/claims.csv), never tuned after.

Each claim row says what is measured and two conditions on it: `reproduced_if` and
`contradicted_if` (Python comparisons on named values, `x` by default). A claim is judged
at the median and at both ends of the spread (the quartiles of the ratio over repeats):
`reproduced` only if the rule holds at all three, `contradicted` only if the opposite rule
holds at all three, and `inconclusive` otherwise: a result whose spread straddles a
bound is too noisy to judge. `never` in both rules means `not-applicable-here`.
"""
from __future__ import annotations

import re

from labkit.results import claims_csv

VERDICTS = ("reproduced", "contradicted", "inconclusive", "not-applicable-here")
CLAIMS_CSV = claims_csv()  # the checkout's data/claims.csv, or the shipped copy
_SAFE = re.compile(r"^[\sA-Za-z_0-9.<>=!()+\-*/]*$")
_NAMES = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_KEYWORDS = {"and", "or", "not"}


def claims():
    """The claims registry: one row per claim id of ../shared/CLAIMS.md."""
    import pandas as pd

    return pd.read_csv(CLAIMS_CSV, dtype=str).fillna("")


def claim(claim_id: str) -> dict:
    """One claim's row as a dict (ValueError for an unknown id)."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a str such as 'C002.3', not {type(claim_id).__name__}")
    c = claims()
    row = c[c.claim_id == claim_id]
    if row.empty:
        raise ValueError(f"claim_id must be one of the ids in {CLAIMS_CSV}; got {claim_id!r}")
    return row.iloc[0].to_dict()


def _holds(rule: str, values: dict) -> bool:
    if not _SAFE.match(rule):
        raise ValueError(f"rule {rule!r} has characters a rule may not use")
    names = set(_NAMES.findall(rule)) - _KEYWORDS
    missing = names - set(values)
    if missing:
        raise ValueError(f"rule {rule!r} needs values for {sorted(missing)}")
    return bool(eval(rule, {"__builtins__": {}}, dict(values)))  # noqa: S307 - checked above


def judge(claim_id: str, value, *, low=None, high=None, measured: str | None = None,
          noisy: bool = False, note: str = "") -> dict:
    """Apply a claim's written rule to a measurement.

    value, low, high: a number (bound to `x`) or a dict of named numbers, at the median
    and at the two ends of its spread (low/high default to value). noisy=True (pyperf's
    rule tripped) makes a would-be verdict inconclusive. Returns one verdict-table row."""
    c = claim(claim_id)
    for name, v in (("value", value), ("low", low), ("high", high)):
        if not (v is None and name != "value") and not _is_measure(v):
            raise TypeError(f"{name} must be a number or a dict of named numbers, not {v!r}")
    as_dict = (lambda v: v if isinstance(v, dict) else {"x": v})
    points = [as_dict(value)]
    points += [as_dict(v) for v in (low, high) if v is not None]
    if c["reproduced_if"].strip() == "never":
        verdict = "not-applicable-here"
    else:
        rep = all(_holds(c["reproduced_if"], p) for p in points)
        con = all(_holds(c["contradicted_if"], p) for p in points)
        if rep and not con and not noisy:
            verdict = "reproduced"
        elif con and not rep and not noisy:
            verdict = "contradicted"
        else:
            verdict = "inconclusive"
    return {
        "claim_id": claim_id,
        "source": c["source"],
        "claimed_value": f"{c['claimed_value']} ({c['claimed_unit']})",
        "measured_value": measured if measured is not None else _fmt(value, low, high),
        "verdict": verdict,
        "rule": f"reproduced if {c['reproduced_if']}; contradicted if {c['contradicted_if']}",
        "note": note,
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
    return {
        "claim_id": claim_id,
        "source": c["source"],
        "claimed_value": f"{c['claimed_value']} ({c['claimed_unit']})",
        "measured_value": "not measured",
        "verdict": "not-applicable-here" if na else "inconclusive",
        "rule": f"reproduced if {c['reproduced_if']}; contradicted if {c['contradicted_if']}",
        "note": why,
    }


def _fmt(value, low, high) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v:.3g}" for k, v in value.items())
    spread = f" [{low:.3g}, {high:.3g}]" if low is not None and high is not None else ""
    return f"{value:.3g}{spread}"


def ratio_with_spread(a, b) -> tuple[float, float, float]:
    """Median ratio of two samples' medians, and a spread from their quartiles:
    (median_a/median_b, q1_a/q3_b, q3_a/q1_b): the widest the ratio could honestly be.
    When b's quartiles reach zero or below, the spread is (-inf, inf) and a median of b
    at or below zero gives a NaN ratio: too noisy to say anything."""
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    qa, qb = np.quantile(a, [0.25, 0.5, 0.75]), np.quantile(b, [0.25, 0.5, 0.75])
    if qb[0] <= 0:
        # b's spread reaches zero (a net time lost in the noise of its empty loop): the
        # ratio is unbounded, and with b's median at or below zero it has no value either.
        # A rule then holds at neither end, so the verdict can only be inconclusive.
        return (qa[1] / qb[1] if qb[1] > 0 else float("nan")), -float("inf"), float("inf")
    # Both ends over both of b's ends: a numerator below zero flips which end is which.
    ends = [qa[i] / qb[j] for i in (0, 2) for j in (0, 2)]
    return qa[1] / qb[1], min(ends), max(ends)


def difference_with_spread(a, b) -> tuple[float, float, float]:
    """Difference of two samples' medians, and the widest honest spread from their
    quartiles: (median_a - median_b, q1_a - q3_b, q3_a - q1_b)."""
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    qa, qb = np.quantile(a, [0.25, 0.5, 0.75]), np.quantile(b, [0.25, 0.5, 0.75])
    return qa[1] - qb[1], qa[0] - qb[2], qa[2] - qb[0]


def table(rows: list[dict]):
    """The verdict table a notebook ends with."""
    import pandas as pd

    return pd.DataFrame(rows, columns=["claim_id", "source", "claimed_value", "measured_value",
                                       "verdict", "rule", "note"])
