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
# # 06 · Floating-point state, and how a switch returns
#
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`.
#
# - **C002.3** (the OS context-switch article, `002_8f5c488cea1f882d.txt`): a coroutine
#   framework saved the floating-point registers on every
#   [switch](../docs/glossary.md#switch). The ABI does not require that. It spent about 90
#   ns per switch; without the saving, about 30 ns.
# - **C000.6** (the Boost.Context article, `000_dc0f0e0d023658f3.txt`): `jump_fcontext` on
#   x86-64 System V saves and restores RBX, RBP, R12-R15, RSP and RIP. That is about 20
#   instructions. Its final indirect jump may be mispredicted.
#
# labkit's [kernels](../docs/glossary.md#kernel) form a ladder of what a switch saves. All
# have the same frame and the same loop around them:
#
# - `asm`: the [callee-saved registers](../docs/glossary.md#callee-saved-registers) only;
# - `asm_fpu`: + MXCSR and the x87 control word, as `jump_fcontext` does (the [control
#   words](../docs/glossary.md#control-words));
# - `asm_fxsave`: + the whole x87/SSE state, 512 bytes;
# - `asm_xsave`: + every state component the OS enables: AVX, AVX-512...
#
# Boost's real `jump_fcontext` runs beside them. Then come two effects a careful engineer
# would check:
#
# 1. **The control words' values.** Arithmetic sets MXCSR's sticky exception flags. So a
#    context that divided holds a different MXCSR from a fresh one. Does loading a
#    *different* value cost more than reloading the same one? This is measured with
#    labkit's kernels and with Boost's `jump_fcontext`. Either both contexts hold the
#    defaults, or main is dirtied by one inexact division after the other context was
#    made.
# 2. **The last instruction.** `asm` pops the return address and jumps to it. `asm_ret`
#    ends in `ret`, whose target the return-stack predictor guesses wrongly. It predicts
#    the caller of the switch, but we land in the other context.
#
# The [rules](../docs/glossary.md#rule) were written in `data/claims.csv` before
# measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("06_fp_state_and_return"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=15).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
cpu, switches, repeats, xstate_pairs, xstate_repeats = params.resolve(
    "06_fp_state_and_return", quick=quick).values()

# %%
import labkit
from labkit.core import plots, results
from labkit.lab.headers import shown
from labkit.lab.analysis import findings, fp_state as analysis
from labkit.lab.experiment import FP_STATE_AND_RETURN as exp
from labkit.lab.running.sweep import grid, sweep
findings.placeholder(exp.name)

print(plots.machine_caption())
ladder, catalogue = analysis.ladder_here()
shown(catalogue.loc[analysis.LADDER,
                    ["saves", "returns_by", "frame_bytes", "available", "why_not"]])

# %% [markdown]
# ## What saving more costs
#
# All kernels run in one run, on one CPU, interleaved by the sweep. With
# `fp_control="same"`, both contexts hold the default control words. So only the *saving*
# differs.

# %%
# Boost's jump_fcontext can run with its two contexts' control words set apart too.
runs = analysis.label_fp_control(sweep(
    lambda entry, fp_control: labkit.measure(entry, switches=switches, repeats=repeats,
                                             cpu=cpu, fp_control=fp_control),
    grid(entry=ladder, fp_control=["same", "differ"]), desc="kernels",
    checkpoint=exp.data))
summary = analysis.summary(runs)
same = analysis.same_words(summary)
shown(same.round(2))

# %% [markdown]
# ## Instructions per switch (callgrind)

# %%
counts, why = analysis.instruction_counts(ladder)
shown(counts[["entry", "loop", "base", "net"]].round(1))

# %%
plots.finish(analysis.ladder_figure(same, summary, ladder, analysis.ladder_finding(runs)),
             "06_fp_state_and_return-ladder");

# %% [markdown]
# ## The two effects, as ratios measured in this run

# %%
shown(analysis.effects(runs, ladder).round(3))

# %% [markdown]
# ## The FP and vector state, by component
#
# `asm_xsave` saves everything XCR0 enables. What that costs depends on which components
# those are. Here one save and one `xrstor` of a 64-byte-aligned area are timed for each
# component set XCR0 enables. Each set is one step wider: x87+SSE, +AVX, +AVX-512, +AMX
# tiles, then all of XCR0. Each is timed with `xsave`, `xsaveopt` and `xsavec`.
#
# The registers are either *dirty* or *clean*. Dirty: every register of the set is written
# before each save. Clean: the vector components are in their initial state, which
# `xsaveopt` and `xsavec` may skip (the init optimisation).
#
# The net is per pair, over the same loop with empty calls in place of the save and
# restore. The area's bytes come from CPUID leaf 0xD. `xinuse` is XINUSE, read right after
# the loop: the components that were out of their initial state.

# %%
from labkit.experiments import xstate

why_no_xstate = xstate.available()
if why_no_xstate:
    print("FP/vector state sweep skipped:", why_no_xstate)
else:
    xs_cpu = xstate.cpu_state()
    print(analysis.xstate_text(xs_cpu))
    xs_runs = xstate.sweep(pairs=xstate_pairs, repeats=xstate_repeats, cpu=cpu)
    results.save_csv(xs_runs, exp.part("xstate"))
    xs_summary = xstate.summary(xs_runs)
    plots.finish(analysis.xstate_figure(xs_summary, analysis.xstate_finding(xs_summary)),
                 "06_fp_state_and_return-xstate")
    print(analysis.xstate_reading(xs_summary, xs_cpu))
shown(xs_summary.round(1)) if not why_no_xstate else None

# %% [markdown]
# ## Verdicts
#
# C002.3 is judged by the ratio `asm_fxsave / asm_fpu`: saving the FP registers against
# saving only the control words. C000.6 is judged by Boost's `jump_fcontext` instructions
# per switch, net of the [empty loop](../docs/glossary.md#empty-loop). That leaves the
# call, the PLT jump and the loop's own counter updates in it.

# %% [markdown]
# `asm_fxsave`, `asm_fpu` and `asm_xsave` are measured again for the
# [verdict](../docs/glossary.md#verdict), with the same control words in both contexts.
# They run in a [verdict design](../docs/glossary.md#verdict-design). Each [fresh
# process](../docs/glossary.md#fresh-process) runs every kernel four times (quick mode:
# twice). It runs them in [ABBA](../docs/glossary.md#abba) order, leading with a random
# kernel. It gives one ratio. The [interval](../docs/glossary.md#interval) is taken over
# processes, at the [looks](../docs/glossary.md#look) of its schedule. The verdict design
# stops at the first look where no interval [straddles](../docs/glossary.md#straddle) a
# bound. That is the [stopping rule](../docs/glossary.md#stopping-rule)
# (`labkit.core.sequential`), written before measuring. C000.6 is an instruction count,
# exact: it has no interval.
#
# A verdict run has half the sweep's switches. The interval is over processes, so a
# shorter run halves what a process costs. It loses little precision (see notebook 00's
# table of [variance components](../docs/glossary.md#variance-components)).

# %%
from functools import partial

from labkit.lab.judging import designs

verdict_runs, judged = designs.run(exp, {
    k: partial(labkit.measure, k, switches=switches // 2, cpu=cpu, fp_control="same")
    for k in exp.sides if k in ladder}, quick=quick)
results.save_csv(analysis.saved(runs, counts), exp.data)
table = designs.verdict_table(exp, judged, why={
            "C000.6": why or catalogue.loc["boost_fcontext", "why_not"] or "not counted"})
findings.and_verdicts(exp.name, table, [
    analysis.ladder_finding(runs),
    None if why_no_xstate else analysis.xstate_finding(xs_summary)])

# %% [markdown]
# <a id="06_fp_state_and_return-article-table"></a>
# ## The article's table beside ours
#
# Here is the anatomy of `jump_fcontext` in the Boost.Context article
# (`000_dc0f0e0d023658f3.txt`). Stores and loads are counted in its disassembly, and
# instructions come from [callgrind](../docs/glossary.md#callgrind). Each number of the
# article sits beside the [median](../docs/glossary.md#median) measured here, with its
# [spread](../docs/glossary.md#spread). The table keeps the article's own rows and
# columns, and the relative column it uses. It also names the claim that judges each row.
# `labkit.lab.report.articles` builds it from the data this notebook just saved. The [row
# claims](../docs/glossary.md#row-claim) without a verdict above are judged here, by their
# rules in `data/claims.csv`.

# %%
from labkit.lab.report import articles

articles.save_anatomy();
articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `switches` to `params.resolve` in the parameters cell,
# set to ten times its value. Then run the notebook again.
#
# Predict first: does the gap between fxsave and xsave grow with a longer run, or only
# its interval shrink?
# Write the number down before you run it.
