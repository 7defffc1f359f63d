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
# # 05 · OS threads and processes: what one hand-off costs
#
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`.
#
# - **C001.4** (the coroutine-server article, `001_22488c889cf00991.txt`): switching
#   coroutines takes nanoseconds; switching threads takes microseconds.
# - **C002.1** (the OS context-switch article, `002_8f5c488cea1f882d.txt`): a switch
#   between processes takes about 3-5 µs. Between threads of one process it takes about
#   1-2 µs. The gap is the [TLB](../docs/glossary.md#tlb) flush that threads avoid, since
#   they share page tables.
# - **C002.2** (same article): two compute-only threads share one core. When they yield
#   the core often, they lose about 70% of their
#   [throughput](../docs/glossary.md#throughput) (3800 → 1100
#   [QPS](../docs/glossary.md#qps)).
# - **C002.4** (same article): a TLB flush costs hundreds to thousands of cycles. The
#   cache-pollution half of that claim needs hardware counters and is not judged.
# - **C003.1** (the ucontext article, `003_58dac7765c62683c.txt`): on an AArch64 Kunpeng
#   916, a producer-to-consumer [hand-off](../docs/glossary.md#hand-off) takes about 1900
#   ns between [OS threads](../docs/glossary.md#os-thread). Between fibers it takes 500
#   ns.
# - **C003.2** (same article): on a one-core Kunpeng VM, a million `swapcontext` switches
#   take 814 ms. A million condition-variable hand-offs between threads take 3300 ms.
# - **C003.3** (same article): on a seven-core i7-9700 VM, the thread test takes 32,000
#   ms, against 430 ms for `swapcontext`. The author puts this down to cache lines
#   bouncing between cores.
#
# **How the authors got their numbers.**
#
# - The author of `001` rewrote a network gateway on asio with C++20 coroutines (Linux
#   5.10, 8 cores). The ns-against-µs contrast is stated as background, without a
#   measurement of its own.
# - The author of `002` writes about production latency spikes caused by too many
#   switches. The µs figures come with no hardware or method. The TLB figure is credited
#   to Intel's documentation. The yield test is a team stress run of two pure-compute
#   threads pinned to one core. They run once keeping the core, and once yielding it
#   "frequently". How often, and how much work a query is, is not said.
# - The author of `003` built an asymmetric fiber library on glibc `ucontext`. The Kunpeng
#   916 figures are quoted from an operating-systems textbook. The author timed one
#   million switches each way, on two cloud VMs. Fibers switch through `swapcontext`.
#   Threads pass through a producer-consumer queue of capacity one, guarded by a mutex and
#   condition variables.
#
# **What we run**, all in one run on this machine. Two OS tasks hand a turn back and forth
# (lmbench `lat_ctx` style, `labkit/csrc/handoff.h`). They use a futex, a mutex +
# condition variable (the `003` queue), or a pipe. The tasks are two threads, or two
# processes: only the shared address space differs. Each runs once with both tasks pinned
# to one CPU, and once on two CPUs. Beside them run labkit's `asm` switch and glibc
# `ucontext`. So every thread/coroutine ratio is measured here, not quoted.
#
# On one CPU, every hand-off forces the OS to switch tasks. On two CPUs, nobody has to be
# switched out for the other to run. The receiver sleeps on its own idle CPU and must be
# woken there. So that number is a **[cross-CPU
# wake-up](../docs/glossary.md#cross-cpu-wake-up)**, not a context switch, and it is
# labelled so throughout.
#
# The [rules](../docs/glossary.md#rule) are those written in `data/claims.csv` before
# measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("05_kernel_switches"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=15).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, cross_cpus, switches, coroutine_switches, repeats, yield_every, yield_units,
 yield_repeats) = params.resolve("05_kernel_switches", quick=quick).values()

# %%
import labkit
from labkit.core import plots, results
from labkit.lab.headers import shown
from labkit.lab.analysis import findings, kernel_switches as analysis
from labkit.lab.experiment import KERNEL_SWITCHES as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

placements, pair = analysis.placements(cpu, cross_cpus)
print(plots.machine_caption())
print(f"same CPU: {cpu}; two CPUs: {pair or 'not available (one usable CPU)'}")

# %% [markdown]
# ## One run: OS hand-offs and coroutine switches
#
# Each point is `repeats` [repeats](../docs/glossary.md#repeat), after a dropped
# [warm-up](../docs/glossary.md#warm-up). For the OS tasks, a repeat is `switches` one-way
# hand-offs. One task that never has to wait does the same communication: the system
# calls, the lock, the counters. That is timed before each repeat and subtracted. What is
# left is the cost of making the other task run. The coroutine switches get the same
# treatment, with their [empty loop](../docs/glossary.md#empty-loop).

# %%
def measure_one(task, placement):
    cpus = placements[placement]
    if task in labkit.HANDOFF_MODES:
        return labkit.measure_handoff(task, cpus=cpus, switches=switches,
                                      repeats=repeats).assign(part="kernel hand-off")
    return labkit.measure(task, switches=coroutine_switches, repeats=repeats,
                          cpu=cpus[0]).assign(part="coroutine switch", placement=placement)


handoffs = sweep(measure_one, analysis.points(placements), desc="hand-offs",
                 checkpoint=exp.part("handoffs"))
hs = analysis.summary(handoffs)
shown(hs[["task", "placement", "what", "repeats", "median", "q1", "q3", "median_ticks", "cv",
          "noisy"]])

# %% [markdown]
# ## Did the OS switch as often as we handed off?
#
# The OS keeps its own count of how often each task was switched out. It counts [voluntary
# and involuntary](../docs/glossary.md#voluntary-and-involuntary-switches) switches: the
# task blocked, or it was preempted. Both tasks' counts over the timed loop are summed.
# They are set against the hand-offs the harness made.
#
# On one CPU, one hand-off should be one switch, and the split is telling. When the sender
# wakes the receiver, the scheduler often lets the freshly woken task preempt the sender
# at once. That is an *involuntary* switch for the sender. Otherwise the sender runs on
# until it blocks in its own wait: a *voluntary* one. Either way, that is about one switch
# per hand-off.
#
# On two CPUs, each task blocks at most once per turn, and is woken on its own CPU. All
# switches are voluntary, and no task ever pushes another off a CPU. Why *at most*?
# Sometimes the answer comes back before the waiter has gone to sleep. Then the waiter
# never blocks, and the OS counts nothing for that hand-off. So a count below one per
# hand-off says how often the partner was quicker than the sleep. On a shared VM, that is
# often. It does not mean a hand-off was lost: the harness's own counters check that none
# was.

# %%
counts = analysis.os_counts(handoffs)
for warning in analysis.count_warnings(counts):
    print(warning)
shown(counts.round(3))

# %% [markdown]
# ## One-way cost by mechanism and placement
#
# Log scale: the coroutine switches, the same-CPU OS switches and the cross-CPU wake-ups
# sit one to two orders of magnitude apart.

# %%
plots.finish(analysis.oneway_figure(hs, cpu, pair, analysis.oneway_finding(handoffs)),
             "05_kernel_switches-oneway");

# %% [markdown]
# How to read the two placements. On one CPU, the cost is the OS's switch itself. The OS
# is entered, picks the other task and swaps stacks, and, for processes, address spaces.
# On two CPUs, the receiver has gone to sleep on a CPU with nothing else to do. So each
# hand-off waits for that CPU to leave its idle state. In a VM, that means a halted vCPU
# that the hypervisor has to schedule again.
#
# The counts above back this reading: across CPUs, every hand-off is a voluntary block,
# and nobody is ever preempted. The 32 µs of `003` on a seven-core VM has the same shape.
# Its author blames cache-line traffic between cores. But one cache line crossing cores
# costs on the order of 100 ns, not tens of µs. This run measures the whole wake-up and
# cannot split it further. C003.3 below judges the ratio the rule names, not the
# explanation.

# %% [markdown]
# ## C002.2: yielding the core
#
# Two threads are pinned to one CPU. Each does `yield_units` units of fixed busy work
# (about 1 µs a unit) and calls `sched_yield()` every *k* units. The article does not say
# how often "often" was. So the rule, written before measuring, fixes it: one yield per
# unit (k = 1) against never (k = 0). The other values of k show how fast the loss fades
# as yields get rarer. The OS counts a `sched_yield()` that hands the CPU over as an
# involuntary switch.

# %%
yields = sweep(
    lambda every: labkit.measure_yield(units=yield_units, every=[every], cpu=cpu,
                                       repeats=yield_repeats),
    grid(every=yield_every), desc="yield", checkpoint=exp.part("yield"),
)
ys = analysis.yield_summary(yields)
plots.finish(analysis.yield_figure(ys, yield_every, cpu, analysis.yield_finding(yields)),
             "05_kernel_switches-yield")
shown(ys, value="units of work per second")

# %% [markdown]
# ## What the data says
#
# Here are the measured quantities each rule needs, side by side, from the sweep above.
# Every ratio of [medians](../docs/glossary.md#median) comes with its [bootstrap
# interval](../docs/glossary.md#bootstrap-interval) (BCa, 95%;
# `verdicts.ratio_with_spread`). For C002.4, it is the difference of medians in TSC ticks,
# with the same kind of interval (`verdicts.difference_with_spread`). The verdicts below
# stand on their own interleaved measurement of the same groups.

# %%
shown(analysis.spreads(handoffs, yields, pair), value="measured quantity")

# %% [markdown]
# ## Verdicts
#
# The groups the rules compare are measured again for the
# [verdicts](../docs/glossary.md#verdict). They run in a [verdict
# design](../docs/glossary.md#verdict-design). Each [fresh
# process](../docs/glossary.md#fresh-process) runs every group twice in
# [ABBA](../docs/glossary.md#abba) order, leading with a random group. It gives one median
# per group. The [intervals](../docs/glossary.md#interval) are taken over processes, at
# the [looks](../docs/glossary.md#look) of its schedule. The verdict design stops at the
# first look where no interval [straddles](../docs/glossary.md#straddle) a bound. That is
# the [stopping rule](../docs/glossary.md#stopping-rule) (`labkit.core.sequential`),
# written before measuring.
#
# Ratios are judged on the log of the per-process ratio. C002.4 is judged on the
# per-process difference in TSC ticks. For C001.4, the two magnitudes get their own
# intervals, and the rule must hold at every corner.
#
# C002.4 takes the difference between the two pipe modes. That is everything a process
# switch adds over a thread switch: the address space change and what follows it. It is an
# upper bound on the TLB part alone. (With PCID, the OS need not flush the whole TLB on
# every process switch.) An upper bound can refute "hundreds to thousands of cycles", but
# never confirm it. The amended rule says so (`data/claims_amendments.csv`), and the
# original rule's verdict stays beside it.

# %%
from labkit.lab.judging import designs

entries = analysis.verdict_entries(cpu=cpu, pair=pair, switches=switches,
                                   coroutine_switches=coroutine_switches, units=yield_units)
verdict_runs, judged = designs.run(exp, entries, quick=quick)
results.save_csv(analysis.saved(handoffs, yields), exp.data)
table = designs.verdict_table(
    exp, judged, notes={"C003.2": analysis.million_note(verdict_runs, cpu)})
findings.and_verdicts(exp.name, table, [analysis.oneway_finding(handoffs),
                                         analysis.yield_finding(yields)])

# %% [markdown]
# <a id="05_kernel_switches-article-table"></a>
# ## The article's table beside ours
#
# Here are the OS-switch numbers of the OS context-switch article
# (`002_8f5c488cea1f882d.txt`), and the 2x2 table of the ucontext article
# (`003_58dac7765c62683c.txt`). Each number of an article sits beside the median measured
# here, with its [spread](../docs/glossary.md#spread). The table keeps the article's own
# rows and columns, and the relative column it uses. It also names the claim that judges
# each row. `labkit.lab.report.articles` builds it from the data this notebook just saved.
# The [row claims](../docs/glossary.md#row-claim) without a verdict above are judged here,
# by their rules in `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `yield_every` to `params.resolve` in the parameters cell,
# set to [0, 1, 10000]. Then run the notebook again.
#
# Predict first: if a thread yields only once in 10,000 units of work, how much of its
# time goes to switching?
# Write the number down before you run it.
