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
# # 07b · Coroutine memory: a million suspended coroutines, a million stackful contexts
#
# The second half of what was notebook 07: what coroutines keep resident while they wait.
# How big one frame is and what allocating it costs is notebook
# `07a_frames_and_allocators`.
#
# **Claims tested** (ids from `data/claims.csv`, the articles in `docs/sources.md`):
#
# - **C004.1** (`004_dfc61b1060864bf1.txt`), the frame-size and memory columns of the
#   article's table, for 1,000,000 concurrent coroutines: default `new` 256 B and about
#   256 MB; thread-local pool 256 B, 256 MB; fewer frame variables 192 B, 192 MB;
#   symmetric transfer 192 B, 192 MB; pooled coroutine reuse 192 B, about 40 MB. Its
#   rule judges the default-`new` row; the other memory rows are the row claims
#   C004.1a-d, judged in the article's table at the end. (Its TPS column belongs to
#   notebook 09.)
# - **C004.2** (same file): overall, the optimisations cut coroutine memory by 65% (the
#   article also says "by over 80%") and raised throughput by over 300%. The memory half
#   is measured here, the throughput half in notebook 09.
#
# **How the authors got their numbers.** The author of `004` ran an echo server with
# one coroutine per connection; the memory column of the table is marked as an
# estimate, and its figures are the frame size times a million.
#
# **What we run**, all on this machine: a million suspended C++20 coroutines (g++
# `-std=c++20`), with default `new` and with pools; the reuse design, a million
# connections served by a pool of P reused coroutines, for several P; and a million stackful contexts
# (Boost.Context `fcontext`) on `mmap`ed stacks of 4 KiB to 1 MiB, untouched and fully
# touched. Resident memory (VmRSS from `/proc/self/status`) is read by the C++ code
# itself, inside a worker process, while they are all alive.
#
# The verdict rules are those written in `data/claims.csv` before measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("07b_coroutine_memory"). By hand, set one in the call:
# resolve(..., quick=quick, coroutine_repeats=3).
from labkit.lab import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(build, n_coroutines, coroutine_repeats, n_contexts, stack_sizes, memory_budget,
 guard_contexts, n_copy, copy_in_use, reuse_pool_sizes) = params.resolve(
    "07b_coroutine_memory", quick=quick).values()

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

import labkit
from labkit.lab import claim_rules, verdicts
from labkit.experiments import frames
from labkit.core import native, plots, procfs, results
from labkit.lab.sweep import sweep

missing = native.peers_missing_reason()
if missing:
    raise RuntimeError("notebook 07b needs the C++ peers library (frames.cpp is built into "
                       f"it): {missing}")

KiB, MiB = 1 << 10, 1 << 20
info = labkit.machine_info()
print(plots.machine_caption(info))
print(f"page size {info['page_size']} B; transparent huge pages: "
      f"{procfs.transparent_hugepages()}; vm.max_map_count {procfs.max_map_count()}; "
      f"vm.overcommit_memory {procfs.sysctl('vm.overcommit_memory', 'unknown')}; "
      f"memory {info['memory_bytes'] / 2**30:.1f} GiB")
# This process is the Jupyter kernel: its VmRSS, not the worker's, which the runs fill.
kernel_rss_start = procfs.status_kb("VmRSS") / 1024

# %% [markdown]
# ## 1. A million suspended coroutines
#
# Each coroutine is made and resumed once, so that it sits at its `co_await` with its
# locals written, the way a connection waits for its next read. The C++ code reads
# VmRSS before making any (after its handle array is allocated and written), while all
# of them are alive, and after destroying them; `bytes_per_object` is the rise divided
# by n. The kinds follow the rows of the article's table:
#
# | article row | here |
# |---|---|
# | default `new`, 256 B | `conn256`, `heap` |
# | thread-local pool, 256 B | `conn256`, `tlpool` |
# | fewer frame variables, 192 B | `conn192`, `heap` |
# | symmetric transfer, 192 B | the same frames (it changes how control passes, not the frame) |
# | pooled coroutine reuse, 192 B | `conn192`, `pool` (one frame each); the reuse design itself is section 1b |
#
# plus `conn256` with the global `pool`, and the empty coroutine (the smallest frame
# there is) with the heap and a pool.

# %%
kernel_rss_before = procfs.status_kb("VmRSS") / 1024
coro_kinds = [("conn256", "heap"), ("conn256", "tlpool"), ("conn256", "pool"),
              ("conn192", "heap"), ("conn192", "pool"), ("empty", "heap"), ("empty", "pool")]
coros = sweep(
    lambda variant, allocator: frames.coroutines(
        variant, allocator, n=n_coroutines, repeats=coroutine_repeats, build=build,
        memory_budget=memory_budget),
    [dict(variant=v, allocator=a) for v, a in coro_kinds],
    desc="coroutines", checkpoint="07b_coroutine_memory_coroutines",
)
cs = (coros.groupby(["variant", "allocator"], sort=False)
      .agg(n=("n", "first"), frame_bytes=("frame_bytes", "first"),
           bytes_per_coroutine=("bytes_per_object", "median"),
           page_tables_per_coroutine=("pte_bytes_per_object", "median"),
           total_mib=("rss_total_mib", "median"),
           create_ns=("ns_create_per_object", "median"),
           destroy_ns=("ns_destroy_per_object", "median"),
           left_after_destroy_mib=("rss_left_after_free_kb", lambda v: v.median() / 1024))
      .reset_index())
cs["per_million_mib"] = cs.bytes_per_coroutine * 1e6 / MiB
cs["resident / frame"] = cs.bytes_per_coroutine / cs.frame_bytes
pool_runs = coros[coros.allocator != "heap"]
print("pools after destroying all their coroutines: in use",
      sorted(set(pool_runs.pool_in_use.astype(int))), "| free blocks == carved:",
      bool((pool_runs.pool_free_blocks == pool_runs.pool_carved).all()))
cs.round(2)

# %% [markdown]
# `malloc` puts an 8-byte header in front of each block and rounds to 16 bytes, so a
# 256-byte frame costs 272 bytes from the heap and 256 from a pool. The pools cut that
# header and nothing else: a pool cannot make a frame smaller than the compiler made it,
# and a million suspended coroutines need a million frames at once, whoever allocates
# them. `left_after_destroy_mib` is what stays resident once every coroutine is
# destroyed: glibc keeps small freed blocks (the 48-byte ones of the empty coroutine) in
# its bins rather than giving the pages back; the pools keep their chunks until they are
# released (then `rss_released_kb` falls back).

# %% [markdown]
# ## 1b. Pooled reuse: memory follows the pool, not the connections
#
# The article's last row is a different design, not a different allocator: a pool of P
# coroutines is made once, and each serves connection after connection, its frame
# reset and reused, never freed. A connection is then a small record of its own (a
# descriptor, a state word, a byte count: `connection_bytes`), and only the P
# connections being served at a moment have a frame. Here n connections are served in
# rounds of P: each worker is handed a connection, reads into its 128-byte buffer and
# waits for its I/O (suspended, the buffer alive), then answers and is idle again.
# Memory is read with the last round in flight, all n records resident. The pool's
# counters prove the design: it allocated exactly P frames for n connections.
#
# The resident memory should be n × `connection_bytes` plus P × frame bytes: it follows
# the pool size, and at P = n it is one frame per connection again.

# %%
judged_pool = frames.judged_pool_size(n_coroutines)  # the P the row claim C004.1d reads
reuse = sweep(
    lambda pool_size: frames.pool_reuse(pool_size, n=n_coroutines, repeats=coroutine_repeats,
                                        build=build, memory_budget=memory_budget),
    [dict(pool_size=p) for p in sorted({*reuse_pool_sizes, judged_pool}) if p <= n_coroutines],
    desc="pool reuse", checkpoint="07b_coroutine_memory_pool_reuse",
)
reuse_ratios = pd.DataFrame([frames.pool_reuse_ratio(reuse, coros, pool_size=p)
                             for p in sorted(set(reuse.pool_size))])
rs = (reuse.groupby("pool_size")
      .agg(n=("n", "first"), frame_bytes=("frame_bytes", "first"),
           connection_bytes=("connection_bytes", "first"),
           frames_allocated=("pool_allocs", "first"), served=("served", "first"),
           mib_total=("bytes_total", lambda v: v.median() / MiB),
           bytes_per_connection=("bytes_per_connection", "median"),
           expected_mib=("records_bytes", lambda v: v.iloc[0] / MiB))
      .reset_index())
rs["expected_mib"] += rs.pool_size * rs.frame_bytes / MiB
rs["per_million_mib"] = rs.bytes_per_connection * 1e6 / MiB
rs = rs.merge(reuse_ratios[["pool_size", "ratio", "low", "high"]], on="pool_size")
rs = rs.rename(columns={"ratio": "reuse / default", "low": "ratio low", "high": "ratio high"})
results.save_csv(reuse.assign(experiment="pool_reuse"), "07b_coroutine_memory_pool_reuse")
rs.round(3)

# %%
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.plot(rs.pool_size, rs.per_million_mib, marker="o", label="measured (per million connections)")
ax.plot(rs.pool_size, rs.expected_mib * 1e6 / rs.n, ls="--", color="grey",
        label="records + P frames (expected)")
default_mib = float(cs.set_index(["variant", "allocator"]).per_million_mib[("conn256", "heap")])
ax.axhline(default_mib, color="tab:blue", ls=":", label=f"default new, one 256-B frame per "
           f"connection ({default_mib:.0f} MiB)")
ax.axhline(40e6 / MiB, color="k", ls="-.", lw=1, label="claimed ~40 MB (pooled reuse)")
plots.log_axis(ax, "x")
ax.set_yscale("log")
ax.set_xlabel("P: reused coroutines in the pool")
ax.set_ylabel("resident MiB per million connections")
ax.set_title(f"{int(rs.n.iloc[0]):,} connections served by a pool of P coroutines")
ax.legend(fontsize="small")
plots.finish(fig, "07b_coroutine_memory-reuse");

# %% [markdown]
# ## 2. A million stackful contexts
#
# One `mmap` holds all the stacks (`MAP_NORESERVE`, huge pages refused with
# `madvise`); each context is made with Boost.Context's `make_fcontext` at the top of
# its stack and run once, to its first suspension. *Untouched* stacks get only what that
# writes; *touched* ones have every page written first, as a context that once ran deep
# would leave them. A million guard pages would need two million VMAs, far beyond
# `vm.max_map_count`, so these runs have none; the runs after them compare
# `guard_contexts` stacks with and without guards. When n contexts would keep more than
# the memory budget resident, n is scaled down and the row says so (`n_requested`,
# `scaled`, `plan_note`): the per-context figures do not depend on n.

# %%
stack_points = [dict(stack_size=s, touched=t) for t in (False, True) for s in stack_sizes]
stacks = sweep(
    lambda stack_size, touched: frames.stackful(
        stack_size, touched=touched, n=n_contexts, guard=False, build=build,
        memory_budget=memory_budget),
    stack_points, desc="stackful", checkpoint="07b_coroutine_memory_stackful",
)
guard_check = pd.concat([frames.stackful(64 * KiB, touched=False, n=guard_contexts,
                                         guard=g, build=build) for g in (False, True)],
                        ignore_index=True)
kernel_rss_after = procfs.status_kb("VmRSS") / 1024
stacks["stack"] = stacks.stack_size.map(plots.bytes_label)
stacks["per_million_gib"] = (stacks.bytes_per_object + stacks.pte_bytes_per_object) * 1e6 / 2**30
for note in sorted(set(stacks.plan_note) - {""}):
    print("note:", note)
stacks[["stack", "touched", "n_requested", "n", "scaled", "bytes_per_object",
        "pte_bytes_per_object", "used_bytes", "rss_total_mib", "pte_total_mib",
        "per_million_gib", "ns_create_per_object"]].round(1)

# %%
guard_check[["stack_size", "guard", "n", "bytes_per_object", "pte_bytes_per_object",
             "ns_create_per_object"]].round(1)

# %% [markdown]
# ### Lazily committed stack pages
#
# `mmap` only reserves address space. A page becomes resident when it is first written,
# and the kernel then also fills in page-table entries for it. A context that has run
# once and suspended has written a few dozen bytes at the top of its stack
# (`used_bytes`: from the top down to its saved stack pointer), so an untouched stack
# costs one page, whatever its size; a touched one costs its full size. What does grow
# with the stack size, untouched or not, is the page tables: every 2 MiB of address
# space that holds a touched page needs a 4 KiB page-table page, and that memory is
# counted in VmPTE, not in VmRSS.

# %%
untouched = stacks[~stacks.touched].set_index("stack_size")
touched = stacks[stacks.touched].set_index("stack_size")
page = info["page_size"]
lines = []
for s in stack_sizes:
    u, t = untouched.loc[s], touched.loc[s]
    lines.append(
        f"- **{plots.bytes_label(s)}** stacks: untouched {u.bytes_per_object:,.0f} B resident "
        f"+ {u.pte_bytes_per_object:,.0f} B of page tables per context "
        f"(the suspended context uses {u.used_bytes:.0f} B of its stack); touched "
        f"{t.bytes_per_object:,.0f} B + {t.pte_bytes_per_object:,.0f} B. For a million: "
        f"{(u.bytes_per_object + u.pte_bytes_per_object) * 1e6 / 2**30:.2f} GiB untouched, "
        f"{(t.bytes_per_object + t.pte_bytes_per_object) * 1e6 / 2**30:.2f} GiB touched"
        + (f" (measured on {int(t.n):,}, scaled to fit the budget)" if t.scaled else "") + ".")
g = guard_check.set_index("guard")
lines.append(
    f"- Guard pages are `PROT_NONE` and never written: {int(g.n.iloc[0]):,} 64 KiB stacks cost "
    f"{g.bytes_per_object[False]:,.0f} B each without a guard and "
    f"{g.bytes_per_object[True]:,.0f} B "
    f"with one. They cost VMAs instead (two per stack): a million of them would need "
    f"vm.max_map_count above 2,000,000; it is {procfs.max_map_count():,} here.")
display(Markdown("\n".join(lines)))

# %%
cxx = cs.assign(label=cs.variant + " / " + cs.allocator)
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1.1, 1]})
ax = axes[0]
ax.bar(range(len(cxx)), cxx.bytes_per_coroutine, color="tab:blue", label="measured")
ax.scatter(range(len(cxx)), cxx.frame_bytes, marker="_", s=400, color="k", zorder=3,
           label="frame bytes (operator new)")
for i, v in enumerate(cxx.bytes_per_coroutine):
    ax.text(i, v * 1.05, f"{v:.0f}", ha="center", fontsize=7)
for claimed, style, label in ((256, ":", "claimed 256 B (default new, 256 MB / 1M)"),
                              (192, "--", "claimed 192 B (fewer variables, 192 MB / 1M)"),
                              (40, "-.", "claimed 40 B (pooled reuse, 40 MB / 1M)")):
    ax.axhline(claimed, color="grey", ls=style, lw=1, label=label)
ax.set_xticks(range(len(cxx)), cxx.label, rotation=30, ha="right")
plots.log_axis(ax, "y")
ax.set_ylim(20, 600)
ax.set_ylabel("resident bytes per suspended coroutine")
ax.set_title(f"C++20 coroutines (n = {int(cxx.n.iloc[0]):,})")
ax.legend(fontsize=7, loc="upper right")
ax.grid(True, axis="y", which="both", alpha=0.3)
ax = axes[1]
for is_touched, d in ((False, untouched), (True, touched)):
    d = d.sort_index()
    name = "touched" if is_touched else "untouched"
    ax.plot(d.index, d.bytes_per_object, marker="o", label=f"{name}: VmRSS")
    ax.plot(d.index, d.pte_bytes_per_object, marker="x" if is_touched else "+",
            ms=9 if is_touched else 13, ls="--" if is_touched else ":",
            label=f"{name}: page tables (VmPTE)")
conn256_heap = float(cs.set_index(["variant", "allocator"])
                     .bytes_per_coroutine[("conn256", "heap")])
ax.axhline(conn256_heap, color="tab:blue", ls=":", lw=1,
           label=f"C++20 conn256 / heap ({conn256_heap:.0f} B)")
plots.log_axis(ax, "x", base=2)
ax.set_yscale("log", base=2)
ticks = [2 ** k for k in range(3, 24, 3)]
ax.set_yticks(ticks, [plots.bytes_label(t) for t in ticks])
ax.minorticks_off()
ax.set_xticks(stack_sizes, [plots.bytes_label(s) for s in stack_sizes])
ax.set_xlabel("stack size per context")
ax.set_ylabel("bytes per suspended context")
ax.set_title("stackful contexts (Boost.Context fcontext, mmaped stacks)")
ax.legend(fontsize="small")
plots.finish(fig, "07b_coroutine_memory-memory");

# %% [markdown]
# ## 2b. Copy stacks: a stackful coroutine that keeps only its used stack
#
# The stackful answer to the table above: coroutines that share one run stack (the
# `copy_stack` kernel, the design of libco's shared stacks and libaco's copy stacks).
# Each is made, runs to its suspension after writing `stack_in_use` bytes of its stack,
# and is copied off the run stack when the next one needs it. A suspended one then keeps
# its used stack (`saved_bytes_per_object`: those bytes, its frames and registers) in a
# heap buffer of exactly that size, plus a 40-byte context; `bytes_per_object` is the
# worker's VmRSS growth per coroutine while all are held. Notebook 04 shows what that
# memory costs in time: every switch copies it.

# %%
copies = sweep(
    lambda stack_in_use: frames.copy_stack(stack_in_use, n=n_copy, build=build,
                                           memory_budget=memory_budget),
    [dict(stack_in_use=u) for u in copy_in_use],
    desc="copy stacks", checkpoint="07b_coroutine_memory_copy_stack",
)
copies["bookkeeping_bytes"] = copies.bytes_per_object - copies.saved_bytes_per_object
copies["per_million_mib"] = copies.bytes_per_object * 1e6 / MiB
results.save_csv(copies, "07b_coroutine_memory_copy_stack")
copies[["stack_in_use", "n_requested", "n", "saved_bytes_per_object", "bytes_per_object",
        "bookkeeping_bytes", "per_million_mib", "rss_total_mib"]].round(1)

# %%
c0 = copies.set_index("stack_in_use").iloc[0]
display(Markdown(
    f"A suspended copy-stack coroutine with {int(c0.name)} B in use keeps "
    f"{c0.saved_bytes_per_object:.0f} B of stack and {c0.bytes_per_object:.0f} B resident "
    f"({c0.per_million_mib:.0f} MiB per million), against "
    f"{untouched.loc[stack_sizes[0], 'bytes_per_object']:,.0f} B for the smallest "
    f"untouched stack above and {conn256_heap:.0f} B for a 256-byte C++20 frame: "
    "its memory is its used stack, not a reserved one."))

# %% [markdown]
# ## 3. The Jupyter kernel stayed small
#
# Everything above ran in a worker process. This kernel's own resident memory, before
# and after the million-coroutine and million-context runs:

# %%
print(f"this kernel: VmRSS {kernel_rss_start:.0f} MiB at the start, {kernel_rss_before:.0f} "
      f"MiB before the million runs, {kernel_rss_after:.0f} MiB after them "
      f"(the worker held up to {coros.rss_total_mib.max():.0f} MiB of coroutines and "
      f"{(stacks.rss_total_mib + stacks.pte_total_mib).max():.0f} MiB of stacks and "
      "their page tables)")

# %% [markdown]
# ## Verdicts
#
# - **C004.1**, memory column of its default-`new` row: resident bytes per suspended
#   coroutine with a 256-byte frame, over the frame size. The other rows are set beside
#   it in the closing note, and judged as C004.1a-d in the article's table below.
# - **C004.2** needs the memory ratio (here: pooled 192-byte frames over default-`new`
#   256-byte frames, bytes per coroutine) and notebook 09's throughput ratio
#   (`cxx20_pool_sym` over `cxx20_new`). Here only the memory half is shown; the claims
#   ledger (notebook 00) judges it from both notebooks' data
#   (`labkit.lab.claim_rules.c004_2`). Under the amended rule
#   (`data/claims_amendments.csv`) either part failing refutes the claim.

# %%
rows = []
row = claim_rules.c004_1(coros.assign(experiment="coroutines"))
row["note"] += "; the pooled-reuse row's 40 MB is checked in the closing note"
rows.append(row)

# C004.2's memory half; the ledger adds 09's throughput half.
rows.append(claim_rules.c004_2(coros.assign(experiment="coroutines"), None))

table = verdicts.table(rows)
results.save_experiments("07b_coroutine_memory", {
    "coroutines": coros, "stackful": stacks, "guard_check": guard_check})
results.save_csv(table, "07b_coroutine_memory_verdicts")

# %% [markdown]
# ## Closing note
#
# The numbers below are this run's, written out from the tables above.

# %%
bpc = cs.set_index(["variant", "allocator"])
n_c = int(cs.n.iloc[0])
note = [
    f"**Bytes per suspended coroutine** (n = {n_c:,}): "
    + "; ".join(f"{v}/{a} {bpc.loc[(v, a), 'bytes_per_coroutine']:.0f} B "
                f"({bpc.loc[(v, a), 'per_million_mib']:.0f} MiB per million)"
                for v, a in coro_kinds)
    + ". The article's rows: default new 256 B -> "
      f"{bpc.loc[('conn256', 'heap'), 'per_million_mib']:.0f} MiB per million (claimed ~256 MB); "
      f"thread-local pool -> {bpc.loc[('conn256', 'tlpool'), 'per_million_mib']:.0f} MiB (256 MB); "
      f"192 B frames -> {bpc.loc[('conn192', 'heap'), 'per_million_mib']:.0f} MiB (192 MB); "
      f"pooled 192 B -> {bpc.loc[('conn192', 'pool'), 'per_million_mib']:.0f} MiB against the "
      "claimed ~40 MB, which is 40 B per coroutine: the size of an empty frame here. Pooled "
      "192-byte frames can only take 40 MB if about 200,000 of them are alive, not a million.",
    f"**Pooled reuse** ({int(rs.n.iloc[0]):,} connections, records of "
    f"{int(rs.connection_bytes.iloc[0])} B, frames of {int(rs.frame_bytes.iloc[0])} B): "
    + "; ".join(f"P = {int(r.pool_size):,}: {r.per_million_mib:.1f} MiB per million "
                f"({r['reuse / default']:.3f} of default new, spread {r['ratio low']:.3f} .. "
                f"{r['ratio high']:.3f})" for _, r in rs.iterrows())
    + f". At the P judged for the article's row (n / {round(1 / frames.REUSE_POOL_SHARE)} = "
      f"{judged_pool:,}): "
      f"{rs.set_index('pool_size').loc[judged_pool, 'reuse / default']:.3f} of default new"
    + f". Memory follows the pool: the claimed ~40 MB holds while P frames and the records "
      f"fit in it, that is for P up to about "
      f"{max(0, (40e6 - rs.connection_bytes.iloc[0] * 1e6) / rs.frame_bytes.iloc[0]):,.0f} "
      "per million connections.",
    "**Bytes per stackful context** (VmRSS + page tables): "
    + "; ".join(f"{plots.bytes_label(s)} untouched {untouched.loc[s, 'bytes_per_object']:,.0f} + "
                f"{untouched.loc[s, 'pte_bytes_per_object']:,.0f} B, touched "
                f"{touched.loc[s, 'bytes_per_object']:,.0f} + "
                f"{touched.loc[s, 'pte_bytes_per_object']:,.0f} B"
                for s in stack_sizes)
    + f". Untouched stacks commit one {page} B page each, whatever their size; a stackless "
      f"frame of {bpc.loc[('conn256', 'heap'), 'bytes_per_coroutine']:.0f} B is "
      f"{untouched.loc[stack_sizes[0], 'bytes_per_object'] / conn256_heap:.0f}x "
      "smaller than the smallest stackful context.",
]
display(Markdown("\n\n".join(note)))
table

# %% [markdown]
# <a id="07b_coroutine_memory-article-table"></a>
# ## The article's table beside ours
#
# Here: the five strategies of `004_dfc61b1060864bf1.txt`: frame bytes, memory for a
# million coroutines and TPS (from notebook 09's data). The article's own rows and
# columns, its number beside the median measured here with its spread, the relative
# column it uses, and the claim that judges each row (`labkit.lab.articles`, built from the
# data this notebook just saved). The memory row claims (C004.1a-d) are judged here by
# their rules in `data/claims.csv`; the TPS rows (C004.1e-h) in notebook 09.

# %%
from labkit.lab import articles

articles.section("07b_coroutine_memory")
