"""The idle-process experiment: its ABBA order, its paired ratio, its checks, and one small
run beside a sleeping process that it stops and resumes. No timing thresholds: the ratios
are only checked to be ratios with their interval around them."""
import contextlib
import os
import subprocess

import psutil
import pytest

from labkit.experiments import idle_cost


def test_abba_alternates_which_condition_opens_a_pair():
    assert idle_cost.abba(3) == ["without", "with", "with", "without", "without", "with"]
    for blocks in (2, 5, 10):
        order = idle_cost.abba(blocks)
        assert order.count("with") == order.count("without") == blocks
        assert all({order[i], order[i + 1]} == {"with", "without"} for i in range(0, len(order), 2))


def test_paired_ratio_of_blocks():
    ratio, lo, hi = idle_cost.paired_ratio([1.09, 1.11, 1.10, 1.12, 1.08])
    assert lo < 1.10 < hi and lo > 1.0
    ratio, lo, hi = idle_cost.paired_ratio([0.95, 1.05, 0.97, 1.03])
    assert lo < 1.0 < hi
    with pytest.raises(ValueError, match="pair_ratios"):
        idle_cost.paired_ratio([1.0])


@contextlib.contextmanager
def _sleeper(seen: list):
    proc = subprocess.Popen(["sleep", "600"])
    seen.append(proc.pid)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"blocks": 0}, ValueError, "blocks"), ({"blocks": 2.5}, TypeError, "blocks"),
    ({"repeats": 1}, ValueError, "repeats"), ({"switches": 3}, ValueError, "switches"),
    ({"futex_switches": 0}, ValueError, "futex_switches"), ({"cpu": None}, ValueError, "cpu"),
    ({"cpu": 10_000}, ValueError, "cpu"),
])
def test_bad_input_is_refused_before_anything_starts(kwargs, error, match):
    seen = []
    with pytest.raises(error, match=match):
        idle_cost.idle_process_cost(lambda: _sleeper(seen), **kwargs)
    assert not seen


def test_start_must_be_what_starts_the_process():
    with pytest.raises(TypeError, match="start"):
        idle_cost.idle_process_cost(os.getpid())


def test_a_small_run_beside_a_sleeping_process():
    seen = []
    out = idle_cost.idle_process_cost(lambda: _sleeper(seen), blocks=2, repeats=3,
                                      cpu=sorted(os.sched_getaffinity(0))[0],
                                      switches=20_000, futex_switches=2_000)
    assert sorted(out.entry) == sorted(idle_cost.KERNELS)
    assert ((out.ci95_low <= out.ratio_with_to_without)
            & (out.ratio_with_to_without <= out.ci95_high)).all()
    assert (out.idle_switches_per_s >= 0).all() and (out.idle_cpu_share >= 0).all()
    raw = out.attrs["raw"]
    assert len(raw) == 2 * 2 * 2 * 3  # pairs x conditions x kernels x repeats
    assert set(raw.groupby(["block", "condition"]).size()) == {6}
    assert not psutil.pid_exists(seen[0]) or psutil.Process(seen[0]).status() == "zombie"
