"""Argument checks for the public API: a clear ParameterError (a ValueError) or TypeError
naming the parameter and the accepted range, before anything reaches C. Never a silent
clamp. Checks that need to know the kernels (a name, a stack size) are in
labkit.core.entries; this module imports nothing of labkit's but its errors."""
from __future__ import annotations

import numbers
import os

from labkit.errors import ParameterError


# Headroom above a kernel's saved frame for the context's own entry function.
ENTRY_HEADROOM = 2048
MAX_SWITCHES = 10**10
MAX_REPEATS = 100_000
DEFAULT_STACK_SIZE = 64 * 1024


def page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE")


def physical_memory() -> int:
    return os.sysconf("SC_PHYS_PAGES") * page_size()


def round_to_pages(n: int) -> int:
    p = page_size()
    return -(-n // p) * p


def integer(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__} ({value!r})")
    return int(value)


def integer_in(name: str, value, lo: int, hi: int, unit: str = "") -> int:
    """An integer from lo to hi (inclusive); the error names the parameter, the range and
    its unit (" bytes", " tasks per switch")."""
    n = integer(name, value)
    if not lo <= n <= hi:
        raise ParameterError(name, f"must be an integer from {lo} to {hi}{unit}; got {n}")
    return n


def choice(name: str, value, options) -> str:
    """One of the option names (a str)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {', '.join(options)}; not "
                        f"{type(value).__name__} ({value!r})")
    if value not in options:
        raise ParameterError(name, f"must be one of {', '.join(options)}; got {value!r}")
    return value


def switches(value) -> int:
    """An even number of switches: one round trip between two contexts is two."""
    n = integer("switches", value)
    if not 2 <= n <= MAX_SWITCHES or n % 2:
        raise ParameterError(
            "switches", f"must be an even integer from 2 to {MAX_SWITCHES} "
            f"(one round trip = 2 switches); got {n}"
        )
    return n


def repeats(value) -> int:
    return integer_in("repeats", value, 1, MAX_REPEATS)


def warmup(value) -> int:
    return integer_in("warmup", value, 0, MAX_REPEATS)


_NO_AUTO = object()


def cpu(value, *, name: str = "cpu", auto=_NO_AUTO) -> int | None:
    """None (no pinning) or a CPU in this process's affinity set; with `auto` given, the
    string "auto" is accepted too and stands for that value."""
    if auto is not _NO_AUTO and isinstance(value, str) and value == "auto":
        return auto
    if value is None:
        return None
    n = integer(name, value)
    allowed = sorted(os.sched_getaffinity(0))
    if n not in allowed:
        raise ParameterError(name, f"must be one of this process's CPUs {allowed}"
                             f"{', ' + repr('auto') if auto is not _NO_AUTO else ''}, or None; "
                             f"got {n}")
    return n


def seconds(name: str, value, hi: float) -> float:
    """A duration: a number of seconds above 0 and at most hi."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__} ({value!r})")
    if not 0 < value <= hi:
        raise ParameterError(name, f"must be > 0 and at most {hi:g} seconds; got {value}")
    return float(value)


def flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__} ({value!r})")
    return value


MAX_TIMEOUT = 7 * 24 * 3600


def timeout(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"timeout must be a number of seconds or None, not {type(value).__name__}")
    # A deadline past a week is no deadline (and past time_t's range, not even a number):
    # None is how to say "wait for ever".
    if not 0 < value <= MAX_TIMEOUT:
        raise ParameterError("timeout", f"must be > 0 and at most {MAX_TIMEOUT} seconds (a week), "
                             f"or None to wait without one; got {value}")
    return float(value)
