"""`labkit card`: the reference card, measured on this machine."""
from __future__ import annotations

from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag, print_json


def _arguments(p) -> None:
    p.add_argument("--switches", type=int, default=200_000,
                   help="switches per repeat for each latency (default 200000; a thread "
                        "hand-off makes a fiftieth of them)")
    p.add_argument("--repeats", type=int, default=5, help="repeats of each latency, at "
                   "least 3 (default 5)")
    p.add_argument("--cpu", type=int, default=0, help="the CPU the latencies run on "
                   "(default 0)")
    flag(p, "--json", "print the card as one object: caches, tlb, page_size, latencies "
         "{what, entry, ns, low, high, repeats, why}, machine")


def _run(args) -> int:
    from labkit.lab.exploring.card import card

    c = card(switches=args.switches, repeats=args.repeats, cpu=args.cpu)
    if args.json:
        print_json(args, "card", c.records())
    else:
        print(c)
    return 0


CARD = Command(
    "card", "the reference card: this machine's caches, TLB, page size and latencies",
    "A card to anchor predictions: CPU 0's caches (sizes, line size) from sysfs, the TLB "
    "where /proc/cpuinfo reports it, the page size, and the latencies of a direct call, a "
    "getppid system call, asm_fpu's and ucontext's switches and an OS thread hand-off, "
    "measured now in a few seconds, each with its quartiles and the machine it ran on.",
    _arguments, _run)
