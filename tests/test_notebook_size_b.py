"""Notebooks 07a, 07b, 08 and 09 narrate, call labkit, plot and judge: each holds at most
60 lines of code (comments, markdown and blank lines aside); their analysis lives in
labkit.lab.analysis. Also what those modules read from the claims registry."""
from pathlib import Path

import pytest

from labkit.lab.analysis import echo_servers, frames_allocators, switch_frequency
from labkit.lab.judging import claims

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
MINE = ["07a_frames_and_allocators", "07b_coroutine_memory", "08_switch_frequency",
        "09_echo_servers"]
MAX_CODE_LINES = 60


def code_lines(text: str) -> int:
    """Lines that are neither blank nor comments (in jupytext's percent format, markdown
    cells are comments too)."""
    return sum(1 for line in text.splitlines()
               if line.strip() and not line.lstrip().startswith("#"))


def test_code_lines_counts_code_only():
    assert code_lines("# %% [markdown]\n# text\n\n# %%\nx = 1\n  # note\ny = 2  # why\n") == 2


@pytest.mark.parametrize("name", MINE)
def test_notebook_is_short(name):
    n = code_lines((NOTEBOOKS / f"{name}.py").read_text())
    assert n <= MAX_CODE_LINES, (f"{name} has {n} lines of code (at most {MAX_CODE_LINES}): "
                                 "move its analysis into labkit.lab.analysis")


@pytest.mark.parametrize("name", MINE)
def test_notebook_cites_the_registry_not_claims_md(name):
    text = (NOTEBOOKS / f"{name}.py").read_text()
    assert "CLAIMS.md" not in text
    assert "data/claims.csv" in text and "docs/sources.md" in text


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
