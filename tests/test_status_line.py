"""The status line of `labkit reproduce`: it fits the terminal's width, dropping its least
useful parts first, and shows the whole run's ETA from the last run's notebook times. A
fake clock stands in for time, so no assertion depends on how fast the test runs."""
import fcntl
import io
import json
import os
import select
import struct
import termios

import pytest

from labkit.lab.running import status_line
from labkit.lab.running.status_line import StatusLine, last_seconds


class Clock:
    """time.monotonic and time.time, both at `now` until moved."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def time(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(status_line, "time", c)
    return c


def sweep(path, clock, desc="verdict processes", done=34, total=48, took=70.0):
    """The progress file a sweep writes: `done` points of `total` in `took` seconds."""
    path.write_text(json.dumps({"desc": desc, "done": done, "total": total,
                                "started": clock.now - took}))


def echo_servers(tmp_path, clock, **kw) -> StatusLine:
    """Notebook 10 of 12, 09_echo_servers, 2:07 into it and 9:22 into the run, at point
    35/48 of its sweep, with the last run's times of the three notebooks left."""
    line = StatusLine(tmp_path / "p.json", total=12, expected=[None] * 9 + [200.0, 220.0, 7.0],
                      **kw)
    clock.now += 9 * 60 + 22 - 127
    line.notebook(10, "09_echo_servers")
    clock.now += 127
    sweep(line.path, clock)
    return line


def test_the_whole_line_when_it_fits(tmp_path, clock):
    line = echo_servers(tmp_path, clock)
    # sweep: 70 s for 34 points, 14 left: 29 s; run: 200 - 127 = 73 s, then 220 + 7
    assert line.text() == ("[10/12] 09_echo_servers  verdict processes: point 35/48  "
                           "sweep ETA 0:28  elapsed 2:07 (run 9:22)  run ETA 5:00")
    assert line.text(width=200) == line.text()


def test_a_narrow_terminal_drops_the_least_useful_parts_first(tmp_path, clock):
    line = echo_servers(tmp_path, clock)
    assert line.text(100) == ("[10/12] 09_echo_servers  verdict processes: point 35/48  "
                              "sweep ETA 0:28  elapsed 2:07  run ETA 5:00")
    assert line.text(90) == ("[10/12] 09_echo_servers  verdict processes: point 35/48  "
                             "sweep ETA 0:28  run ETA 5:00")
    assert line.text(79) == "[10/12] 09_echo_servers  point 35/48  sweep ETA 0:28  run ETA 5:00"
    assert line.text(60) == "[10/12] 09_echo_servers  point 35/48  run ETA 5:00"
    assert line.text(40) == "[10/12] 09_echo_servers  run ETA 5:00"
    assert line.text(12) == "[10/12] 09_e"
    for width in range(1, 120):
        assert len(line.text(width)) <= width


def test_each_redraw_fits_an_80_column_terminal_on_one_row(tmp_path, clock):
    out = Terminal()
    line = echo_servers(tmp_path, clock, stream=out, width=80)
    for _ in range(5):
        clock.now += 1
        line.draw()
    drawn = out.getvalue()
    assert "\n" not in drawn
    redraws = drawn.split("\r\033[K")[1:]
    assert len(redraws) == 6 and all(0 < len(r) < 80 for r in redraws), redraws


def test_the_width_is_the_terminals(tmp_path, clock):
    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    with open(side, "w") as pty:
        line = echo_servers(tmp_path, clock, stream=pty)
        assert line.tty and line.columns() == 80
        fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 50, 0, 0))
        assert line.columns() == 50  # read again at each redraw: a resize is followed
        line.draw()
        drawn = ""
        while drawn.count("\r\033[K") < 2:  # notebook()'s draw, then this one
            assert select.select([main], [], [], 30)[0], drawn
            drawn += os.read(main, 4096).decode()
    os.close(main)
    assert drawn.split("\r\033[K")[-1] == "[10/12] 09_echo_servers  run ETA 5:00"


def test_run_eta_from_the_last_runs_times(tmp_path, clock):
    line = StatusLine(tmp_path / "p.json", total=3, expected=[10.0, 20.0, 30.0])
    line.notebook(1, "a")
    assert line.run_eta() == (60.0, True)
    clock.now += 4
    assert line.run_eta() == (56.0, True) and "run ETA 0:56" in line.text()
    clock.now += 20  # longer than last time: this notebook's share is spent, not negative
    assert line.run_eta() == (50.0, True)
    line.notebook(2, "b")
    sweep(line.path, clock, done=1, total=5, took=10.0)  # 40 s left, more than 20 s
    assert line.run_eta(sweep_eta=40.0) == (70.0, True) and "run ETA 1:10" in line.text()
    line.notebook(3, "c")
    clock.now += 31
    assert line.run_eta() == (0.0, True)


def test_a_notebook_without_a_last_time_makes_the_eta_a_lower_bound(tmp_path, clock):
    line = StatusLine(tmp_path / "p.json", total=3, expected=[10.0, None, 30.0])
    line.notebook(1, "a")
    assert line.run_eta() == (40.0, False) and "run ETA 0:40+" in line.text()
    line.notebook(2, "b")
    assert line.run_eta() == (30.0, False)
    assert line.run_eta(sweep_eta=12.0) == (42.0, False)
    line.notebook(3, "c")
    assert line.run_eta() == (30.0, True)


def test_no_eta_without_a_last_run(tmp_path, clock):
    for expected in (None, [None, None]):
        line = StatusLine(tmp_path / "p.json", total=2, expected=expected)
        line.notebook(1, "a")
        sweep(line.path, clock, done=2, total=4, took=10.0)
        assert line.run_eta(sweep_eta=10.0) is None and "run ETA" not in line.text()


def test_last_seconds_reads_the_manifest_of_finished_notebooks():
    manifest = {"01_stack_size": {"ok": True, "seconds": 33.8},
                "05_kernel_switches": {"ok": False, "seconds": 3.0, "error": "boom"},
                "09_echo_servers": {"ok": True, "seconds": 245.9}}
    names = ["09_echo_servers", "05_kernel_switches", "01_stack_size", "10_your_workload"]
    assert last_seconds(names, manifest) == [245.9, None, 33.8, None]


def test_cleared_stays_cleared_until_the_next_notebook(tmp_path, clock):
    out = Terminal()
    line = echo_servers(tmp_path, clock, stream=out, width=80)
    line.clear()
    cleared = out.getvalue()
    line.draw()  # the thread's redraw, between clear() and the caller's own output
    assert out.getvalue() == cleared and cleared.endswith("\r\033[K")
    line.notebook(11, "10_your_workload")
    assert out.getvalue().endswith("10_your_workload  elapsed 0:00 (run 9:22)  run ETA 3:47")


def test_a_log_gets_a_line_per_new_point(tmp_path, clock):
    out = io.StringIO()
    line = echo_servers(tmp_path, clock, stream=out)
    line.draw()
    clock.now += 1
    line.draw()  # the same point: no new line
    sweep(line.path, clock, done=35)
    line.draw()
    lines = out.getvalue().splitlines()
    assert [x.split("  sweep")[0].split("  elapsed")[0] for x in lines] == [
        "[10/12] 09_echo_servers",
        "[10/12] 09_echo_servers  verdict processes: point 35/48",
        "[10/12] 09_echo_servers  verdict processes: point 36/48"]
