# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: labkit (Python 3)
#     language: python
#     name: labkit
# ---

# %% [markdown]
# # 04 · The latency ladder: every switch on one CPU, side by side
#
# **Claims tested** (ids from `data/claims.csv`, the articles in `docs/sources.md`):
#
# - **C000.1** (`000_dc0f0e0d023658f3.txt`): a `boost::context::fiber` switch costs about
#   20-30 ns, which places it between a C++ virtual call (a few ns) and a system call (tens
#   to hundreds of ns), and closer to the call than to the system call.
# - **C000.5** (same file): a suspend plus resume of a C++20 stackless coroutine costs
#   2-5 ns, so a stackful switch is more than ten times dearer.
#
# **Reported here, judged elsewhere:** C001.4 (`001_22488c889cf00991.txt`: coroutines
# switch in nanoseconds, threads in microseconds) and C003.2 (`003_58dac7765c62683c.txt`:
# a million `swapcontext` switches in 814 ms on a one-core Kunpeng VM) are judged in
# notebook 05 against kernel threads; this ladder supplies their coroutine side.
#
# How the author of `000_dc0f0e0d023658f3.txt` measured: an i7-12700K locked at 5.0 GHz
# with only its performance cores and no hyper-threading, GCC 11.3 at `-O2 -march=native`,
# Boost 1.81, two fibers on 1 MB fixed-size stacks handing control back and forth ten
# million times around a `volatile` counter, total time divided by the count. The virtual
# call and syscall figures are quoted as common knowledge, not measured in the article;
# the C++20 figure comes from a `co_await` ping-pong of the same shape.
#
# Nanoseconds from a 5 GHz desktop do not travel to another machine, so the rules in
# `data/claims.csv` (written before measuring) judge what does travel: the *ordering* of
# call, fiber and syscall with the fiber's log-distance to each, and the *ratio* of a
# stackful to a stackless switch, every entry timed in the same run on the same CPU.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("04_latency_ladder"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=21).
from labkit.lab import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, switches, py_switches, repeats, count_instructions, copy_in_use) = params.resolve(
    "04_latency_ladder", quick=quick).values()

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator

import labkit
from labkit.experiments import callgrind
from labkit.core import plots, results
from labkit.lab import verdicts
from labkit.lab.sweep import grid, sweep

info = labkit.machine_info()
print(plots.machine_caption(info))
catalogue = labkit.catalogue()
available = catalogue[catalogue.available]
missing = catalogue.loc[~catalogue.available, ["kernel", "system", "kind", "why_not"]]
judged = ["asm", "virtual_call", "boost_fiber", "syscall_getppid", "cxx20_generator"]
catalogue[["kernel", "system", "kind", "saves", "available", "why_not"]]

# %% [markdown]
# ## One run, one CPU
#
# Every available kernel and peer runs the same two-context ping-pong in a worker process
# pinned to `cpu`, one after another: `repeats` timed runs after a dropped warm-up, the
# empty loop's cost subtracted from each. A "switch" is one transfer of control, so a
# round trip is two switches; for the plain calls that means one call or one return,
# for `syscall_getppid` half a system call. Stackful entries use 64 KiB stacks
# (notebook 01 shows a two-context ping-pong does not care about stack size).
#
# An entry that fails to run joins the missing table with its error instead of stopping
# the notebook.

# %%
system_of = dict(zip(catalogue.kernel, catalogue.system))
runs = sweep(
    lambda kernel: labkit.measure(
        kernel, switches=py_switches if system_of[kernel] == "python" else switches,
        repeats=repeats, cpu=cpu),
    grid(kernel=list(available.kernel)),
    desc="ladder", checkpoint="04_latency_ladder_runs", on_error="record",
)
if "error" in runs:
    failed = runs.loc[runs.error.notna(), ["kernel", "error"]].rename(columns={"error": "why_not"})
    failed = failed.merge(catalogue[["kernel", "system", "kind"]], on="kernel")
    missing = pd.concat([missing, failed[missing.columns]], ignore_index=True)
    runs = runs[runs.error.isna()].drop(columns="error")
print(f"{runs.kernel.nunique()} of {len(catalogue)} entries measured; missing here:")
missing

# %%
ns = labkit.summarize(runs, by="kernel").sort_values("median", ignore_index=True)
ticks = labkit.summarize(runs, by="kernel", value="ticks_per_switch").set_index("kernel")
ns["system"] = ns.kernel.map(system_of)
for w in labkit.noise_warnings(ns):
    print(w)
ns[["kernel", "system", "kind", "repeats", "median", "q1", "q3", "median_ticks", "noisy"]]

# %% [markdown]
# ## The ladder
#
# Cheapest at the top. Colour is what kind of switch it is, the marker which system it
# comes from; bars are the quartiles over repeats. The right panel is the same run in TSC
# ticks: on a VM the TSC counts reference ticks at a fixed rate, not core cycles, so the
# two panels differ only by that rate. Names in bold are the rungs the verdicts use
# (`asm` is the unit of the table's ratios). A net cost at or below zero (the switch is lost in
# the loop's own jitter) cannot sit on a log axis: it is drawn at the left edge and
# labelled.

# %%
COLOUR = {"baseline": "tab:gray", "stackless": "tab:blue", "stackful": "tab:red"}
MARKER = {"labkit": "o", "peer": "s", "python": "^"}
FLOOR = 0.05  # ns: the left edge, where a net cost <= 0 is drawn


def short(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}" if v > 0 else "<= 0"


def rungs(ax, summary, unit):
    floor = FLOOR * (info["tsc_ghz"] if unit == "ticks" else 1)
    for y, r in enumerate(summary.itertuples()):
        m, lo, hi = (max(v, floor) for v in (r.median, r.q1, r.q3))
        ax.errorbar(m, y, xerr=[[m - lo], [hi - m]], fmt=MARKER[system_of[r.kernel]],
                    color=COLOUR[r.kind], ms=7, capsize=3)
        ax.annotate(short(r.median), (hi, y), xytext=(5, 0), textcoords="offset points",
                    va="center", fontsize=7)
    plots.log_axis(ax, "x")
    # Whole decades only: 1-2-5 ticks crowd each other over five decades.
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    ax.set_xlim(0.6 * summary.q1.clip(lower=floor).min(), 4 * summary.q3.max())
    ax.grid(True, which="both", axis="x", alpha=0.3)
    ax.set_xlabel(f"{unit} per switch (median, IQR bars, log scale)")


fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.32 * len(ns) + 2), sharey=True)
rungs(left, ns, "ns")
rungs(right, ticks.loc[ns.kernel].reset_index(), "ticks")
left.set_yticks(range(len(ns)), ns.kernel)
for name in left.get_yticklabels():
    name.set_fontweight("bold" if name.get_text() in judged else "normal")
left.invert_yaxis()
left.set_title("nanoseconds (CLOCK_MONOTONIC)")
right.set_title(f"TSC ticks ({info['tsc_ghz']:.2f} GHz reference clock)")
handles = [Line2D([], [], color=c, marker="o", ls="", label=k) for k, c in COLOUR.items()]
handles += [Line2D([], [], color="k", marker=m, ls="", mfc="none", label=s)
            for s, m in MARKER.items()]
left.legend(handles=handles, loc="lower left", fontsize="small", title="kind / system")
fig.suptitle(f"One switch, cheapest to dearest, all pinned to CPU {cpu}")
plots.finish(fig, "04_latency_ladder-ladder");

# %% [markdown]
# ## The ladder as a table
#
# `ratio to asm` divides by labkit's minimal stackful switch. Instructions per switch
# come from callgrind on the `-O2` builds of the C core and the C++ peers (the empty
# loop's instructions subtracted), so they do not wobble with the clock; callgrind counts
# user space only, so the system call's kernel side is not in its figure. In quick mode
# only the entries the verdicts use are counted.

# %%
def count(kernel):
    # One entry the counting driver cannot run must not cost the others their counts.
    try:
        return callgrind.instructions_per_switch(kernel, build="O2")
    except (RuntimeError, ValueError) as exc:
        head, said = str(exc).split(":")[0], [ln for ln in str(exc).splitlines()
                                              if ln.strip() and "==" not in ln]
        return {"kernel": kernel, "net": np.nan, "error": f"{head}: {'; '.join(said)}"[:160]}


can_count, why_not_count = callgrind.available()
countable = [k for k in ns.kernel if system_of[k] != "python" and (not quick or k in judged)]
if count_instructions and can_count:
    instr = pd.DataFrame([count(k) for k in countable])
    results.save_csv(instr, "04_latency_ladder_instructions")
    for r in instr.dropna(subset=["error"]).itertuples() if "error" in instr else []:
        print(f"{r.kernel}: not counted: {r.error}")
else:
    instr = pd.DataFrame(columns=["kernel", "net"])
    print("instructions not counted:", why_not_count or "count_instructions is False")

counted = dict(zip(instr.kernel, instr.net))


def instructions(kernel):
    """The instructions counted, or why there is no count (a blank would say nothing)."""
    v = counted.get(kernel)
    if v is not None and v == v:
        return f"{v:,.1f}"
    if system_of[kernel] == "python":
        return "not counted: a CPython peer"
    if not (count_instructions and can_count):
        return "not counted (see the note)"
    if kernel not in countable:
        return "not counted in a quick run"
    return "not counted (see the note)"


asm_ns = ns.set_index("kernel")["median"].get("asm", np.nan)
ladder = pd.DataFrame({
    "kernel": ns.kernel, "system": ns.system, "kind": ns.kind,
    "saves": ns.kernel.map(dict(zip(catalogue.kernel, catalogue.saves))),
    "median ns": ns["median"], "IQR ns": ns.iqr, "median ticks": ns.median_ticks,
    "ratio to asm": ns["median"] / asm_ns,
    "instructions (O2)": ns.kernel.map(instructions),
    "noisy": ns.noisy,
})
ladder.round(2)

# %% [markdown]
# ## `ucontext` against the Kunpeng figure (C003.2, judged in notebook 05)
#
# The article of `003_58dac7765c62683c.txt` timed a million `swapcontext` switches at
# 814 ms on a single-core Kunpeng VM, 814 ns a switch. glibc's `swapcontext` makes a
# `rt_sigprocmask` system call on every switch to save and restore the signal mask, so it
# should cost about as much as the `syscall_getppid` rung, far above any switch that
# stays in user space.

# %%
row = ladder.set_index("kernel")
if "ucontext" in row.index:
    u = row.loc["ucontext"]
    print(f"ucontext here: {u['median ns']:.0f} ns a switch ({u['ratio to asm']:.0f}x asm), "
          f"{814 / u['median ns']:.1f}x faster than the article's 814 ns on the Kunpeng VM")
    if "syscall_getppid" in row.index:
        print(f"ucontext / syscall_getppid = "
              f"{u['median ns'] / row.loc['syscall_getppid', 'median ns']:.2f}")
else:
    print("ucontext is missing here:", missing.set_index("kernel").why_not.get("ucontext"))

# %% [markdown]
# ## Copy stacks: a switch that costs what the stack holds
#
# `copy_stack` is the design of libco's shared stacks and libaco's copy stacks: the
# coroutines share one run stack, and a coroutine that is not on it keeps its used stack
# in a heap buffer. Main resumes two coroutines in turn, so every resume copies the other
# one's used stack out and this one's in: one copy of the bytes in use per switch on
# average (`copied_bytes_per_switch`, counted by the kernel itself). The ladder above ran
# it with nothing on the stack but its frames; here each coroutine holds `stack_in_use`
# bytes more. `asm_fpu`, the switch underneath, is the floor. libaco's own benchmark
# (another machine) reports about 33 ns at 8 B rising to about 1 µs at 8 KB.

# %%
copy_runs = sweep(
    lambda stack_in_use: labkit.measure("copy_stack", switches=switches // 4, repeats=repeats,
                                        cpu=cpu, stack_in_use=stack_in_use),
    grid(stack_in_use=copy_in_use),
    desc="copy stack", checkpoint="04_latency_ladder_copy_stack", on_error="record",
)
if "error" in copy_runs:
    for r in copy_runs.dropna(subset=["error"]).itertuples():
        print(f"copy_stack at {r.stack_in_use} B: {r.error}")
    copy_runs = copy_runs[copy_runs.error.isna()].drop(columns="error")
results.save_csv(copy_runs, "04_latency_ladder_copy_stack")
copy = labkit.summarize(copy_runs, by="stack_in_use")
copy["copied_bytes_per_switch"] = copy.stack_in_use.map(
    copy_runs.groupby("stack_in_use").copied_bytes_per_switch.median())
copy["GB/s"] = copy.copied_bytes_per_switch / copy["median"]
copy[["stack_in_use", "copied_bytes_per_switch", "repeats", "median", "q1", "q3", "GB/s",
      "noisy"]].round(2)

# %%
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.errorbar(copy.copied_bytes_per_switch, copy["median"],
            yerr=[copy["median"] - copy.q1, copy.q3 - copy["median"]], fmt="o-",
            color="tab:red", capsize=3, label="copy_stack (median, IQR)")
if "asm_fpu" in set(ns.kernel):
    floor = ns.set_index("kernel").loc["asm_fpu"]
    ax.axhline(floor["median"], color="grey", ls=":",
               label=f"asm_fpu, no copy ({floor['median']:.3g} ns)")
ax.scatter([8, 8192], [33, 1000], marker="x", color="k", zorder=3,
           label="libaco's report (33 ns at 8 B, ~1 µs at 8 KB)")
plots.log_axis(ax, "x", base=2)
plots.log_axis(ax, "y")
ax.set_xlabel("bytes copied per switch (the used stack: stack_in_use + frames)")
ax.set_ylabel("ns per switch")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize="small")
ax.set_title(f"Copy stacks: ns per switch against bytes in use, CPU {cpu}")
plots.finish(fig, "04_latency_ladder-copy-stack");

# %% [markdown]
# ## `cxx20_symmetric`: raw and net
#
# The symmetric pair's net figure can come out well below a standalone symmetric
# ping-pong's, which reports its loop raw. No transfer is optimised away: in the `-O2`
# disassembly each transfer loads the next handle from its static, stores it and the
# resume index in the frame, and ends in an indirect `jmp` through that handle's resume
# pointer into the other coroutine's actor, which dispatches on its resume index (the
# instructions callgrind counts are in the table below; the counters add up to 2R). What
# differs is the subtraction. The empty loop is two volatile increments per
# round: a store-to-load chain, so its time is that chain's latency. In the transfer loop
# the same increments are a few instructions beside longer chains of their own (the
# frames' resume index and loop counter), so they cost little more than their issue
# slots, and subtracting the whole empty loop takes off more than they added. Where
# store-to-load forwarding is slow, net falls well below raw; where it is nearly free (as
# with AMD's memory renaming) the two are close. Raw, baseline and net side by side:

# %%
pick = [k for k in ["asm", "cxx20_generator", "cxx20_symmetric"] if k in set(runs.kernel)]
raw_net = (runs[runs.kernel.isin(pick)].groupby("kernel")
           [["ns_per_switch_raw", "baseline_ns_per_switch", "ns_per_switch"]].median()
           .loc[pick].rename(columns={"ns_per_switch_raw": "raw ns", "baseline_ns_per_switch":
                                      "baseline ns", "ns_per_switch": "net ns"}))
per = instr.set_index("kernel") if len(instr) else pd.DataFrame()
for col in ("loop", "base", "net"):
    raw_net[f"instructions {col}"] = [per[col].get(k, np.nan) if col in per else np.nan
                                      for k in raw_net.index]
if "cxx20_symmetric" in raw_net.index:
    r = raw_net.loc["cxx20_symmetric"]
    n = r["instructions loop"]
    print(f"cxx20_symmetric: {r['raw ns']:.2f} ns per transfer raw, {r['baseline ns']:.2f} ns "
          f"of baseline, {r['net ns']:.2f} ns net"
          + (f"; {n:.1f} instructions per transfer (callgrind)" if n == n else "")
          + ": every transfer happens (the counters prove it), and the net is the raw "
          "time less an empty loop whose latency the transfer loop partly hides")
raw_net.round(2)

# %% [markdown]
# ## Verdicts
#
# The kernels the two rules name are measured again for the verdicts over fresh worker
# processes: each process runs every kernel twice in ABBA order, leading with a random
# one, and gives one median per kernel. The intervals are taken over processes, at looks
# of 8, 16, 24 and 32 processes; the design stops at the first look where no interval
# straddles a bound (`labkit.core.sequential`, written before measuring).
#
# **C000.1** takes x = 1 when virtual_call < boost_fiber < syscall_getppid and
# log(fiber / call) < log(syscall / fiber): three log-distances per process, each with its
# interval; x is 1 when all three lie above 0, 0 when one lies below it
# (`labkit.lab.claim_rules.c000_1`).
#
# **C000.5** is the ratio boost_fiber / cxx20_generator (`labkit.lab.claim_rules.c000_5`).
# Both are per transfer here; the article's figures are per iteration of its ping-pong
# loop, a round trip of two transfers, so the notes double labkit's figures before
# setting them beside the article's. The ratio is the same either way.
#
# A peer missing here makes the verdict `not-measured` and the note says what to
# install; a noisy group is flagged in its row.

# %%
from functools import partial

from labkit.lab import judging

named = ["virtual_call", "boost_fiber", "syscall_getppid", "cxx20_generator"]
verdict_runs, rows = judging.run("04_latency_ladder", {
    k: partial(labkit.measure, k, switches=switches // 4, cpu=cpu)
    for k in named if k in set(ns.kernel)}, quick=quick)

# %%
table = verdicts.table(list(rows.values()))
results.save_csv(runs, "04_latency_ladder")
results.save_csv(table, "04_latency_ladder_verdicts")
table

# %% [markdown]
# <a id="04_latency_ladder-article-table"></a>
# ## The article's table beside ours
#
# Here: the ladder of `000_dc0f0e0d023658f3.txt`: a call, a fiber switch, a system call
# and a C++20 coroutine. The article's own rows and columns, its number beside the
# median measured here with its spread, the relative column it uses, and the claim that
# judges each row (`labkit.lab.articles`, built from the data this notebook just saved). The
# row claims without a verdict above are judged here by their rules in
# `data/claims.csv`.

# %%
from labkit.lab import articles

articles.section("04_latency_ladder")
