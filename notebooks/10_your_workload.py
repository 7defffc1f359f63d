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
# # 10 · Your workload: which design, what it costs, and is the advisor right?
#
# `labkit.advise` is the [advisor](../docs/glossary.md#advisor) (`labkit advise` on the
# command line). It takes a workload, described by five things:
#
# - W, the [work between switches](../docs/glossary.md#work-between-switches);
# - the [suspensions](../docs/glossary.md#suspension) per request;
# - N, the coroutines alive;
# - u, the stack in use at a switch;
# - the [FP state](../docs/glossary.md#fp-state) in use.
#
# For every [design](../docs/glossary.md#design), it predicts three things. The time per
# request comes with an [interval](../docs/glossary.md#interval). Then come its [share of
# time switching](../docs/glossary.md#share-of-time-switching) and its memory. The
# predictions come from the other notebooks' measurements on this machine
# (`labkit.lab.advising`).
#
# The work W is what a user can measure. It is what the work between two suspensions costs
# in one warm context, with its u bytes touched in one stack. A profiler of a one-request
# loop shows it. Everything the N contexts and the design add is the advisor's to predict.
#
# This notebook checks the [advice](../docs/glossary.md#advice) against measurement. The
# [calibration grid](../docs/glossary.md#calibration-grid) runs the described workload for
# real, at every point of W x N x u, for five designs. (`labkit.experiments.workload` runs
# N coroutines under a round-robin scheduler. Each does W of busy work and touches u bytes
# of its stack per step.) It runs over [fresh
# processes](../docs/glossary.md#fresh-process), in [ABBA](../docs/glossary.md#abba)
# order: A B B A. The designs' order is reversed halfway, so a drift in the machine hits
# each alike.
#
# Beside each measurement stands the advice `labkit.advise` gives for that point. The
# advisor is told only what a user could tell it: the work timed in one warm context, N, u
# and the stack size. The advisor never sees the grid's measurements.
#
# The grid's targets (`grid.TARGETS`), on the advice:
#
# - the measurement lies inside the advice's interval at ≥ 90% of points;
# - median |advice / measurement - 1| ≤ 10% for time, and ≤ 5% for memory;
# - the median half-width is at most 20% of the advice.

# %% tags=["parameters"]
# Each parameter's full and quick value: params.describe("10_your_workload").
from labkit.lab.running import params

quick = False  # True: four points, two designs (what CI runs)
(processes, samples, show_alive, show_in_use) = params.resolve(
    "10_your_workload", quick=quick).values()

# %%
import io
import os

import labkit
from labkit.core import machine, plots, results
from labkit.lab.headers import shown
from labkit.lab.advising import cold, evidence, grid
from labkit.lab.analysis import findings, your_workload as yw
from labkit.lab.experiment import YOUR_WORKLOAD as exp
from labkit.lab.judging import verdicts
from labkit.lab.report import choosing
findings.placeholder(exp.name)

info = labkit.machine_info()
meta = machine.row_metadata()
# What the advice measures on the spot goes to a log, not to the page: one line is
# printed for all of it, below the grid.
spot_log = io.StringIO()
ev = evidence.load(quick=quick, status=spot_log)
print(plots.machine_caption(info), f"\nload average (1 min): {os.getloadavg()[0]:.2f}")

# %% [markdown]
# ## The grid
#
# At each point, the work a user would state is timed on the spot, in one warm context
# (two [workers](../docs/glossary.md#worker), the smaller taken). Then every design runs
# in `processes` fresh processes, `samples` timed samples each. Each row holds:
#
# - the advice (`advice_*`). Its interval starts from the noise of the measurements it
#   stands on. It is widened by the advice's error at the 20 *other* grid points nearest
#   in share of switching and in that noise.
# - the measurement, with its 95% interval over processes;
# - the memory ([resident](../docs/glossary.md#resident-memory) + page tables) of N
#   coroutines;
# - a diagnosis kept beside the advice (`predicted_*`, `model_*`). It is the same model,
#   fed the *step*: the work timed among the N contexts, in the design's own layout. It
#   shows how much of the advice's error is the cost of the N contexts' bytes. The advice
#   predicts that cost, and the step already holds it.
#
# The [cold switches](../docs/glossary.md#cold-switch) the grid measured are kept in
# `data/10_your_workload_cold_switches.csv`. A [bundle](../docs/glossary.md#bundle)
# carries them. So `labkit advise --bundle` on another machine predicts this one's
# many-context designs.

# %%
g = grid.run_grid(quick=quick, processes=processes, samples=samples, ev=ev, progress=print)
results.save_csv(g.assign(**meta), yw.GRID)
results.save_csv(cold.cold_rows(ev).assign(**meta), evidence.COLD_SWITCHES)
grid.calibrate(ev, g)
print(f"measured on the spot: {len(ev.measured_now)} terms this machine's data lacked "
      "(their lines: spot_log.getvalue())")
shown(choosing.score_table(grid.scores(g)))  # in words, as the report's section shows them

# %%
yw.calibration_figure(g, info);

# %% [markdown]
# The diagnosis: the step-fed model, scored the same way.

# %%
shown(choosing.score_table(grid.scores(g, on="predicted")))

# %%
yw.error_figure(g, info);

# %% [markdown]
# How to read it. *Coverage of the 95% interval* is the share of points whose measurement
# lies inside the advice's interval. *Median half-width* is that interval's width, as a
# fraction of the advice. *Coverage of the model's own interval* is the same for the
# model's own interval. That interval knows nothing of the model's error, and holds few
# measurements. *Interval score* weighs width and misses together (lower is better).
#
# `labkit advise` gives the same interval. It reads this machine's
# `data/advisor_calibration.csv` for the advice's error. Where the points miss, and why,
# is in `docs/advisor_calibration.md`. Workloads off the grid are checked by `labkit
# holdout` (`data/advisor_holdout.csv`): the [held-out
# workloads](../docs/glossary.md#held-out-workloads).

# %% [markdown]
# ## Three workloads
#
# - An I/O-bound server: 20 µs of work, 2 suspensions per request, 10k connections.
# - The case study of the Boost.Context article (`000_dc0f0e0d023658f3.txt`): about 100
#   cycles per yield, 64 coroutines, 1 MiB against 64 KiB stacks.
# - One million idle connections.

# %%
chosen = list(grid.QUICK["designs"]) if quick else None
for kw in (dict(work="20us", suspensions=2, alive=10_000, stack_in_use="1KiB"),
           dict(work="100cycles", alive=64, stack_size="1MiB"),
           dict(work="100cycles", alive=64, stack_size="64KiB"),
           dict(work="20us", alive=1_000_000, stack_in_use="256")):
    display(labkit.advise(**kw, designs=chosen, quick=quick))

# %% [markdown]
# ## Your workload
#
# One plot shows the share of time switching against the work between switches. The
# other shows memory against N, up to the mapping limit. Both come from the
# measurements; the grid's own are open circles. The controls redraw both without
# measuring again. (They work in JupyterLab; a headless run shows the figures for the
# parameters.)

# %%
curves = yw.curves(alive=show_alive, in_use=show_in_use, ev=ev)
results.save_csv(curves.assign(**meta), exp.data)
yw.share_figure(curves, g, info);

# %%
yw.memory_figure(curves, g, info);

# %%
yw.controls(g, ev=ev)

# %% [markdown]
# This notebook judges no claim of the articles, so its
# [verdict](../docs/glossary.md#verdict) table is empty.

# %%
results.save_csv(verdicts.table([]), exp.verdicts)
findings.fill(exp.name, [yw.calibration_finding(g), yw.share_finding(curves),
                         yw.memory_finding(curves)]);

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `show_alive` to `params.resolve` in the parameters cell,
# set to your own service's number of live requests. Then run the notebook again.
#
# Predict first: which design will the advisor rank first for it, and how far behind is
# the second?
# Write the number down before you run it.
