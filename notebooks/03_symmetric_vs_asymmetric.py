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
# # 03 · Symmetric or asymmetric: does the shape of the switching matter?
#
# **Claim tested** (the id from `data/claims.csv`, the article in `docs/sources.md`):
# **C000.4** (source `000_dc0f0e0d023658f3.txt`): a main fiber that resumes
# N workers in turn, each yielding back (asymmetric), costs about the same per switch as
# two fibers ping-ponging (symmetric), about 25 ns, while N is below the core count; with
# about 1000 workers switching often it is 10-20% dearer (about 30 ns).
#
# The fiber library of `003_58dac7765c62683c.txt` is built the asymmetric way on
# `ucontext`: each thread has a main fiber and children only yield back to it. It is
# measured here beside labkit's `asm_fpu`, which saves what Boost's `jump_fcontext` saves.
#
# Two shapes, N contexts each, stacks of 64 KiB:
#
# - **symmetric ring**: main -> c0 -> c1 -> ... -> c(N-1) -> main, N+1 transfers a lap;
# - **asymmetric scheduler**: main -> c(i) -> main for each i, 2N transfers a lap.
#
# Both are counted per *transfer of control* and per *useful resumption* (a worker
# getting the CPU: N a lap in both shapes), since a scheduler pays two transfers for
# each resumption where a ring pays one. The verdict rule was written in
# `data/claims.csv` before measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("03_symmetric_vs_asymmetric"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=9).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, switches_per_point, repeats, stack_size, counts) = params.resolve(
    "03_symmetric_vs_asymmetric", quick=quick).values()

# %%
import labkit
from labkit.core import plots, results
from labkit.lab.analysis import findings, symmetric as analysis
from labkit.lab.experiment import SYMMETRIC_VS_ASYMMETRIC as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

print(plots.machine_caption())

# %%
shapes = sweep(
    lambda entry, contexts, asymmetric: labkit.measure_ring(
        entry, contexts=contexts, asymmetric=asymmetric, stack_size=stack_size,
        laps=analysis.laps(contexts, asymmetric, switches_per_point), repeats=repeats, cpu=cpu),
    grid(entry=analysis.KERNELS, contexts=counts, asymmetric=[False, True]),
    desc="shapes", checkpoint=exp.data)
per_transfer, per_resume = analysis.summaries(shapes)
per_transfer.pivot(index="contexts", columns=["entry", "pattern"], values="median").round(2)

# %%
plots.finish(analysis.figure(per_transfer, per_resume), "03_symmetric_vs_asymmetric-shapes");

# %% [markdown]
# ## Ratio asymmetric / symmetric, per transfer
#
# Ratios are taken inside one run, the same N, the same stacks. Above one or two
# contexts, the working set of the ring grows with N (one stack top per context); past
# the L1 and L2 caches each resumption misses. Read the table for where that happens on
# this machine.

# %%
ratios = analysis.ratios(shapes, counts)
ratios.pivot(index="contexts", columns="entry", values="asym / sym").round(2)

# %% [markdown]
# ## Verdict
#
# The article compares a scheduler of about 1000 workers (~30 ns) with its own symmetric
# ping-pong of two fibers (~25 ns), so the amended rule (`data/claims_amendments.csv`)
# divides the scheduler at N = 1024 by the two-context ping-pong (a ring of 1: main ->
# c0 -> main); the original rule's baseline, a ring of 1024, is judged beside it. The
# three, and the scheduler of 2 against a ring of 2 (the table's row C000.4a), are
# measured again for the verdict with `asm_fpu` (what `jump_fcontext` saves), over fresh
# worker processes: each process runs every entry four times (quick mode: twice) in ABBA order, leading with a
# random one, and gives one ratio per pair. The interval is taken over processes, at
# the looks of its schedule; the design stops at the first look where no
# interval straddles a bound (`labkit.core.sequential`, written before measuring).
# A verdict run has half the sweep's switches: the interval is over processes, and a
# shorter run halves what a process costs for little loss of precision (notebook 00's
# table of variance components).

# %%
from functools import partial

from labkit.lab.judging import designs


def ring_entry(contexts, asymmetric):
    per_lap = 2 * contexts if asymmetric else contexts + 1
    return partial(labkit.measure_ring, "asm_fpu", contexts=contexts, asymmetric=asymmetric,
                   laps=max(1, switches_per_point // 2 // per_lap), stack_size=stack_size,
                   cpu=cpu)


S = exp.sides
verdict_runs, judged = designs.run(exp, {
    S.SCHEDULER_1024: ring_entry(1024, True), S.RING_1: ring_entry(1, False),
    S.RING_1024: ring_entry(1024, False), S.SCHEDULER_2: ring_entry(2, True),
    S.RING_2: ring_entry(2, False)}, quick=quick)
results.save_csv(shapes, exp.data)
table = designs.verdict_table(exp, judged, notes={"C000.4": analysis.ucontext_note(shapes)})
findings.and_verdicts(exp.name, table, [analysis.finding(per_transfer)])

# %% [markdown]
# <a id="03_symmetric_vs_asymmetric-article-table"></a>
# ## The article's table beside ours
#
# Here: symmetric against asymmetric in `000_dc0f0e0d023658f3.txt`: few workers and
# about a thousand. The article's own rows and columns, its number beside the median
# measured here with its spread, the relative column it uses, and the claim that judges
# each row (`labkit.lab.report.articles`, built from the data this notebook just saved). The row
# claims without a verdict above are judged here by their rules in `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)
