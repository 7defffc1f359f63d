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
The ping-pong (pingpong) is the Python peers': two contexts made by make swap back and
forth, each counts its own transfers, and the same loop without swap is timed right before
as the baseline."""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from labkit.core import systems as _systems
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.errors import UserSwitchError

CHECK_TIMEOUT = 60.0
# Switches of the check's ping-pong: enough to see each side resumed many times.
CHECK_ROUNDS = 100
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
            raise ValueError(f"python must be an import path 'package.module:factory' "
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
            here = _resolve(path)
        except (ImportError, AttributeError):
            here = None
    if here is not python:
        why = ("defined in __main__" if module == "__main__" else
               "not an attribute of its module")
        raise ValueError(f"python must be importable in a worker process, which imports it "
                         f"afresh: {python!r} is not reachable as {path!r} ({why}); put the "
                         f"factory in a module and pass python='module:attr'")
    return path


def _resolve(path: str):
    """The object an import path names (its module imported)."""
    import importlib

    module, attr = path.split(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _check_name(name, path: str) -> str:
    if name is None:
        name = path.split(":")[0].rsplit(".", 1)[-1]
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", name):
        raise ValueError(f"name must be a letter or _ then up to 63 letters, digits, _ . or -; "
                         f"got {name!r}")
    return _systems.USER_PREFIX + name


def add(python, *, name: str | None = None, timeout: float | None = None) -> str:
    """Import a user's Python switch in a worker, check its shape and that a short ping-pong
    counts every switch, and add it to this process's catalogue; returns "user:<name>"
    (name: the module's last component unless given). Not importable: ValueError naming the
    path; the wrong shape: TypeError saying what the factory must return; an exception of
    the user's code or switches that were not made: UserSwitchError naming it; a hang:
    MeasurementTimeout (timeout: seconds, default 60), the worker alone ends."""
    path = import_path(python)
    entry = _check_name(name, path)
    timeout = _v.timeout(timeout) or CHECK_TIMEOUT
    sys_path = _search_path()
    got = _worker.call("labkit.core.user_pyswitch", "worker_check", path=path,
                       sys_path=sys_path, timeout=timeout,
                       describe=f"the check of the user's Python switch {entry!r} ({path})")
    problem = got.get("problem")
    if problem == "import":
        raise ValueError(f"python must be importable in a worker process: {path!r} is not "
                         f"({got['message']}); the worker searched this process's sys.path")
    if problem == "shape":
        raise TypeError(f"python {path!r}: {got['message']}; {SHAPE}")
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
                        timeout=_v.timeout(timeout) or CHECK_TIMEOUT + n * 1e-4,
                        describe=f"the memory of {n} suspended contexts of {entry!r}")


def _search_path() -> list[str]:
    """This process's module search path, which the worker adds to its own: the user's
    module is found there as it is here."""
    return [p for p in sys.path if isinstance(p, str)]


# ---- run in the worker process (labkit.core.worker.call) ----

def _operations(path: str, sys_path: list[str], fresh: bool = False):
    """(make, swap) of the factory at path, or a problem: ("import" | "shape" | "raised",
    message). fresh: import its module again if this worker has it (the user edited it and
    adds it again)."""
    import importlib

    for p in sys_path:
        if p not in sys.path:
            sys.path.append(p)
    try:
        name = path.split(":")[0]
        if fresh and name in sys.modules:
            importlib.reload(sys.modules[name])
        factory = _resolve(path)
    except (ImportError, AttributeError) as exc:
        return None, ("import", f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        return None, ("raised", f"raised {type(exc).__name__} on import: {exc}")
    if not callable(factory):
        return None, ("shape", f"{path.split(':')[1]} is a {type(factory).__name__}, not a "
                               "callable factory")
    try:
        ops = factory()
    except Exception as exc:
        return None, ("raised", f"its factory raised {type(exc).__name__}: {exc}")
    if not (isinstance(ops, (tuple, list)) and len(ops) == 2 and all(map(callable, ops))):
        return None, ("shape", f"the factory returned {_shown(ops)}")
    return tuple(ops), None


def _shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"


def _runner(make, swap):
    """run(counts, rounds): two contexts made by `make` swap `rounds` times each way; the
    first counts its resumptions in counts.main, the second in counts.co. The first returns
    at the end, which ends the swap that started it (make's contract)."""
    def run(c, rounds: int) -> None:
        ctx = {}

        # Each side looks its peer up once: the timed loop is the baseline's plus swap.
        def first():
            other = ctx["second"]
            for _ in range(rounds):
                swap(other)
                c.main += 1

        def second():
            other = ctx["first"]
            while True:
                c.co += 1
                swap(other)

        ctx["first"], ctx["second"] = make(first), make(second)
        swap(ctx["first"])

    return run


def _guarded(run, describe: str):
    """run, with an exception of the user's code named as theirs."""
    def guarded(c, rounds):
        try:
            run(c, rounds)
        except Exception as exc:
            raise RuntimeError(f"{describe} raised {type(exc).__name__}: {exc}") from exc
    return guarded


def worker_check(path: str, sys_path: list[str]) -> dict:
    """{"file": the module's file} when the switch imports, has the shape and a ping-pong of
    CHECK_ROUNDS rounds counts every switch; else {"problem": ..., "message": ...}."""
    from labkit.core import pypeers

    ops, problem = _operations(path, sys_path, fresh=True)
    if problem:
        return {"problem": problem[0], "message": problem[1]}
    c = pypeers.Counts()
    try:
        _runner(*ops)(c, CHECK_ROUNDS)
    except Exception as exc:
        return {"problem": "raised", "message": f"raised {type(exc).__name__}: {exc} "
                                                "during a ping-pong of the check"}
    if (c.main, c.co) != (CHECK_ROUNDS, CHECK_ROUNDS):
        return {"problem": "count",
                "message": f"does not switch: in a ping-pong of {2 * CHECK_ROUNDS} switches "
                           f"the first context counted {c.main} resumptions and the second "
                           f"{c.co}, where each should count {CHECK_ROUNDS}"}
    module = sys.modules[path.split(":")[0]]
    return {"file": getattr(module, "__file__", None) or ""}


def pingpong(path: str, sys_path: list[str], rounds: int, warmup: int,
             repeats: int) -> list[dict]:
    """The user's switch's ping-pong, timed as the Python peers' (pypeers.timed_pingpong)."""
    from labkit.core import pypeers

    ops, problem = _operations(path, sys_path)
    if problem:
        raise RuntimeError(f"the user's Python switch {path!r}: {problem[1]}")
    run = _guarded(_runner(*ops), f"the user's Python switch {path!r}")
    return pypeers.timed_pingpong(run, rounds, warmup, repeats)


def worker_memory(path: str, sys_path: list[str], n: int) -> float:
    """Python heap bytes (tracemalloc) per suspended context of the user's switch: a hub
    context makes n contexts and resumes each once, and each swaps back to the hub at
    once, so n are suspended when the hub reads the heap."""
    import gc
    import tracemalloc

    ops, problem = _operations(path, sys_path)
    if problem:
        raise RuntimeError(f"the user's Python switch {path!r}: {problem[1]}")
    make, swap = ops
    out = {}

    def hub():
        held = []

        def body():
            while True:
                swap(out["hub"])

        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            held.append(make(body))
            swap(held[-1])
        out["bytes"] = (tracemalloc.get_traced_memory()[0] - before) / n
        tracemalloc.stop()

    out["hub"] = make(hub)
    _guarded(lambda c, r: swap(out["hub"]), f"the user's Python switch {path!r}")(None, 0)
    return out["bytes"]
