"""One command of `labkit`: its name and help, how it adds its options and runs, and the
options its parameters are known by, so that a ParameterError is said in them."""
from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from labkit.errors import ParameterError


@dataclass(frozen=True)
class Command:
    """`arguments` adds the command's options to its parser; `run` takes the parsed values
    and returns the exit status. `options`: {parameter: option} where a parameter of the
    functions it calls is not its option with dashes (paths: bundles). `extra`: the value
    that collects arguments the command passes on unparsed (`labkit lab`'s). With
    `checks_first`, a bad value is refused as argparse refuses a bad option (`labkit CMD:
    error: ...`, SystemExit(2)): the commands that check every value before they start."""
    name: str
    help: str
    description: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    options: Mapping[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    extra: str | None = None
    checks_first: bool = False

    def option(self, param: str) -> str:
        """The option (or positional) a parameter's value came from."""
        return self.options.get(param, "--" + param.replace("_", "-"))

    def says(self, exc: ParameterError) -> str:
        """The error in the command's words: its option, then what is wrong."""
        text = f"{self.option(exc.param)} {exc.message}"
        return text + (f"; pass {self.option(exc.other[0])}" if exc.other else "")
