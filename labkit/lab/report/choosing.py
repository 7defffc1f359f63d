"""The report's section "Choosing a design on this machine", fed by notebook 10's data:
each design's share of time switching against the work between switches, with the
advisor's intervals and the calibration grid's measurements (000's "when does the switch
cost matter", answered for this machine), memory against N up to the mapping limit, and
how well the advisor's predictions held against the grid."""
from __future__ import annotations

import base64
import html
import io

import matplotlib.pyplot as plt
import pandas as pd

from labkit.core import results
from labkit.lab.advising import grid as _grid
from labkit.lab.analysis import your_workload as yw
from labkit.lab.experiment import YOUR_WORKLOAD
from labkit.lab.headers import shown

CURVES = YOUR_WORKLOAD.data
GRID = YOUR_WORKLOAD.own("advisor_calibration")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return (f"<img class='lk-fig' alt='figure' "
            f"src='data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}'>")


# The scores shown in percent (they are fractions); the others stay as they are (counts,
# the interval score, a yes or no).
PERCENT_SCORES = {"coverage", "median_time_error", "median_memory_error", "median_half_width",
                  "model_coverage", "median_model_error", "original_coverage",
                  "original_median_half_width"}


def score_table(scores):
    """grid.scores' table for a reader: headers in words (labkit.lab.headers), fractions in
    percent, the targets met as yes or no, a score the grid cannot give as "not estimated"."""
    out = {}
    for col in scores.columns:
        v = scores[col]
        if col in PERCENT_SCORES:
            v = v.map(lambda x: "not estimated" if pd.isna(x) else f"{100 * x:.1f}%")
        elif v.dtype == bool:
            v = v.map({True: "yes", False: "no"})
        elif pd.api.types.is_float_dtype(v):
            v = v.map(lambda x: "not estimated" if pd.isna(x) else f"{x:.3g}")
        out[col] = v
    return shown(pd.DataFrame(out))


def section_html() -> str:
    """The section's HTML; a paragraph saying what is missing when notebook 10 has not run."""
    head = "<h2 id='choosing'>Choosing a design on this machine</h2>"
    d = results.data_dir()
    if not (d / f"{CURVES}.csv").exists() or not (d / f"{GRID}.csv").exists():
        return head + ("<p class='lk-note'>Not measured: notebook 10_your_workload has not "
                       "run (it writes data/10_your_workload.csv and "
                       "data/advisor_calibration.csv).</p>")

    c = results.read_csv(d / f"{CURVES}.csv")
    g = results.read_csv(d / f"{GRID}.csv")
    info = g.iloc[0].to_dict() if "cpu_model" in g else None
    r = c.iloc[0]
    advice = "advice_ns" in g
    scores = score_table(_grid.scores(g, on="advice" if advice else "predicted"))
    whose = ("<p>The advice against the grid (notebook 10): given only the work in one warm "
             "context, N, u and the stack size, as a user gives them. The targets: "
             f"coverage at least {_grid.TARGETS['coverage']:.0%}, median time error at most "
             f"{_grid.TARGETS['time_error']:.0%}, median memory error at most "
             f"{_grid.TARGETS['memory_error']:.0%}, median half-width at most "
             f"{_grid.TARGETS['half_width']:.0%}.</p>" if advice else
             "<p class='lk-note'>This grid predates the advice's columns: the scores below are "
             "the step-fed model's, a diagnosis, not the advice a user gets. Run notebook 10 "
             "again (make reproduce ONLY=10_your_workload).</p>")
    return head + (
        f"<p>For N = {int(r.alive):,} coroutines with {int(r.stack_in_use)} bytes of stack in "
        "use: the share of time each design spends switching against the work between two "
        "switches (the advisor's prediction with its 95% interval, from the notebooks' "
        "measurements; open circles: the calibration grid's measurements, 95% over fresh "
        "processes). Where a design's curve falls under a few percent, its switch no longer "
        "matters. Then memory against N, each line ending (x) where the design's mappings "
        "reach vm.max_map_count.</p>"
        + _png(yw.share_figure(c, g, info, save=False))
        + _png(yw.memory_figure(c, g, info, save=False))
        + whose
        + scores.to_html(index=False, classes="lk-table", border=0)
        + f"<p class='lk-note'>{html.escape(str(len(g)))} grid rows in data/{GRID}.csv.</p>")
