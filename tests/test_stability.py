"""The stability command: agreement across runs, and a tiny quick run end to end."""
import pandas as pd
import pytest

from labkit.lab import stability


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
        stability.main(["--runs", "0", "--quick", "--only", "06_fp_state_and_return"])


def test_a_tiny_quick_stability_run(tmp_path, capsys, monkeypatch):
    # A relative --out, as a user types it (the kernels run in notebooks/, elsewhere).
    monkeypatch.chdir(tmp_path.parent)
    assert stability.main(["--runs", "2", "--quick", "--only", "06_fp_state_and_return",
                           "--out", tmp_path.name]) == 0
    printed = capsys.readouterr().out
    assert "claims keep the same verdict over 2 runs" in printed
    table = pd.read_csv(tmp_path / "stability.csv")
    row = table.set_index("claim_id").loc["C002.3"]
    assert row["run 1"] != "not-measured" and row["run 2"] != "not-measured"
    assert (tmp_path / "run-2" / "data" / "06_fp_state_and_return_verdict_runs.csv").exists()
    # The analysis is reproducible: the verdicts recompute from what the run saved.
    from labkit.lab import claim_rules

    saved = pd.read_csv(tmp_path / "run-1" / "data" / "06_fp_state_and_return_verdicts.csv",
                        dtype=str).fillna("").set_index("claim_id")
    for claim_id in ("C002.3", "C000.6"):
        again = claim_rules.recompute(claim_id, tmp_path / "run-1" / "data")
        assert (again["verdict"], again["original_verdict"], again["measured_value"]) == \
            tuple(saved.loc[claim_id, ["verdict", "original_verdict", "measured_value"]])
