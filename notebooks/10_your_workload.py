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
# `labkit.advise` (and `labkit advise` on the command line) takes a workload (the work
# between switches W, the suspensions per request, the coroutines alive N, the stack in use
# at a switch u, the FP state in use) and predicts for every design its time per request
# with an interval, its share of time switching and its memory, from the other notebooks'
# measurements on this machine (`labkit.lab.advising`).
#
# The work W is what a user can measure: what the work between two suspensions costs in
# one warm context, with its u bytes touched in one stack (a profiler of a one-request
# loop shows it). Everything the N contexts and the design add is the advisor's to
# predict.
#
# This notebook checks the advice against measurement. The **calibration grid** runs the
# described workload for real (`labkit.experiments.workload`: N coroutines under a
# round-robin scheduler, each doing W of busy work and touching u bytes of its stack per
# step) at every point of W x N x u, for five designs, over fresh processes in ABBA order
# (A B B A: the designs' order reversed halfway, so a drift in the machine hits each
# alike). Beside each measurement stands the advice `labkit.advise` gives for that point,
# told only what a user could tell it: the work timed in one warm context, N, u and the
# stack size. The advisor never sees the grid's measurements.
#
# The grid's targets (`grid.TARGETS`), on the advice: the measurement inside the advice's
# interval at ≥ 90% of points; median |advice / measurement - 1| ≤ 10% for time and ≤ 5%
# for memory; a median half-width of at most 20% of the advice.

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
from labkit.lab.advising import cold, evidence, grid
from labkit.lab.analysis import your_workload as yw
from labkit.lab.experiment import YOUR_WORKLOAD as exp
from labkit.lab.judging import verdicts

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
# Each point: the work a user would state, timed on the spot in one warm context (two
# workers, the smaller taken); then every design in `processes` fresh processes, `samples`
# timed samples each. Each row holds:
#
# - the advice (`advice_*`): its own interval (the noise of the measurements it stands
#   on) widened by its error at the 20 *other* grid points nearest in share of switching
#   and in that noise;
# - the measurement, with its 95% interval over processes;
# - the memory (resident + page tables) of N coroutines;
# - a diagnosis kept beside the advice (`predicted_*`, `model_*`): the same model fed the
#   *step*, the work timed among the N contexts in the design's own layout. It shows how
#   much of the advice's error is the cost of the N contexts' bytes, which the advice
#   predicts and the step already holds.
#
# The cold switches the grid measured are kept in
# `data/10_your_workload_cold_switches.csv`: a bundle carries them, so that
# `labkit advise --bundle` on another machine predicts this one's many-context designs.

# %%
g = grid.run_grid(quick=quick, processes=processes, samples=samples, ev=ev, progress=print)
results.save_csv(g.assign(**meta), yw.GRID)
results.save_csv(cold.cold_rows(ev).assign(**meta), evidence.COLD_SWITCHES)
grid.calibrate(ev, g)
print(f"measured on the spot: {len(ev.measured_now)} terms this machine's data lacked "
      "(their lines: spot_log.getvalue())")
scores = grid.scores(g)
scores.round(3).fillna("not predicted")  # a design whose memory the data cannot predict

# %%
yw.calibration_figure(g, info);

# %% [markdown]
# The diagnosis: the step-fed model, scored the same way.

# %%
grid.scores(g, on="predicted").round(3).fillna("not predicted")

# %%
yw.error_figure(g, info);

# %% [markdown]
# How to read it. `coverage` is the share of points whose measurement lies inside the
# advice's interval and `median_half_width` its width as a fraction of the advice;
# `model_coverage` is the same for the model's own interval, which knows nothing of the
# model's error and holds few measurements. `interval_score` weighs width and misses
# together (lower is better). `labkit advise` gives the same interval: it reads this
# machine's `data/advisor_calibration.csv` for the advice's error. Where the points miss,
# and why, is in `docs/advisor_calibration.md`; workloads off the grid are checked by
# `labkit holdout` (`data/advisor_holdout.csv`).

# %% [markdown]
# ## Three workloads
#
# An I/O-bound server (20 µs of work, 2 suspensions per request, 10k connections); 000's
# case study (about 100 cycles per yield, 64 workers, 1 MiB against 64 KiB stacks); one
# million idle connections.

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
# The share of time switching against the work between switches, and memory against N up
# to the mapping limit, from the measurements (the grid's own as open circles). The
# controls redraw both without measuring again (in JupyterLab; a headless run shows the
# figures for the parameters).

# %%
curves = yw.curves(alive=show_alive, in_use=show_in_use, ev=ev)
results.save_csv(curves.assign(**meta), exp.data)
yw.share_figure(curves, g, info);

# %%
yw.memory_figure(curves, g, info);

# %%
yw.controls(g, ev=ev)

# %% [markdown]
# This notebook judges no claim of the articles; its verdict table is empty.

# %%
results.save_csv(verdicts.table([]), exp.verdicts)
