"""The figure of a comparison: for each pair, the per-process values its answer stands on
(one dot per fresh process: A's time over B's, on a log axis) and its interval at the level it
was judged, with the margin of "no difference" shaded."""
from __future__ import annotations

import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure

from labkit.lab.comparing import answer

COLOURS = {answer.FASTER: "#0072B2", answer.SLOWER: "#D55E00", answer.SAME: "#009E73",
           answer.UNDECIDED: "#7f7f7f"}  # Okabe-Ito: told apart by colour-blind readers
EDGE = 20.0  # the axis spans at most 1/20x to 20x; what lies beyond is drawn at its edge
TICKS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)


def draw(answers: list[dict], values: dict | None, path, *, caption: str = ""):
    """Write the figure to `path` (its suffix says the format: .png, .svg, .pdf). values:
    {(A, B): per-process log ratios}, or None where none are kept (saved sides: the
    intervals alone)."""
    rng = np.random.default_rng(0)  # jitter only: the same figure on every run
    # A Figure of its own, not pyplot's: no backend to switch, nothing left open.
    fig = Figure(figsize=(7.5, 1.2 + 0.6 * len(answers)))
    ax = fig.add_subplot()
    margin = answers[0]["margin"] if answers else answer.MARGIN
    ax.axvspan(1 / (1 + margin), 1 + margin, color="#009E73", alpha=0.12,
               label=f"no difference (±{margin:.0%})")
    ax.axvline(1, color="black", lw=0.8)
    for y, row in enumerate(answers):
        colour = COLOURS.get(row["outcome"], "#7f7f7f")
        v = None if values is None else values.get((row["a"], row["b"]))
        if v is not None:
            v = np.asarray(v, float)[:row["processes"]]
            v = v[np.isfinite(v)]
            ax.scatter(np.clip(np.exp(v), 1 / EDGE, EDGE), y + rng.uniform(-0.18, 0.18, v.size), s=9,
                       color=colour, alpha=0.45, lw=0)
        # An interval past the axis's ends (no bound at an early look) runs to the edge.
        lo, hi = max(row["low"], 1 / EDGE), min(row["high"], EDGE)
        ax.plot([lo, hi], [y, y], color=colour, lw=3, solid_capstyle="butt")
        ax.plot([row["ratio"]], [y], "o", color="black", ms=4)
    ax.set_xscale("log")
    left, right = ax.get_xlim()
    ax.set_xlim(max(left, 1 / EDGE), min(right, EDGE))
    # The margin's two ends are ticked too: a narrow axis may hold no other tick than 1x.
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(
        sorted({*TICKS, 1 / (1 + margin), 1 + margin})))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:.3g}x"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_yticks(range(len(answers)))
    ax.set_yticklabels([f"{r.get('name') or r['a'] + ' / ' + r['b']}\n"
                        f"{r.get('short') or _short(r)}" for r in answers], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time of A / time of B (log axis): one dot per fresh process; bar: "
                  "the repeated-confidence interval")
    ax.legend(fontsize="small", loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    if caption:
        ax.set_title(caption, fontsize=7, loc="left")
    fig.savefig(path, bbox_inches="tight", metadata={"Date": None} if str(path).endswith(
        ".svg") else None)
    return path


def _short(row) -> str:
    if row["outcome"] == answer.UNDECIDED:
        return "undecided" + (f", leaning {row['leaning']}" if row.get("leaning") else "")
    if row["outcome"] == answer.SAME:
        return f"no difference (±{row['margin']:.0%})"
    return row["a" if row["outcome"] == answer.FASTER else "b"] + " faster"
