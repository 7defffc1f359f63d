"""Notebook 08's analysis: the sweep of work between switches, its shares and throughputs,
the author's case study read from data/claims.csv (C000.7's claimed shares and gain, and
the bounds of its rule as amended), the figures and the W = 100 tables.

    from labkit.lab.analysis import switch_frequency as sf
    sf.claimed()              # {'share_before': 0.15, 'share_after': 0.03, 'gain': 1.4}
    sf.rule_bounds("C000.7", "gain")   # the rule's bounds on the gain, amendments applied
"""
from __future__ import annotations

import os
import re
import textwrap
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, SymmetricalLogLocator

from labkit.core import plots, stats
from labkit.core.systems import colours
from labkit.core.units import KiB, MiB
from labkit.experiments import frequency
from labkit.lab.analysis import findings
from labkit.lab.experiment import SWITCH_FREQUENCY
from labkit.lab.judging import claims, verdicts
from labkit.lab.running.sweep import for_notebook

NOTEBOOK = SWITCH_FREQUENCY.name
# The lab's sweep for the experiment's sweeps (labkit.experiments.frequency), checkpointed
# under this notebook's name.
sweep = for_notebook(NOTEBOOK)
STACKS, BATCHES = frequency.SWEEP_STACKS, frequency.SWEEP_BATCHES
BEFORE, AFTER = (1 * MiB, 1), (64 * KiB, 32)   # the author's two set-ups (C000.7)


def verdict_entries(judge_work: int, *, tasks: dict, coroutines: int, cpu) -> dict:
    """The verdict design's sides (SWITCH_FREQUENCY.sides: the author's two set-ups, each
    with dependent and independent work), each one call of frequency.measure at the
    claim's W."""
    s = SWITCH_FREQUENCY.sides
    sides = {s.BEFORE_DEPENDENT: (BEFORE, "dependent"), s.BEFORE_INDEPENDENT: (BEFORE, "independent"),
             s.AFTER_DEPENDENT: (AFTER, "dependent"), s.AFTER_INDEPENDENT: (AFTER, "independent")}
    return {label: partial(frequency.measure, judge_work, stack_size=size, batch=batch,
                           coroutines=coroutines, tasks=tasks[judge_work], cpu=cpu, work=work)
            for label, ((size, batch), work) in sides.items()}
BY = ["setup", "stack_size", "batch", "work_cycles"]
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"


def claimed() -> dict:
    """C000.7's claimed value (data/claims.csv, '15% -> <3%; +40%') as numbers: the share
    of time switching before and after, and the throughput gain."""
    text = claims.claim("C000.7")["claimed_value"]
    before, after, gain = (float(x) for x in re.findall(_NUMBER, text)[:3])
    return {"share_before": before / 100, "share_after": after / 100, "gain": 1 + gain / 100}


def rule_bounds(claim_id: str, name: str) -> list[tuple[str, str, float]]:
    """Every comparison of `name` with a number in the claim's rules as they stand
    (amendments applied, labkit.lab.judging.claims.claim): (which rule, operator, bound)."""
    c = claims.claim(claim_id)
    pattern = re.compile(rf"(?<![\w/]){re.escape(name)}\s*(<=|>=|<|>)\s*({_NUMBER})")
    return [(side, op, float(v)) for side in ("reproduced", "contradicted")
            for op, v in pattern.findall(c[f"{side}_if"])]


def setting(info) -> str:
    """The machine, the TSC's rate and the load average before the sweep."""
    return (f"{plots.machine_caption(info)}\nTSC: {info['tsc_ghz']:.3f} ticks per ns\n"
            + load_text("before"))


def load_text(when: str) -> str:
    """The 1-minute load average now: how much of a switch the core hides behind the
    work depends on what else runs on the machine."""
    return (f"load average (1 min) {when} the sweep: {os.getloadavg()[0]:.2f} "
            f"on {os.cpu_count()} CPUs")


def tasks(work_cycles, *, seconds: float, coroutines: int, tsc_ghz: float) -> dict:
    """Tasks per timed loop at each W (frequency.tasks_for, batches of 32)."""
    return {w: frequency.tasks_for(w, seconds=seconds, coroutines=coroutines, batch=32,
                                   tsc_ghz=tsc_ghz) for w in work_cycles}


def share_of(runs):
    """The share of time switching per set-up and W, median and quartiles."""
    return stats.summarize(runs, by=BY, value="share_switching")


def summaries(runs):
    """(share of time switching, throughput) per set-up and W, median and quartiles, and
    pyperf's noise warnings on ns per task per point."""
    share = share_of(runs)
    speed = stats.summarize(runs, by=BY, value="throughput_mtasks_s")
    warnings = stats.noise_warnings(stats.summarize(runs, by=["point"], value="ns_per_task"))
    return share, speed, warnings


def share_table(share):
    """The median share of time switching, %, W by set-up."""
    return share.pivot(index="work_cycles", columns="setup", values="median").mul(100).round(1)


def checks(runs):
    """Per set-up and W: work ticks per task, switches per task, tasks, the runs the OS
    preempted and the page faults inside the timed loops."""
    return runs.groupby(["setup", "work_cycles"]).agg(
        work_ticks_per_task=("work_ticks_per_task", "median"),
        switches_per_task=("switches_per_task", "first"),
        tasks=("tasks", "first"),
        preempted_runs=("preemptions", lambda p: int((p > 0).sum())),
        page_faults=("minor_faults", "sum"),
    ).reset_index()


# The set-ups are not entries: none may be drawn in an entry's colour.
_TINT = colours(("one task per yield", "batched", "independent work"))


def _draw(ax, summary):
    """One line per set-up: colour for the batch, solid/filled for 1 MiB, dashed/open for
    64 KiB. The 64 KiB points are drawn 6% to the right so that equal results stay
    visible side by side instead of one hiding the other."""
    for (stack_size, batch), g in summary.groupby(["stack_size", "batch"], sort=False):
        big = stack_size == 1 * MiB
        g = g.assign(work_cycles=g.work_cycles * (1.0 if big else 1.06))
        plots.errorbars(ax, g, x="work_cycles", hue="setup",
                        color=_TINT["one task per yield" if batch == 1 else "batched"],
                        linestyle="-" if big else "--",
                        markerfacecolor=None if big else "none")


def _decades(ax, smallest: float):
    """W on a log scale that keeps W = 0: linear below the smallest positive W."""
    ax.set_xscale("symlog", linthresh=smallest, linscale=0.5)
    ax.xaxis.set_major_locator(SymmetricalLogLocator(base=10, linthresh=smallest))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlim(left=0)
    ax.set_xlabel("W: work per task (TSC ticks; 0 at the left edge)")


def share_finding(share, independent, *, judge_work: int) -> str:
    """What the share figure shows at the claim's W, one sentence from this run's medians:
    the author's starting set-up with dependent and with independent work, against the
    author's share (C000.7)."""
    label = frequency.setup_label(*BEFORE)

    def at(frame):
        if frame is None or frame.empty:
            return None
        m = frame[(frame.setup == label) & (frame.work_cycles == judge_work)]["median"]
        return float(m.iloc[0]) if len(m) else None

    dep, ind, author = at(share), at(independent), claimed()["share_before"]
    if dep is None:
        return f"No run of {label} at W = {judge_work} ticks here."
    said = (f"At W = {judge_work} ticks, {label}: switching takes "
            f"{plots.percent_label(dep)}% of the time beside dependent work")
    if ind is not None:
        said += (f" and {plots.percent_label(ind)}% beside independent work, which leaves "
                 "it nowhere to hide")
    return said + f"; the author measured {plots.percent_label(author)}%."


def share_figure(share, *, judge_work: int, coroutines: int, independent=None):
    """The share of time switching against W (W = 0 kept), the author's two shares marked,
    and the author's starting set-up with independent work (`independent`: its share
    summary, share_of(indep)) beside it; this run's finding as the title
    (figures/08_switch_frequency-share)."""
    c = claimed()
    fig, ax = plt.subplots(figsize=(8, 4.8))
    pct = share.assign(**{k: share[k] * 100 for k in ("median", "q1", "q3")})
    _draw(ax, pct)
    if independent is not None and not independent.empty:
        ind = independent[independent.setup == frequency.setup_label(*BEFORE)]
        ind = ind.assign(**{k: ind[k] * 100 for k in ("median", "q1", "q3")})
        plots.errorbars(ax, ind.assign(setup=ind.setup + ", independent work"),
                        x="work_cycles", hue="setup", color=_TINT["independent work"],
                        marker="D", linestyle="none")
    ax.plot([judge_work], [100 * c["share_before"]], "k*", markersize=11,
            label=f"author: 1 MB, 1 task/yield ({100 * c['share_before']:.0f}%)")
    ax.plot([judge_work], [100 * c["share_after"]], "kP", markersize=9,
            label=f"author: 64 KB, 32 tasks/yield, local queues (< {100 * c['share_after']:.0f}%)")
    ax.legend(fontsize="small")
    positive = share.work_cycles[share.work_cycles > 0]
    _decades(ax, float(positive.min()) if len(positive) else 1.0)
    ax.set_ylim(0, max(20, pct.q3.max() + 5))
    ax.set_ylabel("share of time switching, % (median, IQR bars)")
    ax.set_title(f"{coroutines} coroutines, asm_fpu: time switching vs work between switches\n"
                 + textwrap.fill(share_finding(share, independent, judge_work=judge_work), 100),
                 fontsize=9)
    return plots.finish(fig, f"{NOTEBOOK}-share")


def gains(runs):
    """Each set-up's throughput over the author's starting point (BEFORE) at the same W:
    the ratio of medians with the widest spread the quartiles allow."""
    base = frequency.setup_label(*BEFORE)
    rows = []
    for (label, w), g in runs.groupby(["setup", "work_cycles"]):
        ref = runs[(runs.setup == base) & (runs.work_cycles == w)]
        r, lo, hi = verdicts.ratio_with_spread(g.throughput_mtasks_s, ref.throughput_mtasks_s)
        rows.append({"setup": label, "work_cycles": w, "median": r, "q1": lo, "q3": hi})
    return pd.DataFrame(rows).merge(
        runs[["setup", "stack_size", "batch"]].drop_duplicates(), on="setup")


def gain_finding(runs, *, judge_work: int) -> str:
    """What the throughput figure shows at the claim's W, one sentence from this run: the
    author's second set-up over the first with its interval, beside the author's gain
    (C000.7)."""
    after, before = (frequency.setup_label(*s) for s in (AFTER, BEFORE))
    g = gains(runs)
    g = g[(g.setup == after) & (g.work_cycles == judge_work)]
    if g.empty:
        return f"No run of {after} at W = {judge_work} ticks here."
    r = g.iloc[0]
    return (f"At W = {judge_work} ticks, {after} runs {findings.times(r['median'])} "
            f"{findings.quartiles(findings.times(r.q1), findings.times(r.q3))}"
            f" the throughput of {before}; the author gained "
            f"{findings.times(claimed()['gain'])}.")


def throughput_figure(runs, speed, *, judge_work: int):
    """Throughput against W, and the gain over BEFORE with the author's gain and the
    bounds of C000.7's rule on it as they stand, gain_finding as the title
    (figures/08_switch_frequency-throughput)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.9))
    findings.title(fig, gain_finding(runs, judge_work=judge_work))
    _draw(axes[0], speed)
    plots.log_axis(axes[0], "y")
    axes[0].set_ylabel("throughput, million tasks/s (median, IQR bars)")
    axes[0].set_title("throughput")
    _draw(axes[1], gains(runs))
    gain = claimed()["gain"]
    axes[1].plot([judge_work], [gain], "k*", markersize=11,
                 label=f"author: {100 * (gain - 1):+.0f}%")
    words = {"reproduced": "reproduced needs", "contradicted": "contradicted if"}
    for (side, op, bound), ls in zip(rule_bounds("C000.7", "gain"), (":", "-.", "--", "-")):
        axes[1].axhline(bound, color="grey", ls=ls, lw=1,
                        label=f"rule: {words[side]} gain {op} {bound:g}")
    axes[1].legend(fontsize="small")
    axes[1].set_ylabel(f"throughput / throughput of {frequency.setup_label(*BEFORE)}")
    axes[1].set_title("gain over 1 MiB stacks, one task per switch")
    positive = speed.work_cycles[speed.work_cycles > 0]
    for ax in axes:
        _decades(ax, float(positive.min()) if len(positive) else 1.0)
    return plots.finish(fig, f"{NOTEBOOK}-throughput")


def _quartiles(s, fmt="{:.1f}"):
    m, q1, q3 = stats.quartiles(s)
    return f"{fmt.format(m)} [{fmt.format(q1)}, {fmt.format(q3)}]"


def at_w(runs, indep, *, judge_work: int):
    """Per set-up at W = judge_work: the share of time switching and ns per switch with
    dependent and independent work, throughput, ns per switch at W = 0, the share if
    nothing overlapped (c0 / (work + c0), c0 the switches' cost per task at W = 0) and
    whether out-of-order overlap hid the switch."""
    both = pd.concat([runs, indep], ignore_index=True)
    rows = []
    for stack_size in STACKS:
        for batch in BATCHES:
            g = runs[(runs.work_cycles == judge_work) & (runs.stack_size == stack_size)
                     & (runs.batch == batch)]
            at = frequency.switch_cost(both, work_cycles=judge_work, stack_size=stack_size,
                                       batch=batch)
            at0 = frequency.switch_cost(both, work_cycles=0, stack_size=stack_size,
                                        batch=batch)["dependent"]["ns_per_switch"]
            c0 = at0["median"] * g.switches_per_task.iloc[0]
            work = np.median(g.work_ns_per_task)
            dep, ind = at["dependent"], at.get("independent")
            rows.append({
                "setup": frequency.setup_label(stack_size, batch),
                "share switching, dependent work": stats.net_text(dep["share"], "%", scale=100),
                "share switching, independent work": (
                    stats.net_text(ind["share"], "%", scale=100) if ind else "not measured"),
                "throughput, Mtasks/s": _quartiles(g.throughput_mtasks_s, fmt="{:.2f}"),
                "switches per task": g.switches_per_task.iloc[0],
                f"ns per switch at W={judge_work}, dependent": stats.net_text(dep["ns_per_switch"]),
                f"ns per switch at W={judge_work}, independent": (
                    stats.net_text(ind["ns_per_switch"]) if ind else "not measured"),
                "ns per switch at W=0": stats.net_text(at0),
                "share if nothing overlapped, %": (
                    round(100 * c0 / (work + c0), 1) if at0["resolved"]
                    else "switches below resolution at W=0"),
                "out-of-order overlap": ("hidden by out-of-order overlap" if at["hidden"]
                                         else "not seen" if at["hidden"] is False
                                         else "not measured"),
            })
    return pd.DataFrame(rows)


def by_rotation(runs, *, judge_work: int):
    """The median share of time switching, %, of each pass over the sweep at W = judge_work."""
    return (runs[runs.work_cycles == judge_work]
            .groupby(["rotation", "setup"]).share_switching.median().mul(100).round(1)
            .unstack("setup"))


def author_beside_here(runs, indep, *, judge_work: int):
    """The author's shares and gain (claimed) beside this machine's at W = judge_work, with
    the gain the shares imply ((1 - s1) / (1 - s0)); and a note when out-of-order overlap
    hid the switch before (empty otherwise)."""
    value, _, _, _ = frequency.before_after(runs, work_cycles=judge_work, before=BEFORE,
                                            after=AFTER)
    implied = (1 - value["share_after"]) / (1 - value["share_before"])
    c = claimed()
    cost = frequency.switch_cost(pd.concat([runs, indep], ignore_index=True),
                                 work_cycles=judge_work, stack_size=BEFORE[0], batch=BEFORE[1])
    note = (f"{frequency.setup_label(*BEFORE)}, W={judge_work}: {cost['note']}"
            if cost["hidden"] else "")
    table = pd.DataFrame([
        {"": "author", "share before": f"{100 * c['share_before']:.0f}%",
         "share after": f"< {100 * c['share_after']:.0f}%",
         "gain implied by the shares": f"{(1 - c['share_after']) / (1 - c['share_before']):.2f}"
                                       f" to {1 / (1 - c['share_before']):.2f}",
         "gain": f"{c['gain']:.2f}"},
        {"": "this machine", "share before": f"{100 * value['share_before']:.1f}%",
         "share after": f"{100 * value['share_after']:.1f}%",
         "gain implied by the shares": f"{implied:.2f}", "gain": f"{value['gain']:.2f}"},
    ])
    return table, note
