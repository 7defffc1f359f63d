"""The dispatcher: the global options, one subparser per command of the table, and the
exit status each kind of error ends in."""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys

import labkit
from labkit.core import results
from labkit.core.machine import labkit_commit
from labkit.core.timing import SwitchCountError
from labkit.core.worker import KernelCrashError, MeasurementTimeout, WorkerError
from labkit.errors import ParameterError
from labkit.lab.cli.advising import ADVISE, HOLDOUT
from labkit.lab.cli.card import CARD
from labkit.lab.cli.command import Command
from labkit.lab.cli.compare import COMPARE
from labkit.lab.cli.export import EXPORT
from labkit.lab.cli.jupyter import LAB
from labkit.lab.cli.measuring import CATALOGUE, CHECK, MEASURE
from labkit.lab.cli.options import flag
from labkit.lab.cli.registry import KEY, PUBLISH, REGISTRY
from labkit.lab.cli.room import ROOM
from labkit.lab.cli.running import REPORT, REPRODUCE, STABILITY
from labkit.lab.cli.sharing import BUNDLE, MERGE
# pandas and the lab's modules load when a command runs: parsing loads only the parsers.

# The commands, in the order `labkit --help` lists them.
COMMANDS: tuple[Command, ...] = (REPRODUCE, MEASURE, COMPARE, CATALOGUE, CHECK, STABILITY,
                                 BUNDLE, MERGE, EXPORT, KEY, PUBLISH, REGISTRY, REPORT, LAB,
                                 ADVISE, HOLDOUT, ROOM, CARD)
USAGE_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, NotADirectoryError)


class _Version(argparse.Action):
    """--version: the package's version (its metadata) and the commit it is built from
    (git in a checkout, recorded at build time in a wheel), read only when asked for."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"labkit {labkit.__version__} (commit {labkit_commit()})")
        parser.exit()


def build_parser(only: set[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line: global options and one subparser per command. With `only`,
    the options of those commands alone are added (main: the one being run), so that
    parsing loads no other command's modules."""
    parser = argparse.ArgumentParser(
        prog="labkit", description="labkit: measure what a context switch costs, and check "
        "five articles' claims against this machine.", epilog="Exit status: 0 ok, 1 a "
        "measurement failed, 2 a usage error, 130 interrupted, 141 the output's reader went "
        "away. `labkit COMMAND --help` describes each command.")
    parser.add_argument("--version", action=_Version,
                        help="print labkit's version and the commit it is built from, and exit")
    parser.add_argument("--results", metavar="DIR",
                        help="where data/, figures/ and reports/ go (default: the checkout; "
                             "outside a checkout ./labkit-results)")
    flag(parser, "--debug", "show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description,
                           aliases=list(command.aliases))
        if only is None or command.name in only:
            command.arguments(p)
        p.set_defaults(handler=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `labkit` command line; returns the exit status (argparse's own usage errors
    exit with 2 as SystemExit)."""
    argv = _negatives_kept(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(only=_named_command(argv))
    args, extra = parser.parse_known_args(argv)
    command: Command = args.handler
    if extra and command.extra is None:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if command.extra is not None:
        setattr(args, command.extra, [*getattr(args, command.extra), *extra])
    args.argv = argv  # the command line really run, for the --json context block
    _apply_globals(args)

    try:
        return _run(command, args)
    except BrokenPipeError:
        # The reader went away (`labkit catalogue --csv | head -1`): not a failure of ours.
        # Python would complain again flushing stdout at exit, so stdout goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        print(f"\nlabkit {args.command}: interrupted", file=sys.stderr)
        return 130
    except (KernelCrashError, MeasurementTimeout, SwitchCountError, WorkerError,
            RuntimeError, OSError) as exc:
        if args.debug:
            raise
        if isinstance(exc, USAGE_ERRORS):
            return _usage(command, args, exc)
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"labkit {args.command}: {type(exc).__name__}: {first} "
              "(--debug shows the traceback)", file=sys.stderr)
        return 1
    except USAGE_ERRORS as exc:
        if args.debug:
            raise
        return _usage(command, args, exc)


def _run(command: Command, args) -> int:
    import pandas as pd

    # Tables printed for a person: wide enough for the catalogue's and the ladder's rows.
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 60)
    return command.run(args)


def _usage(command: Command, args, exc) -> int:
    """A usage error: one line, in the command's options where it names a parameter, and
    exit status 2 (as SystemExit, as argparse's own, for a command that checks first)."""
    said = command.says(exc) if isinstance(exc, ParameterError) else str(exc)
    if command.checks_first and isinstance(exc, ValueError):
        # As argparse refuses an option, without the usage block, which would bury the line.
        print(f"labkit {args.command}: error: {said}", file=sys.stderr)
        raise SystemExit(2)
    print(f"labkit {args.command}: {said}", file=sys.stderr)
    return 2


def _negatives_kept(argv: list[str]) -> list[str]:
    """`--work -20us` as `--work=-20us`: argparse takes a value that starts with a dash and
    is not a plain number for an option, and would say the option lacks its value instead
    of that the value is negative."""
    out: list[str] = []
    for tok in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1]
                and re.match(r"-[0-9.]", tok)):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def _named_command(argv: list[str]) -> set[str]:
    """The command argv runs, by its name (an alias gives its command's); none for
    `labkit --help` or `--version`."""
    names = {n: c.name for c in COMMANDS for n in (c.name, *c.aliases)}
    words = iter(argv)
    for word in words:
        if word == "--results":
            next(words, None)
        elif not word.startswith("-"):
            return {names[word]} if word in names else set()
    return set()


def _apply_globals(args) -> None:
    if args.results:
        results.set_home(args.results)
        os.environ.pop("LABKIT_RESULTS_DIR", None)
