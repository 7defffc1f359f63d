"""The workshop's predictions through a room served on loopback: two learners send an
exercise's prediction with its measurement, the teacher collects them as one table."""
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from labkit.core.plots import look_faults  # noqa: E402
from labkit.errors import ParameterError  # noqa: E402
from labkit.lab.analysis.compare_machines import predictions_figure  # noqa: E402
from labkit.lab.room.noise import wait_for_text  # noqa: E402
from labkit.lab.exploring import workshop  # noqa: E402
from labkit.lab.room import predictions as room_predictions  # noqa: E402


@pytest.fixture(scope="module")
def room_file(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("room")
    path = tmp / "room.json"
    with open(tmp / "serve.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "labkit", "room", "serve", "--room",
                                 str(path), "--port", "0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_text(tmp / "serve.log", "each participant runs", 60, proc=proc)
        yield path
    finally:
        proc.terminate()
        proc.wait(20)


def test_predictions_sent_with_their_measurements_come_back_as_one_table(room_file):
    m = workshop.Measured("ticks of work per task for 5% switching", 300.0, 250.0, 350.0)
    ann = workshop.check_ratio(700, m, factor=2)
    room_predictions.send(room_file, "06", "ann", 700, m, ann)
    room_predictions.send(room_file, "06", "ben", 5000, m, workshop.check_ratio(5000, m, factor=2))
    room_predictions.send(room_file, "07", "ann", "asm_fpu", "copy_stack")
    room_predictions.send(room_file, "06", "ann", 600, m, ann)   # a second send replaces
    table = room_predictions.collect(room_file)
    assert list(table.columns) == room_predictions.COLUMNS
    assert list(zip(table.exercise, table.name)) == [("06", "ann"), ("06", "ben"), ("07", "ann")]
    six = room_predictions.collect(room_file, "06").set_index("name")
    assert six.loc["ann", "prediction"] == 600 and six.loc["ann", "match"]
    assert not six.loc["ben", "match"]
    assert (six.measured == 300.0).all() and (six.low == 250.0).all()
    seven = room_predictions.collect(room_file, "07").iloc[0]
    assert seven.prediction == "asm_fpu" and seven.measured == "copy_stack"


def _panel(fig, exercise):
    return next(ax for ax in fig.axes if ax.get_title().startswith(f"exercise {exercise}:"))


def test_the_predictions_figure_shows_each_beside_its_measurement_and_counts_inside(
        room_file):
    m = workshop.Measured("thread_futex (one CPU) / asm_fpu", 200.0, 150.0, 260.0)
    sent = {"ann": 180, "ben": 1000, "cy": 140}    # cy: outside, yet within the factor
    for name, guess in sent.items():
        room_predictions.send(room_file, "05", name, guess, m,
                              workshop.check_ratio(guess, m, factor=3))
    for name, choice in {"ann": "C", "ben": "d"}.items():
        room_predictions.send(room_file, "04 explanation", name, choice, "D",
                              workshop.check_choice(choice, "D"))
    table = room_predictions.collect(room_file)
    table = table[table.exercise.isin(["05", "04 explanation"])]
    fig = predictions_figure(table)
    assert look_faults(fig) == []
    five = _panel(fig, "05")
    assert five.get_title() == "exercise 05: 1 of 3 fell inside the measured interval"
    predicted = next(ln for ln in five.get_lines() if ln.get_label() == "prediction")
    assert list(predicted.get_xdata()) == [sent[n] for n in sorted(sent)]
    assert five.get_xscale() == "log" and five.get_xlabel() == m.what
    assert {t.get_text() for t in five.get_legend().get_texts()} == {
        "prediction", "measured, with its interval"}
    four = _panel(fig, "04 explanation")
    assert four.get_title().startswith("exercise 04 explanation: 1 of 2 named the choice")
    at = {ln.get_label(): list(ln.get_xdata()) for ln in four.get_lines()}
    supported = at["the choice the measurement supports"]
    assert at["prediction"][1] == supported[1]    # ben's "d" sits on "D", as checked
    assert at["prediction"][0] != supported[0]    # ann's "C" does not
    assert "2 of 5 fell inside" in fig._suptitle.get_text()


def test_the_predictions_figure_draws_a_zero_interval_end_and_nothing_without_predictions():
    m = workshop.Measured("ticks of work per task for 5% switching", 40.0, 0.0, 90.0)
    table = pd.DataFrame([room_predictions.record("06", "ann", 700, m),
                          room_predictions.record("06", "ben", None, m)],
                         columns=room_predictions.COLUMNS)
    fig = predictions_figure(table)
    assert look_faults(fig) == []                  # a log axis would lose the 0
    assert _panel(fig, "06").get_xscale() == "linear"
    assert _panel(fig, "06").get_title() == "exercise 06: 0 of 1 fell inside the measured interval"
    assert predictions_figure(table.iloc[1:]) is None
    assert predictions_figure(table.iloc[:0]) is None


def test_without_a_room_nothing_is_sent_and_bad_input_names_its_parameter():
    m = workshop.Measured("a / b", 2.0, 1.5, 2.5)
    assert room_predictions.send(None, "01", "ann", 3, m)["measured"] == 2.0
    for args, param in [(("", "ann"), "exercise"), (("01", None), "name")]:
        with pytest.raises(ParameterError) as err:
            room_predictions.send(None, *args, 3, m)
        assert err.value.param == param


@pytest.mark.notebook
def test_an_exercise_run_with_the_room_file_sends_its_prediction(room_file, tmp_path):
    from labkit.lab.running import notebook_run, notebooks

    solution = notebooks.NOTEBOOKS / "workshop" / "solutions" / "06_switch_frequency.ipynb"
    out = notebook_run.run_notebook(solution, quick=True, out_dir=tmp_path / "executed",
                                    results_dir=tmp_path, timeout=600,
                                    parameters={"room_file": str(room_file),
                                                "my_name": "teacher"})
    assert out.ok, out.error
    row = room_predictions.collect(room_file, "06").set_index("name").loc["teacher"]
    assert row.prediction == 700 and row.what.startswith("ticks of work")
    assert row.low <= row.measured <= row.high
