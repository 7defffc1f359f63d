"""Every experiment notebook, executed end to end in quick mode with papermill, writes its
data and figures and ends with a verdict table covering the claims it is registered for."""
import pandas as pd
import pytest

from labkit.lab.judging import claims, verdicts
from labkit.lab.running import notebook_run, notebooks

NOTEBOOKS = [p for p in notebooks.notebook_sources() if p.stem != notebooks.LEDGER]


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ has no NN_name.py notebooks"


@pytest.mark.notebook
@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(source, tmp_path):
    out = notebook_run.run_notebook(source, quick=True, out_dir=tmp_path / "executed",
                                 results_dir=tmp_path, timeout=1200)
    assert out.ok, out.error
    name = source.stem
    data = tmp_path / "data" / f"{name}.csv"
    assert data.exists()
    df = pd.read_csv(data)
    assert len(df) > 0
    assert {"machine_id", "cpu_model", "compiler", "cflags"} <= set(df.columns)
    assert list((tmp_path / "figures").glob(f"{name}-*.png"))
    assert list((tmp_path / "figures").glob(f"{name}-*.svg"))
    # The verdict table covers exactly the claims this notebook judges.
    registered = claims.registry()
    mine = set(registered[registered.notebook == name].claim_id)
    keys = ["claim_id", "verdict"]
    table = pd.read_csv(tmp_path / "data" / f"{name}_verdicts.csv")[keys]
    # The article-table rows' claims are judged in the notebook's last section.
    rows = tmp_path / "data" / f"{name}_article_verdicts.csv"
    if rows.exists():
        table = pd.concat([table, pd.read_csv(rows)[keys]], ignore_index=True)
    assert set(table.claim_id) == mine and not table.claim_id.duplicated().any()
    assert set(table.verdict) <= set(verdicts.VERDICTS)
    # papermill recorded the quick parameter in the executed copy.
    import nbformat

    nb = nbformat.read(out.executed, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "quick = True" in injected[0].source
    # The kernel's sockets lived in a private folder, not beside the notebook.
    assert not list(source.parent.glob("kernel-ipc*"))
    # The place held at the top for what this run shows was filled from the run.
    if "findings.placeholder" in source.read_text():
        from labkit.lab.analysis import findings

        shown = [str(o.get("data", {}).get("text/html", "")) for c in nb.cells
                 for o in c.get("outputs", [])]
        top = [h for h in shown if "What this run shows" in h]
        assert top and findings.PENDING not in top[0], top
        if "findings.and_verdicts" in source.read_text():
            assert "Verdicts: " in top[0]


def test_ledger_lists_every_claim_once_and_never_passes_by_default(tmp_path):
    import shutil

    from labkit.lab.judging import claims, ledger

    # One experiment's verdicts present, one failed in this run, the rest never ran.
    (tmp_path / "data").mkdir()
    registered = claims.registry()
    table = verdicts.table([verdicts.judge("C002.3", 3.0, low=2.5, high=3.5)])
    table.to_csv(tmp_path / "data" / "06_fp_state_and_return_verdicts.csv", index=False)
    table2 = verdicts.table([verdicts.judge("C000.3", 8.0, low=7.0, high=9.0)])
    table2.to_csv(tmp_path / "data" / "02_optimisation_levels_verdicts.csv", index=False)
    (tmp_path / "data" / "run_manifest.json").write_text(
        '{"02_optimisation_levels": {"ok": false, "error": "boom"}}')
    ledger_nb = notebooks.NOTEBOOKS / f"{notebooks.LEDGER}.py"
    out = notebook_run.run_notebook(ledger_nb, quick=True, out_dir=tmp_path / "executed",
                                 results_dir=tmp_path, timeout=600)
    assert out.ok, out.error
    led = pd.read_csv(tmp_path / "data" / f"{notebooks.LEDGER}.csv")
    assert sorted(led.claim_id) == sorted(registered.claim_id)
    assert not led.claim_id.duplicated().any()
    assert set(led.verdict) <= set(ledger.LEDGER_VERDICTS)
    by = led.set_index("claim_id")
    assert by.loc["C002.3", "verdict"] == "reproduced"
    # A notebook that failed in this run does not lend its old verdict.
    assert by.loc["C000.3", "verdict"] == "not-measured"
    assert "failed" in by.loc["C000.3", "note"]
    assert (by.drop(["C002.3"]).verdict == "not-measured").all()
    assert list((tmp_path / "figures").glob("00_claims_ledger-*.png"))
    shutil.rmtree(tmp_path / "executed")
