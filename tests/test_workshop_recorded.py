"""The workshop's recorded-data mode: an exercise reads another machine's bundle instead of
measuring, for a laptop that cannot run the kernels."""
from pathlib import Path

import nbformat
import pytest

from labkit.errors import ParameterError
from labkit.lab import experiment
from labkit.lab.exploring import workshop
from labkit.lab.running import notebook_run, notebooks
from labkit.lab.sharing.bundle import read_bundle

FIXTURES = Path(__file__).parent / "fixtures"
XEON = FIXTURES / "intel-xeon-kvm.labkit"
# A format-5 bundle of a full run: it holds the rings, hand-offs and scheduler runs that
# exercises 4, 5 and 6 read.
XEON_AMX = FIXTURES / "intel-xeon-amx-kvm-e68bcbc.labkit"


def _says_recorded(m):
    assert m.where == "recorded on another machine"
    assert "recorded, not measured here" in m.notes[0] and "Xeon" in m.notes[0]
    assert m.low <= m.value <= m.high and m.value > 0


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


def test_the_stack_ring_reads_the_recorded_rings_and_ping_pongs():
    m = workshop.stack_ring(bundle=XEON_AMX)
    _says_recorded(m)
    assert set(m.frame.notebook) == {experiment.STACK_SIZE.name}
    assert set(m.frame.entry) == {"asm_fpu"}
    assert set(zip(m.frame.test, m.frame.tops)) == {("ring of 4096", "aligned"),
                                                    ("ring of 4096", "coloured"),
                                                    ("ping-pong", "-")}
    assert set(m.frame.stack_size) == {4096, 8 << 20}
    assert m.ratios["ring, tops aligned"] == (m.value, m.low, m.high)
    assert workshop.supported_explanation(m)[0] in workshop.EXPLANATIONS


def test_threads_against_coroutines_read_the_recorded_hand_offs():
    m = workshop.thread_vs_coroutine(bundle=XEON_AMX)
    _says_recorded(m)
    threads = m.frame[m.frame.entry == "thread_futex"]
    assert set(threads.notebook) == {experiment.KERNEL_SWITCHES.name}
    assert set(threads.placement) == {"same-cpu"}
    assert set(m.frame.entry) == {"thread_futex", "asm_fpu"}
    assert any("not interleaved" in n for n in m.notes)


def test_the_work_for_five_percent_uses_the_recorded_machines_clock():
    m = workshop.work_for_share(bundle=XEON_AMX)
    _says_recorded(m)
    ghz = read_bundle(XEON_AMX)["machine"]["tsc_ghz"]
    switching = m.ratios["switching ns per task"][0]
    assert m.value == pytest.approx(switching * 19 * ghz)
    assert set(m.frame.data) == {experiment.SWITCH_FREQUENCY.part("independent")}
    assert len(m.details) == 1           # the share at W needs a machine that measures
    assert any(f"{ghz:.2f} GHz" in n for n in m.notes)


@pytest.mark.parametrize("call, bundle, notebook", [
    (workshop.stack_ring, "synthetic-aarch64.labkit", experiment.STACK_SIZE),
    (workshop.thread_vs_coroutine, "synthetic-aarch64.labkit", experiment.KERNEL_SWITCHES),
    (workshop.work_for_share, "intel-xeon-kvm.labkit", experiment.SWITCH_FREQUENCY)])
def test_a_bundle_without_an_exercises_data_says_which_and_what_makes_it(call, bundle,
                                                                         notebook):
    with pytest.raises(ParameterError) as err:
        call(bundle=FIXTURES / bundle)
    assert err.value.param == "bundle"
    assert f"make reproduce ONLY={notebook.name}" in err.value.message


def _shown(executed) -> str:
    nb = nbformat.read(executed, as_version=4)
    return "\n".join(o.get("data", {}).get("text/html", "") for c in nb.cells
                     if c.cell_type == "code" for o in c.outputs)


@pytest.mark.notebook
@pytest.mark.parametrize("name, bundle", [("01_ucontext_vs_asm", XEON),
                                          ("04_stack_ring", XEON_AMX),
                                          ("05_threads_vs_coroutines", XEON_AMX),
                                          ("06_switch_frequency", XEON_AMX)])
def test_an_exercise_runs_on_another_machines_bundle(tmp_path, name, bundle):
    solution = notebooks.NOTEBOOKS / "workshop" / "solutions" / f"{name}.ipynb"
    out = notebook_run.run_notebook(solution, quick=True, out_dir=tmp_path / "executed",
                                    results_dir=tmp_path, timeout=600,
                                    parameters={"bundle": str(bundle)})
    assert out.ok, out.error
    shown = _shown(out.executed)
    assert "recorded, not measured here" in shown and "Xeon" in shown
    assert "match" in shown             # the check cell ran against the recorded value
