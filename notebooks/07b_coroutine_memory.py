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
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(build, n_coroutines, coroutine_repeats, n_contexts, stack_sizes, memory_budget,
 guard_contexts, n_copy, copy_in_use, reuse_pool_sizes) = params.resolve(
    "07b_coroutine_memory", quick=quick).values()

# %%
from IPython.display import Markdown, display

import labkit
from labkit.core import native, plots, results
from labkit.experiments import frames
from labkit.lab.analysis import article_part
from labkit.lab.analysis import findings, coroutine_memory as cm
from labkit.lab.experiment import COROUTINE_MEMORY as exp
from labkit.lab.judging import designs
findings.placeholder(exp.name)

missing = native.peers_missing_reason()
if missing:
    raise RuntimeError("notebook 07b needs the C++ peers library (frames.cpp is built into "
                       f"it): {missing}")
info = labkit.machine_info()
print(plots.machine_caption(info), cm.environment(info), sep="\n")
kernel_rss = [cm.kernel_rss_mib()]   # this process is the Jupyter kernel, not the worker

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
kernel_rss.append(cm.kernel_rss_mib())
coros = frames.coroutine_runs(cm.sweep, n=n_coroutines, repeats=coroutine_repeats, build=build,
                              memory_budget=memory_budget)
cs = cm.per_coroutine(coros)
print(cm.pool_check(coros))
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
reuse = frames.reuse_runs(cm.sweep, reuse_pool_sizes, n=n_coroutines, repeats=coroutine_repeats,
                          build=build, memory_budget=memory_budget)
results.save_csv(reuse.assign(part="pool_reuse"), exp.part("pool_reuse"))
rs = cm.per_pool(reuse, coros)
rs.round(3)

# %%
cm.reuse_figure(rs, cs);

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
stacks = frames.stackful_runs(cm.sweep, stack_sizes, n=n_contexts, build=build,
                              memory_budget=memory_budget)
guard_check = frames.guard_runs(n=guard_contexts, build=build)
kernel_rss.append(cm.kernel_rss_mib())
notes, shown = cm.per_context(stacks)
print(notes)
shown

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
display(Markdown(cm.stacks_text(stacks, guard_check)))

# %%
cm.memory_figure(cs, stacks);

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
copies = frames.copy_runs(cm.sweep, copy_in_use, n=n_copy, build=build, memory_budget=memory_budget)
results.save_csv(copies, exp.part("copy_stack"))
cm.copy_table(copies)

# %%
display(Markdown(cm.copy_text(copies, stacks, cs)))

# %% [markdown]
# ## 3. The Jupyter kernel stayed small
#
# Everything above ran in a worker process. This kernel's own resident memory, before
# and after the million-coroutine and million-context runs:

# %%
print(cm.kernel_text(kernel_rss, coros, stacks))

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
#   (`labkit.lab.judging.rules.c004_2`). Under the amended rule
#   (`data/claims_amendments.csv`) either part failing refutes the claim.

# %%
results.save_parts(exp.data, {
    "coroutines": coros, "stackful": stacks, "guard_check": guard_check})
# C004.2's memory half (its rule reads 07b's data only here); the ledger adds 09's
# throughput half.
table = designs.verdict_table(exp, notes={"C004.1": f"; the pooled-reuse row's "
                                          f"{cm.CLAIMED_MB[cm.REUSE]:g} MB is checked in the "
                                          "closing note"})

# %% [markdown]
# ## Closing note
#
# The numbers below are this run's, written out from the tables above.

# %%
display(Markdown(cm.closing_note(cs, rs, stacks, info["page_size"])))
findings.and_verdicts(exp.name, table)

# %% [markdown]
# <a id="07b_coroutine_memory-article-table"></a>
# ## The article's table beside ours
#
# Here: the frame and memory columns of the five strategies of `004_dfc61b1060864bf1.txt`,
# from the runs above. The article's own rows, its number beside the median measured here
# with its spread, the relative column it uses, and the claim that judges each row
# (`labkit.lab.report.articles`). The memory row claims (C004.1a-d) are judged here by their rules
# in `data/claims.csv`. The table's TPS column (C004.1e-h) is measured by notebook 09's
# echo servers, which run after this notebook: it is shown there, with the whole table.

# %%
row_claims, judged = article_part.judge(exp, table)
article_part.show(cm.article_table(coros, reuse, judged), row_claims)
