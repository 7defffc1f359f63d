"""C++20 coroutine frames (notebooks 07a and 07b): the frame sizes the compiler picks, what
allocating frame-sized blocks costs from the heap and from free-list pools, and what
a million suspended coroutines or stackful contexts keep resident.

    from labkit.experiments import frames
    frames.frame_sizes(["O0", "O2"])            # bytes the compiler asks operator new for
    frames.alloc_bench("pool", 256)              # ns per allocate+free pair, one row a repeat
    frames.coroutines("conn256", "heap", n=10**6)          # RSS per suspended coroutine
    frames.stackful(64 << 10, touched=False, n=10**6)      # RSS per stackful context
    frames.copy_stack(256, n=10**6)              # RSS per suspended copy-stack coroutine
    frames.pool_reuse(10_000, n=10**6)           # 1M connections served by 10k reused frames

The C++ side is labkit/cxx/frames.cpp, compiled into the peers library at every -O level.
Every native call runs in a worker process (the worker_* functions below): a million
coroutines inflate the worker, never the Python process that asked for them. The memory
runs each get a worker process of their own, so that nothing an earlier run freed is
there to be reused.
"""
from __future__ import annotations

import ctypes
import functools
import os

from labkit.core import native, procfs, structs
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.core.stats import floor_net
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

# In the order of enum lkf_variant (labkit/cxx/frames.h).
VARIANTS = {
    "empty": "co_return at once: no suspension point",
    "suspend": "one co_await and nothing else",
    "locals": "uint64_t, double, void*, uint32_t alive across the co_await",
    "params": "four uint64_t parameters by value, used after the co_await",
    "array_alive": "char[64 KiB] written before the co_await, read after it",
    "array_dead": "char[64 KiB] last used before the co_await (same scope)",
    "array_scoped": "char[64 KiB] in a block closed before the co_await",
    "array_callee": "char[64 KiB] in an ordinary function called before the co_await",
    "optional_large": "std::optional<64 KiB struct>, left empty, alive across the co_await",
    "conn256": "fd, state, byte count and a 192-byte buffer: a 256-byte frame (g++)",
    "conn192": "the same with a 128-byte buffer: a 192-byte frame (g++)",
}
# In the order of enum lkf_allocator.
ALLOCATORS = {
    "heap": "global operator new/delete (glibc malloc)",
    "pool": "one free-list pool (a global object)",
    "tlpool": "a free-list pool per thread, reached through a thread_local pointer",
    "atomic": "one lock-free free list (compare-and-swap push and pop), as article 001's",
}
ARRAY_BYTES = 65536
DEFAULT_BUILD = native.DEFAULT_BUILD
DEFAULT_MEMORY_BUDGET = 4 << 30   # bytes a run may keep resident (pages + page tables)
MAX_BLOCK = 1 << 20
MAX_PAIRS = 10**9
MAX_N = 10**7
MAX_STACK = 1 << 30
PTE_REGION = 2 << 20              # one page-table page maps 2 MiB (x86-64, AArch64 4K)
# The reuse strategy is judged (row claim C004.1d) with a pool of n / 100 coroutines: a
# server whose connections are mostly idle, one in a hundred being served at a moment.
# The article names no pool size; this one is fixed before measuring, and notebook 07b
# shows the memory at every P beside it.
REUSE_POOL_SHARE = 0.01


# ---------------------------------------------------------------- worker side ----

@functools.lru_cache(maxsize=None)
def _lib(tag: str):
    lib = native.peers(tag)
    # The Python names must be the C enums, in order: a mismatch would mislabel every row.
    for k, name in enumerate(VARIANTS):
        if lib.lkf_variant_name(k).decode() != name:
            raise RuntimeError(f"frames.VARIANTS[{k}] is {name!r} but the {tag} library "
                               f"calls it {lib.lkf_variant_name(k).decode()!r}: rebuild")
    for k, name in enumerate(ALLOCATORS):
        if lib.lkf_allocator_name(k).decode() != name:
            raise RuntimeError(f"frames.ALLOCATORS[{k}] does not match the {tag} library")
    return lib


def _cflags(tag: str) -> str:
    return native.peers_cflags(tag)


def worker_frame_sizes(build: str) -> dict:
    lib = _lib(build)
    return {"cflags": _cflags(build), "promise_bytes": int(lib.lkf_promise_bytes()),
            "variants": [{"variant": name, "frame_bytes": int(lib.lkf_frame_bytes(k)),
                          "live_bytes": int(lib.lkf_live_bytes(k))}
                         for k, name in enumerate(VARIANTS)]}


def worker_alloc_bench(build: str, allocator: str, block: int, pairs: int, live: int,
                       warmup: int, repeats: int) -> dict:
    lib = _lib(build)
    index = list(ALLOCATORS).index(allocator)
    try:
        samples = lib.samples("lkf_alloc_bench", "lkf_sample", repeats, index, block, pairs,
                              live, warmup, repeats)
    finally:
        lib.lkf_pool_release(index)  # the shared worker goes on: give the pool's chunks back
    return {"cflags": _cflags(build), "samples": samples}


def worker_coro_run(build: str, variant: str, allocator: str, n: int, batch: int,
                    release_pool: bool) -> dict:
    lib = _lib(build)
    rep, pool = lib.new("lkf_mem_report"), lib.new("lkf_pool_stats")
    native.check(lib.lkf_coro_run, list(VARIANTS).index(variant),
                 list(ALLOCATORS).index(allocator), n, batch, int(release_pool),
                 ctypes.byref(rep), ctypes.byref(pool))
    run = structs.as_dict(rep)
    if allocator != "heap":
        run.update({f"pool_{f}": v for f, v in structs.as_dict(pool).items()})
    run["worker_rss_end_kb"] = procfs.status_kb("VmRSS")
    run["worker_pid"] = os.getpid()
    return {"cflags": _cflags(build), "run": run}


def worker_pool_reuse_run(build: str, n: int, pool_size: int) -> dict:
    lib = _lib(build)
    rep, pool, served = lib.new("lkf_mem_report"), lib.new("lkf_pool_stats"), ctypes.c_uint64()
    native.check(lib.lkf_pool_reuse_run, n, pool_size, ctypes.byref(rep), ctypes.byref(pool),
                 ctypes.byref(served))
    run = structs.as_dict(rep)
    run.update({f"pool_{f}": v for f, v in structs.as_dict(pool).items()})
    run["served"] = served.value
    run["connection_bytes"] = int(lib.lkf_conn_bytes())
    run["worker_pid"] = os.getpid()
    return {"cflags": _cflags(build), "run": run}


def worker_stackful_run(build: str, stack_size: int, touched: bool, guard: bool,
                        n: int) -> dict:
    lib = _lib(build)
    rep = lib.new("lkf_mem_report")
    native.check(lib.lkf_stackful_run, stack_size, int(touched), int(guard), n,
                 ctypes.byref(rep))
    run = structs.as_dict(rep)
    run["worker_pid"] = os.getpid()
    return {"cflags": _cflags(build), "run": run}


def worker_copy_stack_run(build: str, n: int, stack_in_use: int) -> dict:
    """n suspended copy-stack coroutines of the C core's `build`, with the worker's memory
    before, while they are held and after they are freed."""
    lib = native.core(build)
    saved = ctypes.c_uint64(0)

    def status():
        return {f: procfs.status_kb(f) for f in ("VmRSS", "RssAnon")}

    before = status()
    try:
        native.check(lib.lk_copy_hold, n, stack_in_use, ctypes.byref(saved))
        alive = status()
    finally:
        lib.lk_copy_hold_release()
    after = status()
    return {"cflags": native.cflags(build), "saved_bytes": saved.value,
            **{f"{k}_{when}_kb": v for when, d in
               (("before", before), ("alive", alive), ("after", after)) for k, v in d.items()}}


# ---------------------------------------------------------------- caller side ----

def peer_builds() -> list[str]:
    """The optimisation-level builds of the peers library present (no library is loaded)."""
    return [t for t in native.builds()
            if (native.BIN_DIR / f"liblabkit_peers-{t}.so").exists()]


def _build(build) -> str:
    return native.check_build(DEFAULT_BUILD if build is None else build, have=peer_builds(),
                              why_none=native.peers_missing_reason())


def _budget(value) -> int:
    return _v.integer_in("memory_budget", value, 1 << 20, _v.physical_memory() // 2,
                   " bytes (at most half this machine's memory)")


def _meta(cflags: str, build: str) -> dict:
    from labkit.core import machine

    return {**machine.row_metadata(cflags=cflags), "build": build}


def _call(function: str, describe: str, timeout: float, **kwargs):
    return _worker.call("labkit.experiments.frames", function, describe=describe, timeout=timeout, **kwargs)


def _call_fresh(function: str, describe: str, timeout: float, **kwargs):
    """Like _call, in a worker process started for this call alone: glibc reuses the
    memory earlier runs freed without it ever leaving the process, and a run that found
    its frames there would see its RSS barely move."""
    w = _worker.Worker()
    try:
        return _worker.call("labkit.experiments.frames", function, worker=w, describe=describe,
                            timeout=timeout, **kwargs)
    finally:
        w.close()


def frame_sizes(builds=None, *, timeout: float | None = None):
    """Frame bytes of every coroutine variant (VARIANTS) in each build (None: all peers
    builds): what the promise's operator new was asked for, beside the bytes the variant
    keeps alive across its suspension (live_bytes) and sizeof the promise. A frame_bytes of
    0 would mean the compiler elided the allocation. One row per (build, variant)."""
    import pandas as pd

    if builds is None:
        builds = peer_builds()
        if not builds:

            raise ValueError("frame sizes need the C++ peers library, and no build of it is "
                             f"here: {native.peers_missing_reason()}")
    if not isinstance(builds, (list, tuple)) or not builds:
        raise TypeError(f"builds must be a non-empty list of build names or None, not "
                        f"{builds!r}")
    builds = [_build(b) for b in builds]
    timeout = _v.timeout(timeout) or 120.0
    rows = []
    for b in builds:
        res = _call("worker_frame_sizes", f"frame sizes (build={b})", timeout, build=b)
        meta = _meta(res["cflags"], b)
        for v in res["variants"]:
            rows.append({**v, "description": VARIANTS[v["variant"]],
                         "promise_bytes": res["promise_bytes"],
                         "elided": v["frame_bytes"] == 0, **meta})
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=None)
def _frame_bytes(build: str) -> dict:
    res = _call("worker_frame_sizes", f"frame sizes (build={build})", 120.0, build=build)
    return {v["variant"]: v["frame_bytes"] for v in res["variants"]}


def alloc_bench(allocator: str, block: int, *, pairs: int = 1_000_000, live: int = 0,
                repeats: int = 10, warmup: int = 1, build: str | None = None,
                memory_budget: int = DEFAULT_MEMORY_BUDGET, timeout: float | None = None):
    """Time allocate+free pairs of `block`-byte blocks from `allocator` (ALLOCATORS:
    "heap", "pool", "tlpool", "atomic"), each new block's first 16 bytes written as a new
    frame's are. live=0: one block allocated and freed again and again; live=L: L blocks
    stay allocated and each pair frees a pseudo-random one of them and allocates its
    replacement. One row per repeat: ns and ticks per pair net of the same loop without
    the allocator (floored at 0, `below_resolution` where the loop was no slower than
    its baseline), and the raw and baseline ns per pair beside them."""
    allocator = _v.choice("allocator", allocator, ALLOCATORS)
    block = _v.integer_in("block", block, 16, MAX_BLOCK, " bytes")
    pairs = _v.integer_in("pairs", pairs, 1, MAX_PAIRS)
    live = _v.integer_in("live", live, 0, MAX_N)
    repeats, warmup = _v.repeats(repeats), _v.warmup(warmup)
    budget = _budget(memory_budget)
    if live * block > budget:
        raise ValueError(f"live must keep live * block within memory_budget ({budget} bytes): "
                         f"{live} blocks of {block} bytes are {live * block}")
    build = _build(build)
    timeout = _v.timeout(timeout) or 60.0 + (repeats + warmup) * pairs * 2e-6
    describe = (f"allocation benchmark (allocator={allocator!r}, block={block}, live={live}, "
                f"pairs={pairs}, build={build})")
    res = _call("worker_alloc_bench", describe, timeout, build=build, allocator=allocator,
                block=block, pairs=pairs, live=live, warmup=warmup, repeats=repeats)
    import pandas as pd

    meta = _meta(res["cflags"], build)
    rows = []
    for i, s in enumerate(res["samples"]):
        n = s["pairs"]
        net_ns, below = floor_net(s["loop_ns"], s["base_ns"])
        rows.append({"allocator": allocator, "block": block, "live": live, "repeat": i,
                     "pairs": n,
                     "ns_per_pair": net_ns / n,
                     "ticks_per_pair": floor_net(s["loop_ticks"], s["base_ticks"])[0] / n,
                     "below_resolution": below,
                     "ns_per_pair_raw": s["loop_ns"] / n,
                     "baseline_ns_per_pair": s["base_ns"] / n,
                     "minor_faults": s["minor_faults"], **meta})
    return pd.DataFrame(rows)


def _memory_columns(r: dict, batch: int | None = None) -> dict:
    # RSS is read while the last batch is alive: divide by what was alive then, not by n.
    n = r["n"] if not batch else r["n"] - (-(-r["n"] // batch) - 1) * batch
    kib = 1024
    return {
        "bytes_per_object": (r["rss_alive_kb"] - r["rss_before_kb"]) * kib / n,
        "anon_bytes_per_object": (r["anon_alive_kb"] - r["anon_before_kb"]) * kib / n,
        "pte_bytes_per_object": (r["pte_alive_kb"] - r["pte_before_kb"]) * kib / n,
        "rss_total_mib": (r["rss_alive_kb"] - r["rss_before_kb"]) / kib,
        "pte_total_mib": (r["pte_alive_kb"] - r["pte_before_kb"]) / kib,
        "rss_left_after_free_kb": r["rss_after_kb"] - r["rss_before_kb"],
        "ns_create_per_object": r["create_ns"] / r["n"],
        "ns_destroy_per_object": r["destroy_ns"] / r["n"],
    }


def coroutines(variant: str = "conn256", allocator: str = "heap", *, n: int = 1_000_000,
               batch: int | None = None, repeats: int = 1, release_pool: bool = True,
               build: str | None = None, memory_budget: int = DEFAULT_MEMORY_BUDGET,
               timeout: float | None = None):
    """Make n C++20 coroutines of `variant` with frames from `allocator`, each resumed once
    to its suspension point, `batch` alive at a time (None: all n together), and read the
    worker's VmRSS/RssAnon/VmPTE before, with the last batch alive, and after destroying
    them. Each repeat runs in a new worker process, so that no memory freed by an earlier
    run is there to be reused. One row per repeat, with resident bytes per coroutine,
    create/destroy ns per coroutine, and for the pools their own counters after the run
    (pool_in_use must be 0: every block returned). release_pool gives the pool's chunks
    back at the end."""
    variant = _v.choice("variant", variant, VARIANTS)
    allocator = _v.choice("allocator", allocator, ALLOCATORS)
    n = _v.integer_in("n", n, 1, MAX_N)
    batch = n if batch is None else _v.integer_in("batch", batch, 1, n, " (at most n)")
    repeats = _v.repeats(repeats)
    release_pool = _v.flag("release_pool", release_pool)
    budget = _budget(memory_budget)
    build = _build(build)
    frame = _frame_bytes(build)[variant]
    # malloc adds a header and rounds to 16: 32 bytes bounds what a block can cost beyond.
    if batch * (frame + 32) > budget:
        raise ValueError(f"n must keep the frames alive together within memory_budget "
                         f"({budget} bytes): {batch} frames of {frame} bytes do not fit")
    timeout = _v.timeout(timeout) or 120.0 + n * 5e-6
    describe = (f"{n} coroutines (variant={variant!r}, allocator={allocator!r}, batch={batch}, "
                f"build={build})")
    import pandas as pd

    rows = []
    for i in range(repeats):
        res = _call_fresh("worker_coro_run", describe, timeout, build=build, variant=variant,
                          allocator=allocator, n=n, batch=batch, release_pool=release_pool)
        r = res["run"]
        rows.append({"kind": "cxx20", "variant": variant, "allocator": allocator, "repeat": i,
                     "batch": batch, "frame_bytes": r["object_bytes"], **r,
                     **_memory_columns(r, batch), "rss_growth_kb": r["rss_after_kb"] - r["rss_before_kb"],
                     **_meta(res["cflags"], build)})
    return pd.DataFrame(rows)


def pool_reuse(pool_size: int, *, n: int = 1_000_000, repeats: int = 1,
               build: str | None = None, memory_budget: int = DEFAULT_MEMORY_BUDGET,
               timeout: float | None = None):
    """The coroutine-pool reuse strategy: n connections, each a small record of its own
    (fd, state, byte count), served by pool_size C++20 coroutines whose frames come from
    the pool once and are reused for connection after connection, never freed (each
    worker reads into a 128-byte buffer, waits for its I/O, answers, and waits for the
    next connection). Resident memory is read with pool_size connections in flight, all
    n records alive. Each repeat runs in a new worker process. One row per repeat:
    bytes_total (RSS growth: records and frames), bytes_per_connection, served (must be
    n) and the pool's allocs (must be pool_size: no frame per connection)."""
    n = _v.integer_in("n", n, 1, MAX_N)
    pool_size = _v.integer_in("pool_size", pool_size, 1, n, " (at most n)")
    repeats = _v.repeats(repeats)
    budget = _budget(memory_budget)
    build = _build(build)
    frame = _frame_bytes(build)["conn192"]
    if n * 16 + pool_size * (frame + 32) > budget:
        raise ValueError(f"n and pool_size must keep the records and frames within "
                         f"memory_budget ({budget} bytes)")
    timeout = _v.timeout(timeout) or 120.0 + n * 5e-6
    describe = f"{n} connections served by {pool_size} reused coroutines (build={build})"
    import pandas as pd

    rows = []
    for i in range(repeats):
        res = _call_fresh("worker_pool_reuse_run", describe, timeout, build=build, n=n,
                          pool_size=pool_size)
        r = res["run"]
        if r["served"] != n or r["pool_allocs"] != pool_size:
            raise RuntimeError(f"{describe}: served {r['served']} connections of {n} with "
                               f"{r['pool_allocs']} frames allocated; expected {pool_size}")
        total = (r["rss_alive_kb"] - r["rss_before_kb"]) * 1024
        rows.append({"kind": "cxx20", "strategy": "pool_reuse", "repeat": i,
                     "pool_size": pool_size, "frame_bytes": r["object_bytes"], **r,
                     "bytes_total": total, "bytes_per_connection": total / n,
                     "records_bytes": r["connection_bytes"] * n,
                     "frames_bytes": r["object_bytes"] * pool_size,
                     "pte_bytes_total": (r["pte_alive_kb"] - r["pte_before_kb"]) * 1024,
                     **_meta(res["cflags"], build)})
    return pd.DataFrame(rows)


def judged_pool_size(n: int) -> int:
    """The pool size C004.1d is judged at for n connections (REUSE_POOL_SHARE of them)."""
    n = _v.integer_in("n", n, 1, MAX_N)
    return max(1, round(n * REUSE_POOL_SHARE))


def pool_reuse_ratio(reuse, default, *, pool_size: int) -> dict:
    """Resident memory of the reuse strategy (pool_reuse rows at pool_size) over that of
    the default design (coroutines rows of conn256 frames from the heap, one coroutine
    per connection) for the same n: the ratio of medians, with the widest spread the
    two samples' quartiles allow (low: reuse q1 / default q3; high: reuse q3 / default
    q1). Returns ratio, low, high, n, pool_size and both medians in bytes."""
    import numpy as np

    from labkit.core.stats import quartiles

    pool_size = _v.integer_in("pool_size", pool_size, 1, MAX_N)
    r = reuse[reuse.pool_size == pool_size]
    if r.empty:
        raise ValueError(f"pool_size must be one measured in reuse; it has "
                         f"{sorted(set(reuse.pool_size))}, not {pool_size}")
    n = int(r.n.iloc[0])
    d = default[(default.variant == "conn256") & (default.allocator == "heap")
                & (default.n == n)]
    if d.empty:
        raise ValueError(f"default must hold conn256/heap coroutine rows at n={n}")
    rm, rq1, rq3 = quartiles(r.bytes_total)
    dm, dq1, dq3 = quartiles(np.asarray(d.bytes_per_object, float) * n)
    if not (dq1 > 0 and rq1 > 0):
        raise ValueError("resident memory must have grown in every run to form a ratio")
    return {"ratio": rm / dm, "low": rq1 / dq3, "high": rq3 / dq1, "n": n,
            "pool_size": pool_size, "reuse_bytes": rm, "default_bytes": dm}


def max_map_count() -> int:
    """Deprecated: labkit.core.procfs.max_map_count."""
    import warnings

    warnings.warn("labkit.experiments.frames.max_map_count moved to "
                  "labkit.core.procfs.max_map_count",
                  DeprecationWarning, stacklevel=2)
    return procfs.max_map_count()


def stackful_plan(stack_size: int, *, touched: bool, n: int, guard: bool | None = None,
                  memory_budget: int = DEFAULT_MEMORY_BUDGET) -> dict:
    """How many stackful contexts a run makes: n, or fewer when n of them would keep more
    than memory_budget resident (estimated: the pages written, a page per untouched stack
    or all of a touched one, plus page tables). guard=None puts a guard page under each
    stack only if the two VMAs a guarded stack costs fit in vm.max_map_count."""
    size = _v.integer_in("stack_size", stack_size, _v.page_size(), MAX_STACK, " bytes")
    size = _v.round_to_pages(size)
    touched = _v.flag("touched", touched)
    n = _v.integer_in("n", n, 1, MAX_N)
    budget = _budget(memory_budget)
    page = _v.page_size()
    limit = procfs.max_map_count()
    if guard is not None:
        guard = _v.flag("guard", guard)
    data = size if touched else page
    slot = size + page  # with or without a guard: the estimate stays on the safe side
    tables = slot / 512 if touched else page * min(1.0, slot / PTE_REGION)
    per = data + tables
    n_run = min(n, int(budget // per))
    if n_run < 1:
        raise ValueError(f"memory_budget ({budget} bytes) holds not even one {size}-byte stack")
    fits = 2 * n_run + 4096 <= limit
    if guard and not fits:
        raise ValueError(f"guard=True needs 2 VMAs per stack, {2 * n_run} in all, more than "
                         f"vm.max_map_count ({limit}); use guard=None or False")
    guard = fits if guard is None else guard
    why = []
    if n_run < n:
        why.append(f"scaled from {n} to {n_run} to keep about {per:.0f} B x n within the "
                   f"{budget / 2**30:.1f} GiB budget")
    if not guard:
        why.append("no guard pages" + (f": {n_run} guarded stacks need {2 * n_run} VMAs, "
                                       f"vm.max_map_count is {limit}" if not fits else ""))
    return {"stack_size": size, "touched": touched, "n_requested": n, "n": n_run,
            "scaled": n_run < n, "guard": guard, "estimated_bytes_per_context": per,
            "memory_budget": budget, "plan_note": "; ".join(why)}


def stackful(stack_size: int, *, touched: bool = False, n: int = 1_000_000,
             guard: bool | None = None, repeats: int = 1,
             memory_budget: int = DEFAULT_MEMORY_BUDGET, build: str | None = None,
             timeout: float | None = None):
    """Make n stackful contexts (Boost.Context fcontext) on mmapped stacks of stack_size
    bytes (whole pages), each run once to its first suspension, and read the worker's
    VmRSS/RssAnon/VmPTE before, with all alive, and after unmapping them. touched writes
    every page of each stack first; untouched stacks get only what making and running the
    context writes at the top. n is scaled down to fit memory_budget (see stackful_plan;
    the row says so in `scaled`, `n_requested` and `plan_note`). One row per repeat, each
    in a new worker process."""
    plan = stackful_plan(stack_size, touched=touched, n=n, guard=guard,
                         memory_budget=memory_budget)
    repeats = _v.repeats(repeats)
    build = _build(build)
    timeout = _v.timeout(timeout) or 300.0 + plan["n"] * 2e-5
    describe = (f"{plan['n']} stackful contexts (stack_size={plan['stack_size']}, "
                f"touched={plan['touched']}, guard={plan['guard']}, build={build})")
    import pandas as pd

    rows = []
    for i in range(repeats):
        res = _call_fresh("worker_stackful_run", describe, timeout, build=build,
                          stack_size=plan["stack_size"], touched=plan["touched"],
                          guard=plan["guard"], n=plan["n"])
        r = res["run"]
        rows.append({"kind": "stackful", "repeat": i, **plan, **r, **_memory_columns(r),
                     **_meta(res["cflags"], build)})
    return pd.DataFrame(rows)


MAX_STACK_IN_USE = 1 << 20


def copy_stack(stack_in_use: int = 0, *, n: int = 1_000_000, repeats: int = 1,
               memory_budget: int = DEFAULT_MEMORY_BUDGET, build: str | None = None,
               timeout: float | None = None):
    """Memory of n suspended copy-stack coroutines (the copy_stack kernel), each of which
    wrote stack_in_use bytes of its stack before suspending: it keeps only its used stack
    (those bytes, its frames and registers) in a heap buffer, plus its 40-byte context.
    One row per repeat, each in a new worker process: saved_bytes_per_object (what the
    coroutines' buffers hold, exactly), bytes_per_object (VmRSS growth while they are held,
    per coroutine: the buffers, malloc's headers and the context array) and
    anon_bytes_per_object (RssAnon). n is scaled down when n buffers of stack_in_use bytes
    (and about 300 B of frames, headers and context each) would not fit memory_budget; the
    row says so in `scaled` and `n_requested`."""
    import pandas as pd

    in_use = _v.integer_in("stack_in_use", stack_in_use, 0, MAX_STACK_IN_USE, " bytes")
    n_requested = _v.integer_in("n", n, 1, MAX_N)
    n = min(n_requested, _budget(memory_budget) // (in_use + 300))
    repeats = _v.repeats(repeats)
    build = native.check_build(native.DEFAULT_BUILD if build is None else build)
    timeout = _v.timeout(timeout) or 120.0 + n * (2e-6 + in_use * 1e-9)
    describe = f"{n} suspended copy-stack coroutines (stack_in_use={in_use}, build={build})"
    rows = []
    for i in range(repeats):
        r = _call_fresh("worker_copy_stack_run", describe, timeout, build=build, n=n,
                        stack_in_use=in_use)
        kib = 1024
        rows.append({
            "kind": "copy_stack", "repeat": i, "n_requested": n_requested, "n": n,
            "scaled": n < n_requested, "stack_in_use": in_use,
            "saved_bytes_per_object": r["saved_bytes"] / n,
            "bytes_per_object": (r["VmRSS_alive_kb"] - r["VmRSS_before_kb"]) * kib / n,
            "anon_bytes_per_object": (r["RssAnon_alive_kb"] - r["RssAnon_before_kb"]) * kib / n,
            "rss_total_mib": (r["VmRSS_alive_kb"] - r["VmRSS_before_kb"]) / kib,
            "rss_left_after_free_kb": r["VmRSS_after_kb"] - r["VmRSS_before_kb"],
            **_meta(r["cflags"], build)})
    return pd.DataFrame(rows)


# --- the sweeps of notebooks 07a and 07b --------------------------------------------------
# Their first argument, `sweep`, runs the points: the lab hands in its own
# (labkit.lab.running.sweep.for_notebook: checkpointed and resumable), called
# sweep(measure_one, points, desc=..., checkpoint=PART).

# The coroutine kinds 07b measures: the rows of the article 004's table (conn256 from the
# heap, a thread-local and a global pool), conn192 beside them and the empty coroutine
# (the smallest frame).
KINDS = [("conn256", "heap"), ("conn256", "tlpool"), ("conn256", "pool"),
         ("conn192", "heap"), ("conn192", "pool"), ("empty", "heap"), ("empty", "pool")]
# The leak check's runs: (allocator, coroutines alive at a time).
CYCLE_RUNS = [("pool", 1), ("tlpool", 1), ("atomic", 1), ("heap", 1), ("pool", 1000)]


def alloc_runs(sweep, blocks, *, live_blocks: int, memory_budget: int, pairs: int,
               repeats: int, build: str):
    """Every allocator at every block size in `blocks`, one block and `live_blocks` live
    (at most a quarter of the budget for the largest); `pattern` names the two, and
    `ns_shown` is net of the loop for one block and raw for many live: there a random
    live block's cache miss dwarfs what the allocator adds, too small for a difference of
    two timed loops to resolve."""
    import numpy as np

    def live_for(block):
        return min(live_blocks, memory_budget // 4 // block)

    points = [dict(allocator=a, block=b, live=n) for a in ALLOCATORS
              for b in blocks for n in (0, live_for(b))]
    alloc = sweep(
        lambda allocator, block, live: alloc_bench(
            allocator, block, pairs=pairs, live=live, repeats=repeats, build=build,
            memory_budget=memory_budget),
        points, desc="allocation", checkpoint="alloc",
    )
    alloc["pattern"] = np.where(alloc.live == 0, "one block", "many live")
    alloc["ns_shown"] = np.where(alloc.pattern == "one block", alloc.ns_per_pair,
                                 alloc.ns_per_pair_raw)
    return alloc


def cycle_runs(*, cycles: int, build: str):
    """`cycles` create/destroy cycles of conn256 coroutines through each pool (and the
    heap), one alive at a time and a thousand (CYCLE_RUNS); `every block back` is None for
    the heap."""
    import numpy as np
    import pandas as pd

    df = pd.concat([coroutines("conn256", a, n=cycles, batch=b, build=build,
                               release_pool=False)
                    for a, b in CYCLE_RUNS], ignore_index=True)
    df["every block back"] = np.where(
        df.allocator == "heap", None,
        (df.pool_in_use == 0) & (df.pool_free_blocks == df.pool_carved)
        & (df.pool_carved <= df.batch))
    return df


def coroutine_runs(sweep, *, n: int, repeats: int, build: str, memory_budget: int):
    """n suspended coroutines of every kind (KINDS), `repeats` times."""
    return sweep(
        lambda variant, allocator: coroutines(
            variant, allocator, n=n, repeats=repeats, build=build, memory_budget=memory_budget),
        [dict(variant=v, allocator=a) for v, a in KINDS],
        desc="coroutines", checkpoint="coroutines",
    )


def reuse_runs(sweep, pool_sizes, *, n: int, repeats: int, build: str, memory_budget: int):
    """n connections served by a pool of P reused coroutines, for every P given and the
    P the row claim C004.1d is judged at."""
    sizes = sorted({*pool_sizes, judged_pool_size(n)})
    return sweep(
        lambda pool_size: pool_reuse(pool_size, n=n, repeats=repeats, build=build,
                                     memory_budget=memory_budget),
        [dict(pool_size=p) for p in sizes if p <= n],
        desc="pool reuse", checkpoint="pool_reuse",
    )


def stackful_runs(sweep, stack_sizes, *, n: int, build: str, memory_budget: int):
    """n contexts on untouched and touched stacks of every size, no guard pages; `stack`
    labels the size, `per_million_gib` counts page tables too."""
    from labkit.core import plots

    stacks = sweep(
        lambda stack_size, touched: stackful(
            stack_size, touched=touched, n=n, guard=False, build=build,
            memory_budget=memory_budget),
        [dict(stack_size=s, touched=t) for t in (False, True) for s in stack_sizes],
        desc="stackful", checkpoint="stackful",
    )
    stacks["stack"] = stacks.stack_size.map(plots.bytes_label)
    stacks["per_million_gib"] = ((stacks.bytes_per_object + stacks.pte_bytes_per_object)
                                 * 1e6 / 2**30)
    return stacks


def guard_runs(*, n: int, build: str):
    """n 64 KiB stacks without and with a guard page."""
    import pandas as pd

    return pd.concat([stackful(64 << 10, touched=False, n=n, guard=g, build=build)
                      for g in (False, True)], ignore_index=True)


def copy_runs(sweep, in_use, *, n: int, build: str, memory_budget: int):
    """n suspended copy-stack coroutines for each number of stack bytes in use, with the
    bookkeeping beyond the saved stack and a million's worth."""
    copies = sweep(
        lambda stack_in_use: copy_stack(stack_in_use, n=n, build=build,
                                        memory_budget=memory_budget),
        [dict(stack_in_use=u) for u in in_use],
        desc="copy stacks", checkpoint="copy_stack",
    )
    copies["bookkeeping_bytes"] = copies.bytes_per_object - copies.saved_bytes_per_object
    copies["per_million_mib"] = copies.bytes_per_object * 1e6 / (1 << 20)
    return copies
