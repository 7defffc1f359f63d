"""Net figures (labkit.core.stats: floor_net, net, share, net_text): a loop's time less
its baseline's is never shown negative; where its interval reaches zero it is "below
resolution", with the bound; shares stay within [0, 1]. Synthetic numbers only."""
import numpy as np
import pandas as pd
import pytest

import labkit
from labkit.core import stats


def test_floor_net_never_gives_a_negative_number():
    assert stats.floor_net(10.0, 12.5) == (0.0, True)
    assert stats.floor_net(12.5, 10.0) == (2.5, False)
    net, below = stats.floor_net(np.array([1.0, 5.0, 3.0]), np.array([2.0, 1.0, 3.0]))
    assert list(net) == [0.0, 4.0, 0.0] and list(below) == [True, False, True]


@pytest.mark.parametrize("seed", range(20))
def test_net_of_any_paired_samples_is_never_negative(seed):
    rng = np.random.default_rng(seed)
    raw = rng.normal(100, 30, 11)
    base = raw + rng.normal(-rng.uniform(-5, 5), 10, 11)  # differences of either sign
    n = stats.net(raw, base, per=32)
    assert 0 <= n["low"] <= n["median"] <= n["high"]
    assert n["bound"] >= 0
    assert not stats.net_text(n).startswith("-") and "[-" not in stats.net_text(n)


def test_a_negative_difference_is_below_resolution_with_a_positive_bound():
    # Raw 13.8 against a baseline of 16.1: the loop measured faster than its baseline.
    n = stats.net([13.8, 13.9, 13.7, 14.0], [16.1, 16.0, 16.3, 16.2])
    assert n["median"] == 0 and n["low"] == 0 and n["high"] == 0
    assert not n["resolved"] and n["bound"] > 0
    assert stats.net_text(n).startswith("below resolution (< ")
    assert n["raw"] == pytest.approx(13.85) and n["baseline"] == pytest.approx(16.15)


def test_an_interval_reaching_zero_is_below_its_upper_end():
    n = stats.net([10, 11, 12, 13, 14], [11, 11, 11, 11, 11])
    assert not n["resolved"] and n["bound"] == pytest.approx(2.0)
    assert stats.net_text(n) == "below resolution (< 2 ns)"


def test_a_resolved_net_is_its_median_and_quartiles():
    n = stats.net([20, 21, 22, 23, 24], [10, 10, 10, 10, 10], per=2)
    assert n["resolved"] and n["median"] == pytest.approx(6.0)
    assert stats.net_text(n) == "6 [5.5, 6.5] ns"


def test_share_stays_within_0_and_1():
    s = stats.share([100, 100, 100], [120, 130, 110])      # work-only longer than total
    assert s["median"] == s["low"] == s["high"] == 0 and not s["resolved"]
    s = stats.share([100, 100, 100], [-5, 0, -10])          # nonsense below: still <= 1
    assert s["high"] <= 1
    s = stats.share([100, 110, 120], [85, 90, 100])
    assert s["resolved"] and 0 < s["low"] <= s["median"] <= s["high"] < 1
    assert stats.net_text(s, "%", scale=100).endswith("%")


@pytest.mark.parametrize("call, words", [
    (lambda: stats.net([1, 2], [1]), "same length"),
    (lambda: stats.net([], []), "same length"),
    (lambda: stats.net([1.0, float("nan")], [1, 1]), "NaN"),
    (lambda: stats.net([1], [1], per=0), "per must"),
    (lambda: stats.net([1], [1], per=True), "per must"),
    (lambda: stats.share([0, 1], [0, 0]), "total must"),
    (lambda: stats.share([1], [1, 2]), "same length"),
    (lambda: stats.floor_net(float("nan"), 1.0), "NaN"),
])
def test_bad_input_names_the_parameter(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_noise_warnings_never_print_a_negative_percentage():
    # A net that hovers around zero has a negative mean: its std is still a size.
    df = pd.DataFrame({"entry": "pool", "ns_per_switch": [-3.0, 1.0, -2.0, 0.5]})
    warnings = labkit.noise_warnings(labkit.summarize(df))
    assert len(warnings) == 1
    assert "is -" not in warnings[0] and "% of the mean" in warnings[0]
