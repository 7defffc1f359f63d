"""What an idle joined room worker costs a measurement on this machine: the idle-process
experiment (labkit.experiments.idle_cost) beside a room served on loopback with one worker
joined, as `labkit room join` runs it (quiet) or with Dask's defaults (`labkit room noise`).

The room is started through the command line (`python -m labkit room serve` and `join`),
as a participant starts it: the worker measured is the one a workshop's laptops run.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from labkit.experiments import idle_cost


def wait_for_text(path: Path, text: str, seconds: float, *, proc=None) -> None:
    """Wait until a log file holds `text`; TimeoutError (with the log's end) if not, or at
    once if `proc` exits first. How a started room process says it is ready (the room's
    tests wait on it too)."""
    end = time.monotonic() + seconds
    path = Path(path)
    log = ""
    while time.monotonic() < end:
        log = path.read_text(errors="replace") if path.exists() else ""
        if text in log:
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:5]} exited ({proc.returncode}): {log[-1500:]}")
        time.sleep(0.2)
    raise TimeoutError(f"no {text!r} in {path} after {seconds} s: {log[-1500:]}")


def _pin_like(pid: int, like: int) -> None:
    """Every thread of `pid` on the CPUs `like` may use."""
    cpus = os.sched_getaffinity(like)
    for t in psutil.Process(pid).threads():
        try:
            os.sched_setaffinity(t.id, cpus)
        except OSError:
            pass


@contextlib.contextmanager
def idle_worker(quiet: bool):
    """A room served on loopback with one joined worker, for as long as the block runs:
    yields the worker's pid. The scheduler is pinned beside the worker (the worker's own
    CPU), so that only the worker differs between a running and a stopped worker."""
    tmp = Path(tempfile.mkdtemp(prefix="labkit-noise-"))
    room_file = tmp / "room.json"
    room = [sys.executable, "-m", "labkit", "room"]
    procs = []
    try:
        with open(tmp / "serve.log", "w") as f:
            sched = subprocess.Popen([*room, "serve", "--room", str(room_file), "--port", "0"],
                                     stdout=f, stderr=subprocess.STDOUT)
        procs.append(sched)
        wait_for_text(tmp / "serve.log", "each participant runs", 60, proc=sched)
        join_cmd = [*room, "join", str(room_file), "--name", "noise", "--allow-root"] + \
            ([] if quiet else ["--loud"])
        with open(tmp / "worker.log", "w") as f:
            worker = subprocess.Popen(join_cmd, stdout=f, stderr=subprocess.STDOUT)
        procs.append(worker)
        wait_for_text(tmp / "worker.log", "joined as", 120, proc=worker)
        _pin_like(sched.pid, worker.pid)
        yield worker.pid
    finally:
        for p in reversed(procs):
            try:
                os.kill(p.pid, signal.SIGCONT)  # a stopped process would not end
            except ProcessLookupError:
                pass
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def noise(*, blocks: int = 10, repeats: int = 5, cpu: int = 0, quiet: bool = True):
    """What an idle joined worker costs a measurement on this machine: idle_cost's
    experiment beside a room's worker, as `join` runs it (`quiet`) or with Dask's
    defaults. One row per kernel, with the column `quiet_worker`; the raw rows are in
    `.attrs["raw"]`."""
    if not isinstance(quiet, bool):
        raise TypeError(f"quiet must be True or False, not {quiet!r}")
    summary = idle_cost.idle_process_cost(lambda: idle_worker(quiet), blocks=blocks,
                                          repeats=repeats, cpu=cpu)
    summary.insert(summary.columns.get_loc("repeats") + 1, "quiet_worker", quiet)
    return summary
