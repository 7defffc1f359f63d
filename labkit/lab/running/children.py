"""Ending the processes a run started: the Jupyter kernel, labkit's workers and servers,
found below this process however deep (a kernel's workers are not its parent's
children)."""
from __future__ import annotations

import psutil


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, however deep ([] if `pid` is gone)."""
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def kill_children(grace: float = 3.0) -> int:
    """End every process this run started (the Jupyter kernel, labkit's workers, servers):
    SIGTERM, then SIGKILL for those still there after `grace` seconds. Returns how many
    there were."""
    procs = psutil.Process().children(recursive=True)
    alive = procs
    for end in (psutil.Process.terminate, psutil.Process.kill):
        for p in alive:
            try:
                end(p)
            except psutil.NoSuchProcess:
                pass
        # Reaps this process's own children; a zombie further down counts as there until
        # its parent reaps it.
        _, alive = psutil.wait_procs(alive, timeout=grace)
    return len(procs)
