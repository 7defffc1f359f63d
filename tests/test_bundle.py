"""Results bundles: this machine's results packed, merged with a bundle from another machine
(a synthetic golden fixture, tests/fixtures/make_synthetic_bundle.py), compared per claim."""
from pathlib import Path

import pytest

import labkit
from labkit import bundle, results

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "synthetic-aarch64.labkit"


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "results"))
    import pandas as pd

    df = pd.concat([labkit.measure(k, switches=1000, repeats=2) for k in ("asm", "asm_fpu")],
                   ignore_index=True)
    results.save_csv(df, "04_latency_ladder")
    return bundle.make_bundle(tmp_path / "this-machine")


def test_bundle_has_the_documented_parts(here):
    assert here.name.endswith(".labkit")
    b = bundle.read_bundle(here)
    assert b["machine"]["machine_id"] == labkit.machine_info()["machine_id"]
    assert set(b["measurements"].notebook) == {"04_latency_ladder"}
    assert len(b["verdicts"]) == len(labkit.verdicts.claims())


def test_merge_puts_machines_side_by_side(here):
    out = bundle.merge([here, FIXTURE])
    assert len(out["machines"]) == 2 and "SYNTHETIC" in out["machines"][1]
    v = out["verdicts"]
    assert len(v) == len(labkit.verdicts.claims())
    fixture_col = out["machines"][1]
    assert v.loc["C002.3", (fixture_col, "verdict")] == "reproduced"
    assert v.loc["C003.1", (fixture_col, "verdict")] == "inconclusive"
    # Both machines have a ladder; each machine's asm is its own unit.
    lad = out["ladder"]
    for m in out["machines"]:
        assert lad.loc["asm", (m, "ratio to asm")] == pytest.approx(1.0)
    assert lad.loc["ucontext", (fixture_col, "median ns")] == pytest.approx(404.0)


def test_merge_refuses_bad_input(here, tmp_path):
    with pytest.raises(ValueError, match="at least two"):
        bundle.merge([here])
    with pytest.raises(ValueError, match="same machine"):
        bundle.merge([here, here])
    with pytest.raises(ValueError, match="not a labkit bundle"):
        bundle.merge([here, tmp_path])
    with pytest.raises(TypeError, match="paths"):
        bundle.merge(str(here))  # one path, not a list of them
    with pytest.raises(ValueError, match="same machine"):
        bundle.merge(p for p in [here, here])  # any iterable of paths will do
    with pytest.raises(TypeError, match="path"):
        bundle.read_bundle(None)


def test_command_line_merge(here, tmp_path, capsys):
    from labkit.__main__ import main

    assert main(["merge", str(here), str(FIXTURE), "-o", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp-verdicts.csv").exists()
    assert main(["merge", str(here)]) == 2  # a clear error, not a traceback
    assert "at least two" in capsys.readouterr().err


def test_compare_notebook_runs_on_two_bundles(here, tmp_path):
    from labkit import reproduce

    nb = reproduce.NOTEBOOKS / "compare_machines.py"
    import jupytext
    import nbformat
    import papermill

    src = tmp_path / "compare.ipynb"
    nbformat.write(jupytext.read(nb), src)
    papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"),
                               parameters={"bundles": [str(here), str(FIXTURE)]},
                               kernel_name=reproduce.KERNEL_NAME, progress_bar=False,
                               cwd=str(nb.parent))
    text = (tmp_path / "out.ipynb").read_text()
    assert "SYNTHETIC" in text and "C002.3" in text
