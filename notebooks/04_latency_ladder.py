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
# notebook 05 against OS threads; this ladder supplies their coroutine side.
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
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, switches, py_switches, repeats, count_instructions, count_only_judged,
 copy_in_use) = params.resolve(
    "04_latency_ladder", quick=quick).values()

# %%
import labkit
from labkit.core import plots, results
from labkit.lab.analysis import findings, latency_ladder as analysis
from labkit.lab.experiment import LATENCY_LADDER as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

info = labkit.machine_info()
print(plots.machine_caption(info))
catalogue, available, missing = analysis.catalogue_parts()
catalogue[["entry", "system", "kind", "saves", "available", "why_not"]]

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
system_of = dict(zip(catalogue.entry, catalogue.system))
runs, missing = analysis.split_failed(sweep(
    lambda entry: labkit.measure(
        entry, switches=py_switches if system_of[entry] == "python" else switches,
        repeats=repeats, cpu=cpu),
    grid(entry=available), desc="ladder", checkpoint=exp.part("runs"),
    on_error="record"), catalogue, missing)
missing

# %%
ns, ticks = analysis.summaries(runs, catalogue)
ns[["entry", "system", "kind", "repeats", "median", "q1", "q3", "median_ticks", "noisy"]]

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
plots.finish(analysis.ladder_figure(ns, ticks, info["tsc_ghz"], cpu), "04_latency_ladder-ladder");

# %% [markdown]
# ## The ladder as a table
#
# `ratio to asm` divides by labkit's minimal stackful switch. Instructions per switch
# come from callgrind on the `-O2` builds of the C core and the C++ peers (the empty
# loop's instructions subtracted), so they do not wobble with the clock; callgrind counts
# user space only, so the system call's kernel side is not in its figure. In quick mode
# only the entries the verdicts use are counted.

# %%
instr = analysis.instruction_counts(ns, only_judged=count_only_judged,
                                    count_instructions=count_instructions)
if len(instr):
    results.save_csv(instr, exp.part("instructions"))
ladder = analysis.ladder_table(ns, catalogue, instr)
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
print(analysis.ucontext_text(ladder, missing))

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
copy_runs, copy = analysis.copy_summary(sweep(
    lambda stack_in_use: labkit.measure("copy_stack", switches=switches // 4, repeats=repeats,
                                        cpu=cpu, stack_in_use=stack_in_use),
    grid(stack_in_use=copy_in_use),
    desc="copy stack", checkpoint=exp.part("copy_stack"), on_error="record"))
results.save_csv(copy_runs, exp.part("copy_stack"))
plots.finish(analysis.copy_figure(copy, ns, cpu), "04_latency_ladder-copy-stack")
copy.round(2)

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
raw_net = analysis.raw_net(runs, instr)
print(analysis.raw_net_text(raw_net))
raw_net.round(2)

# %% [markdown]
# ## Verdicts
#
# The kernels the two rules name are measured again for the verdicts over fresh worker
# processes: each process runs every kernel four times (quick mode: twice) in ABBA
# order, leading with a random
# one, and gives one median per kernel. The intervals are taken over processes, at the
# looks of its schedule; the design stops at the first look where no interval
# straddles a bound (`labkit.core.sequential`, written before measuring).
#
# **C000.1** takes x = 1 when virtual_call < boost_fiber < syscall_getppid and
# log(fiber / call) < log(syscall / fiber): three log-distances per process, each with its
# interval; x is 1 when all three lie above 0, 0 when one lies below it
# (`labkit.lab.judging.rules.c000_1`).
#
# **C000.5** is the ratio boost_fiber / cxx20_generator (`labkit.lab.judging.rules.c000_5`).
# Both are per transfer here; the article's figures are per iteration of its ping-pong
# loop, a round trip of two transfers, so the notes double labkit's figures before
# setting them beside the article's. The ratio is the same either way.
#
# A peer missing here makes the verdict `not-measured` and the note says what to
# install; a noisy group is flagged in its row.

# %%
from functools import partial

from labkit.lab.judging import designs

verdict_runs, judged = designs.run(exp, {
    k: partial(labkit.measure, k, switches=switches // 4, cpu=cpu)
    for k in exp.sides if k in set(ns.entry)}, quick=quick)

# %%
results.save_csv(runs, exp.data)
table = designs.verdict_table(exp, judged)
findings.and_verdicts(exp.name, table, [analysis.ladder_finding(ns)])

# %% [markdown]
# <a id="04_latency_ladder-article-table"></a>
# ## The article's table beside ours
#
# Here: the ladder of `000_dc0f0e0d023658f3.txt`: a call, a fiber switch, a system call
# and a C++20 coroutine. The article's own rows and columns, its number beside the
# median measured here with its spread, the relative column it uses, and the claim that
# judges each row (`labkit.lab.report.articles`, built from the data this notebook just saved). The
# row claims without a verdict above are judged here by their rules in
# `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)
