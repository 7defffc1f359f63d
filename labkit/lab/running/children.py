"""Ending the processes a run started: the Jupyter kernel, labkit's workers and servers,
found below this process in /proc, however deep (a kernel's workers are not its parent's
children)."""
from __future__ import annotations

import os
import signal
import time

from labkit.core import procfs


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children first found first), read from /proc."""
    parents: dict[int, list[int]] = {}
    for p in procfs.processes():
        parents.setdefault(p["ppid"], []).append(p["pid"])
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_children(grace: float = 3.0) -> int:
    """End every process this run started (the Jupyter kernel, labkit's workers, servers):
    SIGTERM, then SIGKILL for those still there. Returns how many there were."""
    procs = descendants(os.getpid())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in procs:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(procfs.listed(p) for p in procs):
            try:
                os.waitpid(-1, os.WNOHANG)  # reap our own children so they leave /proc
            except ChildProcessError:
                pass
            time.sleep(0.05)
    return len(procs)
