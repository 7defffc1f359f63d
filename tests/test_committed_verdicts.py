"""Every committed verdict recomputed from the committed data and the written rules.

The notebooks' verdict cells call labkit.lab.judging.rules; this test calls the same functions
on data/*.csv as committed and compares with the committed ledger, data/00_claims_ledger.csv. Verdict files written
by an earlier method cannot be recomputed by today's rules and are skipped with that
reason; after a full `make reproduce` every claim in
rules.RULES must come out the same."""
import pandas as pd
import pytest

from labkit.core.results import REPO
from labkit.lab.judging import rules, verdicts

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


@pytest.mark.parametrize("claim_id", sorted(rules.RULES))
def test_committed_verdict_recomputes(claim_id):
    row = COMMITTED.get(claim_id)
    if row is None:
        pytest.skip(f"no committed verdict for {claim_id}")
    if row.get("method", "") not in (verdicts.METHOD, verdicts.EXACT):
        pytest.skip(f"{claim_id}'s committed verdict predates the {verdicts.METHOD} method: "
                    "recomputable after the next full make reproduce")
    again = rules.recompute(claim_id, DATA)
    assert again is not None, f"{claim_id}: a data file it needs is missing from data/"
    assert (again["verdict"], again["original_verdict"]) == \
        (row["verdict"], row["original_verdict"]), claim_id
    assert again["measured_value"] == row["measured_value"], claim_id


def _runs(entries: dict, processes: int = 16, repeats: int = 2, seed: int = 0):
    """A design's runs: per process, each entry's repeats around its centre, with a
    process effect."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for w in range(processes):
        effect = rng.normal(0, 0.02)
        for label, (centre, sd) in entries.items():
            for _ in range(repeats):
                rows.append({"worker": w, "side": label,
                             "ns_per_switch": centre * np.exp(effect + rng.normal(0, sd))})
    return pd.DataFrame(rows).assign(looks="8 16 24 32")


def test_recompute_from_synthetic_data(tmp_path):
    # The same path on data we control: a clear ratio, a straddle, a missing file.
    runs = _runs({"asm_fxsave": (30, 0.02), "asm_fpu": (2, 0.02), "asm_xsave": (60, 0.02)})
    runs.to_csv(tmp_path / "06_fp_state_and_return_verdict_runs.csv", index=False)
    row = rules.recompute("C002.3", tmp_path)
    assert row["verdict"] == "reproduced" and row["processes"] == 8  # decided at look 1
    assert row["method"] == verdicts.METHOD
    runs = _runs({"asm_fxsave": (4.0, 0.3), "asm_fpu": (2, 0.3), "asm_xsave": (60, 0.02)},
                 processes=32)
    runs.to_csv(tmp_path / "06_fp_state_and_return_verdict_runs.csv", index=False)
    row = rules.recompute("C002.3", tmp_path)
    assert row["verdict"] == "inconclusive" and "x >= 2" in row["straddle"]
    assert row["processes"] == 32  # judged at the cap
    assert rules.recompute("C000.3", tmp_path) is None  # its file is missing
    with pytest.raises(ValueError, match="claim_id"):
        rules.recompute("C999.9", tmp_path)


def test_missing_entries_are_not_measured_not_a_pass():
    runs = _runs({"O2": (1.0, 0.05)})
    row = rules.c000_3(runs)
    assert row["verdict"] == "not-measured" and "O0" in row["note"]


def test_a_rule_on_another_column_finds_its_entries():
    runs = _runs({"yield k=0": (100, 0.01), "yield k=1": (40, 0.01)})
    runs = runs.rename(columns={"ns_per_switch": "units_per_s"}).assign(ns_per_switch=float("nan"))
    row = rules.c002_2(runs)
    assert row["verdict"] == "reproduced", row


def test_an_ordering_is_judged_on_log_distances_per_process():
    runs = _runs({"virtual_call": (1.5, 0.02), "boost_fiber": (6.0, 0.02),
                  "syscall_getppid": (200.0, 0.02)})
    row = rules.c000_1(runs)
    assert row["verdict"] == "reproduced" and row["measured_value"].startswith("x=1 [1, 1]")
    runs = _runs({"virtual_call": (1.5, 0.02), "boost_fiber": (60.0, 0.02),
                  "syscall_getppid": (200.0, 0.02)})  # the fiber nearer the syscall
    assert rules.c000_1(runs)["verdict"] == "contradicted"
    qps = _runs({"cxx20_pool_sym": (130, 0.01), "callback_epoll": (120, 0.01),
                 "cxx20_new": (100, 0.01)}).rename(columns={"ns_per_switch": "qps"})
    assert rules.c001_1(qps)["verdict"] == "reproduced"


def _frequency_runs(shares: dict, thr: dict, processes: int = 16, seed: int = 1):
    """Design runs of notebook 08: total and work-only times giving `shares`, and
    throughputs, per entry and process."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for w in range(processes):
        for label, share in shares.items():
            for _ in range(2):
                work = 1000.0 * np.exp(rng.normal(0, 0.002))
                rows.append({"worker": w, "side": label, "work_only_ns": work,
                             "total_ns": work / (1 - share),
                             "throughput_mtasks_s": thr[label] * np.exp(rng.normal(0, 0.01))})
    return pd.DataFrame(rows).assign(looks="8 16 24 32")


def test_the_share_of_switching_spans_both_kinds_of_work():
    shares = {"before dependent": 0.15, "before independent": 0.15,
              "after dependent": 0.02, "after independent": 0.02}
    thr = {"before dependent": 1.0, "before independent": 1.0,
           "after dependent": 1.15, "after independent": 1.16}
    runs = _frequency_runs(shares, thr)
    assert rules.c000_7(runs)["verdict"] == "reproduced"
    row = rules.c000_7a(runs)
    assert row["verdict"] == "reproduced" and "hidden" not in row["note"]
    # The dependent chain hides the switch: 0.2% against 15% with independent work.
    shares["before dependent"] = 0.002
    row = rules.c000_7a(_frequency_runs(shares, thr))
    assert row["verdict"] == "inconclusive" and "hidden by out-of-order overlap" in row["note"]
