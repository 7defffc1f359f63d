"""A user's own Python-level switch, measured beside the catalogue like a Python peer.

The user names a factory by its import path, "package.module:factory", because the switch
runs in worker processes, which import it again. The factory takes no argument and returns
the pair of operations the C API has:

    make(fn) -> ctx   a context that runs fn() when first resumed; when fn returns, control
                      goes back to the context that made ctx (greenlet's parent)
    swap(ctx)         resume ctx; returns when some context swaps back to this one

greenlet has this shape: make = greenlet.greenlet, swap = lambda g: g.switch(). swap may be
called from any depth of fn's calls, so such a switch is stackful.

add_switch (labkit.add_switch(python=...)) imports it and runs a short counted ping-pong in
a worker, and adds it to the catalogue of this process as "user:<name>" (the
`user_python` record of labkit.core.systems), which labkit.measure and the advisor take.
The ping-pong is the Python peers' (labkit.core.pypeers, which runs the user's code in the
worker): two contexts made by make swap back and forth, each counts its own transfers, and
the same loop without swap is timed right before as the baseline."""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from labkit.core import pypeers as _pypeers
from labkit.core import systems as _systems
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.errors import ParameterError, ParameterTypeError, UserSwitchError

_IDENT = r"[A-Za-z_]\w*"
_PATH = re.compile(rf"({_IDENT}(?:\.{_IDENT})*):({_IDENT}(?:\.{_IDENT})*)")
SHAPE = ("the factory must return a pair (make, swap) of callables: make(fn) -> ctx, a "
         "context that runs fn() when first resumed, and swap(ctx), which resumes ctx and "
         "returns when something swaps back (greenlet: make = greenlet.greenlet, "
         "swap = lambda g: g.switch())")


def import_path(python) -> str:
    """python as "module:attr": a text of that form, or a callable whose __module__ and
    __qualname__ name it where a fresh process can import it."""
    if isinstance(python, str):
        if not _PATH.fullmatch(python):
            raise ParameterError("python", f"must be an import path 'package.module:factory' "
                                 f"(dotted names, one colon); got {python!r}")
        return python
    if not callable(python):
        raise TypeError(f"python must be an import path 'package.module:factory' (str) or "
                        f"an importable callable, not {type(python).__name__}")
    module = getattr(python, "__module__", None)
    qualname = getattr(python, "__qualname__", None)
    path = f"{module}:{qualname}"
    here = None
    if module and qualname and module != "__main__" and _PATH.fullmatch(path):
        try:
            here = _pypeers.resolve(path)
        except (ImportError, AttributeError):
            here = None
    if here is not python:
        why = ("defined in __main__" if module == "__main__" else
               "not an attribute of its module")
        raise ParameterError("python", f"must be importable in a worker process, which imports "
                             f"it afresh: {python!r} is not reachable as {path!r} ({why}); put the "
                             f"factory in a module and pass python='module:attr'")
    return path


def add(python, *, name: str | None = None, timeout: float | None = None) -> str:
    """Import a user's Python switch in a worker, check its shape and that a short ping-pong
    counts every switch, and add it to this process's catalogue; returns "user:<name>"
    (name: the module's last component unless given). Not importable: ValueError naming the
    path; the wrong shape: TypeError saying what the factory must return; an exception of
    the user's code or switches that were not made: UserSwitchError naming it; a hang:
    MeasurementTimeout (timeout: seconds, default 60), the worker alone ends."""
    path = import_path(python)
    entry = _systems.user_entry(name, path.split(":")[0].rsplit(".", 1)[-1])  # the module's last name
    timeout = _v.timeout(timeout) or _systems.USER_CHECK_TIMEOUT
    sys_path = _search_path()
    got = _worker.call("labkit.core.user_pyswitch", "worker_check", path=path,
                       sys_path=sys_path, timeout=timeout,
                       describe=f"the check of the user's Python switch {entry!r} ({path})")
    problem = got.get("problem")
    if problem == "import":
        raise ParameterError("python", f"must be importable in a worker process: {path!r} is "
                             f"not ({got['message']}), searching this process's sys.path; put "
                             "the module's folder on PYTHONPATH")
    if problem == "shape":
        raise ParameterTypeError("python", f"{path!r}: {got['message']}; {SHAPE}")
    if problem:
        raise UserSwitchError(f"the user's Python switch {entry!r} ({path}) {got['message']}")
    source = got.get("file") or ""
    sha = hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else ""
    _systems.USER_SWITCHES.pop(entry, None)  # one entry, one system
    _systems.USER_PY_SWITCHES[entry] = _systems.UserPythonSwitch(
        name=entry, path=path, sys_path=tuple(sys_path), source=source, sha256=sha)
    return entry


def memory(entry: str, n: int, timeout: float | None = None) -> float:
    """Python heap bytes per suspended context of an added Python switch, n of them
    suspended at once, measured in a worker (worker_memory)."""
    u = _systems.USER_PY_SWITCHES[entry]
    n = _v.integer_in("n", n, 1, 10_000_000)
    return _worker.call("labkit.core.user_pyswitch", "worker_memory", path=u.path,
                        sys_path=list(u.sys_path), n=n,
                        timeout=_v.timeout(timeout) or _systems.USER_CHECK_TIMEOUT + n * 1e-4,
                        describe=f"the memory of {n} suspended contexts of {entry!r}")


def _search_path() -> list[str]:
    """This process's module search path, which the worker adds to its own: the user's
    module is found there as it is here."""
    return [p for p in sys.path if isinstance(p, str)]


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_check(path: str, sys_path: list[str]) -> dict:
    """pypeers.user_check: the module's file, or the problem found."""
    return _pypeers.user_check(path, sys_path)


def worker_memory(path: str, sys_path: list[str], n: int) -> float:
    """pypeers.user_memory: Python heap bytes per suspended context."""
    return _pypeers.user_memory(path, sys_path, n)
