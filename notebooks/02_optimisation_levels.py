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
# **Claim tested** (the id from `data/claims.csv`, the article in `docs/sources.md`):
# **C000.3** (source `000_dc0f0e0d023658f3.txt`): the same Boost.Context
# `fiber` ping-pong took about 180 ns per switch at `-O0`, 25 ns at `-O2` and 22 ns at
# `-O3` (GCC 11.3 on an i7-12700K at 5 GHz).
#
# An assembly switch cannot change with `-O`: it is the same instructions at every level.
# What changes is the code the compiler generates *around* it. For Boost that is the
# header-only `fiber::resume()` wrapper (moves of the fiber handle, the transfer record),
# compiled into our binary at each level, while `jump_fcontext` itself lives in Debian's
# `libboost_context.so`, built once. `make setup` builds labkit's C core and the C++ peers
# at `-O0`, `-O1`, `-O2`, `-O3`, `-Os` and `-O2 -march=native`, side by side, so the
# whole comparison is one run on one machine.
#
# Two measures: nanoseconds per switch (noisy, machine-dependent) and instructions per
# switch from `valgrind --tool=callgrind` (deterministic: the same binary always gives
# the same count). The verdict rule was written in `data/claims.csv` before measuring.

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
from labkit.lab.analysis import findings, optimisation_levels as analysis
from labkit.lab.experiment import OPTIMISATION_LEVELS as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

print(plots.machine_caption())
builds = labkit.builds()
kernels, available = analysis.kernels_here()
available.loc[analysis.CANDIDATES, ["system", "kind", "available", "why_not"]]

# %% [markdown]
# ## Time per switch at each level
#
# `cxx20_symmetric` is left out: below `-O2` GCC does not turn symmetric transfer into a
# tail jump, so it cannot run at all there (labkit refuses it with that reason).

# %%
timed = sweep(
    lambda entry, build: labkit.measure(entry, switches=switches, repeats=repeats,
                                         cpu=cpu, build=build),
    grid(entry=kernels, build=builds), desc="builds", checkpoint=exp.data,
)
ts = analysis.summary(timed, builds)
analysis.pivot(ts, builds, "median")

# %% [markdown]
# ## Instructions per switch (callgrind)
#
# The switch loop and the empty loop are counted apart, each at two lengths, and the
# difference taken: what is left is one switch and the loop code around it.

# %%
counts = analysis.instruction_counts(kernels, builds, count_instructions, count_builds)
analysis.pivot(counts, builds, "net")

# %%
plots.finish(analysis.figure(ts, counts, builds, kernels), "02_optimisation_levels-builds");

# %% [markdown]
# ## Reading it
#
# Where the instruction count barely moves between `-O0` and `-O2` (labkit's `asm_fpu`,
# Boost's raw `jump_fcontext`), the switch is all there is. Where it falls by an order of
# magnitude (`boost::context::fiber`, the C++20 generator), the cost at `-O0` is the
# abstraction around the switch, not the switch.

# %%
ratios = analysis.ratios(timed, counts, kernels)
ratios.round(2)

# %% [markdown]
# ## Verdict
#
# The rule names the author's test: Boost `fiber` ping-pong, `-O0` against `-O2`. The two
# builds (and `-O3`, for the table's row C000.3a) are measured again for the verdict,
# over fresh worker processes: each process runs every build four times (quick mode: twice) in ABBA order,
# leading with a random one, and gives one ratio per pair. The interval is taken over
# processes, at the looks of its schedule; the design stops at the first look
# where no interval straddles a bound (`labkit.core.sequential`, written before measuring).
# A verdict run has half the sweep's switches: the interval is over processes, and a
# shorter run halves what a process costs for little loss of precision (notebook 00's
# table of variance components).

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
findings.and_verdicts(exp.name, table)

# %% [markdown]
# <a id="02_optimisation_levels-article-table"></a>
# ## The article's table beside ours
#
# Here: the -O table of `000_dc0f0e0d023658f3.txt`: time and callgrind instructions per
# build beside the article's ns. The article's own rows and columns, its number beside
# the median measured here with its spread, the relative column it uses, and the claim
# that judges each row (`labkit.lab.report.articles`, built from the data this notebook just
# saved). The row claims without a verdict above are judged here by their rules in
# `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.section(exp)
