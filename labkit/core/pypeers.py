"""Python's own peers, timed from Python by the method of the C harness: greenlet (stackful,
an assembly stack switch inside CPython), generator send (stackless), and an asyncio task
switch (stackless, through the event loop); and, by the same method, a user's Python switch,
a (make, swap) pair from the factory labkit.core.user_pyswitch names. Each side counts its
own transfers; the same Python loop without the switch is timed right before as the
baseline. Run in the worker process."""
from __future__ import annotations

import sys
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).


PY_PEERS = {
    "greenlet_switch": ("stackful", "greenlet.switch(): copies the C stack slice and the "
                        "interpreter frame state of the greenlet it leaves"),
    "generator_send": ("stackless", "gen.send(): resumes a suspended generator frame; "
                       "yield suspends it (two transfers per send)"),
    "asyncio_task": ("stackless", "await asyncio.sleep(0) in two tasks: each yield goes "
                     "through the event loop's ready queue to the other task"),
}


class Counts:
    __slots__ = ("main", "co")

    def __init__(self):
        self.main = 0
        self.co = 0


def _baseline(c: Counts, rounds: int) -> None:
    for _ in range(rounds):
        c.co += 1
        c.main += 1


def _greenlet(c: Counts, rounds: int) -> None:
    import greenlet

    main = greenlet.getcurrent()

    def body():
        while True:
            c.co += 1
            main.switch()

    g = greenlet.greenlet(body)
    for _ in range(rounds):
        g.switch()
        c.main += 1
    g.throw(greenlet.GreenletExit)  # unwind it, so nothing is left suspended


def _generator(c: Counts, rounds: int) -> None:
    def body():
        while True:
            c.co += 1
            yield

    g = body()
    send = g.send
    for _ in range(rounds):
        send(None)
        c.main += 1
    g.close()


def _asyncio(c: Counts, rounds: int) -> None:
    import asyncio

    async def side(bump):
        for _ in range(rounds):
            bump()
            await asyncio.sleep(0)

    def bump_co():
        c.co += 1

    def bump_main():
        c.main += 1

    async def both():
        await asyncio.gather(side(bump_main), side(bump_co))

    asyncio.run(both())


_RUNNERS = {"greenlet_switch": _greenlet, "generator_send": _generator,
            "asyncio_task": _asyncio}


def available(name: str) -> tuple[bool, str]:
    if name == "greenlet_switch":
        try:
            import greenlet  # noqa: F401
        except ImportError:
            return False, "greenlet is not installed: pip install greenlet (a dependency of labkit: pyproject.toml)"
    return True, ""


def pingpong(name: str, rounds: int, warmup: int, repeats: int) -> list[dict]:
    """The same dicts as labkit.core._core.pingpong: 2*rounds switches a repeat."""
    return timed_pingpong(_RUNNERS[name], rounds, warmup, repeats)


def timed_pingpong(run, rounds: int, warmup: int, repeats: int) -> list[dict]:
    """run(counts, rounds), a ping-pong of 2*rounds switches that bumps counts.main and
    counts.co once a transfer each, timed `warmup + repeats` times, each right after the
    same loop without the switch (the baseline); the dicts labkit.core._core.pingpong
    gives, for the repeats after the warm-up."""
    from labkit.core import _core

    def timed(fn, c):
        c0 = c.main + c.co
        n0, t0 = _core.now_ns(), _core.ticks_begin()
        fn(c, rounds)
        t1, n1 = _core.ticks_end(), _core.now_ns()
        return n1 - n0, t1 - t0, c.main + c.co - c0

    out = []
    for i in range(warmup + repeats):
        c = Counts()
        base_ns, base_ticks, _ = timed(_baseline, Counts())
        loop_ns, loop_ticks, counted = timed(run, c)
        if i >= warmup:
            out.append({"loop_ns": loop_ns, "loop_ticks": loop_ticks, "base_ns": base_ns,
                        "base_ticks": base_ticks, "switches": 2 * rounds, "counted": counted,
                        "minor_faults": None, "xinuse": None})  # not measured from Python
    return out


# ---- a user's Python switch: (make, swap) from its factory (labkit.core.user_pyswitch) ----

# Switches of the check's ping-pong: enough to see each side resumed many times.
CHECK_ROUNDS = 100


def resolve(path: str):
    """The object an import path names (its module imported)."""
    import importlib

    module, attr = path.split(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def user_operations(path: str, sys_path: list[str], fresh: bool = False):
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
        factory = resolve(path)
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


def _user_runner(make, swap):
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


def user_check(path: str, sys_path: list[str]) -> dict:
    """{"file": the module's file} when the switch imports, has the shape and a ping-pong of
    CHECK_ROUNDS rounds counts every switch; else {"problem": ..., "message": ...}."""
    ops, problem = user_operations(path, sys_path, fresh=True)
    if problem:
        return {"problem": problem[0], "message": problem[1]}
    c = Counts()
    try:
        _user_runner(*ops)(c, CHECK_ROUNDS)
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


def user_pingpong(path: str, sys_path: list[str], rounds: int, warmup: int,
                  repeats: int) -> list[dict]:
    """The user's switch's ping-pong, timed as the Python peers'."""
    ops, problem = user_operations(path, sys_path)
    if problem:
        raise RuntimeError(f"the user's Python switch {path!r}: {problem[1]}")
    run = _guarded(_user_runner(*ops), f"the user's Python switch {path!r}")
    return timed_pingpong(run, rounds, warmup, repeats)


def user_memory(path: str, sys_path: list[str], n: int) -> float:
    """Python heap bytes (tracemalloc) per suspended context of the user's switch: a hub
    context makes n contexts and resumes each once, and each swaps back to the hub at
    once, so n are suspended when the hub reads the heap."""
    import gc
    import tracemalloc

    ops, problem = user_operations(path, sys_path)
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
