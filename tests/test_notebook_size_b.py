"""What the analysis modules of notebooks 07a, 07b, 08 and 09 read from the claims
registry (every notebook's size: tests/test_notebook_size_a.py, from the records)."""
import pytest

from labkit.lab.analysis import echo_servers, frames_allocators, switch_frequency
from labkit.lab.judging import claims


def test_figure_bounds_follow_the_rule_as_amended(monkeypatch):
    """08's throughput figure draws the bounds of C000.7's rule on the gain as it stands
    (labkit.lab.judging.claims.claim, amendments applied): an amendment reaches the figure, and
    the share ratio's bounds are never taken for the gain's."""
    rule = {"reproduced_if": "share_after/share_before <= 0.33 and gain >= 1.7",
            "contradicted_if": "share_after/share_before >= 0.8 or gain < 0.9"}
    monkeypatch.setattr(claims, "claim", lambda claim_id, original=False: rule)
    assert switch_frequency.rule_bounds("C000.7", "gain") == [
        ("reproduced", ">=", 1.7), ("contradicted", "<", 0.9)]
    assert switch_frequency.rule_bounds("C000.7", "share_before") == []


def test_the_committed_amendment_is_the_one_drawn():
    amended = claims.claim("C000.7")
    drawn = {b for _, _, b in switch_frequency.rule_bounds("C000.7", "gain")}
    assert drawn and all(f"gain >= {b:g}" in amended["reproduced_if"]
                         or f"gain < {b:g}" in amended["contradicted_if"] for b in drawn)


def test_claimed_figures_come_from_the_registry():
    c = switch_frequency.claimed()
    assert 0 < c["share_after"] < c["share_before"] < 1 and c["gain"] > 1
    ns = frames_allocators.claimed_ns()
    assert ns["heap"] > ns["pool"] > 0
    assert echo_servers.CLAIMED_ORDER[0] != echo_servers.CLAIMED_ORDER[-1]


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="claim_id"):
        echo_servers.why_not("C000.1")
    with pytest.raises(TypeError, match="order"):
        echo_servers.ordering(None, "cxx20_new")
