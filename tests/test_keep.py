"""A notebook's last finished results are copied aside while it runs again: a run that does
not finish leaves them as they were, whole, and what it wrote or changed is moved aside,
not lost."""
import json

import pandas as pd
import pytest

from labkit.core import results
from labkit.lab.running import keep

NB = "01_stack_size"  # shows the article table t01


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    return tmp_path


def _run(value: int, nb: str = NB) -> None:
    """What a run of `nb` writes: its main table, a side table, its own figure and its
    article table's figure."""
    results.save_csv(pd.DataFrame({"v": [value]}), nb)
    results.save_csv(pd.DataFrame({"v": [value]}), f"{nb}_ring")
    (results.figures_dir() / f"{nb}-ring.svg").write_text(f"<svg>{value}</svg>")
    (results.figures_dir() / "articles-t01.svg").write_text(f"<svg>t01 {value}</svg>")


def _everything(home) -> dict:
    """Every result file under data/ and figures/ (checkpoints aside), read without keep."""
    files = [p for p in (home / "data").rglob("*") if "checkpoints" not in p.parts]
    files += list((home / "figures").rglob("*"))
    return {p.relative_to(home).as_posix(): p.read_text() for p in files if p.is_file()}


def test_a_run_that_does_not_finish_leaves_the_last_finished_results_whole(home):
    _run(1)
    results.save_csv(pd.DataFrame({"v": [7]}), "02_optimisation_levels")
    before = _everything(home)
    assert keep.copy_aside(NB) == 4
    # the new run rewrites its table and its article figure, writes a file the last run
    # had not, then stops
    results.save_csv(pd.DataFrame({"v": [2]}), NB)
    (results.figures_dir() / "articles-t01.svg").write_text("<svg>t01 2</svg>")
    results.save_csv(pd.DataFrame({"v": [2]}), f"{NB}_pingpong")
    assert keep.put_back(NB) == (4, 3)
    assert _everything(home) == before
    unfinished = home / "data" / "checkpoints" / keep.UNFINISHED / NB
    assert sorted(p.relative_to(unfinished).as_posix() for p in unfinished.rglob("*.*")) == [
        f"data/{NB}.csv", f"data/{NB}_pingpong.csv", "figures/articles-t01.svg"]
    assert not (home / "data" / "checkpoints" / keep.COPY / NB).exists()


def test_a_side_table_named_only_by_the_record_is_the_notebooks(home):
    results.save_csv(pd.DataFrame({"v": [1]}), "advisor_calibration")
    keep.copy_aside("10_your_workload")
    results.save_csv(pd.DataFrame({"v": [2]}), "advisor_calibration")
    assert keep.put_back("10_your_workload") == (1, 1)
    assert results.load_csv("advisor_calibration").v.tolist() == [1]


def test_a_finished_run_keeps_its_new_results(home):
    _run(1)
    keep.copy_aside(NB)
    _run(2)
    keep.drop(NB)
    after = _everything(home)
    assert after[f"data/{NB}.csv"] == "v\n2\n"
    assert after["figures/articles-t01.svg"] == "<svg>t01 2</svg>"
    assert not (home / "data" / "checkpoints" / keep.COPY / NB).exists()
    assert keep.put_back(NB) == (0, 0)  # nothing copied aside: nothing changes
    assert _everything(home) == after


def test_a_drop_cut_short_leaves_the_finished_run_standing(home):
    _run(1)
    keep.copy_aside(NB)
    _run(2)
    (home / "data" / "checkpoints" / keep.COPY / NB / keep.LIST).unlink()  # drop's first step
    after = _everything(home)
    assert keep.put_back(NB) == (0, 0)
    assert _everything(home) == after


def test_a_put_back_cut_short_goes_on_when_called_again(home, monkeypatch):
    _run(1)
    before = _everything(home)
    keep.copy_aside(NB)
    _run(2)
    real, calls = keep.os.replace, []

    def once_then_stop(src, dst):
        if keep.COPY in str(src) and keep.RUN not in str(src):  # a file put back
            calls.append(src)
            if len(calls) == 2:
                raise KeyboardInterrupt  # a second Ctrl-C, after one file was put back
        real(src, dst)

    monkeypatch.setattr(keep.os, "replace", once_then_stop)
    with pytest.raises(KeyboardInterrupt):
        keep.put_back(NB)
    monkeypatch.setattr(keep.os, "replace", real)
    assert len(calls) == 2 and keep.put_back(NB)[0] == 3
    assert _everything(home) == before
    unfinished = home / "data" / "checkpoints" / keep.UNFINISHED / NB
    assert (unfinished / "data" / f"{NB}.csv").read_text() == "v\n2\n"


def test_a_copy_left_by_a_run_that_died_is_put_back_before_the_next(home):
    _run(1)
    before = _everything(home)
    keep.copy_aside(NB)
    _run(2)  # ... and the run is killed before it can put anything back
    assert keep.put_back_all() == [NB]
    assert _everything(home) == before
    keep.copy_aside(NB)
    _run(3)  # killed again; this time the next run of the notebook finds the copy
    assert keep.copy_aside(NB) == 4
    assert _everything(home) == before
    listed = json.loads((home / "data" / "checkpoints" / keep.COPY / NB / keep.LIST).read_text())
    assert "figures/articles-t01.svg" in listed


def test_a_first_run_that_does_not_finish_leaves_nothing_of_its_own(home):
    assert keep.copy_aside(NB) == 0
    _run(1)
    assert keep.put_back(NB) == (0, 4)
    assert keep.owned(NB) == [] and _everything(home) == {}
    assert (home / "data" / "checkpoints" / keep.UNFINISHED / NB / "data" / f"{NB}.csv").exists()
