"""The workshop's recorded-data mode: an exercise reads another machine's bundle instead of
measuring, for a laptop that cannot run the kernels."""
from pathlib import Path

import nbformat
import pytest

from labkit.errors import ParameterError
from labkit.lab.exploring import workshop
from labkit.lab.running import notebook_run, notebooks

FIXTURES = Path(__file__).parent / "fixtures"
XEON = FIXTURES / "intel-xeon-kvm.labkit"


def test_a_ratio_read_from_a_bundle_names_the_recorded_machine():
    m = workshop.ratio("ucontext", "asm", bundle=XEON)
    assert m.low <= m.value <= m.high and m.value > 0
    assert set(m.frame.entry) == {"ucontext", "asm"}
    assert len(set(m.frame.notebook)) == 1       # one notebook's conditions for both
    assert any("recorded, not measured here" in n and "Xeon" in n for n in m.notes)
    fp = workshop.ratio("asm_xsave", "asm_fpu", fp_control="same", bundle=XEON)
    assert set(fp.frame.fp_control) == {"same"}


def test_a_bundle_without_the_kernels_names_the_parameter():
    with pytest.raises(ParameterError) as err:
        workshop.ratio("ucontext", "asm_xsave", bundle=FIXTURES / "synthetic-aarch64.labkit")
    assert err.value.param == "bundle"


@pytest.mark.notebook
def test_an_exercise_runs_on_another_machines_bundle(tmp_path):
    solution = notebooks.NOTEBOOKS / "workshop" / "solutions" / "01_ucontext_vs_asm.ipynb"
    out = notebook_run.run_notebook(solution, quick=True, out_dir=tmp_path / "executed",
                                    results_dir=tmp_path, timeout=600,
                                    parameters={"bundle": str(XEON)})
    assert out.ok, out.error
    nb = nbformat.read(out.executed, as_version=4)
    html = [o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code"
            for o in c.outputs]
    assert any("recorded, not measured here" in h for h in html)
