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
from labkit.lab import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(build, pairs, repeats, live_blocks, memory_budget, cycles) = params.resolve(
    "07a_frames_and_allocators", quick=quick).values()

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import labkit
from labkit.lab import claim_rules, verdicts
from labkit.experiments import frames
from labkit.core import native, plots, results
from labkit.lab.sweep import sweep

missing = native.peers_missing_reason()
if missing:
    raise RuntimeError("notebook 07a needs the C++ peers library (frames.cpp is built into "
                       f"it): {missing}")

info = labkit.machine_info()
print(plots.machine_caption(info))

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
builds = list(dict.fromkeys(sizes.build))
by_build = sizes.pivot(index="variant", columns="build", values="frame_bytes")
by_build = by_build.loc[list(frames.VARIANTS), builds]
o2 = sizes[sizes.build == "O2"].set_index("variant")
base = o2.frame_bytes["suspend"]
frame_table = pd.DataFrame({
    "what the body does": [frames.VARIANTS[v] for v in by_build.index],
    "live_bytes": o2.live_bytes.loc[by_build.index],
    **{f"-{b}": by_build[b] for b in builds},
    "-O2 minus 'suspend'": by_build["O2"] - base,
}, index=by_build.index)
print(f"{info['compiler']}; sizeof(promise) = {o2.promise_bytes.iloc[0]} B; "
      f"elided at any level: {bool(sizes.elided.any())}")
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
fig, ax = plt.subplots(figsize=(10, 4.6))
shown = [b for b in ("O0", "O2") if b in builds]
y = np.arange(len(by_build))
h = 0.8 / len(shown)
for i, b in enumerate(shown):
    ax.barh(y + i * h, by_build[b], h, label=f"g++ -{b}")
    for yy, v in zip(y + i * h, by_build[b]):
        ax.text(v * 1.08, yy, f"{v:,}", va="center", fontsize=7)
ax.set_yticks(y + h * (len(shown) - 1) / 2, by_build.index)
ax.invert_yaxis()
plots.log_axis(ax, "x", base=2)
ax.set_xlim(16, 2 ** 19)
ax.axvline(base + 65536, color="grey", ls=":", lw=1, label="'suspend' + 64 KiB")
ax.set_xlabel("frame bytes (the promise's operator new argument)")
ax.set_title("C++20 coroutine frame sizes")
ax.legend(fontsize="small", loc="lower right")
ax.grid(True, axis="x", alpha=0.3)
plots.finish(fig, "07a_frames_and_allocators-sizes");

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
blocks = sorted({192, 256} | set(int(b) for b in o2.frame_bytes if b > 0))


def live_for(block):
    return min(live_blocks, memory_budget // 4 // block)


points = [dict(allocator=a, block=b, live=l) for a in frames.ALLOCATORS for b in blocks
          for l in (0, live_for(b))]
alloc = sweep(
    lambda allocator, block, live: frames.alloc_bench(
        allocator, block, pairs=pairs, live=live, repeats=repeats, build=build,
        memory_budget=memory_budget),
    points, desc="allocation", checkpoint="07a_frames_and_allocators_alloc",
)
alloc["pattern"] = np.where(alloc.live == 0, "one block", "many live")
# One block: the allocator's own cost, net of the loop around it. Many live: each pair
# also misses the cache on a random live block, and what the allocator adds is too small
# beside that for a difference of two timed loops to resolve; those rows are shown raw,
# with the baseline loop (the same slot choice and writes, no allocator) beside them.
alloc["ns_shown"] = np.where(alloc.pattern == "one block", alloc.ns_per_pair,
                             alloc.ns_per_pair_raw)
al = labkit.summarize(alloc, by=["allocator", "block", "pattern"], value="ns_shown")
base = (alloc[alloc.pattern == "many live"].groupby("block").baseline_ns_per_pair.median())
for w in labkit.noise_warnings(al):
    print(w)
print(f"{int(alloc.below_resolution.sum())} of {len(alloc)} runs were no slower than their "
      "baseline loop (net floored at 0)")
shown = al.pivot(index=["pattern", "block"], columns="allocator", values="median")[
    list(frames.ALLOCATORS)]
shown["baseline (many live)"] = [f"{base[b]:.2f}" if p == "many live" else "(subtracted)"
                                 for p, b in shown.index]
shown.round(2)

# %%
# The blocks are evenly spaced, not to scale: two of them are 16 bytes apart.
fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
position = {b: i for i, b in enumerate(blocks)}
for ax, pattern in zip(axes, ["one block", "many live"]):
    plots.errorbars(ax, al[al.pattern == pattern].assign(x=al.block.map(position)), x="x",
                    hue="allocator")
    ax.get_legend().remove()
    if pattern == "many live":
        ax.plot([position[b] for b in base.index], base.values, color="grey", ls="-", lw=2,
                alpha=0.5, label="baseline loop, no allocator (many live)")
    plots.log_axis(ax, "y")
    ax.set_ylim(0.5, 200)
    ax.set_xticks(range(len(blocks)), [f"{b:,}" for b in blocks], rotation=30)
    ax.set_xlabel("block bytes")
    ax.set_title(f"{pattern}" + ("" if pattern == "one block" else
                                 f" ({live_blocks:,} live, fewer for 64 KiB blocks)"))
    ax.axhline(100, color="grey", ls=":", lw=1, label="claimed heap (~100 ns)")
    ax.axhline(10, color="grey", ls="--", lw=1, label="claimed pool (~10 ns)")
axes[0].set_ylabel("ns per allocate+free pair (median, IQR bars)")
axes[0].set_title("one block (net of the loop)")
axes[1].set_title(axes[1].get_title() + ": raw")
handles, labels = axes[1].get_legend_handles_labels()
fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize="small",
           bbox_to_anchor=(0.5, 1.06))
plots.finish(fig, "07a_frames_and_allocators-alloc");

# %%
def pair_ratio(num, den, block, pattern):
    """Ratio of what the table above shows (net for one block, raw for many live)."""
    sel = alloc[(alloc.block == block) & (alloc.pattern == pattern)]
    return verdicts.ratio_with_spread(sel[sel.allocator == num].ns_shown,
                                      sel[sel.allocator == den].ns_shown)


def spread_text(lo, hi):
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "unbounded (a net below resolution)"
    return f"{lo:.1f} .. {hi:.1f}"


ratio_rows = []
for pattern in ("one block", "many live"):
    for b in blocks:
        row = {"pattern": pattern, "block": b}
        for a in ("pool", "tlpool", "atomic"):
            r, lo, hi = pair_ratio("heap", a, b, pattern)
            row[f"heap / {a}"] = r
            row[f"heap / {a} spread"] = spread_text(lo, hi)
        ratio_rows.append(row)
ratios = pd.DataFrame(ratio_rows)
ratios.round(2).replace([np.inf, -np.inf], "unbounded")

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
cycle_runs = [("pool", 1), ("tlpool", 1), ("atomic", 1), ("heap", 1), ("pool", 1000)]
cycles_df = pd.concat([frames.coroutines("conn256", a, n=cycles, batch=b, build=build,
                                         release_pool=False)
                       for a, b in cycle_runs], ignore_index=True)
cycles_df["every block back"] = np.where(
    cycles_df.allocator == "heap", None,
    (cycles_df.pool_in_use == 0) & (cycles_df.pool_free_blocks == cycles_df.pool_carved)
    & (cycles_df.pool_carved <= cycles_df.batch))
pool_cols = ["pool_allocs", "pool_frees", "pool_in_use", "pool_carved", "pool_free_blocks",
             "pool_chunks", "every block back"]
# The heap keeps no counters of its own: its row says so instead of showing blanks.
shown_cycles = cycles_df[["allocator", "n", "batch", *pool_cols[:-1], "rss_growth_kb",
                          "every block back"]].astype(object)
heap_rows = cycles_df.allocator == "heap"
for c in pool_cols[:-1]:
    shown_cycles[c] = [f"{int(v):,}" if not h else "-" for v, h in zip(cycles_df[c], heap_rows)]
shown_cycles.loc[heap_rows, "every block back"] = "n/a: the heap keeps no pool counters"
shown_cycles

# %% [markdown]
# ## Verdicts
#
# - **C001.2** by its rule: ns per allocate+free pair of 256-byte blocks, heap /
#   free-list `pool`, the one-block pattern (an allocation and its free), measured again
#   over fresh worker processes: each process runs both allocators twice in ABBA order,
#   leading with a random one, and gives one ratio; the interval is taken over processes
#   at looks of 8, 16, 24 and 32 (`labkit.core.sequential`). The many-live pattern and
#   the lock-free pool are in the note.
# - **C004.3** at `-O2`: frame of `array_alive` minus frame of `suspend` (the same body
#   without the array).
# - **C004.4** at `-O2`: 1 if the empty coroutine's frame holds at least the promise and
#   two pointers, and each variant with live locals or parameters is bigger than
#   `suspend` by at least their size.

# %%
rows = []

sel = alloc[(alloc.block == 256) & (alloc.pattern == "one block")]
live256 = ratios[(ratios.pattern == "many live") & (ratios.block == 256)].iloc[0]
one256 = ratios[(ratios.pattern == "one block") & (ratios.block == 256)].iloc[0]
atomic256 = sel[sel.allocator == "atomic"].ns_per_pair.median()
from functools import partial

from labkit.lab import judging

_, design_rows = judging.run("07a_frames_and_allocators", {
    a: partial(frames.alloc_bench, a, 256, pairs=pairs, build=build,
               memory_budget=memory_budget) for a in ("heap", "pool")}, quick=quick)
row = design_rows["C001.2"]
row["note"] += (f"; lock-free pool {atomic256:.1f} ns (heap/atomic "
                f"{one256['heap / atomic']:.1f}); many live blocks: heap/pool "
                f"{live256['heap / pool']:.1f}, heap/atomic {live256['heap / atomic']:.1f}")
rows.append(row)

o2 = sizes[sizes.build == "O2"].set_index("variant").frame_bytes
o0 = sizes[sizes.build == "O0"].set_index("variant").frame_bytes
added = lambda v, f=o2: int(f[v] - f["suspend"])  # noqa: E731
row = claim_rules.c004_3(sizes.assign(experiment="frame_sizes"))
row["note"] = (f"not alive across the suspension: same scope +{added('array_dead'):,} B, closed "
               f"block +{added('array_scoped'):,} B, in a called function "
               f"+{added('array_callee'):,} B (GCC places every local whose scope holds a "
               "suspension point, alive or not)")
rows.append(row)
rows.append(claim_rules.c004_4(sizes.assign(experiment="frame_sizes")))

table = verdicts.table(rows)
results.save_experiments("07a_frames_and_allocators", {
    "frame_sizes": sizes, "allocation": alloc, "cycles": cycles_df})
results.save_csv(table, "07a_frames_and_allocators_verdicts")

# %% [markdown]
# ## Closing note
#
# The numbers below are this run's, written out from the tables above.

# %%
one = ratios[ratios.pattern == "one block"].set_index("block")
many = ratios[ratios.pattern == "many live"].set_index("block")
med = al.set_index(["allocator", "block", "pattern"])["median"]
note = [
    f"**Frame sizes** ({info['compiler']}, bytes, -O0 / -O2): "
    + "; ".join(f"{v} {o0[v]:,} / {o2[v]:,}" for v in frames.VARIANTS)
    + (". The levels never differ" if (by_build.nunique(axis=1) == 1).all()
       else ". The levels differ (see the table)")
    + ("; an allocation was elided" if sizes.elided.any() else "; no allocation was elided")
    + f". A 64 KiB array adds {added('array_alive'):,} B alive across the suspension, "
      f"{added('array_dead'):,} B dead before it, {added('array_scoped'):,} B in a closed "
      f"block and {added('array_callee'):,} B in a called function.",
    f"**Allocation, 256 B blocks, one block:** heap {med[('heap', 256, 'one block')]:.1f} ns, "
    f"pool {med[('pool', 256, 'one block')]:.2f} ns, "
    f"tlpool {med[('tlpool', 256, 'one block')]:.2f} ns, "
    f"lock-free {med[('atomic', 256, 'one block')]:.1f} ns per pair: heap/pool "
    f"{one.loc[256, 'heap / pool']:.1f}, heap/tlpool {one.loc[256, 'heap / tlpool']:.1f}, "
    f"heap/atomic {one.loc[256, 'heap / atomic']:.1f}. With many live blocks: heap "
    f"{med[('heap', 256, 'many live')]:.1f} ns, pool {med[('pool', 256, 'many live')]:.1f} ns "
    f"raw, beside {base[256]:.1f} ns for the loop without an allocator "
    f"(heap/pool {many.loc[256, 'heap / pool']:.1f}). At 192 B: heap/pool "
    f"{one.loc[192, 'heap / pool']:.1f} (one block), {many.loc[192, 'heap / pool']:.1f} "
    f"(many live). The claimed ~100 ns heap is "
    f"{100 / med[('heap', 256, 'one block')]:.0f}x this run's heap; the claimed ~10 ns pool "
    f"is {10 / med[('pool', 256, 'one block')]:.0f}x this run's pool.",
    f"**Leak check:** after {cycles:,} create/destroy cycles every pool had every block "
    f"back: {bool(cycles_df['every block back'].dropna().all())}; RSS grew by at most "
    f"{cycles_df.rss_growth_kb.max():,} kB.",
]
display(Markdown("\n\n".join(note)))
table

# %% [markdown]
# <a id="07a_frames_and_allocators-article-table"></a>
# ## The article's table beside ours
#
# Here: the allocation, io_uring and plain-coroutine figures of `001_22488c889cf00991.txt`.
# Its first two rows, the heap and the pool, are this notebook's allocation pairs; the
# others are notebook 09's servers (from its committed or last data). The article's own
# rows and columns, its number beside the median measured here with its spread, the
# relative column it uses, and the claim that judges each row (`labkit.lab.articles`, built
# from the data this notebook just saved).

# %%
from labkit.lab import articles

articles.section("07a_frames_and_allocators")
