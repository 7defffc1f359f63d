"""Notebook 03's analysis: the two shapes' summaries per transfer and per resumption,
their figure, and the ratio asymmetric / symmetric at each ring size."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.core import plots, timing
from labkit.lab.judging import verdicts

KERNELS = ["asm_fpu", "ucontext"]


def laps(contexts: int, asymmetric: bool, switches: int) -> int:
    """Laps that make about `switches` transfers (labkit.core.timing.ring_switches_per_lap)."""
    return max(1, switches // timing.ring_switches_per_lap(contexts, asymmetric))


def summaries(shapes):
    """(per transfer, per useful resumption): medians and quartiles per kernel, pattern and
    ring size; the noise warnings of the first are printed."""
    by = ["entry", "pattern", "contexts"]
    per_transfer = labkit.summarize(shapes, by=by)
    plots.fold(labkit.noise_warnings(per_transfer), plots.NOISY)
    return per_transfer, labkit.summarize(shapes, by=by, value="ns_per_resumption")


def finding(per_transfer) -> str:
    """What the figure shows at the largest ring, from its medians: the scheduler's time
    per transfer over the ring's, per kernel."""
    if per_transfer.empty:
        return "No ring was measured here."
    n = int(per_transfer.contexts.max())
    at = per_transfer[per_transfer.contexts == n].set_index(["entry", "pattern"])["median"]
    parts = [f"{at[(k, 'scheduler')] / at[(k, 'ring')]:.2f}x for {k}"
             for k in KERNELS if (k, "scheduler") in at and (k, "ring") in at]
    if not parts:
        return f"No kernel ran both shapes with {n:,} contexts."
    return (f"With {n:,} contexts, a transfer through a scheduler costs what a direct ring "
            "transfer costs times " + " and ".join(parts) + ".")


def figure(per_transfer, per_resume):
    """Four panels: per transfer (top) and per resumption (bottom), one column per kernel;
    the finding (finding) as its title."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    fig.suptitle(finding(per_transfer), fontsize=10)
    for row, (summary, what) in enumerate([(per_transfer, "ns per transfer of control"),
                                           (per_resume, "ns per useful resumption")]):
        for col, kernel in enumerate(KERNELS):
            ax = axes[row][col]
            plots.errorbars(ax, summary[summary.entry == kernel], x="contexts", hue="pattern")
            plots.log_axis(ax, "x", base=2)
            plots.log_axis(ax, "y")
            ax.set_ylabel(f"{what} (median, IQR bars)")
            ax.set_title(f"{kernel}: {what.split(' per ')[1]}")
            if row == 1:
                ax.set_xlabel("contexts N")
    return fig


def ratio_at(shapes, kernel: str, n: int):
    """(ratio, low, high): the scheduler's ns per transfer over the ring's, N contexts."""
    mine = shapes[(shapes.entry == kernel) & (shapes.contexts == n)]
    return verdicts.ratio_with_spread(mine[mine.pattern == "scheduler"].ns_per_switch,
                                      mine[mine.pattern == "ring"].ns_per_switch)


def ratios(shapes, counts):
    """asym / sym per kernel and ring size, with its spread."""
    return pd.DataFrame([
        {"entry": k, "contexts": n,
         **dict(zip(["asym / sym", "low", "high"], ratio_at(shapes, k, n)))}
        for k in KERNELS for n in counts])


def ucontext_note(shapes) -> str:
    """The verdict note's addition: ucontext's ratio at 1024 contexts in the sweep."""
    return (f"; ucontext scheduler 1024 / ring 1024 in the sweep: "
            f"{ratio_at(shapes, 'ucontext', 1024)[0]:.2f}")
