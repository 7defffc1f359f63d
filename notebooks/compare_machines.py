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
# # Comparing machines
#
# Each machine packs its results with `python -m labkit bundle -o <name>`, after a `make
# reproduce`. That makes a [bundle](../docs/glossary.md#bundle). Collect the
# `<name>.labkit` folders in one place and list them below. (Or run `python -m labkit
# merge a.labkit b.labkit ...` in a terminal.) The [verdicts](../docs/glossary.md#verdict)
# sit side by side, per claim. The ladder compares each machine's
# [kernels](../docs/glossary.md#kernel) in ratios to its own `asm`. Absolute nanoseconds
# only mean something beside their machine.
#
# **In a [room](../docs/glossary.md#room)** (see `docs/workshop.md`): set `room_file` to
# the room file of `labkit room serve`. The suite then runs on every joined machine. The
# table below shows each machine's state live: queued, running notebook k of n, done,
# failed, or left. The comparison fills in as bundles arrive. Offline, list bundle folders
# in `bundles`.

# %% tags=["parameters"]
bundles = []      # paths of .labkit bundle folders, two or more
room_file = ""    # or a room file: run the suite across the room first
room_only = []    # with room_file: only these notebooks (empty: all)
room_out = "../room-results"  # with room_file: where the machines' bundles are saved
quick = False     # with room_file: the suite's quick mode

# %% [markdown]
# ## The room's predictions beside its measurements
#
# With `room_file` set, the room also holds what the learners' exercises sent it
# (`docs/workshop.md`, "Predictions through the room"). One panel per exercise: each
# learner's prediction beside the measurement their exercise checked it against, with
# its interval. Each title counts the predictions that fell inside.

# %%
if room_file:
    from IPython.display import display

    from labkit.core import plots
    from labkit.lab.headers import shown
    from labkit.lab.analysis import compare_machines
    from labkit.lab.room import predictions as room_predictions

    predicted = room_predictions.collect(room_file)
    figure = compare_machines.predictions_figure(predicted)
    if figure is None:
        print("No learner has sent a prediction to this room yet.")
    else:
        plots.finish(figure, "compare_machines-predictions",
                     compare_machines.PREDICTIONS_CAPTION)
        display(shown(predicted))

# %%
if room_file:
    from labkit.lab.room import view

    done = view.watch(room_file, quick=quick, only=room_only or None, out=room_out)
    bundles = sorted(str(p) for p in done.bundles.values())
    done.table

# %%
import pandas as pd

from labkit.lab.analysis import compare_machines
from labkit.lab.sharing import merge

pd.set_option("display.max_colwidth", 60)
if len(bundles) < 2:
    raise ValueError("bundles must list at least two .labkit folders: set it in the "
                     "parameters cell, or pass it with papermill -p")
cmp = merge.merge(bundles)
merge.checked(cmp)  # each machine: how many of its verdicts were recomputed here and agree

# %% [markdown]
# ## Verdicts, claim by claim
#
# Each bundle's verdicts are recomputed from its own verdict runs before they are shown
# here. A bundle whose stated verdicts disagree is refused. `cmp["checks"]` says, claim by
# claim, how each was checked. (A bundle before format 4 carries no runs.)

# %%
compare_machines.by_machine(cmp["verdicts"])

# %% [markdown]
# ## The ladder, in each machine's own `asm` units

# %%
# "not measured" where a machine has no such rung
compare_machines.by_machine(merge.shown(cmp["ladder"]))
