"""The stability command: agreement across runs, and a tiny quick run end to end."""
import pandas as pd
import pytest

from labkit.lab import cli
from labkit.lab.judging import stability


def _ledger(verdicts):
    return pd.DataFrame({"claim_id": ["A", "B", "C"], "verdict": verdicts})


def test_agreement_counts_same_and_opposite_verdicts():
    t = stability.agreement([
        _ledger(["reproduced", "inconclusive", "not-measured"]),
        _ledger(["reproduced", "contradicted", "not-measured"]),
        _ledger(["reproduced", "reproduced", "not-measured"]),
    ])
    assert t.set_index("claim_id").agree.to_dict() == {"A": True, "B": False, "C": True}
    assert t.set_index("claim_id").opposite.to_dict() == {"A": False, "B": True, "C": False}
    # C was never measured: left out of the figure.
    assert stability.figure(t) == ("1 of 2 claims keep the same verdict over 3 runs; "
                                   "1 reach opposite verdicts")


def test_agreement_rejects_bad_input():
    with pytest.raises(TypeError, match="tables"):
        stability.agreement([])
    with pytest.raises(ValueError, match="tables"):
        stability.agreement([pd.DataFrame({"x": [1]})])
    with pytest.raises(SystemExit):
        cli.main(["stability", "--runs", "0", "--quick", "--only", "06_fp_state_and_return"])


def test_a_tiny_quick_stability_run(tmp_path, capsys, monkeypatch):
    # A relative --out, as a user types it (the kernels run in notebooks/, elsewhere).
    monkeypatch.chdir(tmp_path.parent)
    assert cli.main(["stability", "--runs", "2", "--quick", "--only", "06_fp_state_and_return",
                           "--out", tmp_path.name]) == 0
    printed = capsys.readouterr().out
    assert "claims keep the same verdict over 2 runs" in printed
    table = pd.read_csv(tmp_path / "stability.csv")
    row = table.set_index("claim_id").loc["C002.3"]
    assert row["run 1"] != "not-measured" and row["run 2"] != "not-measured"
    assert (tmp_path / "run-2" / "data" / "06_fp_state_and_return_verdict_runs.csv").exists()
    # The analysis is reproducible: the verdicts recompute from what the run saved.
    from labkit.lab.judging import rules

    saved = pd.read_csv(tmp_path / "run-1" / "data" / "06_fp_state_and_return_verdicts.csv",
                        dtype=str).fillna("").set_index("claim_id")
    for claim_id in ("C002.3", "C000.6"):
        again = rules.recompute(claim_id, tmp_path / "run-1" / "data")
        assert (again["verdict"], again["original_verdict"], again["measured_value"]) == \
            tuple(saved.loc[claim_id, ["verdict", "original_verdict", "measured_value"]])


def test_the_check_on_record_is_shown_only_beside_its_own_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    now = _ledger(["reproduced", "inconclusive", "contradicted"]).assign(
        measured_value=["2.0 [1.8, 2.2]", "1.2 [1.0, 1.4]", "0.9 [0.8, 1.0]"])
    table, text = stability.on_record(now)
    assert table is None and "no stability check" in text
    checked = stability.agreement([now, _ledger(["reproduced", "contradicted", "contradicted"]),
                                   now]).rename(columns={"run 1": stability.COMMITTED})
    checked[stability.MEASURED] = list(now.measured_value)
    (tmp_path / "data").mkdir(exist_ok=True)
    checked.to_csv(tmp_path / "data" / "stability.csv", index=False)
    table, text = stability.on_record(now)
    assert text == "2 of 3 claims keep the same verdict over 3 runs; 0 reach opposite verdicts"
    assert list(stability.moved(table).claim_id) == ["B"]
    other = now.assign(verdict=["reproduced", "reproduced", "contradicted"])
    table, text = stability.on_record(other)
    assert table is None and "earlier run" in text
    # The same verdicts from another run (other values) are not the run it checked.
    table, text = stability.on_record(now.assign(measured_value=["2.1 [1.9, 2.3]"] * 3))
    assert table is None and "earlier run" in text


def test_with_committed_needs_a_full_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="quick"):
        stability.run(1, quick=True, with_committed=True, out=tmp_path / "s")
    with pytest.raises(ValueError, match="make reproduce"):
        stability.run(1, with_committed=True, only=["06_fp_state_and_return"],
                      out=tmp_path / "s")
    with pytest.raises(SystemExit) as exc:
        cli.main(["stability", "--runs", "1", "--quick", "--with-committed"])
    assert exc.value.code == 2
