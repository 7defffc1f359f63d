"""The measurement design: interleaved rounds over fresh workers, and the stopping rule."""
import functools

import pandas as pd
import pytest

import labkit
from labkit.experiments import design


def test_plan_gives_every_entry_its_repeats_interleaved():
    calls = design.plan(["a", "b"], repeats=9, workers=3)
    got = pd.DataFrame(calls)
    assert got.groupby("label").repeats.sum().to_dict() == {"a": 9, "b": 9}
    assert set(got.worker) == {0, 1, 2}
    # Every round visits both entries, and the leading side alternates.
    assert (got.groupby("round").label.nunique() == 2).all()
    leaders = got[got.position == 0].label
    assert set(leaders) == {"a", "b"}


def test_shuffled_plan_is_seeded():
    a = design.plan(list("abc"), repeats=12, workers=2, order="shuffle", seed=1)
    b = design.plan(list("abc"), repeats=12, workers=2, order="shuffle", seed=1)
    assert a == b
    assert len({tuple(c["label"] for c in a if c["round"] == r) for r in range(4)}) > 1


@pytest.mark.parametrize("kwargs, err", [
    ({"repeats": 0}, ValueError), ({"workers": 99}, ValueError),
    ({"order": "aabb"}, ValueError), ({"repeats": 2.0}, TypeError),
])
def test_plan_rejects_bad_input(kwargs, err):
    args = {"repeats": 4, "workers": 2, **kwargs}
    with pytest.raises(err, match=next(iter(kwargs))):
        design.plan(["a", "b"], **args)


def test_interleaved_runs_in_fresh_workers():
    entries = {k: functools.partial(labkit.measure, k, switches=10_000, warmup=0)
               for k in ("asm", "asm_fpu")}
    df = design.interleaved(entries, repeats=4, workers=2)
    assert df.groupby("entry").size().to_dict() == {"asm": 4, "asm_fpu": 4}
    assert sorted(df[df.entry == "asm"].repeat) == [0, 1, 2, 3]
    # Two workers, two different processes.
    assert df.groupby("worker").worker_pid.nunique().eq(1).all()
    assert df.worker_pid.nunique() == 2
    assert {"order", "round"} <= set(df.columns)
    with pytest.raises(TypeError, match="entries"):
        design.interleaved({"a": 3})


def test_stopping_rule_looks_at_most_twice():
    looks = []

    def run(repeats):
        looks.append(repeats)
        return pd.DataFrame({"entry": ["a"] * repeats, "repeat": range(repeats)})

    def straddling(frame):
        return "inconclusive", "x straddles the bound 2"

    frame, verdict, why, n = design.extend_if_straddling(run, straddling, repeats=5)
    assert (looks, n, len(frame)) == ([5, 10], 2, 15)
    assert sorted(frame.repeat) == list(range(15))
    looks.clear()
    frame, verdict, _, n = design.extend_if_straddling(
        run, lambda f: ("reproduced", ""), repeats=5, max_repeats=20)
    assert (looks, n, verdict) == ([5], 1, "reproduced")
    with pytest.raises(ValueError, match="max_repeats"):
        design.extend_if_straddling(run, straddling, repeats=5, max_repeats=3)


def test_measure_for_verdicts_extends_once_on_a_straddle(monkeypatch):
    calls = []

    def fake_interleaved(entries, *, repeats, **kw):
        calls.append(repeats)
        return pd.DataFrame({"entry": ["a"] * repeats + ["b"] * repeats,
                             "repeat": list(range(repeats)) * 2})

    monkeypatch.setattr(design, "interleaved", fake_interleaved)

    def straddling(frame):
        return {"claim_id": "C0", "verdict": "inconclusive", "note": "x straddles the bound 2"}

    frame, rows, looks = design.measure_for_verdicts({"a": None, "b": None}, [straddling],
                                                     repeats=4)
    assert (calls, looks) == ([4, 8], 2)
    assert "extended once" in rows[0]["note"] and "12 repeats" in rows[0]["note"]
    calls.clear()
    frame, rows, looks = design.measure_for_verdicts(
        {"a": None}, [lambda f: {"claim_id": "C0", "verdict": "reproduced", "note": ""}],
        repeats=4)
    assert (calls, looks) == ([4], 1) and rows[0]["note"] == "4 repeats per side, one look"
    with pytest.raises(TypeError, match="rules"):
        design.measure_for_verdicts({"a": None}, [], repeats=4)
