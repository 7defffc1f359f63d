"""Notebook 01's analysis: which kernels run the stack-size ping-pong here, its summaries,
the two figures, and the numbers the notebook reads out of its ping-pong and ring sweeps."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.core import plots
from labkit.core.units import KiB, MiB
from labkit.lab.analysis import findings
from labkit.lab.experiment import STACK_SIZE
from labkit.lab.headers import shown
from labkit.lab.judging.claims import claim
from labkit.lab.running.sweep import grid
_S = STACK_SIZE.sides
# The verdict design's sides (STACK_SIZE.sides) and the stack each measures, bytes.
VERDICT_SIZES = {_S.KIB_4: 4 * KiB, _S.KIB_16: 16 * KiB, _S.KIB_64: 64 * KiB,
                 _S.KIB_256: 256 * KiB, _S.MIB_1: 1 * MiB, _S.MIB_8: 8 * MiB}
# The author's library first; labkit's kernels run beside it.
KERNELS = ("boost_fiber", "asm_fpu", "asm", "ucontext")
BOOST_STACKS = "malloc'd by Boost"


def kernels_here():
    """(the KERNELS that run here, a table of why Boost's fiber does not: empty when it does)."""
    available = labkit.catalogue().set_index("entry")
    kernels = [k for k in KERNELS if available.loc[k, "available"]]
    return kernels, available.loc[["boost_fiber"]].query("not available")[["why_not"]]


def pingpong_points(kernels, sizes):
    """Every (kernel, stack_size, prefault) of the ping-pong: Boost's stacks are its own,
    so it has one point per size, not a prefaulted and an untouched one."""
    return [p for p in grid(entry=kernels, stack_size=sizes, prefault=[True, False])
            if not (p["entry"] == "boost_fiber" and not p["prefault"])]


def _warned(summary):
    plots.fold(labkit.noise_warnings(summary), plots.NOISY)
    return summary


def label_stacks(pingpong):
    """The ping-pong rows with a `stacks` column: prefaulted, untouched, or Boost's own."""
    stacks = pingpong.prefault.map({True: "prefaulted", False: "untouched"})
    return pingpong.assign(stacks=stacks.fillna(BOOST_STACKS))


def pingpong_summary(pingpong):
    """Median and quartiles per kernel, stack size and kind of stack (noise warnings printed)."""
    pp = _warned(labkit.summarize(pingpong, by=["entry", "stack_size", "stacks"]))
    return pp[["entry", "stack_size", "stacks", "median", "q1", "q3", "median_ticks", "noisy"]]


def pingpong_finding(pingpong, kernels) -> str:
    """What the ping-pong sweep shows, one sentence from its numbers and the claim's:
    the judged kernel's time from the smallest stack to the largest, against the article's
    ratio (C000.2)."""
    kernel, stacks = judged(kernels)
    sel = pingpong[(pingpong.entry == kernel) & (pingpong.stacks == stacks)]
    by = sel.groupby("stack_size").ns_per_switch.median()
    if by.empty:
        return f"{kernel} has no ping-pong rows in this run."
    small, big = by.index.min(), by.index.max()
    ratio = by[big] / by[small]
    said = ("does not change" if abs(ratio - 1) < 0.1 else
            "raises" if ratio > 1 else "lowers")
    c = claim("C000.2")
    return (f"On this machine the stack size {said} {kernel}'s switch: {by[small]:.3g} ns at "
            f"{plots.bytes_label(small)}, {by[big]:.3g} ns at {plots.bytes_label(big)} "
            f"({ratio:.2f}x); the article saw {float(c['claimed_value']):.3g}x.")


def ring_finding(ring, ring_counts) -> str:
    """What the ring sweep shows at its largest ring, one sentence from its numbers:
    the largest stacks against the smallest, tops coloured."""
    n = max(ring_counts)
    sel = ring[(ring.contexts == n) & (ring.colour_step == 64)]
    by = sel.groupby("stack_size").ns_per_switch.median()
    if by.empty:
        return f"No ring of {n} contexts in this run."
    small, big = by.index.min(), by.index.max()
    ratio = by[big] / by[small]
    said = ("no more than" if ratio < 1.1 else f"{ratio:.2g}x what")
    return (f"Among {n:,} contexts, {plots.bytes_label(big)} stacks cost {said} "
            f"{plots.bytes_label(small)} ones do ({by[big]:.3g} against {by[small]:.3g} ns "
            "per switch, tops coloured).")


def pingpong_figure(pp, sizes, finding: str | None = None):
    """Two panels: prefaulted stacks (with Boost's) and untouched ones, ns against size;
    `finding` (pingpong_finding) as its title."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    findings.title(fig, finding)
    panels = [("prefaulted stacks (Boost: malloc'd)", ["prefaulted", BOOST_STACKS]),
              ("untouched stacks", ["untouched"])]
    for ax, (title, kinds) in zip(axes, panels):
        plots.errorbars(ax, pp[pp.stacks.isin(kinds)], x="stack_size", hue="entry")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [plots.bytes_label(s) for s in sizes], rotation=45)
        ax.set_xlabel("stack size per context")
        ax.set_ylabel("ns per switch (median, IQR bars)")
        plots.log_axis(ax, "y")
        ax.set_title(f"two-context ping-pong, {title}")
    return fig


def faults(pingpong):
    """Page faults inside the timed loops, summed over all repeats, per kernel and stacks."""
    return pingpong.groupby(["entry", "stacks"]).minor_faults.sum().to_frame(
        "page faults in timed loops")


def ring_summary(ring):
    """Median and quartiles per stack size, ring size and colouring (noise warnings printed)."""
    rs = _warned(labkit.summarize(ring, by=["stack_size", "contexts", "colour_step"]))
    rs["stack"] = rs.stack_size.map(plots.bytes_label)
    return rs[["stack", "contexts", "colour_step", "median", "q1", "q3", "noisy"]]


def ring_figure(rs, finding: str | None = None):
    """Two panels, aligned and coloured stack tops: ns against the ring's size, per stack;
    `finding` (ring_finding) as its title."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    findings.title(fig, finding)
    for ax, step in zip(axes, [0, 64]):
        plots.errorbars(ax, rs[rs.colour_step == step], x="contexts", hue="stack")
        plots.log_axis(ax, "x", base=2)
        plots.log_axis(ax, "y")
        ax.set_xlabel("contexts in the ring (N)")
        ax.set_ylabel("ns per switch (median, IQR bars)")
        ax.set_title("stack tops aligned" if step == 0 else "stack tops coloured (64 B steps)")
    return fig


def _median(df, **where):
    sel = df
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return sel.ns_per_switch.median()


def flatness(pingpong):
    """Per kernel and stacks: the cheapest and dearest stack size's median, and their ratio."""
    flat = (pingpong.groupby(["entry", "stacks", "stack_size"]).ns_per_switch.median()
            .groupby(["entry", "stacks"]).agg(["min", "max"]))
    flat["max / min over sizes"] = flat["max"] / flat["min"]
    return flat


def ring_sizes_read(ring_counts):
    """The two ring sizes the reading names: 64 contexts (or the middle one) and the largest."""
    return (64 if 64 in ring_counts else ring_counts[len(ring_counts) // 2]), max(ring_counts)


def rings(ring, ring_sizes, ring_counts):
    """One row per stack size: aligned and coloured medians at the two ring sizes read."""
    rows = []
    for s in ring_sizes:
        row = {"stack": plots.bytes_label(s)}
        for n in ring_sizes_read(ring_counts):
            a = _median(ring, stack_size=s, contexts=n, colour_step=0)
            c = _median(ring, stack_size=s, contexts=n, colour_step=64)
            row.update({f"N={n} aligned ns": a, f"N={n} coloured ns": c,
                        f"N={n} aligned/coloured": a / c})
        rows.append(row)
    return pd.DataFrame(rows)


def ring_reading(table, ring_counts) -> str:
    """What the ring table says, in two sentences with its numbers."""
    n_mid, n_max = ring_sizes_read(ring_counts)
    small, large = table.iloc[0], table.iloc[-1]
    big, little = large[f"N={n_max} coloured ns"], small[f"N={n_max} coloured ns"]
    return (f"N={n_mid}: aligned tops cost {small[f'N={n_mid} aligned/coloured']:.2f}x "
            f"({small['stack']}) to {large[f'N={n_mid} aligned/coloured']:.2f}x "
            f"({large['stack']}) what coloured tops cost: above 1, cache-set conflicts cost "
            f"time\nN={n_max}: {large['stack']} stacks {big:.1f} ns vs {small['stack']} stacks "
            f"{little:.1f} ns per switch: {big / little:.1f}x, the cost of far-apart stack "
            "tops (TLB and page walks), not of the size itself")


def ring_note(table, ring_counts) -> str:
    """The verdict note's addition: the largest ring's medians, largest and smallest stack."""
    n_max = ring_sizes_read(ring_counts)[1]
    small, large = table.iloc[0], table.iloc[-1]
    return (f"; asm_fpu ring of {n_max} contexts: {large['stack']} "
            f"{large[f'N={n_max} coloured ns']:.1f} ns vs {small['stack']} "
            f"{small[f'N={n_max} coloured ns']:.1f} ns per switch")


def judged(kernels):
    """(kernel, stacks) the verdict's ping-pong uses: Boost's fiber, else asm_fpu prefaulted."""
    return ("boost_fiber", BOOST_STACKS) if "boost_fiber" in kernels else ("asm_fpu", "prefaulted")


def reading(pingpong, table, ring_counts, kernels) -> str:
    """The sweep's reading as printed: the ping-pong's flatness over sizes and the ring
    table (`rings`), their headers in words, then what they say."""
    return "\n".join([
        "1. ping-pong, median ns per switch, cheapest and dearest stack size:",
        shown(flatness(pingpong).round(2)).to_string(), "",
        "2. and 3. rings of N contexts (asm_fpu), median ns per switch:",
        shown(table.round(2)).to_string(index=False), "", ring_reading(table, ring_counts),
        pingpong_ratio_text(pingpong, kernels)])


def pingpong_ratio_text(pingpong, kernels) -> str:
    """The sweep's 8 MiB / 4 KiB ratio for the judged kernel, one line."""
    kernel, stacks = judged(kernels)
    big, small = (_median(pingpong, entry=kernel, stack_size=s, stacks=stacks)
                  for s in (8 * MiB, 4 * KiB))
    return (f"ping-pong {kernel}: 8 MiB / 4 KiB = {big / small:.2f} in this one-process "
            "sweep; the verdict below takes its interval over processes")
