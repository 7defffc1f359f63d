"""Every committed verdict recomputed from the committed data and the written rules.

The notebooks' verdict cells call labkit.lab.claim_rules; this test calls the same functions
on data/*.csv as committed and compares with the committed ledger, data/00_claims_ledger.csv. Verdict files written
before the bootstrap method (no `method` column) cannot be recomputed by today's rules
and are skipped with that reason; after a full `make reproduce` every claim in
claim_rules.RULES must come out the same."""
import pandas as pd
import pytest

from labkit.lab import claim_rules, verdicts
from labkit.core.results import REPO

DATA = REPO / "data"


def _committed_rows():
    """The committed ledger's row of each claim (data/00_claims_ledger.csv): the
    headline, and the one place where C004.2 is judged from both notebooks' parts."""
    path = DATA / "00_claims_ledger.csv"
    if not path.exists():
        return {}
    ledger = pd.read_csv(path, dtype=str).fillna("")
    return {r.claim_id: r.to_dict() for _, r in ledger.iterrows()}


COMMITTED = _committed_rows()


@pytest.mark.parametrize("claim_id", sorted(claim_rules.RULES))
def test_committed_verdict_recomputes(claim_id):
    row = COMMITTED.get(claim_id)
    if row is None:
        pytest.skip(f"no committed verdict for {claim_id}")
    if row.get("method", "") != verdicts.METHOD:
        pytest.skip(f"{claim_id}'s committed verdict predates the {verdicts.METHOD} method: "
                    "recomputable after the next full make reproduce")
    again = claim_rules.recompute(claim_id, DATA)
    assert again is not None, f"{claim_id}: a data file it needs is missing from data/"
    assert (again["verdict"], again["original_verdict"]) == \
        (row["verdict"], row["original_verdict"]), claim_id
    assert again["measured_value"] == row["measured_value"], claim_id


def test_recompute_from_synthetic_data(tmp_path):
    # The same path on data we control: a clear ratio, a straddle, a missing file.
    import numpy as np

    rng = np.random.default_rng(0)
    runs = pd.DataFrame({
        "entry": ["asm_fxsave"] * 10 + ["asm_fpu"] * 10 + ["asm_xsave"] * 10,
        "ns_per_switch": np.r_[rng.normal(30, 0.5, 10), rng.normal(2, 0.05, 10),
                               rng.normal(60, 1, 10)],
    })
    runs.to_csv(tmp_path / "06_fp_state_and_return_verdict_runs.csv", index=False)
    row = claim_rules.recompute("C002.3", tmp_path)
    assert row["verdict"] == "reproduced"
    runs.loc[runs.entry == "asm_fxsave", "ns_per_switch"] = rng.normal(4, 0.6, 10)
    runs.to_csv(tmp_path / "06_fp_state_and_return_verdict_runs.csv", index=False)
    row = claim_rules.recompute("C002.3", tmp_path)
    assert row["verdict"] == "inconclusive" and "straddles" in row["note"]
    assert claim_rules.recompute("C000.3", tmp_path) is None  # its file is missing
    with pytest.raises(ValueError, match="claim_id"):
        claim_rules.recompute("C999.9", tmp_path)


def test_missing_entries_are_inconclusive_not_a_pass():
    runs = pd.DataFrame({"entry": ["O2"] * 3, "ns_per_switch": [1.0, 1.1, 1.2]})
    row = claim_rules.c000_3(runs)
    assert row["verdict"] == "inconclusive" and "O0" in row["note"]


def test_a_rule_on_another_column_finds_its_entries():
    runs = pd.DataFrame({"entry": ["yield k=0"] * 4 + ["yield k=1"] * 4,
                         "ns_per_switch": [float("nan")] * 8,
                         "units_per_s": [100, 101, 99, 100, 40, 41, 39, 40]})
    row = claim_rules.c002_2(runs)
    assert row["verdict"] == "reproduced", row
