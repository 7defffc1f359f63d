"""The workload experiment (labkit.experiments.workload) in quick mode: every design here
runs and counts every switch; memory grows with N and with the bytes in use; bad input is
refused naming the parameter. No timing thresholds."""
import pytest

from labkit.experiments import workload as wl

DESIGNS = wl.available()
QUICK = dict(work_cycles=100, stack_in_use=256, switches_per_request=2, requests=50, repeats=2)


def test_the_kinds_are_there():
    # the lab's kernels, C++ peers where built, and Python's own designs
    assert {"asm", "asm_fpu", "ucontext", "copy_stack", "libco_design", "stackless"} <= set(DESIGNS)
    assert {"greenlet_switch", "asyncio_task"} <= set(DESIGNS)


@pytest.mark.parametrize("design", DESIGNS)
def test_every_switch_is_counted(design):
    df = wl.run_workload(design, alive=8, **QUICK)
    assert len(df) == 2
    assert (df.counted_switches == df.switches).all()
    assert (df.switches == 2 * 50 * 2).all()
    assert (df.steps_counted == 100).all()
    assert (df.ns_per_switch >= 0).all() and (df.ns_per_request > 0).all()
    assert {"machine_id", "cpu_model", "sw_context_switches", "rss_bytes_per_coroutine",
            "page_table_bytes", "mappings_added"} <= set(df.columns)


@pytest.mark.parametrize("design", [d for d in DESIGNS if wl._own_stacks(d)])
def test_resident_memory_grows_with_alive(design):
    small = wl.run_workload(design, alive=100, **{**QUICK, "repeats": 1})
    big = wl.run_workload(design, alive=5000, **{**QUICK, "repeats": 1})
    # each started coroutine commits at least the page at its stack's top
    assert big.rss_bytes.iloc[0] - small.rss_bytes.iloc[0] >= 4900 * 4096
    assert big.guard_pages.iloc[0] and big.mappings_added.iloc[0] >= 2 * 5000


def test_bytes_in_use_are_touched():
    # stacks reserved, untouched but for what the coroutine uses: 16 KiB in use commits
    # about four pages more per coroutine than none
    none = wl.run_workload("asm_fpu", alive=2000, **{**QUICK, "stack_in_use": 0, "repeats": 1})
    used = wl.run_workload("asm_fpu", alive=2000, **{**QUICK, "stack_in_use": 16384, "repeats": 1})
    assert used.rss_bytes_per_coroutine.iloc[0] - none.rss_bytes_per_coroutine.iloc[0] >= 3 * 4096
    sl = wl.run_workload("stackless", alive=2000, **{**QUICK, "stack_in_use": 16384, "repeats": 1})
    assert sl.rss_bytes_per_coroutine.iloc[0] >= 3 * 4096


def test_copy_stack_copies_what_is_in_use():
    df = wl.run_workload("copy_stack", alive=4, **{**QUICK, "stack_in_use": 4096})
    assert (df.copied_bytes_per_switch >= 4096 / 2).all()


def test_no_guard_pages_past_the_mapping_limit():
    n = 40_000  # 80,000 guarded mappings would pass vm.max_map_count = 65530
    assert not wl.guard_pages(n)
    df = wl.run_workload("asm", alive=n, **{**QUICK, "stack_in_use": 0, "repeats": 1})
    assert not df.guard_pages.iloc[0] and df.mappings_added.iloc[0] < 10
    with pytest.raises(ValueError, match="guard"):
        wl.run_workload("asm", alive=n, guard=True, **QUICK)


def test_a_million_stackless_coroutines():
    df = wl.run_workload("stackless", alive=1_000_000, **{**QUICK, "stack_in_use": 64,
                                                          "requests": 10_000, "repeats": 1})
    assert (df.counted_switches == df.switches).all()
    assert df.rss_bytes.iloc[0] >= 1_000_000 * 64


@pytest.mark.parametrize("kw, err, name", [
    (dict(design="asm", work_cycles=-1), ValueError, "work_cycles"),
    (dict(design="asm", work_ns=-5.0), ValueError, "work_ns"),
    (dict(design="asm", work_ns=5, work_cycles=5), TypeError, "work_ns"),
    (dict(design="asm", alive=0), ValueError, "alive"),
    (dict(design="nope"), ValueError, "design"),
    (dict(design=3), TypeError, "design"),
    (dict(design="asm", stack_in_use=70_000), ValueError, "stack_in_use"),
    (dict(design="asm", stack_size=8192, stack_in_use=8000), ValueError, "stack_in_use"),
    (dict(design="stackless", stack_size=65536), ValueError, "stack_size"),
    (dict(design="asm", switches_per_request=0), ValueError, "switches_per_request"),
    (dict(design="asm", requests=0), ValueError, "requests"),
    (dict(design="asm", alive=2.5), TypeError, "alive"),
])
def test_bad_input_names_the_parameter(kw, err, name):
    args = {"alive": 4, "work_cycles": 0, "stack_in_use": 0, "switches_per_request": 1,
            "requests": 10}
    if "work_ns" in kw:
        args.pop("work_cycles")
    args.update(kw)
    with pytest.raises(err, match=name):
        wl.run_workload(args.pop("design"), **args)


def test_a_point_over_fresh_processes_gives_intervals():
    from labkit.lab.judging import engine

    runs = wl.measure_point(["asm_fpu", "stackless"], processes=2, repeats=2, work_cycles=0,
                            alive=4, stack_in_use=0, switches_per_request=1, requests=200)
    assert runs.worker.nunique() == 2 and runs.worker_pid.nunique() == 2
    assert set(runs.side) == {"asm_fpu", "stackless"}
    per = wl.per_process(runs)
    assert per.equals(engine.per_process(runs, "ns_per_request"))
    s = wl.summary(runs).set_index("design")
    assert (s.ns_per_request_low <= s.ns_per_request).all()
    assert (s.ns_per_request <= s.ns_per_request_high).all()
    assert (s.ns_per_switch_low >= 0).all()


@pytest.mark.parametrize("design", [d for d in DESIGNS if wl._own_stacks(d)])
def test_the_depth_of_the_bytes_in_use_holds_them_and_what_sits_above(design):
    from labkit.core import entries

    df = wl.run_workload(design, alive=2, **{**QUICK, "stack_in_use": 1024, "repeats": 1})
    depth = df.stack_depth_bytes.iloc[0]
    # whole lines in use below whatever the design keeps at the top of its stack
    assert depth >= 1024 + entries.frame_bytes(design) and depth % 64 == 0
    assert depth < 1024 + 4096
    assert wl.run_workload(design, alive=2, **{**QUICK, "stack_in_use": 0, "repeats": 1}
                           ).stack_depth_bytes.isna().all()
