"""Ctrl-C and resume: a run interrupted by SIGINT to its process group stops with a short
message (no traceback, no process left behind), and `--resume` measures only the sweep
points the checkpoint does not hold: none twice, none lost. A notebook that fails or is
interrupted leaves its last finished results whole. Tiny notebooks stand in for the suite."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from labkit.lab.running import children, reproduce

pytestmark = pytest.mark.notebook

POINTS = 10
TINY = textwrap.dedent(f'''\
    # %% tags=["parameters"]
    quick = False
    log = ""

    # %%
    import os
    import time

    import pandas as pd

    from labkit.core import results
    from labkit.lab.running.sweep import sweep

    # a side table written before the sweep: whose run it is
    results.save_csv(pd.DataFrame({{"kernel_pid": [os.getpid()]}}), "90_tiny_side")


    def one(i):
        with open(log, "a") as f:  # every point that starts being measured
            f.write(f"{{i}}\\n")
        time.sleep(0.5)
        return pd.DataFrame({{"value": [i * 10]}})


    df = sweep(one, [{{"i": i}} for i in range({POINTS})], desc="tiny", checkpoint="90_tiny")
    results.save_csv(df, "90_tiny")
    ''')

# Runs reproduce on a folder holding only the tiny notebook, with its results in `home`.
DRIVER = textwrap.dedent('''\
    import signal
    import sys
    # A shell without job control starts background commands with SIGINT ignored, and a
    # child inherits that; a terminal's Ctrl-C, which the tests stand in for, is not ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from pathlib import Path
    from labkit.core import results
    from labkit.lab import cli
    from labkit.lab.running import notebooks
    notebooks.NOTEBOOKS = Path(sys.argv[1])
    results.set_home(sys.argv[2])
    sys.exit(cli.main(["reproduce", *sys.argv[3:]]))
    ''')


def _start(tmp_path, *extra):
    log = tmp_path / "measured.log"
    # Its own process group, as a terminal gives a command: Ctrl-C goes to the group.
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path / "nb"), str(tmp_path / "home"),
         "--no-progress", "-p", "log", str(log), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_interrupt_then_resume_measures_each_point_once(tmp_path, monkeypatch):
    monkeypatch.delenv("LABKIT_RESULTS_DIR", raising=False)
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "90_tiny.py").write_text(TINY)
    log = tmp_path / "measured.log"
    checkpoint = tmp_path / "home" / "data" / "checkpoints" / "90_tiny.csv"

    run = _start(tmp_path)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        if checkpoint.exists() and len(pd.read_csv(checkpoint)) >= 3:
            break
        time.sleep(0.2)
    assert run.poll() is None, run.communicate()
    below = children.descendants(run.pid)  # the kernel, at least
    assert below, "the run should have started a kernel"
    os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, out + err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "labkit reproduce --resume" in err and "kept" in err
    time.sleep(0.5)
    assert not [p for p in below if _alive(p)], "processes left behind after Ctrl-C"

    kept = set(pd.read_csv(checkpoint).i)
    assert 3 <= len(kept) < POINTS
    started_before = len(log.read_text().split())
    state = json.loads((checkpoint.parent / reproduce.RESUME_FILE).read_text())
    assert state["finished"] == [] and "log" in state["parameters"]

    resumed = _start(tmp_path, "--resume")
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out + err
    measured_after = [int(x) for x in log.read_text().split()[started_before:]]
    assert not kept & set(measured_after), "a finished point was measured again"
    assert len(measured_after) == len(set(measured_after))
    final = pd.read_csv(tmp_path / "home" / "data" / "90_tiny.csv")
    assert sorted(final.i) == list(range(POINTS))  # none lost, none twice
    assert list(final.value) == [i * 10 for i in final.i]
    assert not (checkpoint.parent / reproduce.RESUME_FILE).exists()  # nothing left to resume


def test_resume_without_an_interrupted_run_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("LABKIT_RESULTS_DIR", raising=False)
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "90_tiny.py").write_text(TINY)
    run = _start(tmp_path, "--resume")
    out, err = run.communicate(timeout=120)
    assert run.returncode == 2, out + err
    assert "nothing to resume" in err


def test_a_fresh_run_never_resumes_from_an_older_runs_points(tmp_path, monkeypatch):
    """A whole run leaves no checkpoint behind; a fresh run that is then interrupted and
    resumed measures every point itself (none taken from the older run), and the resume
    keeps the interrupted run's --only."""
    monkeypatch.delenv("LABKIT_RESULTS_DIR", raising=False)
    (tmp_path / "nb").mkdir()
    for name in ("90_tiny", "91_tiny"):
        (tmp_path / "nb" / f"{name}.py").write_text(TINY)
    log = tmp_path / "measured.log"
    checkpoint = tmp_path / "home" / "data" / "checkpoints" / "90_tiny.csv"

    first = _start(tmp_path, "--only", "90_tiny")
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, out + err
    assert not checkpoint.exists()  # its results are whole: nothing for a resume to take
    before = len(log.read_text().split())
    side, table = (tmp_path / "home" / "data" / f"{n}.csv" for n in ("90_tiny_side", "90_tiny"))
    finished_side, finished_table = pd.read_csv(side), pd.read_csv(table)
    # an older run's leftover points (as an interrupted run leaves them) are set aside
    stale = checkpoint.with_name("90_tiny_part.csv")
    pd.DataFrame({"i": [0], "value": [-1]}).to_csv(stale, index=False)

    again = _start(tmp_path, "--only", "90_tiny")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and again.poll() is None:
        if checkpoint.exists() and len(pd.read_csv(checkpoint)) >= 3:
            break
        time.sleep(0.2)
    os.killpg(again.pid, signal.SIGINT)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 130, out + err
    assert ("90_tiny did not finish: its results are its last finished run's (2 files put "
            "back)") in err
    # the side table it wrote before the interrupt is set aside; the finished run's is back
    assert pd.read_csv(side).equals(finished_side)
    assert pd.read_csv(table).equals(finished_table)
    unfinished = checkpoint.parent / "unfinished" / "90_tiny" / "data" / "90_tiny_side.csv"
    assert pd.read_csv(unfinished).kernel_pid[0] != finished_side.kernel_pid[0]
    assert "set aside 1 sweep checkpoint(s)" in err and not stale.exists()
    assert (stale.parent / reproduce.SUPERSEDED / stale.name).exists()  # kept, not lost
    kept = set(pd.read_csv(checkpoint).i)
    by_fresh = [int(x) for x in log.read_text().split()[before:]]
    assert kept <= set(by_fresh)  # every point kept was measured by this run, not the first

    resumed = _start(tmp_path, "--resume")
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out + err
    assert "1 notebooks" in out, out  # the interrupted run's --only, not every notebook
    by_resume = [int(x) for x in log.read_text().split()[before + len(by_fresh):]]
    assert not kept & set(by_resume)
    assert kept | set(by_resume) == set(range(POINTS))
    assert not (tmp_path / "home" / "data" / "91_tiny.csv").exists()


FAILING = textwrap.dedent('''\
    # %% tags=["parameters"]
    quick = False
    fail = 0

    # %%
    import os

    import pandas as pd

    from labkit.core import results

    results.save_csv(pd.DataFrame({"kernel_pid": [os.getpid()]}), "92_fails_side")
    if int(fail):
        raise RuntimeError("a planned failure")
    results.save_csv(pd.DataFrame({"kernel_pid": [os.getpid()]}), "92_fails")
    ''')


def test_a_failed_notebook_leaves_its_last_finished_results(tmp_path, monkeypatch):
    monkeypatch.delenv("LABKIT_RESULTS_DIR", raising=False)
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "92_fails.py").write_text(FAILING)
    data = tmp_path / "home" / "data"

    def run(fail: int):
        p = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path / "nb"),
                              str(tmp_path / "home"), "--no-progress", "-p", "fail", str(fail)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=300)
        return p.returncode, out + err

    code, text = run(0)
    assert code == 0, text
    finished = {n: pd.read_csv(data / f"{n}.csv") for n in ("92_fails", "92_fails_side")}
    code, text = run(1)
    assert code == 1, text
    assert "FAILED 92_fails" in text and "(2 files put back)" in text
    for name, frame in finished.items():
        assert pd.read_csv(data / f"{name}.csv").equals(frame), name
    aside = data / "checkpoints" / "unfinished" / "92_fails" / "data" / "92_fails_side.csv"
    assert pd.read_csv(aside).kernel_pid[0] != finished["92_fails_side"].kernel_pid[0]
