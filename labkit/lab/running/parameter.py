"""One notebook parameter: its type, its full and quick values, what it allows and one
line of help; and the builders the experiment records (labkit.lab.experiment) declare their
parameters with. Reading values (resolve, parse, a parameters file) is labkit.lab.running.params.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from labkit.core.native_build import OPT_LEVELS

SAME = object()  # a parameter whose quick value is its full value


@dataclass(frozen=True)
class Param:
    """One notebook parameter. kind: int, float, bool, str, ints (a list of ints).
    low/high bound a number (or every number of a list), inclusive; `choices` a str;
    `optional` allows None; `length` fixes a list's length."""
    name: str
    kind: str
    full: object
    quick: object = SAME
    help: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    optional: bool = False
    length: int | None = None

    def __post_init__(self):
        if self.quick is SAME:
            object.__setattr__(self, "quick", self.full)
        for value in (self.full, self.quick):
            self.check(value)  # a table that breaks its own rules fails on import

    def allowed(self) -> str:
        """What the parameter accepts, as a message says it."""
        span = "" if self.low is None and self.high is None else \
            f" in [{_num(self.low)}, {_num(self.high)}]"
        text = {"int": f"an int{span}", "float": f"a number{span}", "bool": "True or False",
                "ints": f"a list of {f'{self.length} ' if self.length else ''}ints{span}",
                "str": ("one of " + ", ".join(map(repr, self.choices)) if self.choices
                        else "a string")}[self.kind]
        return f"None or {text}" if self.optional else text

    def check(self, value):
        """The value, if it is allowed (a tuple becomes a list), else ValueError/TypeError
        naming the parameter."""
        if value is None and self.optional:
            return None
        bad = f"{self.name} must be {self.allowed()}; got {value!r}"
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise TypeError(bad)
            return value
        if self.kind == "str":
            if not isinstance(value, str):
                raise TypeError(bad)
            if self.choices and value not in self.choices:
                raise ValueError(bad)
            return value
        if self.kind == "ints":
            if not isinstance(value, (list, tuple)) or not value:
                raise TypeError(bad)
            if self.length is not None and len(value) != self.length:
                raise ValueError(bad)
            for v in value:
                self._number(v, int, bad)
            return list(value)
        return self._number(value, int if self.kind == "int" else float, bad)

    def _number(self, value, kind, bad):
        accepted = (int, float) if kind is float else int  # an int is a fine float
        if isinstance(value, bool) or not isinstance(value, accepted):
            raise TypeError(bad)
        if not math.isfinite(value):
            raise ValueError(bad)
        if (self.low is not None and value < self.low) or \
                (self.high is not None and value > self.high):
            raise ValueError(bad)
        return kind(value)

    def parse(self, text: str):
        """A command-line value (`-p NAME VALUE`) read as this parameter's type, then
        checked; ValueError says what is allowed."""
        bad = ValueError(f"-p {self.name}: must be {self.allowed()}; got {text!r}")
        if self.optional and text == "None":
            return None
        try:
            if self.kind == "int":
                value = int(text)
            elif self.kind == "float":
                value = float(text)
            elif self.kind == "bool":
                value = {"True": True, "False": False, "true": True, "false": False}[text]
            elif self.kind == "ints":
                value = ast.literal_eval(text)
            else:
                value = text
            return self.check(value)
        except (ValueError, TypeError, KeyError, SyntaxError):
            raise bad from None


def _num(x) -> str:
    if x is None:
        return "..."
    return str(int(x)) if float(x).is_integer() else repr(x)


# The one CPU number a worker is pinned to (checked against this machine by measure()).
CPU = dict(low=0, high=4095)


def integer(name, full, quick=SAME, help="", low=1, high=10**9, **kw) -> Param:
    return Param(name, "int", full, quick, help, low=low, high=high, **kw)


def repeats(full, quick=SAME, name="repeats", help="timed runs per point") -> Param:
    return integer(name, full, quick, help, high=1000)


def switches(full, quick=SAME, name="switches", help="switches per repeat") -> Param:
    return integer(name, full, quick, help, high=10**9)


def number(name, full, quick=SAME, help="", low=0.001, high=600.0) -> Param:
    return Param(name, "float", full, quick, help, low=low, high=high)


def ints(name, full, quick=SAME, help="", low=0, high=1 << 40, **kw) -> Param:
    return Param(name, "ints", full, quick, help, low=low, high=high, **kw)


def cpu(full, help="pin the worker to this CPU (None: no pinning)") -> Param:
    return Param("cpu", "int", full, help=help, optional=full is None, **CPU)


def build(help: str) -> Param:
    return Param("build", "str", "O2", help=help, choices=tuple(OPT_LEVELS))


def instructions(help: str) -> Param:
    return Param("count_instructions", "bool", True, help=help)
