"""The claims registry, written before measuring: data/claims.csv (one row per claim, never
edited) and data/claims_amendments.csv (an amended rule beside the original), and which
notebook judges each claim now (its experiment's record, labkit.lab.experiment: the
registered notebook, or the part of it that `judges` the claim where it was split in two).

    from labkit.lab.judging import claims
    claims.registry()            # every claim, with the notebook that judges it
    claims.claim("C002.3")       # one claim, its amendment applied
"""
from __future__ import annotations

import pandas as pd

from labkit.core.results import claims_csv
from labkit.lab import experiment

CLAIMS_CSV = claims_csv()  # the checkout's data/claims.csv, or the shipped copy
AMENDMENTS_CSV = claims_csv("claims_amendments.csv")


def registry():
    """The claims registry as written before measuring: one row per claim id, and beside
    the registered `experiment` the `notebook` that judges the claim now (the same one,
    unless that notebook was split: labkit.lab.experiment.notebook_of)."""
    c = pd.read_csv(CLAIMS_CSV, dtype=str).fillna("")
    c["notebook"] = [experiment.notebook_of(i, e) for i, e in zip(c.claim_id, c.experiment)]
    return c


def amendments():
    """The amendments (data/claims_amendments.csv): claim_id, date, reason, misreading,
    measured_quantity, reproduced_if, contradicted_if. Empty if there is no file."""
    cols = ["claim_id", "date", "reason", "misreading", "measured_quantity",
            "reproduced_if", "contradicted_if"]
    if not AMENDMENTS_CSV.exists():
        return pd.DataFrame(columns=cols)
    return pd.read_csv(AMENDMENTS_CSV, dtype=str).fillna("")


def measured_quantities() -> dict:
    """Claim id -> what its rules' `x` (or named values) is: data/claims.csv's
    `measured_quantity`, or its amendment's where an amendment measures something else."""
    out = dict(zip(*(registry()[k] for k in ("claim_id", "measured_quantity"))))
    for _, am in amendments().iterrows():
        if am.get("measured_quantity", ""):
            out[am["claim_id"]] = am["measured_quantity"]
    return out


def claim(claim_id: str, *, original: bool = False) -> dict:
    """One claim's row as a dict (ValueError for an unknown id). Unless original=True,
    an amendment's measured quantity and rules replace the original ones, and the row
    carries `amended` (date) and the original rules as `original_reproduced_if` and
    `original_contradicted_if`."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a str such as 'C002.3', not {type(claim_id).__name__}")
    c = registry()
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



def rule_text(reproduced_if: str, contradicted_if: str, amended: str = "") -> str:
    """A decision rule as the verdict files and the ledger write it; an amended one (amended:
    the amendment's date) begins "amended <date>: "."""
    rule = f"reproduced if {reproduced_if}; contradicted if {contradicted_if}"
    return f"amended {amended}: {rule}" if amended else rule


def claimed(row) -> str:
    """A claim's claimed value with its unit, as the verdict files and the ledger write it."""
    return f"{row['claimed_value']} ({row['claimed_unit']})"
