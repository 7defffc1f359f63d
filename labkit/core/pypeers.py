"""Python's own peers, timed from Python by the method of the C harness: greenlet (stackful,
an assembly stack switch inside CPython), generator send (stackless), and an asyncio task
switch (stackless, through the event loop). Each side counts its own transfers; the same
Python loop without the switch is timed right before as the baseline."""
from __future__ import annotations


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
