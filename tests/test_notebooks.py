"""Every experiment notebook, executed end to end in quick mode with papermill, writes its
data and figures and ends with a verdict table covering the claims it is registered for."""
import pandas as pd
import pytest

from labkit import reproduce, verdicts

NOTEBOOKS = reproduce.notebook_sources()


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ has no NN_name.py notebooks"


@pytest.mark.notebook
@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(source, tmp_path):
    out = reproduce.run_notebook(source, quick=True, out_dir=tmp_path / "executed",
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
    # The verdict table covers exactly the claims registered for this notebook.
    claims = verdicts.claims()
    mine = set(claims[claims.experiment == name].claim_id)
    table = pd.read_csv(tmp_path / "data" / f"{name}_verdicts.csv")
    assert set(table.claim_id) == mine
    assert set(table.verdict) <= set(verdicts.VERDICTS)
    # papermill recorded the quick parameter in the executed copy.
    import nbformat

    nb = nbformat.read(out.executed, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "quick = True" in injected[0].source
