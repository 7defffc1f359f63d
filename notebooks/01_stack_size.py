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
# # 01 · Does a bigger stack make a switch slower?
#
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`. Both claims come from the Boost.Context article
# (`000_dc0f0e0d023658f3.txt`).
#
# - **C000.2**: the author timed a [ping-pong](../docs/glossary.md#ping-pong) of
#   Boost.Context `fiber`s with a `fixedsize_stack`. A
#   [switch](../docs/glossary.md#switch) took 22 ns with 4 KB stacks, 45 ns at 1 MB and
#   120 ns at 8 MB (+445%). The author blamed cache misses on bigger stacks.
# - **C000.1** (magnitude only; judged in notebook 04): a switch costs about 20-30 ns.
#
# The author's setup: an i7-12700K fixed at 5.0 GHz, with E-cores and SMT off. GCC 11.3
# with `-O2 -march=native`, and Boost 1.81. 10,000,000 switches around a `volatile`
# counter.
#
# A ping-pong between two [contexts](../docs/glossary.md#context) touches only the top of
# each stack. So the stack's size should not matter to it. What could matter is where the
# stack tops land. With power-of-two sizes, every top sits at the same offset in its page.
# With many contexts, their hot frames then compete for the same [cache
# sets](../docs/glossary.md#cache-set).
#
# We measure the author's two-context test first. Then we measure
# [rings](../docs/glossary.md#ring) of N contexts, with and without [stack
# colouring](../docs/glossary.md#stack-colouring): each top moved down by a different
# number of cache lines. Each runs [prefaulted](../docs/glossary.md#prefault) or not.
#
# The [rule](../docs/glossary.md#rule) for C000.2 was written in `data/claims.csv` before
# measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("01_stack_size"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=15).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, switches, repeats, ring_laps_switches, sizes, ring_sizes, ring_counts) = params.resolve(
    "01_stack_size", quick=quick).values()

# %%
import labkit
from labkit.core import plots, results
from labkit.lab.headers import shown
from labkit.lab.analysis import findings, stack_size as analysis
from labkit.lab.experiment import STACK_SIZE as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

print(plots.machine_caption())
shown(labkit.catalogue()[["entry", "kind", "saves", "available", "why_not"]])

# %% [markdown]
# ## Two contexts, ping-pong: the author's test
#
# Each point is `repeats` [repeats](../docs/glossary.md#repeat) of `switches` switches,
# after a [warm-up](../docs/glossary.md#warm-up). The [empty
# loop](../docs/glossary.md#empty-loop)'s cost is subtracted. `boost_fiber` is the real
# `boost::context::fiber`, with a `fixedsize_stack` of that size, as in the article.
# labkit's [kernels](../docs/glossary.md#kernel) run beside it.
#
# labkit's stacks are `mmap`ed, then either prefaulted (every page touched first) or left
# untouched. Boost's `fixedsize_stack` takes its memory from `malloc`: small stacks from
# the heap, large ones from `mmap`. So `prefault` does not apply to it. Where Boost is
# missing, the [catalogue](../docs/glossary.md#catalogue) above says why.

# %%
kernels, missing = analysis.kernels_here()
pingpong = analysis.label_stacks(sweep(
    lambda entry, stack_size, prefault: labkit.measure(
        entry, stack_size=stack_size, switches=switches, repeats=repeats, cpu=cpu,
        prefault=None if entry == "boost_fiber" else prefault),
    analysis.pingpong_points(kernels, sizes), desc="ping-pong",
    checkpoint=exp.part("pingpong")))

# %%
pp = analysis.pingpong_summary(pingpong)
plots.finish(analysis.pingpong_figure(pp, sizes, analysis.pingpong_finding(pingpong, kernels)),
             "01_stack_size-pingpong")
shown(pp)

# %% [markdown]
# The page faults inside the timed loops, summed over all repeats. A ping-pong touches the
# top page of each stack once, and that happens when the context is made.

# %%
shown(analysis.faults(pingpong))

# %% [markdown]
# ## N contexts in a ring: where stack tops collide
#
# A [symmetric](../docs/glossary.md#symmetric) ring of N contexts: each switches straight
# to the next. The stacks have size S and are left untouched, so only the pages a context
# uses are committed. With `colour_step=64`, the top of stack *i* moves down by *(i mod
# 1024) x 64* bytes.

# %%
ring = sweep(
    lambda stack_size, contexts, colour_step: labkit.measure_ring(
        "asm_fpu", contexts=contexts, stack_size=stack_size, colour_step=colour_step,
        laps=max(1, ring_laps_switches // (contexts + 1)), repeats=max(3, repeats // 2),
        cpu=cpu),
    grid(stack_size=ring_sizes, contexts=ring_counts, colour_step=[0, 64]),
    desc="ring", checkpoint=exp.part("ring"),
)
rs = analysis.ring_summary(ring)
plots.finish(analysis.ring_figure(rs, analysis.ring_finding(ring, ring_counts)),
             "01_stack_size-ring")
shown(rs)

# %% [markdown]
# ## What the data says
#
# Three questions, each answered by numbers from this run (printed below):
#
# 1. **Does the ping-pong itself care about the stack's size?** Two contexts touch one
#    page at the top of each stack, whatever its size. So a flat line is expected. The
#    [spread](../docs/glossary.md#spread) across sizes, per kernel, says whether it is
#    flat.
# 2. **Do aligned stack tops collide in the cache?** Take N contexts whose tops sit at the
#    same offset in their pages. Every top then maps to the same few cache sets. Colouring
#    moves them apart. If colouring makes a ring cheaper, set conflicts were the cost.
# 3. **Do big stacks cost more when there are many contexts?** Far-apart tops each need
#    their own [TLB](../docs/glossary.md#tlb) entry. With 8 MiB stacks they also need
#    their own page-table pages. So a ring of thousands of 8 MiB contexts misses in the
#    TLB. It walks page tables on every switch.

# %%
rings = analysis.rings(ring, ring_sizes, ring_counts)
print(analysis.reading(pingpong, rings, ring_counts, kernels))
judge_kernel = analysis.judged(kernels)[0]

# %% [markdown]
# ## Verdict
#
# The rule in `data/claims.csv` names the author's test: Boost `fiber` ping-pong, 8 MB
# against 4 KB stacks. On a machine without Boost, the claim cannot be judged as written,
# and the [verdict](../docs/glossary.md#verdict) says so. labkit's `asm_fpu` saves what
# `jump_fcontext` saves. It is shown above for reference.
#
# The stack sizes the rules name are measured again for the verdict: C000.2 and the
# table's [row claims](../docs/glossary.md#row-claim) C000.2a-d. They run in a [verdict
# design](../docs/glossary.md#verdict-design). Each [fresh
# process](../docs/glossary.md#fresh-process) runs every size four times (quick mode:
# twice). It runs them in [ABBA](../docs/glossary.md#abba) order, leading with a random
# size. It gives one ratio per size. The [interval](../docs/glossary.md#interval) is taken
# over processes, at the [looks](../docs/glossary.md#look) of its schedule. The verdict
# design stops at the first look where no interval
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

judged, why = {}, None
if judge_kernel == "boost_fiber":
    verdict_runs, judged = designs.run(exp, {
        label: partial(labkit.measure, "boost_fiber", stack_size=size, switches=switches // 2,
                       cpu=cpu) for label, size in analysis.VERDICT_SIZES.items()}, quick=quick)
else:
    why = f"Boost.Context missing here ({missing.why_not.iloc[0]})"
results.save_parts(exp.data, {"pingpong": pingpong, "ring": ring})
table = designs.verdict_table(exp, judged, notes={"C000.2": analysis.ring_note(rings, ring_counts)},
                              why=why)
findings.and_verdicts(exp.name, table, [
    analysis.pingpong_finding(pingpong, kernels),
    analysis.ring_finding(ring, ring_counts)])

# %% [markdown]
# <a id="01_stack_size-article-table"></a>
# ## The article's table beside ours
#
# Here is the stack-size table of the Boost.Context article (`000_dc0f0e0d023658f3.txt`).
# Every stack size has the article's ns and its % over 4 KB. Beside them stand Boost
# fiber's ns and labkit's ring here. Each number of the article sits beside the
# [median](../docs/glossary.md#median) measured here, with its spread. The table keeps the
# article's own rows and columns, and the relative column it uses. It also names the claim
# that judges each row. `labkit.lab.report.articles` builds it from the data this notebook
# just saved. The row claims without a verdict above are judged here, by their rules in
# `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `ring_counts` to `params.resolve` in the parameters cell,
# set to [2, 64, 4096, 16384]. Then run the notebook again.
#
# Predict first: does a ring of 16,384 contexts with 8 MiB stacks cost more per switch
# than one of 4,096? Page-table pages and TLB reach decide.
# Write the number down before you run it.
