"""What a user states of a workload: the work between suspensions, the suspensions per
request, the coroutines alive, the stack in use, FP use, a stack size and a rate; checked,
each error naming its parameter."""
from __future__ import annotations

import math
from dataclasses import dataclass

from labkit.core import validate
from labkit.core.units import parse_size, parse_time
from labkit.errors import ParameterError

FP_MODES = ("none", "control", "vector")


@dataclass(frozen=True)
class Workload:
    """What the user's program does: `work` between suspensions (ns, or `work_unit`
    "cycles"), `suspensions` per request, `alive` coroutines, `stack_in_use` bytes at a
    switch, FP/SIMD use `fp`, an optional fixed `stack_size`, request `rate` per second.
    `work` is what the work between two suspensions costs in one warm context, its u bytes
    touched in one stack (what a profiler of a one-request loop shows); the model adds what
    the N contexts and the design add to it. `step`: the work is instead the calibration
    grid's step, timed among the N contexts in the design's layout, which already holds
    the cost of touching u bytes in each of them (the diagnosis the grid keeps beside the
    advice). `busy_ns`: the part of the work that is busy computing, beside which a stack's
    cold switch is read (None: all of it; the grid's step also holds the bytes touched,
    which the cold switch's own loop touches)."""
    work: float
    work_unit: str
    suspensions: float
    alive: int
    stack_in_use: int
    fp: str
    stack_size: int | None = None
    rate: float | None = None
    busy_ns: float | None = None
    step: bool = False

    def work_ns(self, ev) -> float:
        return self.work if self.work_unit == "ns" else self.work / ev.ticks_per_ns()

    def busy(self, ev) -> float:
        return self.work_ns(ev) if self.busy_ns is None else self.busy_ns


def workload(work="0ns", suspensions=1, alive=None, stack_in_use=0, fp="none",
             stack_size=None, rate=None, connections=None) -> Workload:
    """A checked Workload; a ValueError or TypeError names the parameter. `connections`
    stands for `alive` when that is not given (one coroutine per connection)."""
    amount, unit = parse_time("work", work)
    if isinstance(suspensions, bool) or not isinstance(suspensions, (int, float)):
        raise TypeError(f"suspensions must be a number, not {type(suspensions).__name__}")
    if not math.isfinite(suspensions) or suspensions <= 0:
        raise ParameterError("suspensions",
                             f"must be more than 0 per request; got {suspensions:g}")
    if connections is not None:
        if isinstance(connections, bool) or not isinstance(connections, int):
            raise TypeError(f"connections must be an int, not {type(connections).__name__}")
        if connections < 1:
            raise ParameterError("connections", f"must be at least 1; got {connections}")
        if alive is None:
            alive = connections
    if alive is None:
        alive = 1
    if isinstance(alive, bool) or not isinstance(alive, int):
        raise TypeError(f"alive must be an int (coroutines alive), not {type(alive).__name__}")
    if alive < 1:
        raise ParameterError("alive", f"must be at least 1 coroutine; got {alive}")
    u = parse_size("stack_in_use", stack_in_use)
    if fp not in FP_MODES:
        raise ParameterError("fp", f"must be one of {', '.join(FP_MODES)}; got {fp!r}")
    size = None
    if stack_size is not None:
        size = parse_size("stack_size", stack_size)
        if size < validate.page_size():
            raise ParameterError("stack_size", f"must be at least one page "
                                 f"({validate.page_size()} bytes); got {size}")
        if u > size:
            raise ParameterError("stack_in_use", f"({u} bytes) is larger than stack_size "
                                 f"({size} bytes)")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise TypeError(f"rate must be requests per second (a number), not "
                            f"{type(rate).__name__}")
        if not math.isfinite(rate) or rate <= 0:
            raise ParameterError("rate", f"must be more than 0 requests per second; got {rate!r}")
    return Workload(amount, unit, float(suspensions), alive, u, fp, size,
                    None if rate is None else float(rate))
