"""Coroutine frames (labkit.experiments.frames, labkit/cxx/frames.cpp): frame sizes as the compiler
states them, the pools' bookkeeping over a million create/destroy cycles, bad input, and
the worker keeping the caller's memory clean. No timing thresholds."""
import os

import pytest

from labkit.experiments import frames

from labkit.core import native

pytestmark = pytest.mark.skipif(bool(native.peers_missing_reason()),
                                reason=native.peers_missing_reason() or "peers built")

MILLION = 1_000_000
POOLS = [a for a in frames.ALLOCATORS if a != "heap"]


def caller_rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.fixture(scope="module")
def sizes():
    return frames.frame_sizes()


def test_every_variant_has_a_positive_frame_in_every_build(sizes):
    assert set(sizes.variant) == set(frames.VARIANTS)
    assert set(sizes.build) == set(frames.peer_builds())
    assert (sizes.frame_bytes > 0).all(), sizes[sizes.frame_bytes <= 0]


def test_frame_holds_the_promise_and_the_parameter_copies(sizes):
    # The standard puts the promise and a copy of each parameter in the frame.
    for build, s in sizes.groupby("build"):
        f = s.set_index("variant").frame_bytes
        promise = s.promise_bytes.iloc[0]
        assert (f >= promise).all(), build
        live_params = s.set_index("variant").live_bytes["params"]
        assert f["params"] >= promise + live_params, build


def test_a_64k_array_alive_across_a_suspension_adds_64k(sizes):
    for build, s in sizes.groupby("build"):
        f = s.set_index("variant").frame_bytes
        assert f["array_alive"] - f["suspend"] >= frames.ARRAY_BYTES, build
        assert f["array_alive"] - f["array_callee"] >= frames.ARRAY_BYTES, build


@pytest.mark.parametrize("allocator", POOLS)
def test_pool_returns_every_block_after_a_million_cycles(allocator):
    df = frames.coroutines("conn256", allocator, n=MILLION, batch=1, release_pool=False)
    r = df.iloc[0]
    assert r.pool_in_use == 0
    assert r.pool_free_blocks == r.pool_carved
    # One coroutine alive at a time: the same block comes back every time.
    assert r.pool_carved == 1
    if allocator != "atomic":  # the lock-free pool keeps no call counters
        assert r.pool_allocs == MILLION and r.pool_frees == MILLION
    assert r.rss_growth_kb < 4096, f"RSS grew by {r.rss_growth_kb} kB over a million cycles"


def test_pool_reuses_blocks_across_batches_and_gives_chunks_back():
    batch = 1000
    df = frames.coroutines("conn192", "pool", n=MILLION, batch=batch, release_pool=False)
    r = df.iloc[0]
    assert r.pool_in_use == 0 and r.pool_free_blocks == r.pool_carved == batch
    assert r.rss_growth_kb < 4096

    all_alive = frames.coroutines("conn192", "pool", n=200_000, release_pool=True).iloc[0]
    assert all_alive.pool_in_use == 0
    assert all_alive.pool_carved == all_alive.pool_free_blocks == 200_000
    # While alive the frames were resident; once the chunks went back, so was the memory.
    grown = all_alive.rss_alive_kb - all_alive.rss_before_kb
    assert grown * 1024 >= 200_000 * all_alive.frame_bytes * 0.9
    assert all_alive.rss_released_kb - all_alive.rss_before_kb < 4096


def test_the_worker_keeps_the_callers_memory_clean():
    frames.coroutines("empty", "heap", n=1000)  # imports and the first worker start-up
    before = caller_rss_kb()
    df = frames.coroutines("conn256", "heap", n=100_000)
    after = caller_rss_kb()
    r = df.iloc[0]
    assert r.worker_pid != os.getpid()
    # The memory went somewhere: into the worker.
    assert (r.rss_alive_kb - r.rss_before_kb) * 1024 >= 100_000 * r.frame_bytes * 0.9
    assert abs(after - before) < 50 * 1024, f"caller RSS moved by {after - before} kB"


def test_untouched_stacks_commit_less_than_touched_ones():
    size = 64 << 10
    untouched = frames.stackful(size, touched=False, n=2000).iloc[0]
    touched = frames.stackful(size, touched=True, n=2000).iloc[0]
    assert 0 < untouched.used_bytes < size
    assert untouched.bytes_per_object < size / 4
    assert touched.bytes_per_object >= size * 0.9


def test_guarded_stacks_run_when_the_vmas_fit():
    r = frames.stackful(16 << 10, n=1000, guard=True).iloc[0]
    assert r.guard_pages == 1 and r.guard


def test_the_stackful_plan_scales_to_the_budget_and_says_so():
    plan = frames.stackful_plan(1 << 20, touched=True, n=MILLION, memory_budget=1 << 30)
    assert plan["scaled"] and 0 < plan["n"] < MILLION
    assert "scaled" in plan["plan_note"]
    small = frames.stackful_plan(4096, touched=False, n=1000)
    assert not small["scaled"] and small["n"] == 1000


@pytest.mark.parametrize("allocator", list(frames.ALLOCATORS))
@pytest.mark.parametrize("live", [0, 100])
def test_alloc_bench_gives_one_row_per_repeat(allocator, live):
    df = frames.alloc_bench(allocator, 256, pairs=10_000, live=live, repeats=3)
    assert len(df) == 3 and (df.pairs == 10_000).all()
    assert df.ns_per_pair_raw.notna().all()
    assert {"machine_id", "cflags", "build"} <= set(df.columns)


def test_alloc_bench_never_gives_a_negative_net():
    df = frames.alloc_bench("pool", 256, pairs=2_000, live=100, repeats=5)
    assert (df.ns_per_pair >= 0).all() and (df.ticks_per_pair >= 0).all()
    below = df.ns_per_pair_raw <= df.baseline_ns_per_pair
    assert (df.below_resolution == below).all()
    assert (df[below].ns_per_pair == 0).all()


def test_pool_reuse_serves_every_connection_with_pool_size_frames():
    df = frames.pool_reuse(100, n=20_000, repeats=2)
    assert len(df) == 2 and (df.served == 20_000).all()
    # The design: frames are allocated once per worker, never per connection.
    assert (df.pool_allocs == 100).all() and (df.pool_in_use == 100).all()
    assert (df.frame_bytes > 0).all() and (df.connection_bytes == 16).all()
    assert (df.records_bytes == 16 * 20_000).all()
    assert {"bytes_total", "bytes_per_connection", "machine_id"} <= set(df.columns)


def _mem_rows(strategy_bytes, default_bytes, n=1000, pool_size=10):
    import pandas as pd

    reuse = pd.DataFrame({"pool_size": pool_size, "n": n, "bytes_total": strategy_bytes})
    default = pd.DataFrame({"variant": "conn256", "allocator": "heap", "n": n,
                            "bytes_per_object": [b / n for b in default_bytes]})
    return reuse, default


def test_pool_reuse_ratio_is_reuse_over_default_with_its_widest_spread():
    reuse, default = _mem_rows([10, 20, 30], [100, 200, 300])
    r = frames.pool_reuse_ratio(reuse, default, pool_size=10)
    assert r["ratio"] == pytest.approx(0.1)
    assert r["low"] == pytest.approx(15 / 250) and r["high"] == pytest.approx(25 / 150)
    assert r["low"] <= r["ratio"] <= r["high"]


def test_pool_reuse_ratio_refuses_what_it_cannot_form():
    reuse, default = _mem_rows([10], [100])
    with pytest.raises(ValueError, match="pool_size"):
        frames.pool_reuse_ratio(reuse, default, pool_size=11)
    with pytest.raises(ValueError, match="n=1000"):
        frames.pool_reuse_ratio(reuse, default.assign(n=5), pool_size=10)
    with pytest.raises(ValueError, match="grown"):
        frames.pool_reuse_ratio(*_mem_rows([10], [0]), pool_size=10)


def test_judged_pool_size_is_a_hundredth_of_n():
    assert frames.judged_pool_size(1_000_000) == 10_000
    assert frames.judged_pool_size(50) == 1
    with pytest.raises(ValueError, match="n must"):
        frames.judged_pool_size(0)


HUGE = 1 << 60
CASES = [
    # (function, args, kwargs, exception, words the message must contain)
    (frames.alloc_bench, ("nope", 256), {}, ValueError, ["allocator", "heap"]),
    (frames.alloc_bench, (3, 256), {}, TypeError, ["allocator"]),
    (frames.alloc_bench, ("heap", 8), {}, ValueError, ["block"]),
    (frames.alloc_bench, ("heap", 256.0), {}, TypeError, ["block", "integer"]),
    (frames.alloc_bench, ("heap", 1 << 21), {}, ValueError, ["block"]),
    (frames.alloc_bench, ("heap", 256), {"pairs": 0}, ValueError, ["pairs"]),
    (frames.alloc_bench, ("heap", 256), {"pairs": "many"}, TypeError, ["pairs"]),
    (frames.alloc_bench, ("heap", 256), {"live": -1}, ValueError, ["live"]),
    (frames.alloc_bench, ("heap", 65536), {"live": 10**7}, ValueError, ["live", "memory_budget"]),
    (frames.alloc_bench, ("heap", 256), {"repeats": 0}, ValueError, ["repeats"]),
    (frames.alloc_bench, ("heap", 256), {"build": "O9"}, ValueError, ["build", "O2"]),
    (frames.alloc_bench, ("heap", 256), {"build": 2}, TypeError, ["build"]),
    (frames.alloc_bench, ("heap", 256), {"memory_budget": 0}, ValueError, ["memory_budget"]),
    (frames.alloc_bench, ("heap", 256), {"memory_budget": HUGE}, ValueError, ["memory_budget"]),
    (frames.coroutines, ("nope",), {}, ValueError, ["variant", "conn256"]),
    (frames.coroutines, (None,), {}, TypeError, ["variant"]),
    (frames.coroutines, ("empty", "malloc"), {}, ValueError, ["allocator"]),
    (frames.coroutines, ("empty",), {"n": 0}, ValueError, ["n must"]),
    (frames.coroutines, ("empty",), {"n": 1.5}, TypeError, ["n must", "integer"]),
    (frames.coroutines, ("empty",), {"n": 10, "batch": 0}, ValueError, ["batch"]),
    (frames.coroutines, ("empty",), {"n": 10, "batch": 11}, ValueError, ["batch", "at most n"]),
    (frames.coroutines, ("array_alive",), {"n": MILLION}, ValueError, ["n must", "memory_budget"]),
    (frames.coroutines, ("empty",), {"release_pool": 1}, TypeError, ["release_pool"]),
    (frames.stackful, (100,), {}, ValueError, ["stack_size"]),
    (frames.stackful, ("64k",), {}, TypeError, ["stack_size", "integer"]),
    (frames.stackful, (65536,), {"touched": 1}, TypeError, ["touched"]),
    (frames.stackful, (65536,), {"n": 0}, ValueError, ["n must"]),
    (frames.stackful, (65536,), {"n": MILLION, "guard": True}, ValueError,
     ["guard", "max_map_count"]),
    (frames.stackful, (65536,), {"guard": "yes"}, TypeError, ["guard"]),
    (frames.stackful, (65536,), {"memory_budget": -1}, ValueError, ["memory_budget"]),
    (frames.copy_stack, (-1,), {}, ValueError, ["stack_in_use"]),
    (frames.copy_stack, ("8",), {}, TypeError, ["stack_in_use", "integer"]),
    (frames.copy_stack, (8,), {"n": 0}, ValueError, ["n must"]),
    (frames.copy_stack, (8,), {"build": "O7"}, ValueError, ["build"]),
    (frames.pool_reuse, (0,), {"n": 10}, ValueError, ["pool_size"]),
    (frames.pool_reuse, (11,), {"n": 10}, ValueError, ["pool_size", "at most n"]),
    (frames.pool_reuse, (1.5,), {}, TypeError, ["pool_size", "integer"]),
    (frames.pool_reuse, (10,), {"n": 0}, ValueError, ["n must"]),
    (frames.pool_reuse, (10,), {"n": 100, "repeats": 0}, ValueError, ["repeats"]),
    (frames.pool_reuse, (10,), {"n": 100, "memory_budget": 0}, ValueError, ["memory_budget"]),
    (frames.frame_sizes, ("O2",), {}, TypeError, ["builds"]),
    (frames.frame_sizes, (["O7"],), {}, ValueError, ["build"]),
]


@pytest.mark.parametrize("fn, args, kwargs, exc, words", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_names_the_parameter(fn, args, kwargs, exc, words):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


def test_a_suspended_copy_stack_coroutine_keeps_its_used_stack():
    # What each keeps is its used stack, exactly: 4 KiB more in use is 4 KiB more saved.
    small = frames.copy_stack(0, n=5000).iloc[0]
    large = frames.copy_stack(4096, n=5000).iloc[0]
    assert large.saved_bytes_per_object - small.saved_bytes_per_object == 4096
    assert small.saved_bytes_per_object > 0  # frames and registers
    scaled = frames.copy_stack(4096, n=1000, memory_budget=1 << 20).iloc[0]
    assert scaled.scaled and scaled.n < scaled.n_requested
