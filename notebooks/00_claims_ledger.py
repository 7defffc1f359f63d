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
# Every measurable claim of the five source articles (`data/claims.csv`; the articles
# `000_dc0f0e0d023658f3.txt` ... `004_dfc61b1060864bf1.txt` are summarised in
# `docs/sources.md`), with the verdict the lab reached on this machine. Each verdict
# comes from the experiment notebook named beside it, by the rule written in
# `data/claims.csv` before anything was measured:
#
# - `reproduced` / `contradicted`: the interval lies wholly inside that rule's region;
# - `in-between`: decided, the interval lies wholly between the two regions: the effect
#   is weaker or stronger than claimed, and the note says which and by how much;
# - `inconclusive`: at the stopping rule's cap the interval still straddles a bound;
#   `straddle` names it and `lean` says which way the interval leans;
# - `not-measured`: a system it needs is missing here (the note says what to install), or
#   no notebook has produced a verdict for it in the last run. Never a pass;
# - `not-applicable-here`: needs hardware this machine lacks.
#
# Timings are judged over fresh processes (`processes`: how many the interval stands on)
# with repeated confidence intervals at the looks of `labkit.core.sequential`: a decided
# verdict is wrong with probability at most 5% per claim, so the expected number of
# wrong decided verdicts is at most 5% of the claims (the report's summary gives it for
# this ledger's count). Exact counts have no interval. `measured_quantity` says what
# the rule's `x` is; `measured_value` is x with the interval the verdict stands on.
#
# Where a rule was misread when first written, the amendment is recorded beside it in
# `data/claims_amendments.csv` (date, reason, misreading) and the original rule is never
# edited: `verdict` is under the amended rule, `original_verdict` under the first one.
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
from labkit.lab.judging import ledger

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
# ## Amendments
#
# Each amended claim: the verdict under the rule as first written and under the amended
# one, and why the rule was amended.

# %%
amended = table[table.amendment != ""]
amended[["claim_id", "original_verdict", "verdict", "original_rule", "rule", "amendment"]]

# %% [markdown]
# ## Every claim

# %%
results.save_csv(table, CLAIMS_LEDGER.data)
table[["claim_id", "source", "claim", "claimed_value", "measured_quantity", "measured_value",
       "verdict", "lean", "processes", "original_verdict", "noisy", "note", "notebook",
       "figures"]]

# %% [markdown]
# ## Where the variance lies
#
# Kalibera and Jones's two levels for every verdict design of this run: the variance of
# the log of each entry's value between processes and within one, what one more process
# and one more repeat cost here, and the repeats per process that would give the
# narrowest interval for the time; "repeats per process" is what each design ran, in ABBA
# passes. A comparison's statistic pairs the two sides' repeats of the same pass, so a
# slow mode that comes and goes inside a process falls on both.

# %%
from labkit.lab.judging import designs

designs.variance_table()

# %% [markdown]
# ## Is the engine to be trusted? Its calibration
#
# A simulator draws measurements with a known true ratio, as a shared VM gives them:
# each process gives each side its own lognormal effect, a quarter of the processes run
# in a slow mode at twice the time, and repeats have heavy tails. The engine judges C000.2's
# rule (`x >= 1.5` reproduces, `x < 1.1` contradicts) under the stopping rule of a full
# run, the truth placed inside each region, on each bound and in the gap. A decided
# verdict is wrong when the truth is not in its region; the stated error rate is 5%
# (`labkit.lab.judging.calibration`; `tests/test_calibration.py` asserts it). Beside it, the
# design it replaced: 3 processes, the repeats pooled into one bootstrap interval, one
# extension after a straddle.

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
# The committed full run beside full reruns of the same code on the same machine
# (`labkit stability --runs 2 --with-committed`, which saves
# `data/stability.csv`). A claim whose true value lies near one of its rule's bounds can
# be decided in one run and inconclusive in the next; two runs reaching opposite verdicts
# would mean the engine is wrong. Below: the claims that did not keep one verdict.

# %%
from labkit.lab.judging import stability

checked, text = stability.on_record(table)
print(text)
stability.moved(checked) if checked is not None else None
