"""`labkit compare`: is A faster than B? Live sides measured by the verdict design, or two
saved runs of one machine compared claim by claim; `labkit export` is in export.py."""
from __future__ import annotations

import sys

from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag, print_json


def _arguments(p) -> None:
    p.add_argument("sides", nargs="*", metavar="SIDE",
                   help="what to compare: catalogue entries (asm), an entry at a build "
                        "(asm_fpu@O3), or two bundles or results folders of this machine")
    p.add_argument("--source", action="append", default=[], metavar="FILE",
                   help="your own switch as one more side (.c, .cpp or .so; built and checked "
                        "first, docs/your_switch.md); may be given more than once")
    p.add_argument("--python", action="append", default=[], metavar="MODULE:FACTORY",
                   help="your own Python-level switch as one more side; may be repeated")
    p.add_argument("--margin", default="5%", metavar="M",
                   help="what counts as no difference: 5%% or 0.05 (default 5%%)")
    flag(p, "--quick", "a smoke test: the quick schedule (looks at 4 and 8 processes, "
         "2 repeats a side)")
    p.add_argument("--looks", default=None, metavar="N,N,...",
                   help="processes at each look, fixed before measuring (default 8,16,32,64,96)")
    p.add_argument("--repeats", type=int, default=None,
                   help="calls of each side inside one process (default 4, ABBA order)")
    p.add_argument("--seconds", type=float, default=None,
                   help="time budget: stop at the first look after it (default 240)")
    p.add_argument("--switches", type=int, default=200_000,
                   help="switches per call (default 200000)")
    p.add_argument("--cpu", type=int, default=None, help="pin the workers to this CPU")
    p.add_argument("--seed", type=int, default=0, help="seed of the ABBA orders (default 0)")
    flag(p, "--other-machine", "saved sides: allow runs of two machines (the registry's "
         "machine effects are the usual way)")
    flag(p, "--json", "print the answer as JSON, with its schema and context")
    p.add_argument("--figure", default=None, metavar="FILE",
                   help="draw each pair's per-process values and interval (.png, .svg)")
    p.add_argument("--export", action="append", default=[], metavar="FORMAT=FILE",
                   help="also write the live runs as pyperf, google-benchmark or markdown")
    flag(p, "--calibration", "instead of comparing: the answers' error rates and power on "
         "simulated measurements of known truth, each with its 95%% interval (no sides)")


def margin_of(text) -> float:
    """5%, 0.05 -> 0.05."""
    from labkit.errors import ParameterError
    from labkit.lab.comparing import answer

    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ParameterError("margin", f"must be a percent (5%) or a fraction (0.05); "
                             f"got {text!r}") from None
    return answer.check_margin(value)


def looks_of(text):
    from labkit.errors import ParameterError

    if text is None:
        return None
    try:
        return tuple(int(t) for t in str(text).split(","))
    except ValueError:
        raise ParameterError("looks", f"must be process counts separated by commas "
                             f"(8,16,32); got {text!r}") from None


def _progress():
    if not sys.stderr.isatty():
        return None

    def show(runs):
        print(f"\rlabkit compare: {runs.worker.nunique()} processes", end="",
              file=sys.stderr, flush=True)
    return show


def _run(args) -> int:
    from labkit.errors import ParameterError
    from labkit.lab import envelope
    from labkit.lab.comparing import export, figure, live, saved, sides

    margin = margin_of(args.margin)
    if args.calibration:
        return _calibration(args, margin)
    targets = [export.parse_target(t) for t in args.export]
    chosen = sides.gather(args.sides, sources=args.source, pythons=args.python)
    ctx = envelope.context(args.argv)
    if chosen[0].live:
        plan = live.schedule(looks=looks_of(args.looks), repeats=args.repeats,
                             seconds=args.seconds, quick=args.quick)
        got = live.run(chosen, switches=args.switches, cpu=args.cpu, plan=plan,
                       margin=margin, seed=args.seed, progress=_progress())
        if sys.stderr.isatty():
            print(file=sys.stderr)
        answers, values = got["answers"], got["stats"]
        out = {"kind": "live",
               "sides": [{"label": s.label, "entry": s.entry, "build": s.build}
                         for s in chosen],
               "schedule": {**got["schedule"], "looks_taken": got["looks_taken"],
                            "processes": int(got["runs"].worker.nunique())},
               "pairs": [{**r, "values": list(values[(r["a"], r["b"])])} for r in answers]}
        for fmt, path in targets:
            export.write(fmt, path, export.rows_of(got["runs"], "compare"), ctx)
    else:
        if len(chosen) != 2:
            raise ParameterError("sides", f"must be two saved runs to compare; got {len(chosen)}")
        if targets:
            raise ParameterError("export", "applies to live sides (`labkit export` writes a "
                                 "results folder's runs)")
        got = saved.compare(chosen[0].path, chosen[1].path, margin=margin,
                            other_machine=args.other_machine)
        answers, values = got["answers"], None
        out = {"kind": "saved", "sides": got["sides"], "pairs": answers,
               "skipped": got["skipped"]}
    if args.figure:
        figure.draw(answers, values, args.figure, caption=_caption(ctx))
    if args.json:
        print_json(args, "compare", out, ctx)
    else:
        print(_text(out))
    return 0


def _calibration(args, margin: float) -> int:
    """The calibration table (labkit.lab.comparing.calibration.table) at this margin."""
    from labkit.errors import ParameterError
    from labkit.lab.comparing import calibration

    if args.sides or args.source or args.python:
        raise ParameterError("sides", "must be left out with --calibration: it simulates its "
                             "sides")
    rows = calibration.table(margin=margin)
    if args.json:
        print_json(args, "compare", {"kind": "calibration", "cases": rows})
        return 0
    print(f"{rows[0]['runs']} simulated comparisons per case (seed {calibration.SEED}), the "
          f"default schedule, margin ±{margin:.0%}; each share with its 95% interval "
          "(Wilson).\n")
    print("| truth | said to differ wrongly | A faster | B faster | no difference | undecided "
          "| mean processes |\n|---|---|---|---|---|---|---|")

    def share(r, k):
        lo, hi = r[f"{k}_interval"]
        return f"{100 * r[k]:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"

    for r in rows:
        shares = [share(r, k) for k in calibration.OUTCOMES]
        print(f"| {r['case']} | {share(r, 'false_difference')} | {' | '.join(shares)} | "
              f"{r['mean_processes']:.0f} |")
    print("\nSaid to differ wrongly: the share of comparisons in which some pair was said to "
          "differ where the truth has none, or the wrong way round; the other shares are of "
          "pairs.")
    return 0


def _caption(ctx) -> str:
    m = ctx["machine"]
    return (f"{m.get('cpu_model')} ({m.get('cpu_count')} CPUs, {m.get('virtualization')}), "
            f"machine {m.get('machine_id')}, labkit {ctx['labkit_commit']}, {ctx['date']}")


def _text(out) -> str:
    lines = []
    if out["kind"] == "live":
        s = out["schedule"]
        calls = f"{s['repeats']} call{'s' * (s['repeats'] != 1)}"
        lines.append(f"{s['processes']} fresh processes, {calls} of each side "
                     f"in each (ABBA); looks at {', '.join(map(str, s['looks']))} processes, "
                     f"stopped at look {s['looks_taken']}")
    else:
        a, b = out["sides"]
        lines += [f"A: {a['label']} (machine {a['machine_id']}, labkit {a['commit']})",
                  f"B: {b['label']} (machine {b['machine_id']}, labkit {b['commit']})"]
    lines += [r["text"] for r in out["pairs"]]
    if out["pairs"]:
        lines.append(f"({out['pairs'][0]['method']})")
    if out.get("skipped"):
        lines.append(f"{len(out['skipped'])} claims left out (not one ratio per process): "
                     + ", ".join(s["claim_id"] for s in out["skipped"]))
    return "\n".join(lines)


COMPARE = Command(
    "compare", "is A faster than B? decided over fresh processes, Holm across pairs",
    "Compare two or more sides with the lab's verdict design: fresh worker processes, ABBA "
    "inside each, looks on a schedule fixed before measuring, stopping at the first look "
    "that decides every pair. Each pair: A faster by x% [interval], no difference within "
    "the margin, or undecided at the cap and which way it leans. Two bundles or results "
    "folders of one machine are compared claim by claim and per ladder entry instead.",
    _arguments, _run, options={"sides": "sides", "entry": "sides", "build": "sides"})
