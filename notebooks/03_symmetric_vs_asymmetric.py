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
# **Claim tested.** The id is from `data/claims.csv`, and the article is in
# `docs/sources.md`. **C000.4**, from the Boost.Context article
# (`000_dc0f0e0d023658f3.txt`): a main fiber resumes N fibers in turn, and each yields
# back to it. This [asymmetric](../docs/glossary.md#asymmetric) shape costs about the same
# per [switch](../docs/glossary.md#switch) as two fibers ping-ponging
# ([symmetric](../docs/glossary.md#symmetric)). Both cost about 25 ns while N is below the
# core count. With about 1000 fibers switching often, it is 10-20% dearer (about 30 ns).
#
# The fiber library of the ucontext article (`003_58dac7765c62683c.txt`) is built the
# asymmetric way, on `ucontext`. Each thread has a main fiber, and children only yield
# back to it. It is measured here beside labkit's `asm_fpu`
# [kernel](../docs/glossary.md#kernel), which saves what Boost's `jump_fcontext` saves.
#
# Two shapes, N [contexts](../docs/glossary.md#context) each, with stacks of 64 KiB:
#
# - **symmetric [ring](../docs/glossary.md#ring)**: main -> c0 -> c1 -> ... -> c(N-1) ->
#   main, N+1 transfers a lap;
# - **asymmetric [scheduler](../docs/glossary.md#scheduler)**: main -> c(i) -> main for
#   each i, 2N transfers a lap.
#
# Both are counted per [transfer](../docs/glossary.md#transfer) of control. They are also
# counted per useful [resumption](../docs/glossary.md#resumption): a context getting the
# CPU, N a lap in both shapes. A scheduler pays two transfers for each resumption, where a
# ring pays one. The [rule](../docs/glossary.md#rule) was written in `data/claims.csv`
# before measuring.

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
from labkit.lab.headers import shown
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
shown(per_transfer.pivot(index="contexts", columns=["entry", "pattern"], values="median").round(2))

# %%
plots.finish(analysis.figure(per_transfer, per_resume), "03_symmetric_vs_asymmetric-shapes");

# %% [markdown]
# ## Ratio asymmetric / symmetric, per transfer
#
# Ratios are taken inside one run, at the same N, with the same stacks. Above one or two
# contexts, the ring's working set grows with N: one stack top per context. Past the L1
# and L2 caches, each resumption misses. Read the table for where that happens on this
# machine.

# %%
ratios = analysis.ratios(shapes, counts)
shown(ratios.pivot(index="contexts", columns="entry", values="asym / sym").round(2))

# %% [markdown]
# ## Verdict
#
# The article compares a scheduler of about 1000 fibers (~30 ns) with its own symmetric
# ping-pong of two fibers (~25 ns). So the amended rule (`data/claims_amendments.csv`)
# divides the scheduler at N = 1024 by the two-context ping-pong. That is a ring of 1:
# main -> c0 -> main. The original rule's baseline, a ring of 1024, is judged beside it.
# The table's [row claim](../docs/glossary.md#row-claim) C000.4a compares a scheduler of 2
# with a ring of 2.
#
# All of these are measured again for the [verdict](../docs/glossary.md#verdict), with
# `asm_fpu` (what `jump_fcontext` saves). They run in a [verdict
# design](../docs/glossary.md#verdict-design). Each [fresh
# process](../docs/glossary.md#fresh-process) runs every entry four times (quick mode:
# twice). It runs them in [ABBA](../docs/glossary.md#abba) order, leading with a random
# entry. It gives one ratio per pair. The [interval](../docs/glossary.md#interval) is
# taken over processes, at the [looks](../docs/glossary.md#look) of its schedule. The
# verdict design stops at the first look where no interval
# [straddles](../docs/glossary.md#straddle) a bound. That is the [stopping
# rule](../docs/glossary.md#stopping-rule) (`labkit.core.sequential`), written before
# measuring.
#
# A verdict run has half the sweep's switches. The interval is over processes, so a
# shorter run halves what a process costs. It loses little precision (see notebook 00's
# table of [variance components](../docs/glossary.md#variance-components)).

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
# Here is symmetric against asymmetric in the Boost.Context article
# (`000_dc0f0e0d023658f3.txt`): few fibers, and about a thousand. Each number of the
# article sits beside the [median](../docs/glossary.md#median) measured here, with its
# [spread](../docs/glossary.md#spread). The table keeps the article's own rows and
# columns, and the relative column it uses. It also names the claim that judges each row.
# `labkit.lab.report.articles` builds it from the data this notebook just saved. The row
# claims without a verdict above are judged here, by their rules in `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `counts` to `params.resolve` in the parameters cell,
# set to [2, 16, 256]. Then run the notebook again.
#
# Predict first: at which ring size does a transfer through a scheduler stop costing
# more than a direct one?
# Write the number down before you run it.
