"""A verdict table as a learner reads it: one row per claim with what it says, the
article's value, the value measured here with its interval, the verdict (with its lean when
inconclusive), why, and the per-process values the interval stands on (a small strip in
HTML); the full table folded under it."""
from __future__ import annotations

import html

import numpy as np
import pandas as pd

from labkit.lab.headers import HEADERS
from labkit.lab.judging import claims, pictures, verdicts

# The readable table's columns, in order.
COLUMNS = ("claim", "what it says", "article", "measured here", "verdict", "why",
           "per process")
PER_PROCESS = COLUMNS[-1]
_UNMEASURED = ("not-measured", "not-applicable-here")


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


def _none_said(row) -> str:
    if row["verdict"] in _UNMEASURED:
        return "no per-process values: not measured here"
    if row.get("method") == verdicts.EXACT:
        return "no per-process values: an exact count"
    return "no per-process values: its runs are not saved here"


def _values_said(values: dict) -> str:
    return "; ".join(f"{'' if k == 'x' else k + ': '}{len(v)} processes, median "
                     f"{np.median(v):.3g}, from {np.min(v):.3g} to {np.max(v):.3g}"
                     for k, v in values.items())


def per_process_values(table) -> dict:
    """Claim id -> the per-process values its interval was taken over
    (pictures.per_process, from the runs saved in data/), or None; None too for a claim
    the table says was not measured, whatever runs are saved."""
    return {r["claim_id"]: None if r["verdict"] in _UNMEASURED
            else pictures.per_process(r["claim_id"]) for r in table.to_dict("records")}


def worded(frame):
    """`frame` with its columns in HEADERS' words (labkit.lab.headers)."""
    return frame.rename(columns=HEADERS)


def readable(table, values: dict | None = None):
    """The verdict table's rows in COLUMNS' words; values: claim id -> per-process values
    (default: per_process_values(table))."""
    values = per_process_values(table) if values is None else values
    return pd.DataFrame([{"claim": r["claim_id"], "what it says": _says(r["claim_id"]),
                          "article": r["claimed_value"], "measured here": r["measured_value"],
                          "verdict": _verdict(r), "why": r["rule"],
                          PER_PROCESS: _values_said(values[r["claim_id"]])
                          if values.get(r["claim_id"]) else _none_said(r)}
                         for r in table.to_dict("records")], columns=list(COLUMNS))


class VerdictView:
    """What a notebook shows for its verdict table: the readable one, each row with a strip
    of its per-process values, the full one folded. `.full` is the table itself."""

    def __init__(self, table, values: dict | None = None):
        self.full = table
        self.values = per_process_values(table) if values is None else values
        self.readable = readable(table, self.values)

    def _cell(self, row: dict, text: str) -> str:
        vals = self.values.get(row["claim_id"])
        if not vals:
            return html.escape(text)
        got = pictures.measured_interval(row["measured_value"]) if len(vals) == 1 else None
        return pictures.strip_svg(vals, row["claim_id"],
                                  interval=got[1:] if got else None)

    def _repr_html_(self) -> str:
        shown = self.readable.map(lambda v: html.escape(str(v)))
        shown[PER_PROCESS] = [self._cell(r, t) for r, t in
                              zip(self.full.to_dict("records"), self.readable[PER_PROCESS])]
        return (shown.to_html(index=False, escape=False)
                + "<details><summary>The full verdict table (every column the verdict "
                "stands on)</summary>" + worded(self.full).to_html(index=False, escape=True)
                + "</details>")

    def __repr__(self) -> str:
        return self.readable.to_string(index=False)


def show(table, values: dict | None = None) -> VerdictView:
    """The notebook's view of a verdict table (designs.verdict_table's), its per-process
    values recomputed from the runs saved in data/ unless given."""
    return VerdictView(table, values)
