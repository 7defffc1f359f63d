"""Notebook 00's analysis: the summary figure of the ledger (the latency ladder's medians
and the count of claims under each verdict, one colour per verdict: the palette of
labkit.lab.judging.pictures, which draws the forest of every claim too)."""
from __future__ import annotations

import matplotlib.pyplot as plt

import labkit
from labkit.core import plots
from labkit.core.systems import colour
from labkit.lab.judging import ledger, view
from labkit.lab.judging.pictures import VERDICT_COLOURS

# What notebook 00 shows of the ledger: every claim, and the amended ones.
EVERY_CLAIM = ("claim_id", "source", "claim", "claimed_value", "measured_quantity",
               "measured_value", "verdict", "lean", "processes", "original_verdict", "noisy",
               "note", "notebook", "figures")
AMENDED = ("claim_id", "original_verdict", "verdict", "original_rule", "rule", "amendment")


def every_claim(table):
    """The ledger's rows as notebook 00 shows them, headers in words."""
    return view.worded(table[list(EVERY_CLAIM)])


def amended(table):
    """The amended claims, each with its verdict under both rules and why, in words."""
    return view.worded(table.loc[table.amendment != "", list(AMENDED)])


def finding(table) -> str:
    """The ledger in one sentence: how many claims each decided verdict holds."""
    c = ledger.counts(table)
    decided = c[["reproduced", "contradicted", "in-between"]]
    return (f"Of {len(table)} claims, {decided['reproduced']} reproduced, "
            f"{decided['contradicted']} contradicted and {decided['in-between']} in-between "
            f"on this machine; {len(table) - decided.sum()} undecided or not measured")


def summary_figure(table, ladder_runs=None):
    """The ladder's medians with their quartiles as points on a log axis (a bar's length
    means nothing there), beside the count of claims under each verdict."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [2, 1]})
    if ladder_runs is None or len(ladder_runs) == 0:
        axes[0].text(0.5, 0.5, "no ladder yet (notebook 04 makes it)", ha="center",
                     va="center", fontsize=8)
        axes[0].set_axis_off()
    else:
        s = labkit.summarize(ladder_runs, by=["entry"]).sort_values("median")
        y = range(len(s))
        axes[0].errorbar(s["median"].clip(lower=0.05), y, xerr=plots.bars(s), fmt="none",
                         ecolor="grey", capsize=2)
        axes[0].scatter(s["median"].clip(lower=0.05), y, color=[colour(e) for e in s.entry],
                        zorder=3)
        axes[0].set_yticks(y, s.entry)
        plots.log_axis(axes[0], "x")
        axes[0].set_xlabel("ns per switch (median, quartile bars; notebook 04)")
        axes[0].set_title("the latency ladder")
    c = ledger.counts(table)
    axes[1].bar(range(len(c)), c.values, color=[VERDICT_COLOURS[v] for v in c.index])
    for i, n in enumerate(c.values):
        axes[1].text(i, n, str(int(n)), ha="center", va="bottom", fontsize=8)
    axes[1].set_xticks(range(len(c)), c.index, rotation=30, ha="right")
    axes[1].set_ylabel("claims")
    axes[1].set_title(f"verdicts ({len(table)} claims)")
    fig.suptitle(finding(table), fontsize=10)
    return fig
