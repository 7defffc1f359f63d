"""The verdict table as a learner reads it (labkit.lab.judging.view)."""
import pandas as pd

from labkit.lab.judging import claims, view


def _table():
    return pd.DataFrame([
        {"claim_id": "C000.2", "claimed_value": "5.45 (ratio)", "measured_value": "1 [0.96, 1.04]",
         "verdict": "contradicted", "lean": None, "rule": "reproduced if x >= 1.5",
         "note": "n", "processes": 16},
        {"claim_id": "C000.3", "claimed_value": "2", "measured_value": "1.4 [1.1, 1.9]",
         "verdict": "inconclusive", "lean": "reproduced", "rule": "r", "note": "",
         "processes": 96}])


def test_the_readable_table_has_its_columns_in_words_and_says_the_lean():
    r = view.readable(_table())
    assert tuple(r.columns) == view.COLUMNS
    assert r["what it says"].iloc[0] == claims.claim("C000.2")["claim"]
    assert list(r.verdict) == ["contradicted", "inconclusive, leaning reproduced"]
    assert r["measured here"].iloc[0] == "1 [0.96, 1.04]"


def test_the_view_folds_the_full_table_under_the_readable_one():
    v = view.show(_table())
    page = v._repr_html_()
    readable_at, folded_at = page.index("what it says"), page.index("<details>")
    assert readable_at < folded_at and "<th>fresh processes</th>" in page[folded_at:]
    assert "<th>fresh processes</th>" not in page[:folded_at]
    assert v.full is not None and "C000.3" in repr(v)


def test_each_row_draws_its_per_process_values_or_says_it_has_none():
    table = pd.concat([_table(), pd.DataFrame([{
        "claim_id": "C004.3", "claimed_value": "65536 (B)", "measured_value": "65,536 B",
        "verdict": "reproduced", "rule": "r", "note": "", "method": "exact"}])],
        ignore_index=True)
    values = {"C000.2": {"x": [0.97, 1.0, 1.02]}, "C000.3": None, "C004.3": None}
    v = view.show(table, values)
    page = v._repr_html_()
    readable = page[:page.index("<details>")]
    assert readable.count("<svg") == 1 and "3 fresh processes" in readable
    assert readable.count("no per-process values") == 2
    assert "an exact count" in readable and "its runs are not saved here" in readable
    assert list(v.readable[view.PER_PROCESS])[0].startswith("3 processes, median 1")
    assert "&lt;" not in readable.split("<svg")[1].split("</svg>")[0]  # drawn, not escaped


def test_by_default_the_values_are_the_saved_runs_of_each_measured_claim():
    v = view.show(_table())
    assert v.values["C000.2"] is not None and "<svg" in v._repr_html_()
    unmeasured = _table().assign(verdict="not-measured")
    assert view.per_process_values(unmeasured) == {"C000.2": None, "C000.3": None}
