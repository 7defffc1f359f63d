"""The worker process: crashes and time-outs come back as exceptions, nothing is left running."""
import os

import pytest

from labkit.core import worker


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes; it is reaped by wait().
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_timeout_kills_the_worker_and_says_so():
    w = worker.Worker()
    try:
        pid = worker.call("labkit.core.worker", "worker_ping", worker=w, timeout=30, describe="ping")
        with pytest.raises(worker.MeasurementTimeout, match="did not answer"):
            worker.call("labkit.core.worker", "worker_sleep", seconds=60, worker=w, timeout=0.5, describe="sleep")
        assert not _alive(pid)
        # The next call starts a new worker.
        assert worker.call("labkit.core.worker", "worker_ping", worker=w, timeout=30, describe="ping") != pid
    finally:
        w.close()


def test_close_leaves_no_process():
    w = worker.Worker()
    pid = worker.call("labkit.core.worker", "worker_ping", worker=w, timeout=30, describe="ping")
    assert _alive(pid)
    w.close()
    assert not _alive(pid)


def test_worker_errors_are_reported():
    w = worker.Worker()
    try:
        with pytest.raises(worker.WorkerError, match="may only run labkit"):
            worker.call("os", "system", command="true", worker=w, timeout=30, describe="bogus job")
        with pytest.raises(worker.WorkerError, match="has no attribute"):
            worker.call("labkit.core.worker", "worker_nothing", worker=w, timeout=30, describe="bogus job")
    finally:
        w.close()


def test_a_pin_does_not_outlive_its_job():
    import labkit

    everything = os.sched_getaffinity(0)
    labkit.measure("asm", switches=100, repeats=1, cpu=min(everything))
    labkit.measure("asm", switches=100, repeats=1)  # asks for no pinning
    pid = worker.shared_worker().pid
    assert os.sched_getaffinity(pid) == everything


def test_a_starting_worker_imports_no_data_libraries():
    """What _worker_main's docstring says it imports: the standard library and the bare
    package, not pandas, numpy, matplotlib or asyncio, nor labkit's public API (loaded on
    first use), the experiments or the lab: a fresh process must be cheap to start."""
    import subprocess
    import sys

    code = ("import sys, labkit.core._worker_main; "
            "print(' '.join(m for m in sys.modules if '.' not in m or m.startswith('labkit.')))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "labkit.core._worker_main" in loaded  # the check can see what it looks for
    heavy = {"pandas", "numpy", "matplotlib", "scipy", "asyncio", "labkit.experiments",
             "labkit.lab", "labkit.core.timing", "labkit.core.entries", "labkit.core.machine"}
    assert not loaded & heavy, sorted(loaded & heavy)
