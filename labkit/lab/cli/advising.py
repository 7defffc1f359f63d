"""`labkit advise` and `labkit holdout`: which design for a workload, and the advice
checked on workloads off its calibration grid."""
from __future__ import annotations


from labkit.core import machine, results
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag, print_json
# The lab's modules load when a command runs: parsing loads only the parsers.

ADVISE_DESCRIPTION = (
    "For a workload, every design of the catalogue (and OS threads): predicted time per "
    "request and share switching with 95% intervals, memory per coroutine and for N against "
    "vm.max_map_count, the hazards that apply with the lab's evidence, and a ranking. Every "
    "figure comes from this machine's data/ (rows of another machine_id are not used), a "
    "short measurement made now (said on stderr), or --bundle.")
HOLDOUT_DESCRIPTION = (
    "Run the held-out workloads (labkit.lab.advising.holdout: drawn once from a fixed seed), "
    "each measured by the workload experiment over fresh processes and advised as `labkit "
    "advise` would, given the work in one warm context; print the scores against their "
    "targets and write data/advisor_holdout.csv (--quick: a few workloads, nothing written). "
    "Run it after notebook 10, whose grid gives the advice its error.")


def _advise_arguments(a) -> None:
    from labkit.lab.advising import present

    a.add_argument("--work", required=True, help="work between suspensions: 20us, 500ns, "
                   "1ms or 100cycles (TSC cycles of the measuring machine); "
                   f"{present.WORK_MEANS}")
    a.add_argument("--suspensions", "--switches", dest="suspensions", type=float, default=1.0,
                   metavar="S", help="suspensions per request, each a switch out and back "
                   "in: 2 suspensions are 4 switches (default 1; --switches is the same "
                   "option, unlike `labkit measure --switches`, which counts switches)")
    a.add_argument("--alive", type=int, default=None, metavar="N",
                   help="coroutines alive (default: --connections, else 1)")
    a.add_argument("--connections", type=int, default=None, help="connections, one "
                   "coroutine each")
    a.add_argument("--rate", type=float, default=None, help="requests per second")
    a.add_argument("--stack-in-use", default="0", metavar="SIZE",
                   help="stack in use at a switch: 1KiB, 4096 (K, KB, KiB are 1024)")
    a.add_argument("--fp", default="none", help="FP/SIMD use: none (the default), control "
                   "(the control words differ between coroutines) or vector (live vector "
                   "registers)")
    a.add_argument("--stack-size", default=None, metavar="SIZE", help="fix the stackful "
                   "designs' stack: 64KiB, 1MiB (K, KB, KiB are 1024; rounded up to whole "
                   "pages; default: the smallest that holds the stack in use)")
    a.add_argument("--design", action="append", default=None, metavar="NAME",
                   help="judge only this design (repeatable; default all)")
    a.add_argument("--bundle", default=None, help="another machine's bundle (.labkit)")
    flag(a, "--json", "print a list of objects: design, ns_per_request {value, low, high}, "
         "switch_share, bytes_per_coroutine, bytes_total, hazards, rank")


def _advise(args) -> int:
    from labkit.lab.advising import advice as advising

    advice = advising.advise(args.work, args.suspensions, args.alive, args.stack_in_use,
                             args.fp, stack_size=args.stack_size, rate=args.rate,
                             connections=args.connections, designs=args.design,
                             bundle=args.bundle)
    if args.json:
        print_json(args, "advise", advice.records())
    else:
        print(advice.text())
    return 0


def _holdout_arguments(h) -> None:
    flag(h, "--quick", "three workloads, two designs, two processes; nothing written")
    flag(h, "--draw", "print the held-out workloads and measure nothing")


def _holdout(args) -> int:
    from labkit.lab.advising import holdout

    if args.draw:
        print(holdout.draw().to_string(index=False))
        return 0
    g = holdout.run(quick=args.quick, processes=2 if args.quick else 3,
                    samples=1 if args.quick else 3, progress=print)
    print(holdout.scores(g).round(3).to_string(index=False))
    if not args.quick:
        path = results.save_csv(g.assign(**machine.row_metadata()), holdout.DATA)
        print(f"wrote {path}")
        print(f"wrote {holdout.figure(g)}")
    return 0


# The advisor's parameters that are not the option with dashes: `design` is one of
# `designs`, and a bundle is read as `path`.
ADVISE = Command("advise", "which design for your workload: time, memory, hazards",
                 ADVISE_DESCRIPTION, _advise_arguments, _advise,
                 options={"suspensions": "--suspensions (--switches)", "design": "--design",
                          "designs": "--design", "path": "--bundle"})

HOLDOUT = Command("holdout", "the advice checked on workloads off its calibration grid",
                  HOLDOUT_DESCRIPTION, _holdout_arguments, _holdout)
