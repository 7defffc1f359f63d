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
# Each machine packs its results with `python -m labkit bundle -o <name>` after a
# `make reproduce`; collect the `<name>.labkit` folders in one place and list them below
# (or run `python -m labkit merge a.labkit b.labkit ...` in a terminal). Verdicts sit side
# by side per claim; the ladder compares each machine's kernels in ratios to its own `asm`,
# since absolute nanoseconds only mean something beside their machine.

# %% tags=["parameters"]
bundles = []   # paths of .labkit bundle folders, two or more
quick = False  # unused here; every lab notebook takes it

# %%
import pandas as pd

from labkit import bundle

pd.set_option("display.max_colwidth", 60)
if len(bundles) < 2:
    raise ValueError("bundles must list at least two .labkit folders: set it in the "
                     "parameters cell, or pass it with papermill -p")
cmp = bundle.merge(bundles)
cmp["machines"]

# %% [markdown]
# ## Verdicts, claim by claim

# %%
cmp["verdicts"]

# %% [markdown]
# ## The ladder, in each machine's own `asm` units

# %%
cmp["ladder"].round(2)
