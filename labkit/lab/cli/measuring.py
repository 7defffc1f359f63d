"""`labkit measure`, `labkit catalogue` (or `kernels`) and `labkit check`: one kernel
measured, what can be measured here, and what on this machine moves timings."""
from __future__ import annotations

import sys

import labkit
from labkit.core import envcheck
from labkit.core.systems import FP_CONTROL_MODES
from labkit.errors import ParameterError, UserSwitchError
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import add_format, flag, print_json, size


def _measure_arguments(m) -> None:
    what = m.add_mutually_exclusive_group(required=True)
    what.add_argument("entry", nargs="?", default=None,
                      help="a kernel or peer name (see `labkit catalogue`); or give "
                           "--source or --python")
    what.add_argument("--source", default=None, metavar="FILE",
                      help="your own switch instead of an entry: a .c, .cpp or .so file "
                           "defining lk_user_make and lk_user_swap, built with the lab's flags "
                           "and checked first (docs/your_switch.md)")
    what.add_argument("--python", default=None, metavar="MODULE:FACTORY",
                      help="your own Python-level switch instead of an entry: a factory "
                           "returning (make, swap), imported from PYTHONPATH and checked "
                           "first (docs/your_switch.md)")
    m.add_argument("--keeps-fp-control", default=None, choices=["yes", "no"],
                   help="with --source: whether your lk_user_swap keeps MXCSR and the x87 "
                        "control word per context (checked; default: only reported)")
    m.add_argument("--switches", type=int, default=1_000_000,
                   help="switches per repeat (default 1000000)")
    m.add_argument("--repeats", type=int, default=10, help="timed repeats (default 10)")
    m.add_argument("--stack-size", type=size("--stack-size"), default=None, metavar="SIZE",
                   help="stack size: 64KiB, 65536 (K, KB, KiB are 1024; default 64 KiB)")
    m.add_argument("--cpu", type=int, default=None, help="pin the worker to this CPU")
    m.add_argument("--build", default=None, metavar="TAG",
                   help="an optimisation-level build of the C core: O0 O1 O2 O3 Os O2-native "
                        "(default: the extension's own)")
    m.add_argument("--fp-control", default="as-is", choices=list(FP_CONTROL_MODES),
                   help="FP control state of the two contexts (default as-is)")
    m.add_argument("--stack-in-use", type=size("--stack-in-use"), default=None,
                   metavar="SIZE", help="copy_stack only: what each coroutine holds on its "
                   "stack: 1KiB, 1024 (default 0)")
    m.add_argument("--export", action="append", default=[], metavar="FORMAT=FILE",
                   help="also write the repeats as pyperf, google-benchmark or markdown "
                        "(one run: this one worker process); may be repeated")
    add_format(m, "every repeat's row")


def _measure(args) -> int:
    from labkit.lab import envelope
    from labkit.lab.comparing import export

    targets = [export.parse_target(t) for t in args.export]  # refused before measuring
    keeps = None if args.keeps_fp_control is None else args.keeps_fp_control == "yes"
    try:
        df = labkit.measure(args.entry, source=args.source, python=args.python,
                            keeps_fp_control=keeps, switches=args.switches,
                            repeats=args.repeats, stack_size=args.stack_size, cpu=args.cpu,
                            build=args.build, fp_control=args.fp_control,
                            stack_in_use=args.stack_in_use)
    except UserSwitchError as exc:
        if args.python is None:
            raise
        # The switch was imported but failed its check: the first line says which check.
        said = (str(exc).strip().splitlines() or [""])[0]
        raise ParameterError("python", f"{args.python}: {said}") from exc
    if targets:
        # One worker measured every repeat: one fresh process, named by the entry alone so
        # that two exports of it (two builds, before and after) are one benchmark to pyperf.
        rows = export.rows_of(df.assign(side=df.entry, worker=0), "measure")
        ctx = envelope.context(args.argv)
        for fmt, path in targets:
            export.write(fmt, path, rows, ctx)

    def text():
        s = labkit.summarize(df)
        return "\n".join([*labkit.noise_warnings(s), s.T.to_string(header=False)])

    _print_frame("measure", df, args, text)
    return 0


def _catalogue(args) -> int:
    table = labkit.catalogue()
    _print_frame("catalogue", table, args, lambda: table[["entry", "system", "kind", "available",
                                              "why_not"]].to_string(index=False))
    return 0


def _check(args) -> int:
    rows = envcheck.check()
    if args.json:
        print_json(args, "check", envcheck.record(rows))
    else:
        print(envcheck.explain(rows))
    return 0


def _print_frame(command: str, df, args, text) -> None:
    """A table as --json records, --csv, or `text()` for a person."""
    if args.json:
        print_json(args, command, df)
    elif args.csv:
        df.to_csv(sys.stdout, index=False)
    else:
        print(text())


MEASURE = Command(
    "measure", "measure one kernel and print its summary",
    "Time switches between two contexts with one kernel, in a worker process, with the "
    "empty loop subtracted.", _measure_arguments, _measure, options={"entry": "entry"})

CATALOGUE = Command(
    "catalogue", "list what can be measured (kernels and peers), here or why not",
    "The catalogue: every switch kernel and peer system, what it saves, whether it runs "
    "here, and if not what to install. (`labkit kernels` is the same.)",
    lambda p: add_format(p, "the whole table"), _catalogue, aliases=("kernels",))

CHECK = Command(
    "check", "the environment check alone: what here moves timings",
    "The conditions of this machine that move timings (ASLR, SMT, governor, turbo, isolated "
    "and tickless CPUs, load, counters), as `labkit reproduce` checks them first; each "
    "warning with what it does to the figures and what to do about it. Records nothing.",
    lambda p: flag(p, "--json", "print the check as data/environment.json records it"), _check)
