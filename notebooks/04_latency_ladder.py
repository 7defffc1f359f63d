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
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`.
#
# - **C000.1** (the Boost.Context article, `000_dc0f0e0d023658f3.txt`): a
#   `boost::context::fiber` [switch](../docs/glossary.md#switch) costs about 20-30 ns.
#   That places it between a C++ virtual call (a few ns) and a system call (tens to
#   hundreds of ns). It is closer to the call than to the system call.
# - **C000.5** (same article): a suspend plus resume of a C++20
#   [stackless](../docs/glossary.md#stackless) coroutine costs 2-5 ns. So a
#   [stackful](../docs/glossary.md#stackful) switch is more than ten times dearer.
#
# **Reported here, judged elsewhere.** Two claims are judged in notebook 05, against OS
# threads; this ladder supplies their coroutine side.
#
# - C001.4 (the coroutine-server article, `001_22488c889cf00991.txt`): coroutines switch
#   in nanoseconds, threads in microseconds.
# - C003.2 (the ucontext article, `003_58dac7765c62683c.txt`): a million `swapcontext`
#   switches took 814 ms on a one-core Kunpeng VM.
#
# **How the Boost.Context article measured.** The machine was an i7-12700K locked at 5.0
# GHz, with only its performance cores and no hyper-threading. The build used GCC 11.3 at
# `-O2 -march=native`, with Boost 1.81. Two fibers on 1 MB fixed-size stacks handed
# control back and forth ten million times, around a `volatile` counter. The total time
# was divided by the count. The virtual call and system call figures are quoted as common
# knowledge, not measured in the article. The C++20 figure comes from a `co_await`
# [ping-pong](../docs/glossary.md#ping-pong) of the same shape.
#
# Nanoseconds from a 5 GHz desktop do not travel to another machine. So the
# [rules](../docs/glossary.md#rule) in `data/claims.csv` judge what does travel. For
# C000.1 that is the *ordering* of call, fiber and system call, with the fiber's
# log-distance to each. For C000.5 it is the *ratio* of a stackful to a stackless switch.
# Every [entry](../docs/glossary.md#entry) is timed in the same run on the same CPU. The
# rules were written before measuring.

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
from labkit.lab.headers import shown
from labkit.lab.analysis import findings, latency_ladder as analysis
from labkit.lab.experiment import LATENCY_LADDER as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

info = labkit.machine_info()
print(plots.machine_caption(info))
catalogue, available, missing = analysis.catalogue_parts()
shown(catalogue[["entry", "system", "kind", "saves", "available", "why_not"]])

# %% [markdown]
# ## One run, one CPU
#
# Every available [kernel](../docs/glossary.md#kernel) and
# [peer](../docs/glossary.md#peer) runs the same two-context ping-pong. It runs in a
# [worker](../docs/glossary.md#worker) process pinned to `cpu`, one entry after another.
# Each gets `repeats` timed [repeats](../docs/glossary.md#repeat) after a dropped
# [warm-up](../docs/glossary.md#warm-up). The [empty
# loop](../docs/glossary.md#empty-loop)'s cost is subtracted from each.
#
# A "switch" is one [transfer](../docs/glossary.md#transfer) of control, so a round trip
# is two switches. For the plain calls, that means one call or one return. For
# `syscall_getppid`, it means half a system call. Stackful entries use 64 KiB stacks.
# (Notebook 01 shows that a two-context ping-pong does not care about stack size.)
#
# An entry that fails to run joins the missing table with its error. It does not stop the
# notebook.

# %%
system_of = dict(zip(catalogue.entry, catalogue.system))
runs, missing = analysis.split_failed(sweep(
    lambda entry: labkit.measure(
        entry, switches=py_switches if system_of[entry] == "python" else switches,
        repeats=repeats, cpu=cpu),
    grid(entry=available), desc="ladder", checkpoint=exp.part("runs"),
    on_error="record"), catalogue, missing)
shown(missing)

# %%
ns, ticks = analysis.summaries(runs, catalogue)
shown(ns[["entry", "system", "kind", "repeats", "median", "q1", "q3", "median_ticks", "noisy"]])

# %% [markdown]
# ## The ladder
#
# The cheapest entry is at the top. Colour is the kind of switch; the marker is the system
# it comes from. Bars are the quartiles over repeats.
#
# The right panel is the same run in [TSC](../docs/glossary.md#tsc) ticks. On a VM the TSC
# counts reference ticks at a fixed rate, not core cycles. So the two panels differ only
# by that rate.
#
# Names in bold are the rungs the verdicts use. `asm` is the unit of the table's ratios. A
# net cost at or below zero cannot sit on a log axis: the switch is lost in the loop's own
# jitter. Such a cost is drawn at the left edge and labelled.

# %%
plots.finish(analysis.ladder_figure(ns, ticks, info["tsc_ghz"], cpu), "04_latency_ladder-ladder");

# %% [markdown]
# ## The ladder as a table
#
# `ratio to asm` divides by labkit's minimal stackful switch. Instructions per switch come
# from [callgrind](../docs/glossary.md#callgrind), on the `-O2` builds of the C core and
# the C++ peers. The empty loop's instructions are subtracted. So these counts do not
# wobble with the clock. Callgrind counts user space only, so the system call's OS side is
# not in its figure. In quick mode, only the entries the verdicts use are counted.

# %%
instr = analysis.instruction_counts(ns, only_judged=count_only_judged,
                                    count_instructions=count_instructions)
if len(instr):
    results.save_csv(instr, exp.part("instructions"))
ladder = analysis.ladder_table(ns, catalogue, instr)
shown(ladder.round(2))

# %% [markdown]
# ## `ucontext` against the Kunpeng figure (C003.2, judged in notebook 05)
#
# The ucontext article (`003_58dac7765c62683c.txt`) timed a million `swapcontext` switches
# at 814 ms on a single-core Kunpeng VM. That is 814 ns a switch. glibc's `swapcontext`
# makes a `rt_sigprocmask` system call on every switch, to save and restore the signal
# mask. So it should cost about as much as the `syscall_getppid` rung. That is far above
# any switch that stays in user space.

# %%
print(analysis.ucontext_text(ladder, missing))

# %% [markdown]
# ## Copy stacks: a switch that costs what the stack holds
#
# `copy_stack` is the [copy stack](../docs/glossary.md#copy-stack) design of libco's
# shared stacks and libaco's copy stacks. The coroutines share one run stack. A coroutine
# that is not on it keeps its used stack in a heap buffer.
#
# Main resumes two coroutines in turn. So every resume copies the other one's used stack
# out, and this one's in. On average, that is one copy of the bytes in use per switch
# (*bytes copied per switch*, counted by the kernel itself). The ladder above ran it with
# nothing on the stack but its frames. Here each coroutine holds `stack_in_use` bytes
# more. `asm_fpu`, the switch underneath, is the floor. libaco's own benchmark (another
# machine) reports about 33 ns at 8 B, rising to about 1 µs at 8 KB.

# %%
copy_runs, copy = analysis.copy_summary(sweep(
    lambda stack_in_use: labkit.measure("copy_stack", switches=switches // 4, repeats=repeats,
                                        cpu=cpu, stack_in_use=stack_in_use),
    grid(stack_in_use=copy_in_use),
    desc="copy stack", checkpoint=exp.part("copy_stack"), on_error="record"))
results.save_csv(copy_runs, exp.part("copy_stack"))
plots.finish(analysis.copy_figure(copy, ns, cpu), "04_latency_ladder-copy-stack")
shown(copy.round(2))

# %% [markdown]
# ## `cxx20_symmetric`: raw and net
#
# The symmetric pair's net figure can come out well below that of a standalone symmetric
# ping-pong, which reports its loop raw. No transfer is optimised away. In the `-O2`
# disassembly, each transfer loads the next handle from its static. It stores the handle
# and the resume index in the frame. It ends in an indirect `jmp` through that handle's
# resume pointer, into the other coroutine's actor. The actor dispatches on its resume
# index. (The instructions callgrind counts are in the table below; the counters add up to
# 2R.)
#
# What differs is the subtraction. The empty loop is two volatile increments per round.
# They form a store-to-load chain, so the empty loop's time is that chain's latency. In
# the transfer loop, the same increments sit beside longer chains of their own: the
# frames' resume index and loop counter. There they cost little more than their issue
# slots. So subtracting the whole empty loop takes off more than they added.
#
# Where store-to-load forwarding is slow, net falls well below raw. Where it is nearly
# free (as with AMD's memory renaming), the two are close. Raw, baseline and net side by
# side:

# %%
raw_net = analysis.raw_net(runs, instr)
print(analysis.raw_net_text(raw_net))
shown(raw_net.round(2))

# %% [markdown]
# ## Verdicts
#
# The entries the two rules name are measured again for the
# [verdicts](../docs/glossary.md#verdict). They run in a [verdict
# design](../docs/glossary.md#verdict-design). Each [fresh
# process](../docs/glossary.md#fresh-process) runs every entry four times (quick mode:
# twice). It runs them in [ABBA](../docs/glossary.md#abba) order, leading with a random
# entry. It gives one [median](../docs/glossary.md#median) per entry. The
# [intervals](../docs/glossary.md#interval) are taken over processes, at the
# [looks](../docs/glossary.md#look) of its schedule. The verdict design stops at the first
# look where no interval [straddles](../docs/glossary.md#straddle) a bound. That is the
# [stopping rule](../docs/glossary.md#stopping-rule) (`labkit.core.sequential`), written
# before measuring.
#
# **C000.1** takes x = 1 when virtual_call < boost_fiber < syscall_getppid and log(fiber /
# call) < log(syscall / fiber). Each process gives three log-distances, each with its
# interval. x is 1 when all three lie above 0, and 0 when one lies below it
# (`labkit.lab.judging.rules.c000_1`).
#
# **C000.5** is the ratio boost_fiber / cxx20_generator
# (`labkit.lab.judging.rules.c000_5`). Both are per transfer here. The article's figures
# are per iteration of its ping-pong loop: a round trip of two transfers. So the notes
# double labkit's figures before setting them beside the article's. The ratio is the same
# either way.
#
# A peer missing here makes the verdict `not-measured`, and the note says what to install.
# A [noisy](../docs/glossary.md#noisy) group is flagged in its row.

# %%
from functools import partial

from labkit.lab.judging import designs

verdict_runs, judged = designs.run(exp, {
    k: partial(labkit.measure, k, switches=switches // 4, cpu=cpu)
    for k in exp.sides if k in set(ns.entry)}, quick=quick)

# %%
results.save_csv(runs, exp.data)
table = designs.verdict_table(exp, judged)
findings.and_verdicts(exp.name, table, [analysis.ladder_finding(ns),
                                         analysis.copy_finding(copy, ns)])

# %% [markdown]
# <a id="04_latency_ladder-article-table"></a>
# ## The article's table beside ours
#
# Here is the ladder of the Boost.Context article (`000_dc0f0e0d023658f3.txt`): a call, a
# fiber switch, a system call and a C++20 coroutine. Each number of the article sits
# beside the median measured here, with its [spread](../docs/glossary.md#spread). The
# table keeps the article's own rows and columns, and the relative column it uses. It also
# names the claim that judges each row. `labkit.lab.report.articles` builds it from the
# data this notebook just saved. The [row claims](../docs/glossary.md#row-claim) without a
# verdict above are judged here, by their rules in `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `copy_in_use` to `params.resolve` in the parameters cell,
# set to [256, 32768]. Then run the notebook again.
#
# Predict first: how many times dearer is a copy-stack switch with 32 KiB in use than
# with 256 bytes?
# Write the number down before you run it.
