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
# **Claims tested** (ids from `data/claims.csv`, the articles in `docs/sources.md`;
# source `000_dc0f0e0d023658f3.txt`):
#
# - **C000.2**: with Boost.Context `fiber` ping-pong and `fixedsize_stack`, the author
#   measured 22 ns per switch with 4 KB stacks rising to 45 ns at 1 MB and 120 ns at
#   8 MB (+445%), and blamed cache misses on bigger stacks.
# - **C000.1** (magnitude only; judged in notebook 04): a switch costs about 20-30 ns.
#
# The author's setup: i7-12700K fixed at 5.0 GHz, E-cores and SMT off, GCC 11.3
# `-O2 -march=native`, Boost 1.81, 10,000,000 switches, a `volatile` counter.
#
# A ping-pong between two contexts touches only the top of each stack, so the stack's
# size should not matter to it. What could matter: where the stack tops land. With
# power-of-two sizes every top sits at the same offset in its page, so with many
# contexts their hot frames compete for the same cache sets. We measure the author's
# two-context test, then rings of N contexts with and without *stack colouring*
# (each top moved down by a different number of cache lines), prefaulted or not.
#
# The verdict rule for C000.2 was written in `data/claims.csv` before measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("01_stack_size"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=15).
from labkit.lab import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, switches, repeats, ring_laps_switches, sizes, ring_sizes, ring_counts) = params.resolve(
    "01_stack_size", quick=quick).values()

# %%
import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.core import plots, results
from labkit.lab import verdicts
from labkit.lab.sweep import grid, sweep

KiB, MiB = 1 << 10, 1 << 20

info = labkit.machine_info()
print(plots.machine_caption(info))
labkit.catalogue()[["kernel", "kind", "saves", "available", "why_not"]]

# %% [markdown]
# ## Two contexts, ping-pong: the author's test
#
# Each point is `repeats` runs of `switches` switches after a warm-up; the empty loop's
# cost is subtracted. `boost_fiber` is the real `boost::context::fiber` with a
# `fixedsize_stack` of that size, as in the article; labkit's kernels run beside it.
# labkit's stacks are `mmap`ed and prefaulted (every page touched first) or left
# untouched; Boost's `fixedsize_stack` takes its memory from `malloc` (small stacks from
# the heap, large ones from `mmap`), so `prefault` does not apply to it.

# %%
available = labkit.catalogue().set_index("kernel")
kernels = [k for k in ("boost_fiber", "asm_fpu", "asm", "ucontext") if available.loc[k, "available"]]
missing = available.loc[["boost_fiber"]].query("not available")[["why_not"]]
missing  # an empty table when Boost.Context is here
points = [p for p in grid(kernel=kernels, stack_size=sizes, prefault=[True, False])
          if not (p["kernel"] == "boost_fiber" and not p["prefault"])]
pingpong = sweep(
    lambda kernel, stack_size, prefault: labkit.measure(
        kernel, stack_size=stack_size, switches=switches, repeats=repeats, cpu=cpu,
        prefault=None if kernel == "boost_fiber" else prefault),
    points, desc="ping-pong", checkpoint="01_stack_size_pingpong",
)
# Boost's rows have no prefault setting (its stacks are not labkit's): say what they are.
pingpong["stacks"] = pingpong.prefault.map({True: "prefaulted", False: "untouched"})
pingpong["stacks"] = pingpong["stacks"].fillna("malloc'd by Boost")
pp = labkit.summarize(pingpong, by=["kernel", "stack_size", "stacks"])
for w in labkit.noise_warnings(pp):
    print(w)
pp[["kernel", "stack_size", "stacks", "median", "q1", "q3", "median_ticks", "noisy"]]

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
panels = [("prefaulted stacks (Boost: malloc'd)", ["prefaulted", "malloc'd by Boost"]),
          ("untouched stacks", ["untouched"])]
for ax, (title, kinds) in zip(axes, panels):
    plots.errorbars(ax, pp[pp.stacks.isin(kinds)], x="stack_size", hue="kernel")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [plots.bytes_label(s) for s in sizes], rotation=45)
    ax.set_xlabel("stack size per context")
    ax.set_ylabel("ns per switch (median, IQR bars)")
    plots.log_axis(ax, "y")
    ax.set_title(f"two-context ping-pong, {title}")
plots.finish(fig, "01_stack_size-pingpong");

# %% [markdown]
# The page faults inside the timed loops, summed over all repeats: a ping-pong touches
# the top page of each stack, once, and that happens when the context is made.

# %%
pingpong.groupby(["kernel", "stacks"]).minor_faults.sum().to_frame("page faults in timed loops")

# %% [markdown]
# ## N contexts in a ring: where stack tops collide
#
# A symmetric ring of N contexts (each switches straight to the next) with stacks of
# size S, untouched (only the pages a context uses are committed). With `colour_step=64`
# the top of stack *i* moves down by *(i mod 1024) x 64* bytes.

# %%
ring = sweep(
    lambda stack_size, contexts, colour_step: labkit.measure_ring(
        "asm_fpu", contexts=contexts, stack_size=stack_size, colour_step=colour_step,
        laps=max(1, ring_laps_switches // (contexts + 1)), repeats=max(3, repeats // 2),
        cpu=cpu),
    grid(stack_size=ring_sizes, contexts=ring_counts, colour_step=[0, 64]),
    desc="ring", checkpoint="01_stack_size_ring",
)
rs = labkit.summarize(ring, by=["stack_size", "contexts", "colour_step"])
rs["stack"] = rs.stack_size.map(plots.bytes_label)
rs[["stack", "contexts", "colour_step", "median", "q1", "q3", "noisy"]]

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, step in zip(axes, [0, 64]):
    plots.errorbars(ax, rs[rs.colour_step == step], x="contexts", hue="stack")
    plots.log_axis(ax, "x", base=2)
    plots.log_axis(ax, "y")
    ax.set_xlabel("contexts in the ring (N)")
    ax.set_ylabel("ns per switch (median, IQR bars)")
    ax.set_title("stack tops aligned" if step == 0 else "stack tops coloured (64 B steps)")
plots.finish(fig, "01_stack_size-ring");

# %% [markdown]
# ## What the data says
#
# Three questions, each answered by numbers from this run (printed below):
#
# 1. **Does the ping-pong itself care about the stack's size?** Two contexts touch one
#    page at the top of each stack whatever its size, so a flat line is expected; the
#    spread across sizes, per kernel, says whether it is.
# 2. **Do aligned stack tops collide in the cache?** With N contexts whose tops sit at the
#    same offset in their pages, every top maps to the same few cache sets. Colouring moves
#    them apart: if colouring makes a ring cheaper, set conflicts were the cost.
# 3. **Do big stacks cost more when there are many contexts?** Far-apart tops each need
#    their own TLB entry, and with 8 MiB stacks their own page-table pages: a ring of
#    thousands of 8 MiB contexts misses in the TLB and walks page tables on every switch.

# %%
def median_of(df, **where):
    sel = df
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return sel.ns_per_switch


flat = (pingpong.groupby(["kernel", "stacks", "stack_size"]).ns_per_switch.median()
        .groupby(["kernel", "stacks"]).agg(["min", "max"]))
flat["max / min over sizes"] = flat["max"] / flat["min"]
print("1. ping-pong, median ns per switch, cheapest and dearest stack size:")
print(flat.round(2).to_string(), "\n")

n_mid = 64 if 64 in ring_counts else ring_counts[len(ring_counts) // 2]
n_max = max(ring_counts)
ring_rows = []
for s in ring_sizes:
    row = {"stack": plots.bytes_label(s)}
    for n in (n_mid, n_max):
        a = median_of(ring, stack_size=s, contexts=n, colour_step=0).median()
        c = median_of(ring, stack_size=s, contexts=n, colour_step=64).median()
        row.update({f"N={n} aligned ns": a, f"N={n} coloured ns": c,
                    f"N={n} aligned/coloured": a / c})
    ring_rows.append(row)
rings = pd.DataFrame(ring_rows)
print(f"2. and 3. rings of N contexts (asm_fpu), median ns per switch:")
print(rings.round(2).to_string(index=False), "\n")
small, large = rings.iloc[0], rings.iloc[-1]
print(f"N={n_mid}: aligned tops cost {small[f'N={n_mid} aligned/coloured']:.2f}x "
      f"({small['stack']}) to {large[f'N={n_mid} aligned/coloured']:.2f}x ({large['stack']}) "
      "what coloured tops cost: above 1, cache-set conflicts cost time")
print(f"N={n_max}: {large['stack']} stacks {large[f'N={n_max} coloured ns']:.1f} ns vs "
      f"{small['stack']} stacks {small[f'N={n_max} coloured ns']:.1f} ns per switch: "
      f"{large[f'N={n_max} coloured ns'] / small[f'N={n_max} coloured ns']:.1f}x, "
      "the cost of far-apart stack tops (TLB and page walks), not of the size itself")

# %%
judge_kernel = "boost_fiber" if "boost_fiber" in kernels else "asm_fpu"
judge_stacks = "malloc'd by Boost" if judge_kernel == "boost_fiber" else "prefaulted"
small_pp = median_of(pingpong, kernel=judge_kernel, stack_size=4 * KiB, stacks=judge_stacks)
big_pp = median_of(pingpong, kernel=judge_kernel, stack_size=8 * MiB, stacks=judge_stacks)
print(f"ping-pong {judge_kernel}: 8 MiB / 4 KiB = {big_pp.median() / small_pp.median():.2f} "
      "in this one-process sweep; the verdict below takes its interval over processes")

# %% [markdown]
# ## Verdict
#
# The rule in `data/claims.csv` names the author's test: Boost `fiber` ping-pong,
# 8 MB against 4 KB stacks. Without Boost here the claim cannot be judged as written,
# and the verdict says so (labkit's `asm_fpu`, which saves what `jump_fcontext` saves,
# is shown above for reference).
#
# The stack sizes the rules name (C000.2 and the table's rows C000.2a-d) are measured
# again for the verdict, over fresh worker processes: each process runs every size twice
# in ABBA order, leading with a random one, and gives one ratio per size. The interval
# is taken over processes, at looks of 8, 16, 24 and 32 processes, and the design stops
# at the first look where no interval straddles a bound (`labkit.core.sequential`, the
# stopping rule written before measuring).

# %%
from functools import partial

from labkit.lab import judging

verdict_sizes = {"4 KiB": 4 * KiB, "16 KiB": 16 * KiB, "64 KiB": 64 * KiB,
                 "256 KiB": 256 * KiB, "1 MiB": 1 * MiB, "8 MiB": 8 * MiB}
if judge_kernel == "boost_fiber":
    verdict_runs, rows = judging.run("01_stack_size", {
        label: partial(labkit.measure, "boost_fiber", stack_size=size, switches=switches,
                       cpu=cpu) for label, size in verdict_sizes.items()}, quick=quick)
    rows["C000.2"]["note"] += (f"; asm_fpu ring of {n_max} contexts: "
                               f"{large['stack']} {large[f'N={n_max} coloured ns']:.1f} ns vs "
                               f"{small['stack']} {small[f'N={n_max} coloured ns']:.1f} ns "
                               "per switch")
else:
    rows = {c: verdicts.cannot_measure(c, f"Boost.Context missing here "
                                          f"({missing.why_not.iloc[0]})")
            for c in ("C000.2",)}
table = verdicts.table(list(rows.values()))
results.save_experiments("01_stack_size", {"pingpong": pingpong, "ring": ring})
results.save_csv(table, "01_stack_size_verdicts")
table

# %% [markdown]
# <a id="01_stack_size-article-table"></a>
# ## The article's table beside ours
#
# Here: the stack-size table of `000_dc0f0e0d023658f3.txt`: every stack size, the
# article's ns and its % over 4 KB beside Boost fiber's and labkit's ring here. The
# article's own rows and columns, its number beside the median measured here with its
# spread, the relative column it uses, and the claim that judges each row
# (`labkit.lab.articles`, built from the data this notebook just saved). The row claims
# without a verdict above are judged here by their rules in `data/claims.csv`.

# %%
from labkit.lab import articles

articles.section("01_stack_size")
