"""The figure of a comparison: for each pair, the per-process values its answer stands on
(one dot per fresh process: log(A / B) read as a percent) and its interval at the level it
was judged, with the margin of "no difference" shaded."""
from __future__ import annotations

import math

from labkit.lab.comparing import answer

COLOURS = {answer.FASTER: "#0072B2", answer.SLOWER: "#D55E00", answer.SAME: "#009E73",
           answer.UNDECIDED: "#7f7f7f"}  # Okabe-Ito: told apart by colour-blind readers


def draw(answers: list[dict], values: dict | None, path, *, caption: str = ""):
    """Write the figure to `path` (its suffix says the format: .png, .svg, .pdf). values:
    {(A, B): per-process log ratios}, or None where none are kept (saved sides: the
    intervals alone)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rng = np.random.default_rng(0)  # jitter only: the same figure on every run
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.6 * len(answers)))
    margin = answers[0]["margin"] if answers else answer.MARGIN
    ax.axvspan(100 * (1 / (1 + margin) - 1), 100 * margin, color="#009E73", alpha=0.12,
               label=f"no difference (±{margin:.0%})")
    ax.axvline(0, color="black", lw=0.8)
    for y, row in enumerate(answers):
        colour = COLOURS.get(row["outcome"], "#7f7f7f")
        v = None if values is None else values.get((row["a"], row["b"]))
        if v is not None:
            v = np.asarray(v, float)
            v = v[np.isfinite(v)][:row["processes"]]
            ax.scatter(100 * np.expm1(v), y + rng.uniform(-0.18, 0.18, v.size), s=9,
                       color=colour, alpha=0.45, lw=0)
        lo, hi = (100 * (row[k] - 1) for k in ("low", "high"))
        lo, hi = max(lo, -100.0), hi if math.isfinite(hi) else 1e3
        ax.plot([lo, hi], [y, y], color=colour, lw=3, solid_capstyle="butt")
        ax.plot([100 * (row["ratio"] - 1)], [y], "o", color="black", ms=4)
    ax.set_yticks(range(len(answers)))
    ax.set_yticklabels([f"{r.get('name') or r['a'] + ' / ' + r['b']}\n"
                        f"{r.get('short') or _short(r)}" for r in answers], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time of A / time of B - 1 (%): one dot per fresh process; bar: the "
                  "repeated-confidence interval")
    ax.legend(fontsize="small", loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    if caption:
        fig.text(0.01, -0.02, caption, fontsize=7, ha="left", va="top", wrap=True)
    fig.savefig(path, bbox_inches="tight", metadata={"Date": None} if str(path).endswith(
        ".svg") else None)
    plt.close(fig)
    return path


def _short(row) -> str:
    if row["outcome"] == answer.UNDECIDED:
        return "undecided" + (f", leaning {row['leaning']}" if row.get("leaning") else "")
    if row["outcome"] == answer.SAME:
        return f"no difference (±{row['margin']:.0%})"
    return row["a" if row["outcome"] == answer.FASTER else "b"] + " faster"
