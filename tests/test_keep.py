"""A notebook's last finished results are set aside while it runs again: a run that does
not finish leaves them as they were, whole, and what it wrote is kept aside, not lost."""
import json

import pandas as pd
import pytest

from labkit.core import results
from labkit.lab.running import keep

NB = "01_stack_size"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    return tmp_path


def _finished_run(value: int) -> None:
    """What a notebook run writes: its main table, a side table named by its record only
    (not by the notebook's prefix), and a figure."""
    results.save_csv(pd.DataFrame({"v": [value]}), NB)
    results.save_csv(pd.DataFrame({"v": [value]}), f"{NB}_ring")
    (results.figures_dir() / f"{NB}-ring.svg").write_text(f"<svg>{value}</svg>")


def _values(home) -> dict:
    return {p.relative_to(home).as_posix(): p.read_text() for p in keep.owned(NB)}


def test_a_run_that_does_not_finish_leaves_the_last_finished_results_whole(home):
    _finished_run(1)
    other = results.save_csv(pd.DataFrame({"v": [7]}), "02_optimisation_levels")
    before = _values(home)
    assert keep.set_aside(NB) == 3
    # the new run rewrites its main table, writes a file the last run had not, then stops
    results.save_csv(pd.DataFrame({"v": [2]}), NB)
    results.save_csv(pd.DataFrame({"v": [2]}), f"{NB}_pingpong")
    assert keep.put_back(NB) == 3
    assert _values(home) == before
    assert not (home / "data" / f"{NB}_pingpong.csv").exists()
    unfinished = home / "data" / "checkpoints" / keep.UNFINISHED / NB / "data"
    assert pd.read_csv(unfinished / f"{NB}_pingpong.csv").v.tolist() == [2]
    assert pd.read_csv(unfinished / f"{NB}.csv").v.tolist() == [2]
    assert pd.read_csv(other).v.tolist() == [7]  # another notebook's results are not its
    assert not (home / "data" / "checkpoints" / keep.ASIDE / NB).exists()


def test_a_finished_run_keeps_its_new_results(home):
    _finished_run(1)
    keep.set_aside(NB)
    _finished_run(2)
    keep.drop(NB)
    assert pd.read_csv(home / "data" / f"{NB}.csv").v.tolist() == [2]
    assert (home / "figures" / f"{NB}-ring.svg").read_text() == "<svg>2</svg>"
    assert not (home / "data" / "checkpoints" / keep.ASIDE / NB).exists()
    assert keep.put_back(NB) == 0  # nothing set aside: nothing changes
    assert pd.read_csv(home / "data" / f"{NB}.csv").v.tolist() == [2]


def test_a_set_left_by_a_run_that_died_is_put_back_before_the_next(home):
    _finished_run(1)
    keep.set_aside(NB)
    _finished_run(2)  # ... and the run is killed before it can put anything back
    assert keep.set_aside(NB) == 3
    assert pd.read_csv(home / "data" / f"{NB}.csv").v.tolist() == [1]
    listed = json.loads((home / "data" / "checkpoints" / keep.ASIDE / NB / keep.LIST).read_text())
    assert f"figures/{NB}-ring.svg" in listed


def test_a_first_run_that_does_not_finish_leaves_nothing_of_its_own(home):
    assert keep.set_aside(NB) == 0
    _finished_run(1)
    assert keep.put_back(NB) == 0
    assert keep.owned(NB) == []
    assert (home / "data" / "checkpoints" / keep.UNFINISHED / NB / "data" / f"{NB}.csv").exists()


def test_a_set_aside_cut_short_before_its_list_changes_nothing(home):
    _finished_run(1)
    keep.set_aside(NB)
    (home / "data" / "checkpoints" / keep.ASIDE / NB / keep.LIST).unlink()
    _finished_run(2)
    assert keep.put_back(NB) == 0
    assert pd.read_csv(home / "data" / f"{NB}.csv").v.tolist() == [2]
