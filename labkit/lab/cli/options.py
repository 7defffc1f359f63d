"""Options several commands share: on/off flags, --json/--csv and what --json prints,
sizes with units."""
from __future__ import annotations

import argparse
import json

from labkit.core import units
from labkit.errors import ParameterError


def flag(p, option: str, help: str) -> None:
    """An on/off option: off unless given."""
    p.add_argument(option, action="store_true", help=help)


def add_format(p: argparse.ArgumentParser, what: str) -> None:
    """--json or --csv (not both): how to print `what`."""
    fmt = p.add_mutually_exclusive_group()
    flag(fmt, "--json", f"print {what} as JSON records")
    flag(fmt, "--csv", f"print {what} as CSV")


def print_json(args, command: str, body, ctx: dict | None = None) -> None:
    """Print `body` as every --json does: in the envelope (labkit.lab.envelope.stamped),
    its context naming the command line `args` were parsed from (ctx if the command has
    taken it); a DataFrame as its records."""
    from labkit.lab import envelope

    if hasattr(body, "to_json"):
        body = json.loads(body.to_json(orient="records", default_handler=str))
    print(json.dumps(envelope.stamped(command, body, args.argv, ctx=ctx), indent=1,
                     default=str))


def size(option: str):
    """An argparse type: bytes of a size with or without a unit, as `labkit advise` reads."""
    def parse(text: str) -> int:
        try:
            return units.parse_size(option, text)
        except ParameterError as exc:  # argparse names the option itself
            raise argparse.ArgumentTypeError(exc.message) from exc
    return parse
