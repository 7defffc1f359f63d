"""The verdict paths on synthetic data: one side of a bound, a straddle, missing data,
noise flagged, amendments judged beside the original rule, and bootstrap intervals."""
import math

import numpy as np
import pytest

from labkit.core import stats

from labkit.lab.judging import claims, rule_expr, verdicts


def test_an_interval_on_one_side_decides():
    # C002.3: reproduced if x >= 2; contradicted if x < 1.2.
    assert verdicts.judge("C002.3", 3.0, low=2.5, high=3.5)["verdict"] == "reproduced"
    assert verdicts.judge("C002.3", 1.0, low=0.9, high=1.1)["verdict"] == "contradicted"


def test_a_straddle_is_inconclusive_and_names_the_bound_and_distance():
    row = verdicts.judge("C002.3", 2.1, low=1.8, high=2.4)
    assert row["verdict"] == "inconclusive"
    assert "bound 2 of `x >= 2`" in row["note"]
    assert "0.2 below it, 0.4 above" in row["note"]


def test_wholly_between_the_regions_is_decided_in_between():
    # C002.3: reproduced if x >= 2; contradicted if x < 1.2: 1.5 is a smaller effect.
    row = verdicts.judge("C002.3", 1.5, low=1.4, high=1.6)
    assert row["verdict"] == "in-between" and not row["straddle"]
    assert row["note"].startswith("weaker than claimed") and "bound 2" in row["note"]
    # C003.2: reproduced if 2 <= x <= 8; contradicted if x < 1 or x > 16: 9.8 is larger.
    row = verdicts.judge("C003.2", 9.8, low=9.4, high=10.5)
    assert row["verdict"] == "in-between" and row["note"].startswith("stronger than claimed")
    # C004.1b: a memory ratio of 0.9 against a claimed 0.6-0.85 is a weaker saving.
    row = verdicts.judge("C004.1b", 0.9, low=0.89, high=0.91)
    assert row["verdict"] == "in-between" and row["note"].startswith("weaker")


def test_a_straddle_says_which_way_it_leans():
    row = verdicts.judge("C002.3", 2.1, low=1.8, high=2.4)  # reaches 2 from the gap
    assert (row["lean"], row["verdict"]) == ("not contradicted", "inconclusive")
    assert "x >= 2" in row["straddle"]
    row = verdicts.judge("C002.3", 1.2, low=1.1, high=1.3)  # reaches 1.2 from the gap
    assert row["lean"] == "not reproduced" and "x < 1.2" in row["straddle"]
    row = verdicts.judge("C002.3", 1.8, low=1.0, high=3.0)  # both bounds
    assert row["lean"] == "either way" and row["note"].startswith("leans either way")
    assert verdicts.judge("C002.3", 3.0, low=2.5, high=3.5)["lean"] == ""


def test_missing_data_is_not_measured_and_says_what_is_missing():
    row = verdicts.judge("C002.3", math.nan, low=math.nan, high=math.nan)
    assert row["verdict"] == "not-measured" and "missing data" in row["note"]
    nan = {"mem": 0.7, "tps": math.nan}
    row = verdicts.judge("C004.2", nan, low=nan, high=nan)
    assert row["verdict"] == "not-measured" and "tps" in row["note"]


def test_a_missing_system_is_not_measured_never_inconclusive():
    row = verdicts.cannot_measure("C001.3", "install liburing-dev")
    assert row["verdict"] == row["original_verdict"] == "not-measured"
    assert verdicts.cannot_measure("C003.1", "AArch64")["verdict"] == "not-applicable-here"


def test_one_failing_part_refutes_a_two_part_claim_under_its_amendment():
    part = {"mem": 0.95, "tps": math.nan}
    row = verdicts.judge("C004.2", part, low=part, high=part)
    assert row["verdict"] == "contradicted"
    assert row["original_verdict"] == "not-measured"  # 'and' in the original rule


def test_noise_is_flagged_not_a_veto():
    row = verdicts.judge("C002.3", 3.0, low=2.5, high=3.5, noisy=True)
    assert row["verdict"] == "reproduced" and row["noisy"] is True
    assert "noisy" in row["note"]
    with pytest.raises(TypeError, match="noisy"):
        verdicts.judge("C002.3", 3.0, noisy="yes")


def test_every_corner_of_named_intervals_must_hold():
    value = {"x": 100.0, "coroutine_ns": 2.0, "thread_ns": 600.0}
    low = {"x": 90.0, "coroutine_ns": 1.9, "thread_ns": 450.0}  # thread_ns straddles 500
    high = {"x": 110.0, "coroutine_ns": 2.1, "thread_ns": 700.0}
    row = verdicts.judge("C001.4", value, low=low, high=high)
    assert row["verdict"] == "inconclusive" and "thread_ns" in row["note"]


def test_an_amendment_keeps_the_original_rule_beside_it():
    a = claims.amendments()
    assert {"C000.4", "C002.4", "C004.2", "C000.7"} <= set(a.claim_id)
    assert (a.reason.str.len() > 40).all() and (a.misreading.str.len() > 10).all()
    original = claims.claim("C002.4", original=True)
    amended = claims.claim("C002.4")
    assert original["reproduced_if"] != amended["reproduced_if"]
    # An upper bound inside the claimed range confirms under the original rule only.
    row = verdicts.judge("C002.4", 201.0, low=150.0, high=330.0)
    assert row["original_verdict"] == "reproduced"
    assert row["verdict"] == "in-between" and "only contradict" in row["note"]
    assert verdicts.judge("C002.4", 30.0, low=20.0, high=40.0)["verdict"] == "contradicted"
    # A different measured quantity under the original rule.
    row = verdicts.judge("C000.4", 1.2, low=1.1, high=1.3,
                         original={"value": 0.74, "low": 0.72, "high": 0.76})
    assert (row["verdict"], row["original_verdict"]) == ("reproduced", "contradicted")
    assert row["rule"].startswith("amended ")


def test_every_rule_of_the_registry_and_amendments_parses():
    c = claims.registry()
    for cid in c.claim_id:
        for original in (True, False):
            k = claims.claim(cid, original=original)
            for rule in (k["reproduced_if"], k["contradicted_if"]):
                assert rule == "never" or rule_expr.parse(rule), (cid, rule)


def test_ratio_interval_is_a_bootstrap_that_narrows_with_repeats():
    rng = np.random.default_rng(7)
    widths = []
    for n in (8, 32, 128):
        a, b = rng.normal(10, 1, n), rng.normal(5, 0.5, n)
        r, lo, hi = verdicts.ratio_with_spread(a, b)
        assert lo <= r <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]
    # Deterministic: the same data give the same interval (the recomputation test needs it).
    a, b = rng.normal(10, 1, 9), rng.normal(5, 0.5, 9)
    assert verdicts.ratio_with_spread(a, b) == verdicts.ratio_with_spread(a, b)


def test_ratio_edge_cases():
    r, lo, hi = verdicts.ratio_with_spread([4, 5, 6], [-1, 0, 1])
    assert math.isnan(r) and (lo, hi) == (-math.inf, math.inf)
    assert verdicts.ratio_with_spread([3.0], [1.0]) == (3.0, -math.inf, math.inf)
    assert verdicts.ratio_with_spread([2.0, 2.0, 2.0], [1.0, 1.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="a must"):
        verdicts.ratio_with_spread([], [1.0])
    with pytest.raises(TypeError, match="b must"):
        verdicts.ratio_with_spread([1.0], object())
    with pytest.raises(ValueError, match="confidence"):
        verdicts.ratio_with_spread([1.0, 2.0], [1.0, 2.0], confidence=2.0)


def test_difference_interval():
    rng = np.random.default_rng(3)
    a, b = rng.normal(300, 20, 20), rng.normal(100, 10, 20)
    d, lo, hi = verdicts.difference_with_spread(a, b)
    assert lo <= d <= hi and lo > 100


def test_stats_helpers():
    assert stats.quartiles([1, 2, 3, 4, 5]) == (3.0, 2.0, 4.0)
    assert stats.is_noisy([1, 2, 3]) and not stats.is_noisy([100, 101, 99])
    assert not stats.is_noisy([5.0])
    with pytest.raises(ValueError, match="values"):
        stats.quartiles([])


def test_every_claim_is_judged_by_a_notebook_there_is():
    # A split notebook's claims keep their registered name and go to one part each.
    from labkit.lab.running import reproduce

    c = claims.registry()
    there = {p.stem for p in reproduce.notebook_sources()}
    assert set(c.notebook) <= there, sorted(set(c.notebook) - there)
    from labkit.lab import experiment

    parts = [e for e in experiment.RECORDS.values() if e.registered_as]
    assert (c.experiment == c.notebook).sum() == len(c) - sum(len(e.judges) for e in parts)
    for old in {e.registered_as for e in parts}:
        registered = set(c.claim_id[c.experiment == old])
        handed = [i for e in parts if e.registered_as == old for i in e.judges]
        assert sorted(handed) == sorted(registered), old


def test_a_claim_of_a_split_notebook_left_without_a_part_is_an_error(monkeypatch):
    import dataclasses

    from labkit.lab import experiment

    part = experiment.FRAMES_AND_ALLOCATORS
    monkeypatch.setitem(experiment.RECORDS, part.name, dataclasses.replace(
        part, judges=tuple(i for i in part.judges if i != "C004.3")))
    with pytest.raises(ValueError, match="C004.3.*judges"):
        claims.registry()


def test_an_interval_through_the_claimed_region_is_not_contradicted_by_its_ends():
    # C000.4 (amended): reproduced if 1.05 <= x <= 1.5; contradicted if x < 1.0 or x > 3.0.
    # Both ends lie in the contradicted region, the middle in the claimed one.
    row = verdicts.judge("C000.4", 3.6, low=0.5, high=26.0)
    assert row["verdict"] == "inconclusive" and row["lean"] == "either way"
    assert verdicts.judge("C000.4", 3.6, low=3.1, high=26.0)["verdict"] == "contradicted"
