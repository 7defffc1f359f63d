"""Notebook 02's analysis: the kernels timed at each -O build, the instruction counts,
the figure of both, and the -O0 / -O2 ratios."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.core import plots
from labkit.core.systems import colour
from labkit.experiments import callgrind
from labkit.lab.analysis import findings
from labkit.lab.judging import verdicts
from labkit.lab.judging.claims import claim

# Boost's fiber and raw fcontext, labkit's kernel that saves what jump_fcontext saves, and
# a C++20 generator: the switch alone, and the switch under an abstraction.
CANDIDATES = ["boost_fiber", "boost_fcontext", "asm_fpu", "cxx20_generator"]
COUNT_COLUMNS = ["entry", "build", "loop", "base", "net", "why"]


def kernels_here():
    """(the CANDIDATES that run here, the catalogue indexed by kernel)."""
    available = labkit.catalogue().set_index("entry")
    return [k for k in CANDIDATES if available.loc[k, "available"]], available


def summary(timed, builds):
    """Median and quartiles per kernel and build (noise warnings printed), in build order."""
    ts = labkit.summarize(timed, by=["entry", "build"])
    plots.fold(labkit.noise_warnings(ts), plots.NOISY)
    return ts.assign(x=ts.build.map({b: i for i, b in enumerate(builds)}))


def counted_builds(builds, count_builds: str = "every") -> list:
    """The builds callgrind counts: every one, or only C000.3's two ("O0 and O2")."""
    return list(builds) if count_builds == "every" else [b for b in builds if b in ("O0", "O2")]


def instruction_counts(kernels, builds, count_instructions: bool, count_builds: str = "every"):
    """callgrind's counts per kernel and build (an empty frame, with the reason printed,
    where they are not counted); the builds valgrind cannot decode are printed."""
    ok, why = callgrind.available()
    if not (count_instructions and ok):
        print("instruction counts skipped:", why or "count_instructions=False")
        return pd.DataFrame(columns=COUNT_COLUMNS)
    counts = callgrind.instructions_table(kernels, counted_builds(builds, count_builds))
    for why in sorted(set(counts.why) - {""}):
        print("not counted:", why)
    return counts


def _builds_in(frame, builds) -> list:
    """The builds the frame has rows for, in the order of `builds`."""
    present = set(frame.build)
    return [b for b in builds if b in present]


def pivot(frame, builds, value):
    """One row per build, one column per kernel (empty when nothing was counted); only
    the builds the frame has, in the order of `builds`. A build valgrind could not count
    says so (the reason is printed above the table)."""
    if frame.empty:
        return pd.DataFrame()
    table = frame.pivot(index="build", columns="entry", values=value).loc[
        _builds_in(frame, builds)]
    return table.round(2).astype(object).where(table.notna(), "not counted")


def finding(timed, kernels) -> str:
    """What the builds show, one sentence from this run: each kernel's -O0 time over its
    -O2 time with the ratio's interval, the article's ratio (C000.3) beside the first."""
    parts = []
    for k in kernels:
        a = timed[(timed.entry == k) & (timed.build == "O0")].ns_per_switch
        b = timed[(timed.entry == k) & (timed.build == "O2")].ns_per_switch
        if a.empty or b.empty:
            continue
        parts.append(f"{k} {findings.times(*verdicts.ratio_with_spread(a, b))} "
                     f"({plots.ns_label(a.median())} against {plots.ns_label(b.median())})")
    if not parts:
        return "No kernel was timed at both -O0 and -O2 in this run."
    return (f"On this machine a switch at -O0 takes this many times its -O2 time: "
            f"{'; '.join(parts)}. The article saw {float(claim('C000.3')['claimed_value']):g}x "
            "for Boost's fiber.")


def instructions_finding(counts, kernels) -> str:
    """What callgrind's counts show, one sentence: each kernel's instructions per switch
    at -O0 and at -O2 (empty when nothing was counted)."""
    if counts.empty:
        return ""
    net = counts.set_index(["entry", "build"]).net
    parts = [f"{k} {net[(k, 'O0')]:.0f} -> {net[(k, 'O2')]:.0f}" for k in kernels
             if (k, "O0") in net.index and (k, "O2") in net.index]
    if not parts:
        return ""
    return "Instructions per switch from -O0 to -O2 (callgrind): " + "; ".join(parts) + "."


def figure(ts, counts, builds, kernels, finding: str | None = None):
    """Time per switch (left) and instructions per switch (right) at every build;
    `finding` (finding()) as its title."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    findings.title(fig, finding)
    labels = [f"-{b}" for b in builds]
    plots.errorbars(axes[0], ts, x="x", hue="entry")
    plots.log_axis(axes[0], "y")
    axes[0].set_xticks(range(len(builds)), labels, rotation=30)
    axes[0].set_xlabel("build")
    axes[0].set_ylabel("ns per switch (median, IQR bars)")
    axes[0].set_title("time per switch")
    if counts.empty:
        return fig
    width = 0.8 / len(kernels)
    shown = _builds_in(counts, builds)
    for i, k in enumerate(kernels):
        c = counts[counts.entry == k].set_index("build").loc[shown]
        plots.dots(axes[1], [j + i * width for j in range(len(shown))], c.net,
                   color=colour(k), label=k)
    axes[1].set_xticks([j + 0.4 - width / 2 for j in range(len(shown))],
                       [f"-{b}" for b in shown], rotation=30)
    plots.log_axis(axes[1], "y")
    axes[1].set_ylabel("instructions per switch (callgrind, net)")
    axes[1].set_title("instructions per switch")
    axes[1].legend(fontsize="small")
    axes[1].grid(True, axis="y", alpha=0.3)
    return fig


def ratios(timed, counts, kernels):
    """Per kernel: -O0 and -O2 medians, their ratio with its spread, and the same for
    instructions when they were counted."""
    rows = []
    for k in kernels:
        a = timed[(timed.entry == k) & (timed.build == "O0")].ns_per_switch
        b = timed[(timed.entry == k) & (timed.build == "O2")].ns_per_switch
        r, lo, hi = verdicts.ratio_with_spread(a, b)
        spread = (f"{lo:.2f} .. {hi:.2f}" if math.isfinite(lo) and math.isfinite(hi)
                  else "unbounded (the -O2 net is within the loop's jitter)")
        row = {"entry": k, "ns -O0": a.median(), "ns -O2": b.median(), "-O0 / -O2": r,
               "spread": spread}
        if not counts.empty:
            c = counts[counts.entry == k].set_index("build").net
            row.update({"instr -O0": c["O0"], "instr -O2": c["O2"],
                        "instr -O0 / -O2": c["O0"] / c["O2"]})
        rows.append(row)
    return pd.DataFrame(rows)


def instructions_note(ratios) -> str:
    """The verdict note's addition: Boost fiber's -O0/-O2 instruction ratio, if counted."""
    if "instr -O0 / -O2" not in ratios:
        return ""
    r = ratios.set_index("entry").loc["boost_fiber"]
    return f"; instructions per switch -O0/-O2 = {r['instr -O0 / -O2']:.1f} (callgrind)"


def saved(timed, counts):
    """The rows the notebook saves: every timed run with its build's counts beside it."""
    return timed.merge(counts, on=["entry", "build"], how="left")
