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


def test_the_readable_table_has_six_columns_in_words_and_says_the_lean():
    r = view.readable(_table())
    assert tuple(r.columns) == view.COLUMNS
    assert r["what it says"].iloc[0] == claims.claim("C000.2")["claim"]
    assert list(r.verdict) == ["contradicted", "inconclusive, leaning reproduced"]
    assert r["measured here"].iloc[0] == "1 [0.96, 1.04]"


def test_the_view_folds_the_full_table_under_the_readable_one():
    v = view.show(_table())
    page = v._repr_html_()
    readable_at, folded_at = page.index("what it says"), page.index("<details>")
    assert readable_at < folded_at and "processes" in page[folded_at:]
    assert "processes" not in page[:folded_at]
    assert v.full is not None and "C000.3" in repr(v)
