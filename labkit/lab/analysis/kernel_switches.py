"""Notebook 05's analysis: where the hand-offs run, their summaries, the kernel's own
switch counts set against them, the two figures, and the ratios each rule needs."""
from __future__ import annotations

import math
from functools import partial

import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.core import handoff, plots, stats
from labkit.core.systems import colours
from labkit.lab.analysis import findings
from labkit.lab.experiment import KERNEL_SWITCHES
from labkit.lab.judging import verdicts
from labkit.lab.judging.claims import claim
from labkit.lab.running.sweep import grid

COROUTINES = ["asm", "ucontext"]
WHAT = {"same-cpu": "switch", "cross-cpu": "wake-up"}


def placements(cpu: int, cross_cpus):
    """(placement -> the two CPUs, the cross-CPU pair or None where one CPU is usable)."""
    pair = tuple(cross_cpus) if cross_cpus else handoff.two_cpus()
    where = {"same-cpu": (cpu, cpu)}
    if pair is not None:
        where["cross-cpu"] = pair
    return where, pair


def points(where):
    """The sweep's points: the coroutine switches on one CPU, every hand-off mode at every
    placement."""
    return (grid(task=COROUTINES, placement=["same-cpu"])
            + grid(task=list(labkit.HANDOFF_MODES), placement=list(where)))


def summary(handoffs):
    """Median and quartiles per task and placement (noise warnings printed)."""
    hs = labkit.summarize(handoffs.assign(what=handoffs.placement.map(WHAT)),
                          by=["task", "placement", "what"])
    plots.fold(labkit.noise_warnings(hs.assign(task=hs.task + " " + hs.placement)), plots.NOISY)
    return hs


def os_counts(handoffs):
    """Per kernel hand-off task and placement: the hand-offs made, the kernel's voluntary
    and involuntary switches, their sum per hand-off, the involuntary share, and whether
    every run's count lies where the placement allows (handoff.os_counts_agree)."""
    rows = handoffs[handoffs.part == "kernel hand-off"]
    counts = (rows.assign(what=rows.placement.map(WHAT),
                          counts_agree=handoff.os_counts_agree(rows))
              .groupby(["task", "placement", "what"], sort=False)
              .agg(handoffs=("switches", "median"), vol=("vol_ctxsw", "median"),
                   invol=("invol_ctxsw", "median"),
                   kernel_per_handoff=("kernel_per_handoff", "median"),
                   counts_agree=("counts_agree", "all")))
    counts["invol_share"] = counts.invol / (counts.vol + counts.invol)
    return counts


def count_warnings(counts) -> list[str]:
    """One warning per task and placement whose kernel counts disagree with its hand-offs."""
    return [f"WARNING: {key}: the kernel counted {r.kernel_per_handoff:.2f} switches per "
            "hand-off, outside what this placement allows: read this row's timing with care"
            for key, r in counts[~counts.counts_agree].iterrows()]


def _ratio_words(a, b) -> str:
    return findings.times(*verdicts.ratio_with_spread(a, b))


def oneway_finding(handoffs) -> str:
    """What the one-way figure shows, one sentence from this run: an OS thread's hand-off
    (futex) against a coroutine switch (asm), and a process's against a thread's (pipes),
    each with its interval, the articles' ratios (C001.4, C002.1) beside them."""
    def on_one(task):
        return handoffs[(handoffs.task == task) & (handoffs.placement == "same-cpu")
                        ].ns_per_switch

    futex, asm, proc, thread = (on_one(t) for t in ("thread_futex", "asm", "process_pipe",
                                                   "thread_pipe"))
    said = []
    if len(futex) and len(asm):
        said.append(f"On this machine an OS thread's hand-off on one CPU costs "
                    f"{_ratio_words(futex, asm)} a coroutine switch "
                    f"({plots.ns_label(futex.median())} against {plots.ns_label(asm.median())};"
                    f" the article said about {claim('C001.4')['claimed_value']}x)")
    if len(proc) and len(thread):
        said.append(f"a process's pipe hand-off costs {_ratio_words(proc, thread)} a thread's "
                    f"(the article said {claim('C002.1')['claimed_value']}x)")
    return ("; ".join(said) + ".") if said else "No hand-off was measured on one CPU here."


def yield_finding(yields) -> str:
    """What the yield figure shows, one sentence: the throughput kept when both threads
    yield after every unit (k = 1) against never (k = 0), with its interval, beside the
    article's (C002.2)."""
    a, b = (yields[yields.every == k].units_per_s for k in (1, 0))
    if a.empty or b.empty:
        return "This run did not measure both k = 1 and k = 0."
    r, lo, hi = verdicts.ratio_with_spread(a, b)
    span = (f" [{plots.percent_label(lo)}, {plots.percent_label(hi)}]"
            if math.isfinite(lo) and math.isfinite(hi) else "")
    return (f"Yielding after every unit keeps {plots.percent_label(r)}%{span} of the "
            f"throughput of never yielding; the article kept "
            f"{plots.percent_label(float(claim('C002.2')['claimed_value']))}%.")


def oneway_figure(hs, cpu: int, pair, finding: str | None = None):
    """One-way ns per mechanism, the two placements side by side, log scale; `finding`
    (oneway_finding) as its title."""
    order = [*COROUTINES, *labkit.HANDOFF_MODES]
    legend = {"same-cpu": f"same CPU ({cpu}): a context switch",
              "cross-cpu": f"two CPUs {pair}: a cross-CPU wake-up"}
    fig, ax = plt.subplots(figsize=(9, 5))
    findings.title(fig, finding, 95)
    palette = colours(legend)
    for (placement, g), dx in zip(hs.groupby("placement", sort=False), (-0.08, 0.08)):
        plots.errorbars(ax, g.assign(pos=g.task.map(order.index) + dx), x="pos",
                        hue="placement", label_fmt=legend[placement], linestyle="none",
                        palette=palette)
    ax.set_xticks(range(len(order)), order)
    plots.log_axis(ax, "y")
    ax.set_xlabel("mechanism (asm, ucontext: coroutine switches; others: two OS tasks)")
    ax.set_ylabel("one-way ns per switch or wake-up\n(median, IQR bars)")
    ax.set_title("What it costs to hand the CPU to another context")
    return fig


def _switches_per_unit(yields):
    return (yields.vol_ctxsw + yields.invol_ctxsw) / yields.units_done


def yield_summary(yields):
    """Throughput per k (units/s, both threads), with ns per unit and the kernel's switches
    per unit of work beside it (noise warnings printed)."""
    yields = yields.assign(switches_per_unit=_switches_per_unit(yields))
    ys = labkit.summarize(yields, by="every", value="units_per_s")
    for col in ("switches_per_unit", "ns_per_unit"):
        ys[col] = ys.every.map(yields.groupby("every")[col].median())
    ys = ys.merge(stats.group_quartiles(yields, ["every"], ["switches_per_unit"]), on="every")
    plots.fold(labkit.noise_warnings(ys), plots.NOISY)
    return ys[["every", "repeats", "median", "q1", "q3", "ns_per_unit", "switches_per_unit",
               "switches_per_unit_q1", "switches_per_unit_q3", "cv", "noisy"]]


def yield_figure(ys, yield_every, cpu: int, finding: str | None = None):
    """Throughput (left) and the kernel's switches per unit (right) against k; `finding`
    (yield_finding) as its title."""
    labels = ["never" if k == 0 else str(k) for k in yield_every]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    findings.title(fig, finding)
    at = ys.assign(pos=ys.every.map(list(yield_every).index))
    # One series and no entry: black, so that no entry's colour is borrowed.
    plots.errorbars(left, at, x="pos", color="k")
    left.set_ylim(bottom=0)
    left.set_ylabel("units of work per second, both threads\n(median, IQR bars)")
    plots.errorbars(right, at, x="pos", y="switches_per_unit", lo="switches_per_unit_q1",
                    hi="switches_per_unit_q3", color="k")
    right.set_ylabel("kernel switches per unit of work\n(median, IQR bars)")
    for ax in (left, right):
        ax.set_xticks(range(len(yield_every)), labels)
        ax.set_xlabel("sched_yield() every k units of ~1 µs (evenly spaced, not to scale)")
    left.set_title(f"throughput, two threads on CPU {cpu}")
    right.set_title("the yields the kernel counted")
    return fig


def spreads(handoffs, yields, pair):
    """Each rule's measured quantity from the sweep with its bootstrap BCa 95% interval: the
    ratios of medians, and for C002.4 the difference in TSC ticks (median, low, high)."""
    def sample(task, placement="same-cpu", col="ns_per_switch"):
        return handoffs[(handoffs.task == task) & (handoffs.placement == placement)][col]

    condvar = sample("thread_condvar")
    out = {
        "thread_futex / asm (C001.4)": verdicts.ratio_with_spread(sample("thread_futex"),
                                                                  sample("asm")),
        "process_pipe / thread_pipe (C002.1)": verdicts.ratio_with_spread(
            sample("process_pipe"), sample("thread_pipe")),
        "yield k=1 / k=0 throughput (C002.2)": verdicts.ratio_with_spread(
            yields[yields.every == 1].units_per_s, yields[yields.every == 0].units_per_s),
        "thread_condvar / ucontext (C003.1, C003.2)": verdicts.ratio_with_spread(
            condvar, sample("ucontext")),
    }
    if pair is not None:
        out["condvar wake-up / condvar switch (C003.3)"] = verdicts.ratio_with_spread(
            sample("thread_condvar", "cross-cpu"), condvar)
    out["process - thread pipe, TSC ticks (C002.4)"] = verdicts.difference_with_spread(
        *(sample(m, col="ticks_per_switch") for m in ("process_pipe", "thread_pipe")))
    return pd.DataFrame(out, index=["median", "low", "high"]).T


def million_note(verdict_runs, cpu: int) -> str:
    """The verdict note's addition for C003.2: what a million one-way hand-offs would take
    here, condvar and swapcontext (ns per switch reads as ms per million)."""
    condvar_ms, ucontext_ms = (
        verdict_runs.loc[verdict_runs.side == k, "ns_per_switch"].median()
        for k in ("thread_condvar same-cpu", "ucontext"))
    return (f"; one-way on CPU {cpu}: a million would take {condvar_ms:.0f} ms "
            f"(condvar) and {ucontext_ms:.0f} ms (swapcontext)")


def saved(handoffs, yields):
    """The rows the notebook saves: the hand-offs and coroutine switches (with what each
    is: a switch or a wake-up), then the yields (with the kernel's switches per unit)."""
    return pd.concat([handoffs.assign(what=handoffs.placement.map(WHAT)),
                      yields.assign(switches_per_unit=_switches_per_unit(yields), part="yield")],
                     ignore_index=True)


def verdict_entries(*, cpu, pair, switches, coroutine_switches, units) -> dict:
    """The verdict design's sides (KERNEL_SWITCHES.sides), each one call: asm and ucontext,
    the sched_yield sweep at k=0 and k=1, the four hand-offs on one CPU, and the condvar
    hand-off across the two CPUs of `pair` (left out when there is no pair)."""
    s = KERNEL_SWITCHES.sides

    def on(task, cpus):
        return partial(labkit.measure_handoff, task, cpus=cpus, switches=switches)

    entries = {
        s.ASM: partial(labkit.measure, "asm", switches=coroutine_switches, cpu=cpu),
        s.UCONTEXT: partial(labkit.measure, "ucontext", switches=coroutine_switches, cpu=cpu),
        s.YIELD_NEVER: partial(labkit.measure_yield, units=units, every=[0], cpu=cpu),
        s.YIELD_EVERY: partial(labkit.measure_yield, units=units, every=[1], cpu=cpu),
        s.FUTEX_SAME_CPU: on("thread_futex", (cpu, cpu)),
        s.CONDVAR_SAME_CPU: on("thread_condvar", (cpu, cpu)),
        s.PROCESS_PIPE_SAME_CPU: on("process_pipe", (cpu, cpu)),
        s.THREAD_PIPE_SAME_CPU: on("thread_pipe", (cpu, cpu)),
    }
    if pair is not None:
        entries[s.CONDVAR_CROSS_CPU] = on("thread_condvar", pair)
    return entries
