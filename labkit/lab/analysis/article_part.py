"""A notebook's part of an article's table, built from the data the notebook has just
measured (never from another notebook's earlier run), shown the way
labkit.lab.report.articles.section shows a whole table, with the row claims it judges."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, display

from labkit.lab.report import articles


def span(m, lo=None, hi=None, unit: str = "") -> str:
    """'m [lo, hi] unit', three significant figures; the spread left out when unbounded."""
    def g(v):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"

    if m is None or math.isnan(m):
        return "not measured"
    if lo is None or any(math.isnan(v) or math.isinf(v) for v in (lo, hi)):
        return f"{g(m)}{unit}"
    return f"{g(m)} [{g(lo)}, {g(hi)}]{unit}"


def verdict_cell(table, claim_ids) -> str:
    """'C004.1: reproduced on 0.94 (exact count); ...' from a verdict table
    (labkit.lab.judging.verdicts.table): each verdict with the value and interval it stands on."""
    by = {r["claim_id"]: r for r in table.to_dict("records")}
    return "; ".join(f"{c}: {articles.judged_on(by.get(c, {}))}" for c in claim_ids)


def judge(notebook: str, table):
    """Judge and save the notebook's row claims (data/<notebook>_article_verdicts.csv,
    for the ledger); returns them, and them with the notebook's own verdict table."""
    rows = articles.save_article_verdicts(notebook)
    return rows, pd.concat([t for t in (table, rows) if len(t)] or [table], ignore_index=True)


def show(t: articles.ArticleTable, rows) -> None:
    """Show the table and its figure (not saved: the report draws every article's whole
    table after the run), then the row claims judged (judge)."""
    display(HTML(articles.to_html(t)))
    fig = articles.figure(t, save=False)
    display(fig)
    plt.close(fig)
    if len(rows):
        display(HTML("<p>The row claims judged from this notebook's data:</p>"
                     + rows[["claim_id", "measured_value", "verdict", "note"]].to_html(
                         index=False, border=0)))
