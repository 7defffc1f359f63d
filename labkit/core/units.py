"""Quantities a user types: a time such as "20us" or "100cycles", a size such as "1KiB",
each read with the parameter's name in its error; and the binary size units."""
from __future__ import annotations

import math
import re

from labkit.errors import ParameterError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

_TIME = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ns|us|µs|ms|s|cycles?)\s*")
_TIME_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(B|K|KB|KiB|M|MB|MiB|G|GB|GiB)?\s*")
_SIZE_BYTES = {None: 1, "B": 1, "K": KiB, "KB": KiB, "KiB": KiB, "M": MiB, "MB": MiB,
               "MiB": MiB, "G": GiB, "GB": GiB, "GiB": GiB}


def _quantity(name: str, value, pattern, example: str, units: str) -> tuple[float, str | None]:
    """(amount, unit) of a text such as '20us' or '1KiB' matched by `pattern`; a bool, a
    negative text or one that does not match names the parameter."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be {example}, not a bool")
    if value.strip().startswith("-"):
        raise ParameterError(name, f"must not be negative; got {value!r}")
    m = pattern.fullmatch(value)
    if not m:
        raise ParameterError(name, f"must be a number with a unit of {units} (such as "
                             f"{example}); got {value!r}")
    return float(m.group(1)), m.group(2)


def parse_time(name: str, value) -> tuple[float, str]:
    """(amount, "ns" or "cycles") of a time such as "20us", "100cycles", 150 (ns)."""
    example = "'20us' or '100cycles'"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        amount, unit = float(value), "ns"
    elif isinstance(value, (str, bool)):
        amount, unit = _quantity(name, value, _TIME, example, "ns, us, ms, s or cycles")
        if unit.startswith("cycle"):
            return amount, "cycles"
        amount, unit = amount * _TIME_NS[unit], "ns"
    else:
        raise TypeError(f"{name} must be a time such as '20us' (str) or ns (a number), "
                        f"not {type(value).__name__}")
    if not math.isfinite(amount) or amount < 0:
        raise ParameterError(name, f"must be a finite time of at least 0; got {value!r}")
    return amount, unit


def parse_size(name: str, value) -> int:
    """Bytes of a size such as "1KiB", "64K", "1MB" (K, KB and KiB are all 1024), or an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    elif isinstance(value, (str, bool)):
        amount, unit = _quantity(name, value, _SIZE, "'1KiB' or '4096'",
                                 "bytes, KiB, MiB or GiB")
        n = amount * _SIZE_BYTES[unit]
        if not float(n).is_integer():
            raise ParameterError(name, f"must be a whole number of bytes; got {value!r}")
        n = int(n)
    else:
        raise TypeError(f"{name} must be a size such as '1KiB' (str) or bytes (int), "
                        f"not {type(value).__name__}")
    if n < 0:
        raise ParameterError(name, f"must not be negative; got {value!r}")
    return n
