"""compare_machines.py's figures: a merge of several machines' bundles
(labkit.lab.sharing.merge), drawn."""
from __future__ import annotations

import matplotlib.pyplot as plt


def ladder_figure(comparison: dict):
    """Each machine's kernels as ratios to its own `asm` (the merged ladder), one bar per
    machine; None when no machine has ladder results yet."""
    ladder = comparison.get("ladder")
    if ladder is None or ladder.empty:
        return None
    ratios = ladder.xs("ratio to asm", axis=1, level=1)
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(ratios) + 1.5))
    ratios.plot.barh(ax=ax)
    ax.axvline(1, color="grey", lw=0.8)
    ax.set_xlabel("median ns per switch / that machine's own asm")
    ax.set_title("the ladder, machine by machine (ratios travel, nanoseconds do not)")
    fig.tight_layout()
    plt.close(fig)
    return fig
