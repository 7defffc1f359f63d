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
# # 02 · What does `-O2` change in a context switch?
#
# **Claim tested.** The id is from `data/claims.csv`, and the article is in
# `docs/sources.md`. **C000.3**, from the Boost.Context article
# (`000_dc0f0e0d023658f3.txt`): the same Boost.Context `fiber`
# [ping-pong](../docs/glossary.md#ping-pong) took about 180 ns per
# [switch](../docs/glossary.md#switch) at `-O0`. It took 25 ns at `-O2` and 22 ns at `-O3`
# (GCC 11.3 on an i7-12700K at 5 GHz).
#
# An assembly switch cannot change with `-O`: it is the same instructions at every level.
# What changes is the code the compiler generates *around* it. For Boost that is the
# header-only `fiber::resume()` wrapper: moves of the fiber handle, and the transfer
# record. It is compiled into our binary at each level. `jump_fcontext` itself lives in
# Debian's `libboost_context.so`, built once.
#
# `make setup` builds labkit's C core and the C++ [peers](../docs/glossary.md#peer) at
# `-O0`, `-O1`, `-O2`, `-O3`, `-Os` and `-O2 -march=native`, side by side. So the whole
# comparison is one run on one machine.
#
# There are two measures. Nanoseconds per switch are noisy and depend on the machine.
# Instructions per switch come from [callgrind](../docs/glossary.md#callgrind) (`valgrind
# --tool=callgrind`). They are deterministic: the same binary always gives the same count.
# The [rule](../docs/glossary.md#rule) was written in `data/claims.csv` before measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("02_optimisation_levels"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=15).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, switches, repeats, count_instructions, count_builds) = params.resolve(
    "02_optimisation_levels", quick=quick).values()

# %%
import labkit
from labkit.core import plots, results
from labkit.lab.headers import shown
from labkit.lab.analysis import findings, optimisation_levels as analysis
from labkit.lab.experiment import OPTIMISATION_LEVELS as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

print(plots.machine_caption())
builds = labkit.builds()
kernels, available = analysis.kernels_here()
shown(available.loc[analysis.CANDIDATES, ["system", "kind", "available", "why_not"]])

# %% [markdown]
# ## Time per switch at each level
#
# `cxx20_symmetric` is left out. Below `-O2`, GCC does not turn symmetric transfer into a
# tail jump, so it cannot run at all there. labkit refuses it with that reason.

# %%
timed = sweep(
    lambda entry, build: labkit.measure(entry, switches=switches, repeats=repeats,
                                         cpu=cpu, build=build),
    grid(entry=kernels, build=builds), desc="builds", checkpoint=exp.data,
)
ts = analysis.summary(timed, builds)
shown(analysis.pivot(ts, builds, "median"))

# %% [markdown]
# ## Instructions per switch (callgrind)
#
# The switch loop and the [empty loop](../docs/glossary.md#empty-loop) are counted apart,
# each at two lengths, and the difference is taken. What is left is one switch and the
# loop code around it.

# %%
counts = analysis.instruction_counts(kernels, builds, count_instructions, count_builds)
shown(analysis.pivot(counts, builds, "net"))

# %%
plots.finish(analysis.figure(ts, counts, builds, kernels, analysis.finding(timed, kernels)),
             "02_optimisation_levels-builds");

# %% [markdown]
# ## Reading it
#
# Sometimes the instruction count barely moves between `-O0` and `-O2`: labkit's
# `asm_fpu`, Boost's raw `jump_fcontext`. There, the switch is all there is. Sometimes it
# falls by an order of magnitude: `boost::context::fiber`, the C++20 generator. There, the
# cost at `-O0` is the abstraction around the switch, not the switch.

# %%
ratios = analysis.ratios(timed, counts, kernels)
shown(ratios.round(2))

# %% [markdown]
# ## Verdict
#
# The rule names the author's test: Boost `fiber` ping-pong, `-O0` against `-O2`. The two
# builds are measured again for the [verdict](../docs/glossary.md#verdict), and so is
# `-O3`, for the table's [row claim](../docs/glossary.md#row-claim) C000.3a. They run in a
# [verdict design](../docs/glossary.md#verdict-design). Each [fresh
# process](../docs/glossary.md#fresh-process) runs every build four times (quick mode:
# twice). It runs them in [ABBA](../docs/glossary.md#abba) order, leading with a random
# build. It gives one ratio per pair. The [interval](../docs/glossary.md#interval) is
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

judged, why = {}, None
if "boost_fiber" in kernels:
    verdict_runs, judged = designs.run(exp, {
        b: partial(labkit.measure, "boost_fiber", switches=switches // 2, cpu=cpu, build=b)
        for b in exp.sides}, quick=quick)
else:
    why = "Boost.Context is missing here: " + available.loc["boost_fiber", "why_not"]
results.save_csv(analysis.saved(timed, counts), exp.data)
table = designs.verdict_table(exp, judged, notes={"C000.3": analysis.instructions_note(ratios)},
                              why=why)
findings.and_verdicts(exp.name, table, [analysis.finding(timed, kernels),
                                         analysis.instructions_finding(counts, kernels)])

# %% [markdown]
# <a id="02_optimisation_levels-article-table"></a>
# ## The article's table beside ours
#
# Here is the -O table of the Boost.Context article (`000_dc0f0e0d023658f3.txt`). Each
# build has its time and its callgrind instructions, beside the article's ns. Each number
# of the article sits beside the [median](../docs/glossary.md#median) measured here, with
# its [spread](../docs/glossary.md#spread). The table keeps the article's own rows and
# columns, and the relative column it uses. It also names the claim that judges each row.
# `labkit.lab.report.articles` builds it from the data this notebook just saved. The row
# claims without a verdict above are judged here, by their rules in `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `switches` to `params.resolve` in the parameters cell,
# set to a tenth of its value. Then run the notebook again.
#
# Predict first: does a shorter run change the -O0 against -O2 ratio, or only its
# interval?
# Write the number down before you run it.
