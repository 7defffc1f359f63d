"""The explorer (labkit.lab.exploring.explore), driven through its widgets as a person would (set a
widget's value; the handler runs), and the lab's interactive notebooks: the start page,
the explorer notebook, the workshop's exercises and their check cells."""
import json
import math
import re
import threading
from pathlib import Path

import pandas as pd
import pytest

import labkit
from labkit.core import results
from labkit.lab.exploring import explore, workshop
from labkit.lab.exploring.explore import EXTENSION, Explorer, Point
from labkit.lab.running import notebook_run, notebooks

NOTEBOOKS = notebooks.NOTEBOOKS
WORKSHOP = NOTEBOOKS / "workshop"
EXERCISES = sorted(WORKSHOP.glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((WORKSHOP / "solutions").glob("*.ipynb"))
OWN_NOTEBOOKS = [NOTEBOOKS / "start_here.ipynb", NOTEBOOKS / "explore.ipynb",
                 *EXERCISES, *SOLUTIONS]
from labkit.core.units import KiB, MiB


def small_explorer(tmp_path, **kw):
    """A synchronous explorer with small measurements: a request runs before the call
    returns, so that each widget change can be checked against the frame it produced."""
    kw.setdefault("background", False)
    kw.setdefault("save_to", tmp_path / "explore.csv")
    ex = Explorer(quick=True, show_machine=False, **kw)
    ex.switches.value = 20_000
    return ex


def last_rows(ex):
    r = ex.results
    return r[r.seq == r.seq.max()]


# ---- the widgets change the measurement ----

def test_each_widget_changes_the_measured_parameters_and_the_result_frame(tmp_path):
    ex = small_explorer(tmp_path)
    assert ex.results.empty

    ex.entry.value = "asm"
    rows = last_rows(ex)
    assert ex.last_point == Point("asm", 64 * KiB, 2, EXTENSION, 0, 20_000, 3)
    assert set(rows.entry) == {"asm"} and set(rows.pattern) == {"pingpong"}
    assert len(rows) == 3 and rows.ns_per_switch.notna().all()

    ex.stack_size.value = 1 * MiB
    rows = last_rows(ex)
    assert ex.last_point.stack_size == 1 * MiB
    assert set(rows.stack_size) == {1 * MiB}

    ex.build.value = "O0"
    rows = last_rows(ex)
    assert ex.last_point.build == "O0"
    assert set(rows.build) == {"O0"} and set(rows.opt_level) == {"-O0"}

    ex.build.value = EXTENSION
    ex.contexts.value = 16
    rows = last_rows(ex)
    assert ex.last_point.contexts == 16
    assert set(rows.pattern) == {"ring"} and set(rows.contexts) == {16}

    ex.colour_step.value = 64
    rows = last_rows(ex)
    assert set(rows.colour_step) == {64}

    ex.repeats.value = 4
    assert len(last_rows(ex)) == 4

    # One point per change, in order, each a separate group of the summary.
    summary = ex.summary()
    assert list(summary.seq) == list(range(1, len(summary) + 1))
    assert summary.point.iloc[-1] == "asm, 1 MiB, ring of 16, colour 64 B"
    assert "asm, 1 MiB, ring of 16" in ex.status.value and "ns</b> per switch" in ex.status.value
    assert bytes(ex.plot.value).startswith(b"\x89PNG")
    assert "<table" in ex.table.value
    # Saved after every point.
    saved = pd.read_csv(tmp_path / "explore.csv")
    assert len(saved) == len(ex.results)


def test_handlers_called_directly_measure_the_current_point(tmp_path):
    ex = small_explorer(tmp_path, auto=False)
    ex.entry.value = "asm_fpu"  # auto off: nothing measured
    assert ex.results.empty
    ex.on_measure_click(ex.measure_button)
    assert set(ex.results.entry) == {"asm_fpu"}
    ex.entry.value = "asm"
    ex.on_change({"name": "value", "new": "asm"})
    assert ex.results.seq.max() == 1  # still auto off
    ex.on_measure_click(None)
    assert set(last_rows(ex).entry) == {"asm"}


def test_settings_that_do_not_apply_are_greyed_out_and_not_measured(tmp_path):
    ex = small_explorer(tmp_path)
    ex.set(entry="stackless", contexts=2)
    assert ex.stack_size.disabled and ex.contexts.disabled
    assert ex.last_point.stack_size is None
    assert last_rows(ex).stack_size.isna().all()
    assert "no stack of its own" in ex.notes.value

    ex.set(entry="asm_fpu", contexts=64, build="O1")
    assert ex.build.disabled and not ex.colour_step.disabled
    assert ex.last_point.build == EXTENSION  # rings run on the extension's build
    assert "build not used" in ex.notes.value

    p, notes = explore.plan("greenlet_switch", 8 * MiB, 256, "O0", 64, 20_000, 3)
    assert (p.stack_size, p.contexts, p.build, p.colour_step) == (None, 2, EXTENSION, 0)
    assert len(notes) == 4


def test_a_change_that_leaves_the_point_as_it_was_does_not_measure_again(tmp_path):
    ex = small_explorer(tmp_path)
    ex.entry.value = "stackless"
    n = ex.results.seq.max()
    ex.stack_size.value = 8 * MiB  # a stackless kernel has no stack
    assert ex.results.seq.max() == n


def test_set_measures_once(tmp_path):
    ex = small_explorer(tmp_path)
    ex.set(entry="asm", stack_size=16 * KiB, contexts=4)
    assert ex.results.seq.max() == 1
    assert ex.last_point == Point("asm", 16 * KiB, 4, EXTENSION, 0, 20_000, 3)
    with pytest.raises(ValueError, match="set\\(\\) takes"):
        ex.set(colour=64)


def test_sweep_points_follow_the_other_settings():
    ex = Explorer(quick=True, background=False, auto=False, save_to=None, show_machine=False)
    ex.set(entry="asm", contexts=2)
    stack = ex.sweep_points("stack_size")
    assert [p.stack_size for p in stack] == list(explore.STACK_SIZES)
    assert {p.entry for p in stack} == {"asm"}
    builds = ex.sweep_points("build")
    assert [p.build for p in builds] == [EXTENSION, *labkit.builds()]
    ex.set(contexts=256)
    kernels = ex.sweep_points("entry")
    assert kernels and all(p.contexts == 256 for p in kernels)
    assert {p.entry for p in kernels} <= {"asm", "asm_ret", "asm_fpu", "asm_fxsave",
                                           "asm_xsave", "ucontext", "libco_design"}
    assert ex.sweep_points("build") == [ex.point()]  # rings: one build only
    with pytest.raises(ValueError, match="axis must be one of"):
        ex.sweep_points("colour")


def test_a_sweep_in_the_background_shows_progress_and_a_stop_keeps_every_point(tmp_path):
    calls = []
    ex = None

    def measure_then_stop(p):
        calls.append((p, threading.current_thread().name))
        df = explore.measure_point(p)
        if len(calls) == 2:
            ex.on_stop_click(ex.stop_button)  # as the Stop button does, mid-sweep
        return df

    ex = small_explorer(tmp_path, background=True, auto=False, measure=measure_then_stop)
    ex.set(entry="asm_fpu", contexts=2)
    ex.sweep_axis.value = "stack_size"
    ex.on_sweep_click(ex.sweep_button)
    assert ex.wait(timeout=300), "the sweep did not finish within 300 s"
    # Measured in the explorer's own thread; stopped after the point being measured.
    assert {t for _, t in calls} == {"labkit-explorer"}
    assert len(calls) == 2
    r = ex.results
    assert sorted(r.seq.unique()) == [1, 2]
    assert list(r.groupby("seq").stack_size.first()) == [4 * KiB, 16 * KiB]
    assert set(r.job) == {"sweep stack_size"}
    assert (ex.progress.value, ex.progress.max) == (2, len(explore.STACK_SIZES))
    assert ex.progress.bar_style == "warning"
    assert "stopped" in ex.status.value and "kept 2 of 7" in ex.status.value
    assert ex.stop_button.disabled
    assert len(pd.read_csv(tmp_path / "explore.csv")) == len(r)


def test_requests_made_while_measuring_wait_their_turn_latest_wins(tmp_path):
    release = threading.Event()
    seen = []

    def slow(p):
        seen.append(p.entry)
        if len(seen) == 1:
            assert release.wait(120)
        return explore.measure_point(p)

    ex = small_explorer(tmp_path, background=True, auto=True, measure=slow)
    ex.entry.value = "asm"        # starts, waits for release
    ex.entry.value = "asm_ret"    # queued
    ex.entry.value = "asm_fpu"    # replaces the queued request
    release.set()
    assert ex.wait(timeout=300)
    assert seen == ["asm", "asm_fpu"]
    assert list(ex.results.groupby("seq").entry.first()) == ["asm", "asm_fpu"]


def test_a_failing_point_is_reported_and_the_sweep_goes_on(tmp_path):
    def flaky(p):
        if p.stack_size == 16 * KiB:
            raise labkit.KernelCrashError("kernel 'asm' crashed its worker process (SIGSEGV)")
        return explore.measure_point(p)

    ex = small_explorer(tmp_path, auto=False, measure=flaky)
    ex.set(entry="asm")
    ex.sweep("stack_size")
    assert ex.results.seq.nunique() == len(explore.STACK_SIZES) - 1
    assert "KernelCrashError" in ex.last_error
    assert "a point failed" in ex.status.value
    assert ex.progress.bar_style == "warning"
    # A single measurement that fails says so, and raises nothing into the notebook.
    ex.set(stack_size=16 * KiB)
    ex.measure()
    assert "KernelCrashError" in ex.status.value


def test_explorer_rejects_a_kernel_that_is_not_here():
    with pytest.raises(ValueError, match="entry must be one of"):
        Explorer(entry="no_such_kernel", background=False, save_to=None, show_machine=False)


# ---- the workshop's checks ----

def test_check_ratio_uses_the_stated_tolerance_and_the_spread():
    m = workshop.Measured("a / b", 10.0, 8.0, 12.0)
    assert workshop.check_ratio(10, m, factor=2).ok is True
    assert workshop.check_ratio(4.1, m, factor=2).ok is True    # 8 / 2 = 4
    assert workshop.check_ratio(3.9, m, factor=2).ok is False
    assert workshop.check_ratio(24, m, factor=2).ok is True     # 12 * 2
    high = workshop.check_ratio(25, m, factor=2)
    assert high.ok is False and "too high by a factor of 2.5" in high.message
    assert workshop.check_ratio(None, m, factor=2).ok is None
    assert "positive number" in workshop.check_ratio("ten", m, factor=2).message
    assert workshop.check_ratio(-3, m, factor=2).ok is None
    assert workshop.check_ratio(True, m, factor=2).ok is None
    with pytest.raises(ValueError, match="factor"):
        workshop.check_ratio(1, m, factor=1)
    assert "match" in workshop.check_ratio(10, m, factor=2)._repr_html_()


def test_a_ratio_lost_in_the_noise_checks_no_prediction():
    # ratio_with_spread's answer when the denominator's quartiles reach zero.
    for m in (workshop.Measured("a / b", 5.0, -math.inf, math.inf),
              workshop.Measured("a / b", math.nan, -math.inf, math.inf)):
        c = workshop.check_ratio(5, m, factor=2)
        assert c.ok is None and "too noisy" in c.message


def _ring(aligned, coloured, pingpong):
    m = workshop.Measured("ring", aligned[0], aligned[1], aligned[2])
    m.ratios = {"ring, tops aligned": aligned, "ring, tops coloured": coloured,
                "ping-pong": pingpong}
    return m


@pytest.mark.parametrize("ratios, expected", [
    (((1.1, 1.0, 1.2), (1.0, 0.9, 1.1), (1.0, 1.0, 1.0)), ("D", False)),
    (((3.0, 2.8, 3.2), (3.0, 2.9, 3.1), (2.0, 1.8, 2.2)), ("A", False)),
    (((3.0, 2.8, 3.2), (1.1, 1.0, 1.2), (1.0, 1.0, 1.0)), ("B", False)),
    (((3.0, 2.8, 3.2), (2.9, 2.7, 3.0), (1.0, 1.0, 1.0)), ("C", False)),
    (((3.0, 2.8, 3.2), (1.4, 1.3, 1.6), (1.0, 1.0, 1.0)), ("B", True)),
])
def test_stack_ring_rule_picks_the_explanation_the_exercise_states(ratios, expected):
    assert workshop.supported_explanation(_ring(*ratios)) == expected


def test_check_choice():
    assert workshop.check_choice("c", "C").ok is True
    wrong = workshop.check_choice("B", "C")
    assert wrong.ok is False and "support C" in wrong.message
    assert workshop.check_choice(None, "C").ok is None
    assert workshop.check_choice("E", "C").ok is None
    assert workshop.check_choice("C", "C", uncertain=True).ok is None


def test_workshop_ratio_measures_both_kernels_here():
    m = workshop.ratio("asm_ret", "asm", quick=True)
    assert set(m.frame.entry) == {"asm_ret", "asm"}
    assert m.low <= m.value <= m.high and m.value > 0
    assert "asm_ret / asm" in str(m)


# ---- the notebooks ----

def _cells(path: Path):
    return json.loads(path.read_text())["cells"]


def _links(path: Path) -> list[str]:
    text = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")
    return re.findall(r"\]\(([^)#\s]+)\)", text)


@pytest.mark.parametrize("path", OWN_NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_notebooks_are_committed_clean_on_the_lab_kernel(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == notebook_run.KERNEL_NAME
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, \
                f"{path.name}: strip the outputs before committing"
    for link in _links(path):
        if not link.startswith(("http://", "https://")):
            assert (path.parent / link).exists(), f"{path.name}: broken link {link}"


def test_start_page_links_every_experiment_the_explorer_and_the_workshop():
    start = NOTEBOOKS / "start_here.ipynb"
    links = set(_links(start))
    assert "explore.ipynb" in links
    for ex in EXERCISES:
        assert f"workshop/{ex.name}" in links
    # The live index links every experiment notebook there is, added later ones included.
    index = notebooks.experiment_index()
    assert set(index.notebook) >= {p.name for p in notebooks.notebook_sources()}
    html = notebooks.show_index()._repr_html_()
    for src in notebooks.notebook_sources():
        assert f'href="{src.name}"' in html


def test_jupyterlab_settings_open_on_the_start_page_with_the_lab_kernel():
    conf = (results.REPO / "jupyter" / "jupyter_server_config.py").read_text()
    assert 'default_kernel_name = "labkit"' in conf
    assert "/lab/tree/start_here.ipynb" in conf
    overrides = json.loads((results.REPO / "jupyter" / "lab-settings" / "overrides.json")
                           .read_text())
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["python"] == "Jupytext Notebook"


def test_every_exercise_has_a_solution_and_states_its_tolerance_before_measuring():
    assert len(EXERCISES) >= 7
    assert {p.name for p in SOLUTIONS} == {p.name for p in EXERCISES} - {"00_ready.ipynb"}
    for ex in EXERCISES:
        cells = _cells(ex)
        sources = ["".join(c["source"]) for c in cells]
        params = [i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", [])]
        assert len(params) == 1, ex.name
        if ex.name == "00_ready.ipynb":
            continue
        checks = [i for i, s in enumerate(sources) if "workshop.check_" in s]
        measures = [i for i, s in enumerate(sources)
                    if cells[i]["cell_type"] == "code" and re.search(
                        r"workshop\.(ratio|stack_ring|thread_vs_coroutine|work_for_share|advisor_first)\(", s)]
        tolerance = [i for i, s in enumerate(sources) if "Tolerance, fixed before measuring" in s]
        assert tolerance and measures and checks, ex.name
        # Predict, then measure, then check; the tolerance is stated before the measuring.
        assert tolerance[0] < params[0] < measures[0] < checks[0], ex.name
        # No answers in the exercise: every prediction starts empty.
        for line in sources[params[0]].splitlines():
            if line.startswith("my_"):
                assert re.match(r"my_\w+ = None\b", line), f"{ex.name}: {line}"


@pytest.mark.notebook
@pytest.mark.parametrize("path", [*EXERCISES, *SOLUTIONS],
                         ids=lambda p: str(p.relative_to(WORKSHOP)))
def test_workshop_notebooks_run_and_their_checks_answer(path, tmp_path):
    out = notebook_run.run_notebook(path, quick=True, out_dir=tmp_path / "executed",
                                 results_dir=tmp_path, timeout=600)
    assert out.ok, out.error
    import nbformat

    nb = nbformat.read(out.executed, as_version=4)
    texts = [o.get("data", {}).get("text/plain", "") for c in nb.cells if c.cell_type == "code"
             for o in c.outputs]
    if path.stem == "00_ready":
        assert any("a measurement runs" in t for t in texts)
        return
    checks = [t for t in texts if t.startswith("Check(")]
    assert checks, "the check cell showed no verdict"
    if path.parent.name == "solutions":
        # Predictions are written, so every check answers; only a measurement too noisy to
        # decide may say "run again" (noise decides that, not the notebook).
        assert all("ok=None" not in t or "cannot decide" in t or "too noisy" in t
                   for t in checks), checks
    else:
        assert all("ok=None" in t for t in checks), checks      # nothing predicted yet


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["start_here", "explore"])
def test_start_page_and_explorer_notebooks_run(name, tmp_path):
    out = notebook_run.run_notebook(NOTEBOOKS / f"{name}.ipynb", quick=True,
                                 out_dir=tmp_path / "executed", results_dir=tmp_path,
                                 timeout=600)
    assert out.ok, out.error
