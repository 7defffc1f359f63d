"""The OS's counters through perf_event_open: software counters see the context
switches and page faults a block causes, a counter the kernel refuses says why with its
errno, and every measured row carries the counts beside the lab's own."""
import errno
import math
import mmap
import os
import re
import subprocess
import sys

import pytest

import labkit
from conftest import assert_each_raises
from labkit.core import counters

REFUSED = re.compile(r"^not available here: .+ \(errno \d+\)")


@pytest.fixture
def one_cpu():
    """This process (and what it starts) on one CPU, so that a hand-off is a switch."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    yield
    os.sched_setaffinity(0, before)


def test_software_counters_see_every_hand_off_of_a_pipe_ping_pong(one_cpu):
    rounds = 300
    echo = subprocess.Popen(
        [sys.executable, "-c", "import os\nwhile (b := os.read(0, 1)): os.write(1, b)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    try:
        os.write(echo.stdin.fileno(), b"x")  # the child is up and echoing before counting
        assert os.read(echo.stdout.fileno(), 1) == b"x"
        with counters.count() as c:
            for _ in range(rounds):
                os.write(echo.stdin.fileno(), b"x")
                assert os.read(echo.stdout.fileno(), 1) == b"x"
    finally:
        echo.stdin.close()
        echo.wait(timeout=30)
        echo.stdout.close()
    r = c.result()
    assert r["sw_counters"] == counters.COUNTED
    # On one CPU the echo runs only once this process is off the CPU: a switch per round.
    assert r["sw_context_switches"] >= rounds
    assert r["sw_task_clock_ns"] > 0
    assert r["sw_cpu_migrations"] >= 0


def test_page_faults_grow_with_the_fresh_pages_touched():
    pages, size = 256, 256 * mmap.PAGESIZE
    faults = {}
    for touch in (0, pages):
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            m.madvise(mmap.MADV_NOHUGEPAGE)  # one fault a page, not one for them all
        with counters.count(counters.SOFTWARE) as c:
            for i in range(touch):
                m[i * mmap.PAGESIZE] = 1
        m.close()
        faults[touch] = c.result()["sw_page_faults"]
    assert faults[pages] >= pages
    assert faults[pages] - faults[0] >= pages


def test_hardware_counters_count_or_say_why_not():
    with counters.count(counters.HARDWARE) as c:
        sum(range(10_000))
    r = c.result()
    if r["hw_counters"] == counters.COUNTED:
        assert all(r[n] > 0 for n in ("hw_cycles", "hw_instructions"))
    else:
        # All refused ("not available here: ..."), or some ("hw_x: not available here: ...").
        assert re.search(r"not available here: .+ \(errno \d+\)", r["hw_counters"])
        assert "perf_event_paranoid" in r["hw_counters"]
        refused = [n for n in counters.HARDWARE if math.isnan(r[n])]
        assert refused
        assert REFUSED.search(r["hw_counters"]) or all(n in r["hw_counters"] for n in refused)


def test_a_refused_counter_gives_the_kernels_reason_and_errno():
    # A software event the kernel does not have: perf_event_open refuses it (ENOENT).
    with counters.count({"sw_context_switches": (1, 3), "sw_no_such_event": (1, 9999)}) as c:
        pass
    r = c.result()
    assert r["sw_context_switches"] >= 0 and not math.isnan(r["sw_context_switches"])
    assert math.isnan(r["sw_no_such_event"])
    assert r["sw_counters"].startswith("sw_no_such_event: not available here: ")
    assert re.search(r"\(errno \d+\)", r["sw_counters"])
    assert f"kernel.perf_event_paranoid = {counters.paranoid()}" in r["sw_counters"]
    # When every counter of a kind is refused, the kind gives the one reason.
    with counters.count({"hw_no_such_event": (0, 0xFFFF)}) as c:
        pass
    assert REFUSED.search(c.result()["hw_counters"])
    assert counters.refusal(2).startswith(f"not available here: {os.strerror(2)} (errno 2)")
    assert "PMU" in counters.hint(2) and counters.hint(12345) == ""


def test_counters_refuse_bad_input():
    assert_each_raises(
        (lambda: counters.count("sw_page_faults"), TypeError, "events"),
        (lambda: counters.count({"page_faults": (1, 2)}), ValueError, "events"),
        (lambda: counters.count({"sw_page_faults": (1, -2)}), ValueError, "events"),
        (lambda: counters.count({"sw_page_faults": 2}), ValueError, "events"),
        (lambda: counters.refusal(0), ValueError, "err"),
        (lambda: counters.hint(True), ValueError, "err"),
        (lambda: counters.count().result(), RuntimeError, "after the with-block"),
    )


def test_measured_rows_carry_the_counters_beside_the_labs_own_counts():
    df = labkit.measure("asm", switches=2000, repeats=2)
    cols = list(df.columns)
    assert cols[cols.index("counted_switches") + 1] == "sw_context_switches"
    for c in counters.COLUMNS + ("counters_cover",):
        assert c in cols, c
    assert (df.sw_counters == counters.COUNTED).all()
    assert (df.sw_context_switches >= 0).all() and (df.sw_page_faults >= 0).all()
    assert df.hw_counters.map(lambda v: v == counters.COUNTED or bool(REFUSED.search(v))).all()
    assert df.counters_cover.str.contains("1 warm-up + 2 repeats", regex=False).all()


def test_hand_off_rows_count_at_least_the_switches_the_lab_counted():
    df = labkit.measure_handoff("thread_pipe", cpus=(0, 0), switches=1000, repeats=2)
    assert (df.sw_counters == counters.COUNTED).all()
    # The counters cover the warm-up and both threads too: at least what each repeat saw.
    assert df.sw_context_switches.iloc[0] >= df.kernel_switches.sum()


def test_yield_rows_count_at_least_the_switches_the_kernel_reported():
    df = labkit.measure_yield(units=1000, every=[1], repeats=1)
    row = df.iloc[0]
    assert row.sw_counters == counters.COUNTED
    assert row.sw_context_switches >= row.vol_ctxsw + row.invol_ctxsw >= 1000
    assert row.counters_cover == "whole measurement: 0 warm-up + 1 repeat"


def test_where_the_kernel_may_not_be_counted_user_space_counts_say_so(monkeypatch):
    real = counters._open

    def paranoid_kernel(kind, config, user_only=False):
        # As perf_event_paranoid >= 2 answers a process without CAP_PERFMON.
        if not user_only:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        return real(kind, config, user_only=True)

    monkeypatch.setattr(counters, "_open", paranoid_kernel)
    m = mmap.mmap(-1, 64 * mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with counters.count(counters.SOFTWARE) as c:
        for i in range(64):
            m[i * mmap.PAGESIZE] = 1
    m.close()
    r = c.result()
    # A switch happens in the kernel: refused. A page fault is taken from user space: counted.
    assert math.isnan(r["sw_context_switches"]) and math.isnan(r["sw_cpu_migrations"])
    assert r["sw_page_faults"] >= 64 and r["sw_task_clock_ns"] > 0
    assert "sw_context_switches: not available here: Permission denied (errno 13)" \
        in r["sw_counters"]
    assert "sw_page_faults: counted in user space only" in r["sw_counters"]
