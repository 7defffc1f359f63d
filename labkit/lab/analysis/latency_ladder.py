"""Notebook 04's analysis: the ladder's runs split from its failures, its summaries, the
ladder figure and table with instructions per switch, ucontext beside the Kunpeng figure,
the copy-stack sweep, and cxx20_symmetric's raw and net times."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator

import labkit
from labkit.core import plots
from labkit.core.systems import colour
from labkit.errors import CountError
from labkit.experiments import callgrind
from labkit.lab.analysis import findings
from labkit.lab.report import articles

# The rungs the verdicts use; `asm` is the unit of the table's ratios.
JUDGED = ["asm", "virtual_call", "boost_fiber", "syscall_getppid", "cxx20_generator"]
MARKER = {"labkit": "o", "peer": "s", "python": "^"}
FLOOR = 0.05  # ns: the left edge, where a net cost <= 0 is drawn
# libaco's own benchmark (another machine): (bytes copied, ns per switch). Not one of the
# five articles, so not a claim: a reference point for the copy-stack figure.
LIBACO_REPORT = ((8, 33), (8192, 1000))


def catalogue_parts():
    """(the catalogue, the kernels available here, the table of those missing and why)."""
    catalogue = labkit.catalogue()
    missing = catalogue.loc[~catalogue.available, ["entry", "system", "kind", "why_not"]]
    return catalogue, list(catalogue.entry[catalogue.available]), missing


def split_failed(runs, catalogue, missing):
    """(the runs that worked, the missing table with the entries that failed and their
    error); prints how many entries were measured."""
    if "error" in runs:
        failed = runs.loc[runs.error.notna(), ["entry", "error"]].rename(
            columns={"error": "why_not"}).merge(catalogue[["entry", "system", "kind"]],
                                                on="entry")
        missing = pd.concat([missing, failed[missing.columns]], ignore_index=True)
        runs = runs[runs.error.isna()].drop(columns="error")
    print(f"{runs.entry.nunique()} of {len(catalogue)} entries measured; missing here:")
    return runs, missing


def summaries(runs, catalogue):
    """(ns, ticks): per kernel, cheapest first, with its system; noise warnings printed."""
    ns = labkit.summarize(runs, by="entry").sort_values("median", ignore_index=True)
    ns["system"] = ns.entry.map(dict(zip(catalogue.entry, catalogue.system)))
    plots.fold(labkit.noise_warnings(ns), plots.NOISY)
    ticks = labkit.summarize(runs, by="entry", value="ticks_per_switch").set_index("entry")
    return ns, ticks.loc[ns.entry].reset_index().assign(system=ns.system)


def _short(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}" if v > 0 else "<= 0"


def _rungs(ax, summary, unit, floor):
    for y, r in enumerate(summary.itertuples()):
        m, lo, hi = (max(v, floor) for v in (r.median, r.q1, r.q3))
        ax.errorbar(m, y, xerr=[[m - lo], [hi - m]], fmt=MARKER[r.system],
                    color=colour(r.entry), ms=7, capsize=3, label=r.entry)
        ax.annotate(_short(r.median), (hi, y), xytext=(5, 0), textcoords="offset points",
                    va="center", fontsize=7)
    plots.log_axis(ax, "x")
    # Whole decades only: 1-2-5 ticks crowd each other over five decades.
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    ax.set_xlim(0.6 * summary.q1.clip(lower=floor).min(), 4 * summary.q3.max())
    ax.grid(True, which="both", axis="x", alpha=0.3)
    ax.set_xlabel(f"{unit} per switch (median, IQR bars, log scale)")


def ladder_finding(ns) -> str:
    """What the ladder shows, from its medians: the cheapest and dearest rung, and where
    labkit's switch and a system call sit between them."""
    if ns.empty:
        return "No rung was measured here."
    at = ns.set_index("entry")["median"]
    low, high = ns.iloc[0], ns.iloc[-1]
    said = (f"On this machine one switch costs from {plots.ns_label(max(low['median'], 0))} "
            f"({low.entry}) to {plots.ns_label(high['median'])} ({high.entry})")
    marks = [f"{e} {plots.ns_label(at[e])}" for e in ("asm_fpu", "syscall_getppid")
             if e in at and e not in (low.entry, high.entry)]
    return said + (f"; {', '.join(marks)}." if marks else ".")


def ladder_figure(ns, ticks, tsc_ghz: float, cpu: int):
    """Every rung, cheapest at the top, in ns (left) and TSC ticks (right); each entry in
    its own colour (systems.colour) with its kind in words beside its name, the marker the
    system; the verdicts' rungs are named in bold. A net cost at or below zero is drawn at
    the left edge (FLOOR) and labelled."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.32 * len(ns) + 2), sharey=True)
    _rungs(left, ns, "ns", FLOOR)
    _rungs(right, ticks, "ticks", FLOOR * tsc_ghz)
    left.set_yticks(range(len(ns)), [f"{e} ({k})" for e, k in zip(ns.entry, ns.kind)])
    for name, entry in zip(left.get_yticklabels(), ns.entry):
        name.set_fontweight("bold" if entry in JUDGED else "normal")
    left.invert_yaxis()
    left.set_title("nanoseconds (CLOCK_MONOTONIC)")
    right.set_title(f"TSC ticks ({tsc_ghz:.2f} GHz reference clock)")
    handles = [Line2D([], [], color="k", marker=m, ls="", mfc="none", label=s)
               for s, m in MARKER.items()]
    left.legend(handles=handles, loc="lower left", fontsize="small", title="system")
    fig.suptitle(f"One switch, cheapest to dearest, all pinned to CPU {cpu}\n"
                 + ladder_finding(ns), fontsize=10)
    return fig


def count(kernel: str) -> dict:
    """callgrind's instructions per switch of one kernel at -O2; one the counting driver
    cannot run gets a NaN count and its reason in `error`, so the others keep theirs."""
    try:
        return callgrind.instructions_per_switch(kernel, build="O2")
    except CountError as exc:
        error = exc.reason
    except (RuntimeError, ValueError) as exc:
        error = str(exc)
    return {"entry": kernel, "net": math.nan, "error": error}


def instruction_counts(ns, *, only_judged: bool, count_instructions: bool):
    """The counts of every rung but the CPython peers (only_judged: only the verdicts'
    rungs), with the reasons printed for those not counted; an empty frame, and the
    reason printed, where nothing is counted."""
    can, why = callgrind.available()
    if not (count_instructions and can):
        print("instructions not counted:", why or "count_instructions is False")
        return pd.DataFrame(columns=["entry", "net"])
    countable = [k for k, s in zip(ns.entry, ns.system)
                 if s != "python" and (not only_judged or k in JUDGED)]
    instr = pd.DataFrame([count(k) for k in countable])
    for r in instr.dropna(subset=["error"]).itertuples() if "error" in instr else []:
        print(f"{r.entry}: not counted: {r.error}")
    return instr


def _instructions(kernel, system, counted: dict, counting: bool) -> str:
    """The instructions counted, or why there is no count (a blank would say nothing)."""
    v = counted.get(kernel, math.nan)
    if v == v:
        return f"{v:,.1f}"
    if system == "python":
        return "not counted: a CPython peer"
    if counting and kernel not in counted:
        return "not counted in a quick run"
    return "not counted (see the note)"


def ladder_table(ns, catalogue, instr):
    """One row per rung: ns with its IQR, ticks, the ratio to asm, the -O2 instructions."""
    counted = dict(zip(instr.entry, instr.net))
    asm_ns = ns.set_index("entry")["median"].get("asm", math.nan)
    return pd.DataFrame({
        "entry": ns.entry, "system": ns.system, "kind": ns.kind,
        "saves": ns.entry.map(dict(zip(catalogue.entry, catalogue.saves))),
        "median ns": ns["median"], "IQR ns": ns.iqr, "median ticks": ns.median_ticks,
        "ratio to asm": ns["median"] / asm_ns,
        "instructions (O2)": [_instructions(k, s, counted, len(instr) > 0)
                              for k, s in zip(ns.entry, ns.system)],
        "noisy": ns.noisy,
    })


def kunpeng_swapcontext_ns() -> float:
    """The article's one-core Kunpeng VM figure for swapcontext (C003.2), in ns a switch:
    its ms per million switches, read from the article's table (labkit.lab.report.articles)."""
    frame = articles.table("t10").frame
    row = frame[frame.machine.str.startswith("Kunpeng 916 VM, 1 core")].iloc[0]
    return float(row["1M swapcontext ms, article / here"].replace(",", ""))


def ucontext_text(ladder, missing) -> str:
    """ucontext's cost here against the Kunpeng figure and the system call's rung."""
    row = ladder.set_index("entry")
    if "ucontext" not in row.index:
        return f"ucontext is missing here: {missing.set_index('entry').why_not.get('ucontext')}"
    u, article = row.loc["ucontext"], kunpeng_swapcontext_ns()
    text = (f"ucontext here: {u['median ns']:.0f} ns a switch ({u['ratio to asm']:.0f}x asm), "
            f"{article / u['median ns']:.1f}x faster than the article's {article:.0f} ns on "
            "the Kunpeng VM")
    if "syscall_getppid" in row.index:
        text += (f"\nucontext / syscall_getppid = "
                 f"{u['median ns'] / row.loc['syscall_getppid', 'median ns']:.2f}")
    return text


def copy_summary(copy_runs):
    """(the copy-stack runs that worked, their summary per stack_in_use with the bytes
    copied per switch and the copy rate); the failed points are printed."""
    if "error" in copy_runs:
        for r in copy_runs.dropna(subset=["error"]).itertuples():
            print(f"copy_stack at {r.stack_in_use} B: {r.error}")
        copy_runs = copy_runs[copy_runs.error.isna()].drop(columns="error")
    copy = labkit.summarize(copy_runs, by="stack_in_use")
    copy["copied_bytes_per_switch"] = copy.stack_in_use.map(
        copy_runs.groupby("stack_in_use").copied_bytes_per_switch.median())
    copy["GB/s"] = copy.copied_bytes_per_switch / copy["median"]
    return copy_runs, copy[["stack_in_use", "copied_bytes_per_switch", "repeats", "median",
                            "q1", "q3", "GB/s", "noisy"]]


def copy_finding(copy, ns) -> str:
    """What the copy-stack figure shows, one sentence from this run: the switch at the
    fewest and the most bytes copied, the copy rate there, and asm_fpu's switch without a
    copy, beside libaco's report."""
    if copy.empty:
        return "No copy-stack switch ran here."
    c = copy.sort_values("copied_bytes_per_switch")
    few, most = c.iloc[0], c.iloc[-1]

    def at(r):
        return (f"{plots.ns_label(r['median'])} "
                f"{findings.quartiles(plots.ns_label(r.q1), plots.ns_label(r.q3))} at "
                f"{plots.bytes_label(r.copied_bytes_per_switch)}")

    said = (f"Copying the stack, a switch costs {at(few)} copied and {at(most)} "
            f"({most['GB/s']:.3g} GB/s)")
    at_entry = ns.set_index("entry")["median"]
    if "asm_fpu" in at_entry:
        said += f"; asm_fpu switches in {plots.ns_label(at_entry['asm_fpu'])} without a copy"
    (b0, t0), (b1, t1) = LIBACO_REPORT
    return (said + f". libaco reported {plots.ns_label(t0)} at {plots.bytes_label(b0)} and "
            f"{plots.ns_label(t1)} at {plots.bytes_label(b1)}.")


def copy_figure(copy, ns, cpu: int):
    """ns per switch against bytes copied, with asm_fpu's switch as the floor and
    libaco's report beside it; copy_finding as its title."""
    fig, ax = plt.subplots(figsize=(7, 4.9))
    findings.title(fig, copy_finding(copy, ns), 75)
    ax.errorbar(copy.copied_bytes_per_switch, copy["median"],
                yerr=[copy["median"] - copy.q1, copy.q3 - copy["median"]], fmt="o-",
                color=colour("copy_stack"), capsize=3, label="copy_stack")
    if "asm_fpu" in set(ns.entry):
        floor = ns.set_index("entry").loc["asm_fpu", "median"]
        ax.axhline(floor, color=colour("asm_fpu"), ls=":", label="asm_fpu")
    (b0, t0), (b1, t1) = LIBACO_REPORT
    ax.scatter([b0, b1], [t0, t1], marker="x", color="k", zorder=3,
               label=f"libaco's report ({t0} ns at {b0} B, ~{t1 / 1000:g} µs at "
                     f"{b1 // 1024} KB)")
    plots.log_axis(ax, "x", base=2)
    plots.log_axis(ax, "y")
    ax.set_xlabel("bytes copied per switch (the used stack: stack_in_use + frames)")
    ax.set_ylabel("ns per switch")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(f"Copy stacks: ns per switch against bytes in use, CPU {cpu}")
    return fig


def raw_net(runs, instr):
    """asm, the C++20 generator and cxx20_symmetric: raw, baseline and net ns per switch,
    and callgrind's loop, base and net instructions where counted."""
    pick = [k for k in ["asm", "cxx20_generator", "cxx20_symmetric"] if k in set(runs.entry)]
    table = (runs[runs.entry.isin(pick)].groupby("entry")
             [["ns_per_switch_raw", "baseline_ns_per_switch", "ns_per_switch"]].median()
             .loc[pick].rename(columns={"ns_per_switch_raw": "raw ns", "ns_per_switch": "net ns",
                                        "baseline_ns_per_switch": "baseline ns"}))
    per = instr.set_index("entry") if len(instr) else pd.DataFrame()
    # Callgrind's columns only where every row was counted: a table shows no raw NaN.
    if all(col in per for col in ("loop", "base", "net")) and \
            per.reindex(table.index)[["loop", "base", "net"]].notna().all().all():
        for col in ("loop", "base", "net"):
            table[f"instructions {col}"] = [per[col][k] for k in table.index]
    return table


def raw_net_text(table) -> str:
    """cxx20_symmetric's raw, baseline and net in one sentence ("" when it did not run)."""
    if "cxx20_symmetric" not in table.index:
        return ""
    r = table.loc["cxx20_symmetric"]
    n = r.get("instructions loop", math.nan)
    return (f"cxx20_symmetric: {r['raw ns']:.2f} ns per transfer raw, {r['baseline ns']:.2f} "
            f"ns of baseline, {r['net ns']:.2f} ns net"
            + (f"; {n:.1f} instructions per transfer (callgrind)" if n == n else "")
            + ": every transfer happens (the counters prove it), and the net is the raw "
            "time less an empty loop whose latency the transfer loop partly hides")
