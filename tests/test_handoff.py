"""Kernel threads and processes: every hand-off happened (the harness's counters), the
kernel agrees it switched (its own counters), and nothing is left running afterwards,
even when a run fails."""
import os
from pathlib import Path

import pytest

import labkit
from labkit.core import handoff, worker

PAIR = handoff.two_cpus()


def _threads_and_children(pid):
    threads = len(os.listdir(f"/proc/{pid}/task"))
    children = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(p.name))
    return threads, children


@pytest.mark.parametrize("mode", labkit.HANDOFF_MODES)
def test_same_cpu_handoffs_are_switches_the_kernel_counted(mode):
    df = labkit.measure_handoff(mode, cpus=(0, 0), switches=2000, repeats=2)
    assert (df.counted_switches == 2000).all()
    assert (df.placement == "same-cpu").all()
    # The kernel's own counts: about one switch per hand-off, not far off either way.
    assert handoff.os_counts_agree(df).all(), df[["vol_ctxsw", "invol_ctxsw"]]


@pytest.mark.skipif(PAIR is None, reason="needs two CPUs for a cross-CPU wake-up")
@pytest.mark.parametrize("mode", labkit.HANDOFF_MODES)
def test_cross_cpu_handoffs_are_wakeups_the_kernel_counted(mode):
    df = labkit.measure_handoff(mode, cpus=PAIR, switches=1000, repeats=2)
    assert (df.placement == "cross-cpu").all()
    assert (df.counted_switches == 1000).all()
    # Each side blocks at most once per turn; fewer when the answer beats the sleep.
    assert handoff.os_counts_agree(df).all(), df[["vol_ctxsw", "invol_ctxsw"]]


@pytest.mark.parametrize("placement,per_handoff,agree", [
    ("same-cpu", 1.0, True), ("same-cpu", 0.2, False), ("same-cpu", 5.0, False),
    ("cross-cpu", 1.0, True), ("cross-cpu", 0.2, True), ("cross-cpu", 5.0, False),
    ("unpinned", 0.2, True), ("unpinned", 5.0, False),
])
def test_the_count_rule_follows_the_placement(placement, per_handoff, agree):
    import pandas as pd

    df = pd.DataFrame({"placement": [placement], "kernel_per_handoff": [per_handoff]})
    assert handoff.os_counts_agree(df).tolist() == [agree]


def test_nothing_is_left_running_even_after_a_failure():
    labkit.measure_handoff("process_pipe", cpus=(0, 0), switches=1000, repeats=1)
    pid = worker.shared_worker().pid
    assert pid is not None
    assert _threads_and_children(pid) == (1, [])
    # A run that fails inside C (the other side cannot pin itself) cleans up too.
    for mode in range(len(labkit.HANDOFF_MODES)):
        with pytest.raises(worker.WorkerError, match="pin"):
            worker.call("labkit.core.handoff", "worker_pingpong", mode=mode, cpu_a=0,
                        cpu_b=1023, rounds=100, warmup=0, repeats=1, describe="bad pin",
                        timeout=60)
    assert worker.shared_worker().pid == pid  # the worker survived
    assert _threads_and_children(pid) == (1, [])


def test_yield_often_costs_throughput_and_counts_switches():
    df = labkit.measure_yield(units=2000, every=[0, 1], repeats=1)
    by = df.set_index("every")
    assert (df.units_done == 4000).all()
    # Yielding after every unit: the kernel counts about one switch per yield.
    assert by.loc[1, "invol_ctxsw"] + by.loc[1, "vol_ctxsw"] >= 2000
    assert by.loc[0, "invol_ctxsw"] + by.loc[0, "vol_ctxsw"] < 2000


@pytest.mark.parametrize("kwargs,exc,word", [
    (dict(mode="fork"), ValueError, "mode"),
    (dict(mode=1), TypeError, "mode"),
    (dict(mode="thread_futex", cpus=(0,)), TypeError, "cpus"),
    (dict(mode="thread_futex", cpus=(0, 4096)), ValueError, "cpu"),
    (dict(mode="thread_futex", switches=3), ValueError, "switches"),
])
def test_bad_input(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        labkit.measure_handoff(**kwargs)


def test_bad_yield_input():
    with pytest.raises(ValueError, match="every"):
        labkit.measure_yield(every=[-1])
    with pytest.raises(ValueError, match="units"):
        labkit.measure_yield(units=0)
