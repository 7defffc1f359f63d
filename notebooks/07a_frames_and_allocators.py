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
# The first half of what was notebook 07: the frame itself and where it comes from. What
# a million suspended frames keep resident is notebook `07b_coroutine_memory`.
#
# **Claims tested** (ids from `data/claims.csv`, the articles in `docs/sources.md`):
#
# - **C001.2** (`001_22488c889cf00991.txt`): with a pool, allocating a coroutine frame
#   takes about 10 ns instead of about 100 ns from the heap.
# - **C004.3** (`004_dfc61b1060864bf1.txt`): a local that lives across a suspension point
#   goes into the frame, so a 64 KB local array makes every frame 64 KB bigger.
# - **C004.4** (same file): the frame holds the promise, the locals and parameters alive
#   across suspension points, and the resume index.
#
# **How the authors got their numbers.** The author of `001` moved a network gateway
# from callbacks to asio with C++20 coroutines and gave the frames a lock-free pool
# (a free list popped and pushed with compare-and-swap); the 100 ns and 10 ns are stated
# as orders of magnitude, without a benchmark. The author of `004` lists what a frame
# holds and warns against the 64 KB array as part of the explanation, with no measurement.
#
# **What we run**, all on this machine:
#
# 1. **Frame sizes.** C++20 coroutines (g++ `-std=c++20`) whose promise type records the
#    size the compiler passes to its `operator new`, at every optimisation level the lab
#    builds (`-O0` ... `-O2 -march=native`).
# 2. **Allocation cost.** Allocate+free pairs of frame-sized blocks from the global heap
#    (glibc `malloc`), a free-list pool, a thread-local pool and a lock-free pool like
#    `001`'s, in two patterns: one block allocated and freed again and again, and many
#    live blocks of which a random one is freed and replaced each time.
# 3. **A leak check**: a million create/destroy cycles through each pool, by the pool's
#    own counters and by the worker's RSS.
#
# The verdict rules are those written in `data/claims.csv` before measuring.

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
# Each variant is one coroutine body; all start suspended and share one promise type
# (it holds one 8-byte word, as a real promise holds a result or an id). The size is the
# argument the compiler passes to the promise's `operator new`: the whole frame,
# promise included. A size of 0 would mean the compiler elided the allocation.
# `live_bytes` is the sum of `sizeof` over the locals and parameters the body keeps
# alive across its `co_await`.

# %%
sizes = frames.frame_sizes()
frame_table, line = fa.frame_table(sizes)
print(line)
frame_table

# %% [markdown]
# GCC lays the frame out in its front end, before any optimisation, so `-O2` neither
# shrinks it nor removes the heap allocation (no build above differs from `-O0`). The
# layout follows *scopes*, not liveness: the 64 KiB array that is dead before the
# suspension (`array_dead`), and even the one in a block that closes before it
# (`array_scoped`), take as much frame as the one really alive across it. Only moving
# the buffer into an ordinary function (`array_callee`) keeps it off the frame.
# `std::optional<Large>` saves nothing in the frame: the frame reserves room for the
# whole object, engaged or not.

# %%
fa.sizes_figure(sizes);

# %% [markdown]
# ## 2. What allocating a frame costs
#
# Each pair is one allocation (its first 16 bytes written, as a new frame's resume and
# destroy pointers are) and one free. The same loop with the same writes and no
# allocator is timed with each sample (baseline, loop, loop, baseline, half the pairs
# each) and subtracted in the one-block pattern; the many-live pattern is shown raw, its
# baseline beside it (see below). Blocks: 192 B, 256 B and
# every frame size measured above. In the many-live pattern, `live` blocks stay
# allocated (at most 1/4 of the memory budget for the 64 KiB ones) and each pair frees a
# pseudo-randomly chosen one and allocates its replacement, as connections come and go.
#
# - `heap`: `::operator new`/`::operator delete`, that is glibc `malloc`/`free`
#   (with its per-thread cache);
# - `pool`: one free list per size class, in a global object, no atomics;
# - `tlpool`: the same, one per thread, reached through a `thread_local` pointer;
# - `atomic`: free lists popped and pushed with compare-and-swap, the kind of pool
#   article `001` shows.

# %%
alloc = frames.alloc_runs(fa.sweep, fa.blocks(sizes), live_blocks=live_blocks,
                          memory_budget=memory_budget, pairs=pairs, repeats=repeats, build=build)
al = fa.alloc_summary(alloc)
shown, lines = fa.alloc_table(alloc, al)
print(lines)
shown

# %%
fa.alloc_figure(alloc, al, live_blocks=live_blocks);

# %%
ratios = fa.ratios(alloc)
fa.shown_ratios(ratios)

# %% [markdown]
# ## 3. Does the pool give every block back?
#
# A million create/destroy cycles, one coroutine alive at a time (`batch = 1`), then
# with a thousand alive at a time, through each pool, and through the heap for
# comparison. The pools count what they hand out and take back; `free_blocks` is
# counted by walking the free lists. Every block carved must be back on a list
# (`in_use` 0, `free_blocks == carved`), and carved must not exceed the most that were
# ever alive at once. The lock-free pool counts no allocations (that would take atomics
# of its own): its `in_use` is carved minus free blocks.

# %%
cycles_df = frames.cycle_runs(cycles=cycles, build=build)
fa.cycle_table(cycles_df)

# %% [markdown]
# ## Verdicts
#
# - **C001.2** by its rule: ns per allocate+free pair of 256-byte blocks, heap /
#   free-list `pool`, the one-block pattern (an allocation and its free), measured again
#   over fresh worker processes: each process runs both allocators four times (quick mode: twice) in ABBA order,
#   leading with a random one, and gives one ratio; the interval is taken over processes
#   at the looks of its schedule (`labkit.core.sequential`). The many-live pattern and
#   the lock-free pool are in the note.
# - **C004.3** at `-O2`: frame of `array_alive` minus frame of `suspend` (the same body
#   without the array).
# - **C004.4** at `-O2`: 1 if the empty coroutine's frame holds at least the promise and
#   two pointers, and each variant with live locals or parameters is bigger than
#   `suspend` by at least their size.

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
findings.and_verdicts(exp.name, table)

# %% [markdown]
# <a id="07a_frames_and_allocators-article-table"></a>
# ## The article's table beside ours
#
# Here: the allocation rows of `001_22488c889cf00991.txt`'s table, the heap and the pool,
# from this notebook's allocation pairs. The article's own rows, its number beside the
# median measured here with its spread, the ratio it uses, and the claim that judges them
# (`labkit.lab.report.articles`, the claim's rule in `data/claims.csv`). The table's io_uring and
# plain-coroutine rows are notebook 09's echo servers, which run after this notebook:
# they are shown there, with the whole table.

# %%
row_claims, judged = article_part.judge(exp, table)
article_part.show(fa.article_table(alloc, judged), row_claims)
