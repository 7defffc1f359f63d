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
# This notebook is about what coroutines keep resident while they wait. How big one
# [frame](../docs/glossary.md#frame) is, and what allocating it costs, is notebook
# `07a_frames_and_allocators`.
#
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`.
#
# - **C004.1** (the coroutine-memory article, `004_dfc61b1060864bf1.txt`): the frame-size
#   and memory columns of the article's table, for 1,000,000 concurrent coroutines:
#   - default `new`: 256 B and about 256 MB;
#   - thread-local pool: 256 B, 256 MB;
#   - fewer frame variables: 192 B, 192 MB;
#   - symmetric transfer: 192 B, 192 MB;
#   - pooled coroutine reuse: 192 B, about 40 MB.
#
#   Its [rule](../docs/glossary.md#rule) judges the default-`new` row. The other memory
#   rows are the [row claims](../docs/glossary.md#row-claim) C004.1a-d, judged in the
#   article's table at the end. Its TPS column belongs to notebook 09.
# - **C004.2** (same article): overall, the optimisations cut coroutine memory by 65%.
#   (The article also says "by over 80%".) They raised
#   [throughput](../docs/glossary.md#throughput) by over 300%. The memory half is measured
#   here, the throughput half in notebook 09.
#
# **How the authors got their numbers.** The author of `004` ran an echo server with one
# coroutine per connection. The memory column of the table is marked as an estimate. Its
# figures are the frame size times a million.
#
# **What we run**, all on this machine:
#
# - a million suspended C++20 coroutines (g++ `-std=c++20`), with default `new` and with
#   pools;
# - the reuse design: a million connections served by a pool of P reused coroutines, for
#   several P;
# - a million [stackful](../docs/glossary.md#stackful) contexts (Boost.Context `fcontext`)
#   on `mmap`ed stacks of 4 KiB to 1 MiB, untouched and fully touched.
#
# [Resident memory](../docs/glossary.md#resident-memory) (VmRSS from `/proc/self/status`)
# is read by the C++ code itself. It is read inside a [worker](../docs/glossary.md#worker)
# process, while they are all alive.
#
# The rules are those written in `data/claims.csv` before measuring.

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
from labkit.lab.headers import shown
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
# Each coroutine is made and resumed once. So it sits at its `co_await` with its locals
# written, the way a connection waits for its next read. The C++ code reads VmRSS three
# times. The first is before making any coroutine (after its handle array is allocated and
# written). The second is while all of them are alive, and the third after destroying
# them. *bytes per object* is the rise divided by n. The kinds follow the rows of the
# article's table:
#
# | article row | here |
# |---|---|
# | default `new`, 256 B | `conn256`, `heap` |
# | thread-local pool, 256 B | `conn256`, `tlpool` |
# | fewer frame variables, 192 B | `conn192`, `heap` |
# | symmetric transfer, 192 B | the same frames (it changes how control passes, not the frame) |
# | pooled coroutine reuse, 192 B | `conn192`, `pool` (one frame each); the reuse design itself is section 1b |
#
# There are two more: `conn256` with the global `pool`, and the empty coroutine (the
# smallest frame there is) with the heap and a pool.

# %%
kernel_rss.append(cm.kernel_rss_mib())
coros = frames.coroutine_runs(cm.sweep, n=n_coroutines, repeats=coroutine_repeats, build=build,
                              memory_budget=memory_budget)
cs = cm.per_coroutine(coros)
print(cm.pool_check(coros))
shown(cs.round(2))

# %% [markdown]
# `malloc` puts an 8-byte header in front of each block, and rounds to 16 bytes. So a
# 256-byte frame costs 272 bytes from the heap, and 256 from a pool. The pools cut that
# header and nothing else. A pool cannot make a frame smaller than the compiler made it.
# And a million suspended coroutines need a million frames at once, whoever allocates
# them.
#
# *MiB left after destroying all* is what stays resident once every coroutine is destroyed. glibc
# keeps small freed blocks (the 48-byte ones of the empty coroutine) in its bins, rather
# than giving the pages back. The pools keep their chunks until they are released. Then
# `rss_released_kb` falls back.

# %% [markdown]
# ## 1b. Pooled reuse: memory follows the pool, not the connections
#
# The article's last row is a different design, not a different allocator. A pool of P
# coroutines is made once. Each serves connection after connection, its frame reset and
# reused, never freed. A connection is then a small record of its own: a descriptor, a
# state word, a byte count (*bytes per connection record*). Only the P connections being served at a
# moment have a frame.
#
# Here n connections are served in rounds of P. Each pooled coroutine is handed a
# connection and reads into its 128-byte buffer. It waits for its I/O, suspended, with the
# buffer alive. Then it answers, and is idle again. Memory is read with the last round in
# flight, all n records resident. The pool's counters prove the design: it allocated
# exactly P frames for n connections.
#
# The resident memory should be n × *bytes per connection record* plus P × frame bytes. So
# it follows the pool size. At P = n, it is one frame per connection again.

# %%
reuse = frames.reuse_runs(cm.sweep, reuse_pool_sizes, n=n_coroutines, repeats=coroutine_repeats,
                          build=build, memory_budget=memory_budget)
results.save_csv(reuse.assign(part="pool_reuse"), exp.part("pool_reuse"))
rs = cm.per_pool(reuse, coros)
shown(rs.round(3))

# %%
cm.reuse_figure(rs, cs);

# %% [markdown]
# ## 2. A million stackful contexts
#
# One `mmap` holds all the stacks (`MAP_NORESERVE`, with huge pages refused by `madvise`).
# Each context is made with Boost.Context's `make_fcontext` at the top of its stack. It is
# run once, to its first suspension. *Untouched* stacks get only what that writes.
# *Touched* ones have every page written first, as a context that once ran deep would
# leave them.
#
# A million guard pages would need two million VMAs, far beyond `vm.max_map_count`. So
# these runs have none. The runs after them compare `guard_contexts` stacks with and
# without guards. Sometimes n contexts would keep more than the memory budget resident.
# Then n is scaled down: the row says so (*n asked for*, *n scaled down*), a note why. The
# per-context figures do not depend on n.

# %%
stacks = frames.stackful_runs(cm.sweep, stack_sizes, n=n_contexts, build=build,
                              memory_budget=memory_budget)
guard_check = frames.guard_runs(n=guard_contexts, build=build)
kernel_rss.append(cm.kernel_rss_mib())
notes, context_table = cm.per_context(stacks)
print(notes)
shown(context_table)

# %%
shown(guard_check[["stack_size", "guard", "n", "bytes_per_object", "pte_bytes_per_object",
                   "ns_create_per_object"]].round(1))

# %% [markdown]
# ### Lazily committed stack pages
#
# `mmap` only reserves address space. A page becomes resident when it is first written.
# The OS then also fills in page-table entries for it. A context that has run once and
# suspended has written a few dozen bytes at the top of its stack. (*stack bytes used* runs from
# the top down to its saved stack pointer.) So an untouched stack costs one page, whatever
# its size. A touched one costs its full size.
#
# What does grow with the stack size, untouched or not, is the page tables. Every 2 MiB of
# address space that holds a touched page needs a 4 KiB page-table page. That memory is
# counted in VmPTE, not in VmRSS.

# %%
display(Markdown(cm.stacks_text(stacks, guard_check)))

# %%
cm.memory_figure(cs, stacks);

# %% [markdown]
# ## 2b. Copy stacks: a stackful coroutine that keeps only its used stack
#
# This is the stackful answer to the table above: coroutines that share one run stack. It
# is the `copy_stack` [kernel](../docs/glossary.md#kernel), the [copy
# stack](../docs/glossary.md#copy-stack) design of libco's shared stacks and libaco's copy
# stacks. Each coroutine is made, and runs to its suspension after writing `stack_in_use`
# bytes of its stack. It is copied off the run stack when the next one needs it.
#
# A suspended coroutine then keeps its used stack in a heap buffer of exactly that size,
# plus a 40-byte context. *saved bytes per object* counts those bytes: its frames and
# registers. *bytes per object* is the worker's VmRSS growth per coroutine, while all are
# held. Notebook 04 shows what that memory costs in time: every switch copies it.

# %%
copies = frames.copy_runs(cm.sweep, copy_in_use, n=n_copy, build=build, memory_budget=memory_budget)
results.save_csv(copies, exp.part("copy_stack"))
shown(cm.copy_table(copies))

# %%
display(Markdown(cm.copy_text(copies, stacks, cs)))

# %% [markdown]
# ## 3. The Jupyter kernel stayed small
#
# Everything above ran in a worker process. Here is this [Jupyter
# kernel](../docs/glossary.md#jupyter-kernel)'s own resident memory, before and after the
# million-coroutine and million-context runs:

# %%
print(cm.kernel_text(kernel_rss, coros, stacks))

# %% [markdown]
# ## Verdicts
#
# - **C004.1**, the memory column of its default-`new` row: resident bytes per suspended
#   coroutine with a 256-byte frame, over the frame size. The other rows are set beside it
#   in the closing note. They are judged as C004.1a-d in the article's table below.
# - **C004.2** needs two ratios. One is the memory ratio here: pooled 192-byte frames over
#   default-`new` 256-byte frames, in bytes per coroutine. The other is notebook 09's
#   throughput ratio (`cxx20_pool_sym` over `cxx20_new`). Only the memory half is shown
#   here. The claims ledger (notebook 00) judges it from both notebooks' data
#   (`labkit.lab.judging.rules.c004_2`). Under the amended rule
#   (`data/claims_amendments.csv`), either part failing refutes the claim.

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
findings.and_verdicts(exp.name, table, [cm.memory_finding(cs, stacks), cm.reuse_finding(rs, cs)])

# %% [markdown]
# <a id="07b_coroutine_memory-article-table"></a>
# ## The article's table beside ours
#
# Here are the frame and memory columns of the five strategies of the coroutine-memory
# article (`004_dfc61b1060864bf1.txt`), from the runs above. The table keeps the article's
# own rows, and the relative column it uses. Each number of the article sits beside the
# [median](../docs/glossary.md#median) measured here, with its
# [spread](../docs/glossary.md#spread). It also names the claim that judges each row
# (`labkit.lab.report.articles`). The memory row claims (C004.1a-d) are judged here, by
# their rules in `data/claims.csv`. The table's TPS column (C004.1e-h) is measured by
# notebook 09's echo servers, which run after this notebook. It is shown there, with the
# whole table.

# %%
row_claims, judged = article_part.judge(exp, table)
article_part.show(cm.article_table(coros, reuse, judged), row_claims)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `stack_sizes` to `params.resolve` in the parameters cell,
# set to [4096, 2097152]. Then run the notebook again.
#
# Predict first: how much resident memory does a suspended context with a 2 MiB stack
# hold, against one with 4 KiB?
# Write the number down before you run it.
