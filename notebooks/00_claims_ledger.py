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
# # 00 · The claims ledger
#
# This notebook lists every measurable [claim](../docs/glossary.md#claim) of the five
# source [articles](../docs/glossary.md#article). The claims and their rules are in
# `data/claims.csv`. The articles are summarised in `docs/sources.md`:
#
# - the Boost.Context article, `000_dc0f0e0d023658f3.txt`;
# - the coroutine-server article, `001_22488c889cf00991.txt`;
# - the OS context-switch article, `002_8f5c488cea1f882d.txt`;
# - the ucontext article, `003_58dac7765c62683c.txt`;
# - the coroutine-memory article, `004_dfc61b1060864bf1.txt`.
#
# Each claim stands beside the [verdict](../docs/glossary.md#verdict) the lab reached on
# this machine. The verdict comes from the experiment notebook named beside it. That
# notebook applies the claim's [rule](../docs/glossary.md#rule), written in
# `data/claims.csv` before anything was measured. The verdicts are:
#
# - `reproduced` / `contradicted`: the [interval](../docs/glossary.md#interval) lies
#   wholly inside that rule's region.
# - `in-between`: decided. The interval lies wholly between the two regions. The effect is
#   weaker or stronger than claimed, and the note says which and by how much.
# - `inconclusive`: at the [stopping rule](../docs/glossary.md#stopping-rule)'s last look,
#   the interval still [straddles](../docs/glossary.md#straddle) a bound. The `straddle`
#   column of `data/00_claims_ledger.csv` names the bound. The
#   [*leans*](../docs/glossary.md#lean) column says which way the interval leans.
# - `not-measured`: a system the claim needs is missing here (the note says what to
#   install). Or no notebook produced a verdict for it in the last run. It is never a
#   pass.
# - `not-applicable-here`: the claim needs hardware this machine lacks.
#
# Timings are judged over [fresh processes](../docs/glossary.md#fresh-process). The
# *fresh processes* column says how many the interval stands on. The intervals are repeated
# confidence intervals, taken at the [looks](../docs/glossary.md#look) of
# `labkit.core.sequential`. A decided verdict is wrong with probability at most 5% per
# claim. So the expected number of wrong decided verdicts is at most 5% of the claims. The
# report's summary gives that number for this ledger's count. Exact counts have no
# interval. *What x is* says what the rule's `x` is. *Measured here* is x, with
# the interval the verdict stands on.
#
# Some rules were misread when first written. Each
# [amendment](../docs/glossary.md#amendment) is recorded beside its rule in
# `data/claims_amendments.csv`, with the date, the reason and the misreading. The original
# rule is never edited. *verdict* is the verdict under the amended rule, and *verdict
# under the first rule* the one under the rule as first written.
#
# `make reproduce` runs this notebook last, so it sees every experiment's fresh results.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("00_claims_ledger"). By hand, set one in the call:
# resolve(..., quick=quick, calibration_runs=1000).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(calibration_runs, replaced_runs) = params.resolve(
    "00_claims_ledger", quick=quick).values()

# %%
import pandas as pd

from labkit.core import plots, results
from labkit.lab.analysis import claims_ledger
from labkit.lab.experiment import CLAIMS_LEDGER, LATENCY_LADDER
from labkit.lab.judging import ledger, pictures

pd.set_option("display.max_colwidth", 120)
table = ledger.ledger()
ledger.check(table)  # every claim exactly once, verdicts from the allowed set
print(ledger.environment_note())
print(plots.machine_caption())
pd.DataFrame({"amended rules": ledger.counts(table),
              "original rules": ledger.counts(table, "original_verdict")})

# %% [markdown]
# ## The latency ladder and the verdicts at a glance

# %%
try:
    ladder_runs = results.load_csv(LATENCY_LADDER.data)
except FileNotFoundError:
    ladder_runs = None
plots.finish(claims_ledger.summary_figure(table, ladder_runs), "00_claims_ledger-summary")

# %% [markdown]
# ## Every claim against its rule
#
# One row per claim: the interval of its rule's `x`, the claim's region and the
# refutation's shaded. The rules measure different quantities, so each row has its own
# axis, with the rule's bounds at the dotted lines (the caption says how it is scaled).

# %%
plots.finish(pictures.forest(table), "00_claims_ledger-forest", pictures.forest_caption(table))

# %% [markdown]
# ## Amendments
#
# Each amended claim has two verdicts: one under the rule as first written, one under the
# amended rule. The last column says why the rule was amended.

# %%
claims_ledger.amended(table)

# %% [markdown]
# ## Every claim

# %%
results.save_csv(table, CLAIMS_LEDGER.data)
claims_ledger.every_claim(table)

# %% [markdown]
# ## Where the variance lies
#
# Kalibera and Jones split the variance into two levels: between processes and within one.
# This table gives both for every [verdict design](../docs/glossary.md#verdict-design) of
# this run. It is the variance of the log of each entry's value. The table also says what
# one more process and one more [repeat](../docs/glossary.md#repeat) cost here. And it
# gives the repeats per process that would make the interval for the time narrowest.
# "Repeats per process" is what each verdict design ran, counted in
# [ABBA](../docs/glossary.md#abba) passes. A comparison pairs the two
# [sides](../docs/glossary.md#side)' repeats of the same pass. So a slow mode that comes
# and goes inside a process falls on both sides.

# %%
from labkit.lab.judging import designs

designs.variance_table()

# %% [markdown]
# ## Is the engine to be trusted? Its calibration
#
# This section is the [engine](../docs/glossary.md#engine)'s
# [calibration](../docs/glossary.md#calibration). A simulator draws measurements with a
# known true ratio, the way a shared VM gives them. Each process gives each side its own
# lognormal effect. A quarter of the processes run in a slow mode, at twice the time.
# Repeats have heavy tails.
#
# The engine judges C000.2's rule on them (`x >= 1.5` reproduces, `x < 1.1` contradicts).
# It uses the stopping rule of a full run. The true value is placed inside each region, on
# each [bound](../docs/glossary.md#bound) and in the gap. A decided verdict is wrong when
# the truth is not in its region. The stated [error rate](../docs/glossary.md#error-rate)
# is 5% (`labkit.lab.judging.calibration`; `tests/test_calibration.py` asserts it).
#
# Beside it stands the verdict design it replaced. That design used 3 processes and pooled
# the repeats into one [bootstrap interval](../docs/glossary.md#bootstrap-interval). It
# extended the run once after a straddle.

# %%
from labkit.lab.judging import calibration

calibrated = pd.concat([
    calibration.run(calibration.new_design, calibration_runs).assign(design="the engine"),
    calibration.run(calibration.old_design, replaced_runs).assign(
        design="replaced: 3 processes, pooled bootstrap")], ignore_index=True)
print(f"allowed wrong rate: {calibration.tolerance(calibration_runs) + 0.05:.3f} at "
      f"{calibration_runs} runs (5% plus 2.58 Monte-Carlo standard errors)")
calibrated.round(3)

# %% [markdown]
# ## Do the verdicts hold from run to run?
#
# Here the committed full run stands beside full reruns of the same code on the same
# machine. The reruns come from `labkit stability --runs 2 --with-committed`, which saves
# `data/stability.csv`. A claim whose true value lies near a bound of its rule can be
# decided in one run and inconclusive in the next. Two runs reaching opposite verdicts
# would mean the engine is wrong. Below: the claims that did not keep one verdict.

# %%
from labkit.lab.judging import stability, view

checked, text = stability.on_record(table)
print(text)
view.worded(stability.moved(checked)) if checked is not None else None
