"""Group-sequential critical values and the engine's interval over processes."""
import math

import numpy as np
import pandas as pd
import pytest

from labkit.core import sequential
from labkit.lab.judging import engine


def test_spending_reaches_alpha_at_the_cap_and_nothing_at_zero():
    assert sequential.obf_spending(0.0) == 0.0
    assert sequential.obf_spending(1.0) == pytest.approx(sequential.ALPHA)
    assert sequential.obf_spending(0.25) < sequential.obf_spending(0.5) < sequential.ALPHA


def test_boundaries_keep_the_error_over_all_looks():
    looks = (8, 16, 24, 32)
    z = sequential.z_boundaries(looks)
    assert z[0] > z[1] > z[2] > z[3] > 1.96  # O'Brien-Fleming: strict early, near 1.96 late
    # Brownian paths with no effect cross a boundary at some look with probability alpha.
    rng = np.random.default_rng(1)
    steps = rng.standard_normal((200_000, looks[-1]))
    sums = np.cumsum(steps, axis=1)[:, [n - 1 for n in looks]]
    crossed = (np.abs(sums / np.sqrt(looks)) >= np.array(z)).any(axis=1).mean()
    assert crossed == pytest.approx(sequential.ALPHA, abs=0.003)


def test_the_interval_is_over_processes_not_repeats():
    rng = np.random.default_rng(2)
    stats = rng.normal(0.1, 0.05, 16)
    m, lo, hi, c = sequential.interval(stats, (8, 16))
    assert lo < m < hi and c > 2.0
    # Sixteen processes give a narrower interval than eight.
    m8, lo8, hi8, _ = sequential.interval(stats[:8], (8, 16))
    assert hi8 - lo8 > hi - lo
    assert sequential.interval([0.1], (8, 16))[1] == -math.inf


def test_more_repeats_inside_a_process_do_not_narrow_a_process_effect():
    rng = np.random.default_rng(3)
    effects = rng.normal(0, 0.1, (16, 2))  # side-specific process effects

    def runs(repeats):
        rows = []
        for w in range(16):
            for side, label in enumerate(("a", "b")):
                for _ in range(repeats):
                    rows.append({"worker": w, "side": label, "ns_per_switch":
                                 (2.0 if label == "a" else 1.0) * math.exp(effects[w, side])})
        return pd.DataFrame(rows)

    widths = []
    for repeats in (2, 20):
        _, lo, hi, _ = sequential.interval(engine.log_ratios(runs(repeats), "a", "b"), (8, 16))
        widths.append(hi - lo)
    assert widths[0] == pytest.approx(widths[1])


@pytest.mark.parametrize("looks", [(), (8, 4), (1, 8), (8, 8), (4.0,)])
def test_bad_looks_are_refused(looks):
    with pytest.raises(ValueError, match="looks"):
        sequential.z_boundaries(tuple(looks))


def test_look_sizes():
    assert sequential.look_sizes(16, (8, 16, 24)) == [8, 16]
    assert sequential.look_sizes(20, (8, 16, 24)) == [8, 16, 20]  # stopped by the budget
    assert sequential.look_sizes(5, (8, 16)) == [5]
    assert sequential.look_sizes(1, (8, 16)) == []


def test_the_engine_decides_at_the_first_look_that_decides():
    rng = np.random.default_rng(4)
    big = {"x": np.log(3.0) + rng.normal(0, 0.02, 32)}
    row = engine.judge("C002.3", big, looks=(8, 16, 24, 32))
    assert row["verdict"] == "reproduced" and row["processes"] == 8
    near = {"x": np.log(2.0) + rng.normal(0, 0.05, 32)}  # on the bound: never decided
    row = engine.judge("C002.3", near, looks=(8, 16, 24, 32))
    assert row["verdict"] == "inconclusive" and row["processes"] == 32 and row["lean"]


def _abba_runs(rng, processes, passes, ratio, switch=0.1):
    """Two sides measured ABBA in a VM whose slow mode (twice the time, on both sides)
    comes and goes: before each call it flips with probability `switch`."""
    rows = []
    for w in range(processes):
        mode, pos = rng.choice([1.0, 2.0]), 0
        for k in range(passes):
            for label in (("a", "b") if k % 2 == 0 else ("b", "a")):
                if rng.random() < switch:
                    mode = 3.0 - mode
                base = ratio if label == "a" else 1.0
                rows.append({"worker": w, "side": label, "order": pos, "ns_per_switch":
                             base * mode * math.exp(rng.normal(0, 0.02))})
                pos += 1
    return pd.DataFrame(rows)


def test_paired_repeats_cancel_a_mode_that_comes_and_goes_inside_a_process():
    rng = np.random.default_rng(5)
    runs = _abba_runs(rng, 32, 8, 1.5)
    paired = engine.log_ratios(runs, "a", "b")
    t = engine.per_process(runs)
    of_medians = np.log(t["a"] / t["b"]).to_numpy()
    assert np.std(paired) < 0.5 * np.std(of_medians)
    assert np.median(paired) == pytest.approx(math.log(1.5), abs=0.02)


def test_pairs_follow_the_order_of_calls_not_of_rows():
    rng = np.random.default_rng(6)
    runs = _abba_runs(rng, 8, 4, 1.2, switch=0.3)
    shuffled = runs.sample(frac=1.0, random_state=1)
    assert np.allclose(engine.log_ratios(shuffled, "a", "b"), engine.log_ratios(runs, "a", "b"))


def test_a_pair_without_a_logarithm_is_left_out_and_a_missing_side_gives_nan():
    runs = pd.DataFrame({"worker": [0, 0, 0, 0, 1, 1], "side": ["a", "b", "b", "a", "a", "b"],
                         "order": [0, 1, 2, 3, 0, 1],
                         "ns_per_switch": [2.0, 1.0, -1.0, 4.0, -2.0, 1.0]})
    out = engine.log_ratios(runs, "a", "b")
    assert out[0] == pytest.approx(math.log(2.0)) and math.isnan(out[1])
    assert np.isnan(engine.log_ratios(runs, "a", "c")).all()
