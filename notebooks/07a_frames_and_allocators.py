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
# # 07a · Coroutine frames: how big, what allocating one costs, does the pool give it back
#
# This notebook is about the coroutine [frame](../docs/glossary.md#frame) itself, and
# where it comes from. What a million suspended frames keep resident is notebook
# `07b_coroutine_memory`.
#
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`.
#
# - **C001.2** (the coroutine-server article, `001_22488c889cf00991.txt`): with a pool,
#   allocating a coroutine frame takes about 10 ns, instead of about 100 ns from the heap.
# - **C004.3** (the coroutine-memory article, `004_dfc61b1060864bf1.txt`): a local that
#   lives across a [suspension](../docs/glossary.md#suspension) point goes into the frame.
#   So a 64 KB local array makes every frame 64 KB bigger.
# - **C004.4** (same article): the frame holds the promise, the locals and parameters
#   alive across suspension points, and the resume index.
#
# **How the authors got their numbers.** The author of `001` moved a network gateway from
# callbacks to asio with C++20 coroutines. The frames got a lock-free pool: a free list
# popped and pushed with compare-and-swap. The 100 ns and 10 ns are stated as orders of
# magnitude, without a benchmark. The author of `004` lists what a frame holds, and warns
# against the 64 KB array, as part of the explanation. There is no measurement.
#
# **What we run**, all on this machine:
#
# 1. **Frame sizes.** C++20 coroutines (g++ `-std=c++20`) whose promise type records the
#    size the compiler passes to its `operator new`. They are built at every optimisation
#    level the lab builds (`-O0` ... `-O2 -march=native`).
# 2. **Allocation cost.** Allocate+free pairs of frame-sized blocks are timed. They come
#    from four allocators: the global heap (glibc `malloc`), a free-list pool, a
#    thread-local pool, and a lock-free pool like that of `001`. There are two patterns. In one, a single block is
#    allocated and freed again and again. In the other, many blocks stay live, and a
#    random one is freed and replaced each time.
# 3. **A leak check.** A million create/destroy cycles go through each pool. The check
#    reads the pool's own counters and the worker's [resident
#    memory](../docs/glossary.md#resident-memory).
#
# The [rules](../docs/glossary.md#rule) are those written in `data/claims.csv` before
# measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("07a_frames_and_allocators"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=31).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(build, pairs, repeats, live_blocks, memory_budget, cycles) = params.resolve(
    "07a_frames_and_allocators", quick=quick).values()

# %%
from functools import partial

from IPython.display import Markdown, display

import labkit
from labkit.core import native, plots, results
from labkit.lab.headers import shown
from labkit.experiments import frames
from labkit.lab.analysis import article_part
from labkit.lab.analysis import findings, frames_allocators as fa
from labkit.lab.experiment import FRAMES_AND_ALLOCATORS as exp
from labkit.lab.judging import designs
findings.placeholder(exp.name)

missing = native.peers_missing_reason()
if missing:
    raise RuntimeError("notebook 07a needs the C++ peers library (frames.cpp is built into "
                       f"it): {missing}")
print(plots.machine_caption(labkit.machine_info()))

# %% [markdown]
# ## 1. Frame sizes
#
# Each variant is one coroutine body. All start suspended and share one promise type. It
# holds one 8-byte word, as a real promise holds a result or an id. The size is the
# argument the compiler passes to the promise's `operator new`: the whole frame, promise
# included. A size of 0 would mean the compiler elided the allocation. *live bytes* is the
# sum of `sizeof` over the locals and parameters the body keeps alive across its
# `co_await`.

# %%
sizes = frames.frame_sizes()
frame_table, line = fa.frame_table(sizes)
print(line)
shown(frame_table)

# %% [markdown]
# GCC lays the frame out in its front end, before any optimisation. So `-O2` neither
# shrinks it nor removes the heap allocation: no build above differs from `-O0`. The
# layout follows *scopes*, not liveness. Take the 64 KiB array that is dead before the
# suspension (`array_dead`), or even the one in a block that closes before it
# (`array_scoped`). Each takes as much frame as the one really alive across it. Only
# moving the buffer into an ordinary function (`array_callee`) keeps it off the frame.
# `std::optional<Large>` saves nothing in the frame. The frame reserves room for the whole
# object, engaged or not.

# %%
fa.sizes_figure(sizes);

# %% [markdown]
# ## 2. What allocating a frame costs
#
# Each pair is one allocation and one free. The allocation's first 16 bytes are written,
# as a new frame's resume and destroy pointers are. The same loop with the same writes and
# no allocator is the baseline. It is timed with each sample: baseline, loop, loop,
# baseline, with half the pairs each. In the one-block pattern it is subtracted. The
# many-live pattern is shown raw, with its baseline beside it (see below).
#
# Blocks are 192 B, 256 B, and every frame size measured above. In the many-live pattern,
# `live` blocks stay allocated (at most 1/4 of the memory budget for the 64 KiB ones).
# Each pair frees a pseudo-randomly chosen block and allocates its replacement, as
# connections come and go. The allocators:
#
# - `heap`: `::operator new`/`::operator delete`, that is glibc `malloc`/`free` (with its
#   per-thread cache);
# - `pool`: one free list per size class, in a global object, no atomics;
# - `tlpool`: the same, one per thread, reached through a `thread_local` pointer;
# - `atomic`: free lists popped and pushed with compare-and-swap, the kind of pool that
#   article `001` shows.

# %%
alloc = frames.alloc_runs(fa.sweep, fa.blocks(sizes), live_blocks=live_blocks,
                          memory_budget=memory_budget, pairs=pairs, repeats=repeats, build=build)
al = fa.alloc_summary(alloc)
alloc_shown, lines = fa.alloc_table(alloc, al)
print(lines)
shown(alloc_shown)

# %%
fa.alloc_figure(alloc, al, live_blocks=live_blocks);

# %%
ratios = fa.ratios(alloc)
shown(fa.shown_ratios(ratios))

# %% [markdown]
# ## 3. Does the pool give every block back?
#
# A million create/destroy cycles run through each pool, and through the heap for
# comparison. First one coroutine is alive at a time (`batch = 1`), then a thousand. The
# pools count what they hand out and take back. `free_blocks` is counted by walking the
# free lists. Every block carved must be back on a list: `in_use` 0, and `free_blocks ==
# carved`. And carved must not exceed the most blocks that were ever alive at once. The
# lock-free pool counts no allocations, since that would take atomics of its own. Its
# `in_use` is carved minus free blocks.

# %%
cycles_df = frames.cycle_runs(cycles=cycles, build=build)
shown(fa.cycle_table(cycles_df))

# %% [markdown]
# ## Verdicts
#
# - **C001.2** is judged by its [rule](../docs/glossary.md#rule): ns per allocate+free
#   pair of 256-byte blocks, heap / free-list `pool`. It uses the one-block pattern (an
#   allocation and its free).
# - C001.2 is measured again in a [verdict design](../docs/glossary.md#verdict-design).
#   Each [fresh process](../docs/glossary.md#fresh-process) runs both allocators four
#   times (quick mode: twice), in [ABBA](../docs/glossary.md#abba) order, leading with a
#   random one. It gives one ratio. The [interval](../docs/glossary.md#interval) is taken
#   over processes, at the [looks](../docs/glossary.md#look) of its schedule
#   (`labkit.core.sequential`). The many-live pattern and the lock-free pool are in the
#   note.
# - **C004.3**, at `-O2`: the frame of `array_alive` minus the frame of `suspend` (the
#   same body without the array).
# - **C004.4**, at `-O2`: x is 1 when two things hold. The empty coroutine's frame holds
#   at least the promise and two pointers. And each variant with live locals or
#   parameters is bigger than `suspend` by at least their size.

# %%
_, judged = designs.run(exp, {
    a: partial(frames.alloc_bench, a, 256, pairs=pairs, build=build,
               memory_budget=memory_budget) for a in exp.sides}, quick=quick)
results.save_parts(exp.data, {
    "frame_sizes": sizes, "allocation": alloc, "cycles": cycles_df})
table = designs.verdict_table(exp, judged, notes={
    "C001.2": fa.c001_2_note(alloc, ratios), "C004.3": fa.c004_3_note(sizes)})

# %% [markdown]
# ## Closing note
#
# The numbers below are this run's, written out from the tables above.

# %%
display(Markdown(fa.closing_note(sizes, alloc, al, ratios, cycles_df)))
findings.and_verdicts(exp.name, table, [fa.sizes_finding(sizes), fa.alloc_finding(alloc)])

# %% [markdown]
# <a id="07a_frames_and_allocators-article-table"></a>
# ## The article's table beside ours
#
# Here are the allocation rows of the coroutine-server article's table
# (`001_22488c889cf00991.txt`): the heap and the pool. They come from this notebook's
# allocation pairs. The table keeps the article's own rows, and the ratio it uses. Each
# number of the article sits beside the [median](../docs/glossary.md#median) measured
# here, with its [spread](../docs/glossary.md#spread). It also names the claim that judges
# them (`labkit.lab.report.articles`; the claim's rule is in `data/claims.csv`). The
# table's io_uring and plain-coroutine rows are notebook 09's echo servers, which run
# after this notebook. They are shown there, with the whole table.

# %%
row_claims, judged = article_part.judge(exp, table)
article_part.show(fa.article_table(alloc, judged), row_claims)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `build` to `params.resolve` in the parameters cell,
# set to "O0". Then run the notebook again.
#
# Predict first: do the coroutine frames grow at -O0, and by how much?
# Write the number down before you run it.
