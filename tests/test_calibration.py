"""The verdict engine against measurements with a known truth (labkit.lab.judging.calibration):
wrong decided verdicts stay at or below the stated error rate, and the design it
replaced does not."""
import pytest

from labkit.core import sequential
from labkit.lab.judging import calibration

RUNS = 1000
OLD_RUNS = 150


@pytest.fixture(scope="module")
def new():
    return calibration.run(calibration.new_design, RUNS).set_index("scenario")


def test_wrong_verdicts_stay_within_the_stated_error_rate(new):
    # The allowance is Monte-Carlo error only: 2.58 standard errors of a 5% rate.
    limit = sequential.ALPHA + calibration.tolerance(RUNS)
    assert (new.wrong <= limit).all(), new


def test_the_engine_decides_when_the_truth_is_away_from_a_bound(new):
    # Calibration that never decides would pass the test above by saying nothing.
    for s in ("inside reproduced", "in the gap", "inside contradicted"):
        assert new.loc[s, "right"] >= 0.9, new
    # At a bound a 95% interval straddles it most of the time, and says so.
    assert new.loc["on the reproduced bound", "inconclusive"] >= 0.5


def test_the_replaced_design_fails_the_same_test():
    old = calibration.run(calibration.old_design, OLD_RUNS).set_index("scenario")
    limit = sequential.ALPHA + calibration.tolerance(OLD_RUNS)
    assert (old.wrong > limit).any(), old


def test_truth_regions():
    assert calibration.truth_region(1.5) == "reproduced"
    assert calibration.truth_region(1.1) == "in-between"
    assert calibration.truth_region(1.0999) == "contradicted"
