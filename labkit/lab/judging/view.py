"""A verdict table as a learner reads it: one row per claim with what it says, the
article's value, the value measured here with its interval, the verdict (with its lean when
inconclusive) and why; the full table folded under it."""
from __future__ import annotations

import pandas as pd

from labkit.lab.judging import claims

# The readable table's columns, in order.
COLUMNS = ("claim", "what it says", "article", "measured here", "verdict", "why")


def _verdict(row) -> str:
    lean = row.get("lean")
    if row["verdict"] == "inconclusive" and isinstance(lean, str) and lean:
        return f"inconclusive, leaning {lean}"
    return str(row["verdict"])


def _says(claim_id: str) -> str:
    try:
        return str(claims.claim(claim_id)["claim"])
    except ValueError:
        return ""


def readable(table):
    """The verdict table's rows in COLUMNS' words."""
    return pd.DataFrame([{"claim": r["claim_id"], "what it says": _says(r["claim_id"]),
                          "article": r["claimed_value"], "measured here": r["measured_value"],
                          "verdict": _verdict(r), "why": r["rule"]}
                         for r in table.to_dict("records")], columns=list(COLUMNS))


class VerdictView:
    """What a notebook shows for its verdict table: the readable one, the full one folded.
    `.full` is the table itself."""

    def __init__(self, table):
        self.full = table
        self.readable = readable(table)

    def _repr_html_(self) -> str:
        return (self.readable.to_html(index=False, escape=True)
                + "<details><summary>The full verdict table (every column the verdict "
                "stands on)</summary>" + self.full.to_html(index=False, escape=True)
                + "</details>")

    def __repr__(self) -> str:
        return self.readable.to_string(index=False)


def show(table) -> VerdictView:
    """The notebook's view of a verdict table (designs.verdict_table's)."""
    return VerdictView(table)
