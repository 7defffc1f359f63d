"""Learners' predictions, written as claims before measuring and judged by the engine.

A predictions file is a CSV with a row per prediction: `learner,claim_id,predicted`, where
predicted is a verdict (`reproduced`, `contradicted`) or a range of the claim's measured
value, `LOW..HIGH` (say `1.5..3`: "-O0 is 1.5 to 3 times slower than -O2"). A range is
a claim of its own, "LOW <= x <= HIGH", and is judged on a machine with the claims'
decision rule (labkit.lab.judging.verdicts.decide) at the value and interval that machine
measured: `right` when the whole interval lies in the range, `wrong` when it lies wholly
outside, `undecided` when it straddles an end. A predicted verdict is `right` when the
machine's verdict is that one, `undecided` when the machine's is inconclusive, else `wrong`.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from labkit.lab.judging import claims, verdicts

VERDICTS = ("reproduced", "contradicted")
COLUMNS = ("learner", "claim_id", "predicted")
RIGHT, WRONG, UNDECIDED = "right", "wrong", "undecided"
_RANGE = re.compile(r"^\s*([-+]?[0-9.]+(?:[eE][-+]?\d+)?)\s*\.\.\s*([-+]?[0-9.]+(?:[eE][-+]?\d+)?)\s*$")
_MEASURED = re.compile(r"(-?[0-9.]+(?:e[-+]?\d+)?|inf)\s*\[\s*(-?[0-9.]+(?:e[-+]?\d+)?|-?inf)\s*,"
                       r"\s*(-?[0-9.]+(?:e[-+]?\d+)?|inf)\s*\]", re.IGNORECASE)


def parse(predicted: str):
    """('verdict', word) or ('range', low, high); ValueError otherwise."""
    text = str(predicted).strip()
    if text.lower() in VERDICTS:
        return ("verdict", text.lower())
    m = _RANGE.match(text)
    if m:
        low, high = float(m.group(1)), float(m.group(2))
        if low <= high:
            return ("range", low, high)
    raise ValueError(f"predicted must be {' or '.join(VERDICTS)} or a range LOW..HIGH with "
                     f"LOW <= HIGH; got {predicted!r}")


def read(path, claim_ids=None):
    """The predictions file as a DataFrame (learner, claim_id, predicted, kind); ValueError
    naming the row for an unknown claim or a prediction that does not parse."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"predictions must be a CSV file path; got {path!r}")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"predictions {path}: not a readable CSV ({exc})") from None
    missing = [c for c in COLUMNS if c not in df]
    if missing:
        raise ValueError(f"predictions {path}: needs the columns {', '.join(COLUMNS)}; "
                         f"missing {', '.join(missing)}")
    if claim_ids is None:
        claim_ids = set(claims.registry().claim_id)
    for i, r in df.iterrows():
        if not r.learner.strip():
            raise ValueError(f"predictions {path}, row {i + 2}: learner is empty")
        if claim_ids is not None and r.claim_id not in claim_ids:
            raise ValueError(f"predictions {path}, row {i + 2}: claim_id {r.claim_id!r} is "
                             "not a claim of the ledger")
        try:
            parse(r.predicted)
        except ValueError as exc:
            raise ValueError(f"predictions {path}, row {i + 2}: {exc}") from None
    return df[list(COLUMNS)].assign(kind=[parse(p)[0] for p in df.predicted])


def measured_interval(text) -> tuple[float, float, float] | None:
    """(value, low, high) from a verdict's measured text ('0.846 [0.763, 0.937]'), or None
    when it states no interval."""
    m = _MEASURED.search(str(text))
    if not m:
        return None
    return tuple(float(g) for g in m.groups())


def judge(predicted: str, verdict: str, measured: str) -> str:
    """One prediction against one machine's verdict and measured text."""
    p = parse(predicted)
    if p[0] == "verdict":
        return UNDECIDED if verdict == "inconclusive" else RIGHT if verdict == p[1] else WRONG
    got = measured_interval(measured)
    if got is None or any(math.isnan(v) for v in got):
        return UNDECIDED
    v, lo, hi = got
    low, high = p[1], p[2]
    d = verdicts.decide(f"{low!r} <= x <= {high!r}", f"x < {low!r} or x > {high!r}", v, lo, hi)
    return {"reproduced": RIGHT, "contradicted": WRONG}.get(d["verdict"], UNDECIDED)


def judge_all(preds, rows):
    """Every prediction against every machine that measured its claim: one row per
    (learner, claim, machine) with `outcome`. rows: query.claims of the room's machines."""
    out = []
    by_claim = {c: g for c, g in rows.groupby("claim_id")}
    for p in preds.itertuples():
        for r in by_claim.get(p.claim_id, pd.DataFrame()).itertuples():
            out.append({"learner": p.learner, "claim_id": p.claim_id, "predicted": p.predicted,
                        "machine": r.machine, "label": r.label,
                        "outcome": judge(p.predicted, r.verdict, r.measured_value)})
    return pd.DataFrame(out, columns=["learner", "claim_id", "predicted", "machine", "label",
                                      "outcome"])
