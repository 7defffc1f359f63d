"""`labkit room serve|join|run|noise`: one comparison across many machines on a Dask
scheduler with mutual TLS (labkit.lab.room.room). The room's modules need the `room`
extra and load only when a room command runs."""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from labkit.core.results import atomic_path
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag
# The room's modules load when a command runs: parsing loads only the parsers.


def _arguments(parser: argparse.ArgumentParser) -> None:
    """`labkit room serve|join|run|noise`, and `suite`, the command a room's task runs
    (unlisted: nobody types it)."""
    sub = parser.add_subparsers(dest="room_command", required=True,
                                metavar="{serve,join,run,noise}")
    s = sub.add_parser("serve", help="open a room: a Dask scheduler requiring the room's TLS",
                       description="Open a room: a Dask scheduler requiring the room's TLS.")
    s.add_argument("--room", default="room.json", help="the room file to write (mode 0600)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default: loopback only)")
    where.add_argument("--interface", help="listen on this network interface, e.g. eth0")
    s.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    flag(s, "--new", "new keys even if the room file exists")
    j = sub.add_parser("join", help="let the room run labkit's suite on this machine",
                       description="Join a room with one Dask worker until Ctrl-C.")
    j.add_argument("room", help="the room file its holder handed you")
    j.add_argument("--name", required=True, help="your name as the room shows it")
    flag(j, "--allow-root", "join even as root (containers)")
    j.add_argument("--machine-id", help=argparse.SUPPRESS)  # tests: two 'machines' on one
    j.add_argument("--loud", action="store_true", help=argparse.SUPPRESS)  # Dask's defaults
    r = sub.add_parser("run", help="run the suite on every joined machine and merge",
                       description="Run the suite once on every joined machine, save each "
                       "bundle as it arrives and merge them.")
    r.add_argument("room", help="the room file")
    flag(r, "--quick", "the notebooks' quick mode")
    r.add_argument("--only", nargs="*", metavar="NOTEBOOK", help="only these notebooks")
    r.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a notebook parameter, as `labkit reproduce -p` takes it")
    r.add_argument("-o", "--out", default="room-results", help="folder for the bundles")
    r.add_argument("--timeout", type=float, help="give up on machines after this many s")
    flag(r, "--allow-other-commits", "merge bundles of different labkit commits")
    r.add_argument("--registry", help="publish each bundle to this registry (folder or S3 URL) "
                   "and write OUT/room.html with the room's tally")
    r.add_argument("--predictions", help="learners' predictions written before measuring "
                   "(CSV: learner,claim_id,predicted), judged on the room page")
    n = sub.add_parser("noise", help="what an idle joined worker costs a measurement",
                       description="Measure asm_fpu and thread_futex beside an idle joined "
                       "worker, running and stopped (labkit.lab.room.noise).")
    n.add_argument("--blocks", type=int, default=10, help="ABBA pairs of blocks (default 10)")
    n.add_argument("--repeats", type=int, default=5, help="repeats per block (default 5)")
    n.add_argument("--cpu", type=int, default=0, help="the CPU measured on (default 0)")
    flag(n, "--loud", "the worker with Dask's defaults")
    n.add_argument("-o", "--out", help="also write the summary to this CSV (and every "
                                       "repeat to <out>-raw.csv)")
    u = sub.add_parser("suite", description="What a room's task runs in a subprocess: the "
                       "notebooks into a private folder, then one bundle "
                       "(labkit.lab.room.suite).")
    u.add_argument("--into", required=True, type=Path, help="the private results folder")
    u.add_argument("--bundle", required=True, type=Path, help="the bundle to write")
    u.add_argument("--cpus", type=_cpu_list, help="run on these CPUs only, e.g. 0,2")
    flag(u, "--quick", "the notebooks' quick mode")
    u.add_argument("--only", nargs="*", metavar="NOTEBOOK", help="only these notebooks")
    u.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a notebook parameter, as `labkit reproduce -p` takes it")
    u.add_argument("--name", help="the participant's name, recorded in the bundle")
    u.add_argument("--machine-id", help="the machine id the room knows this worker by")
    u.add_argument("--parent", type=int, help="the worker's pid: die with it")


def _cpu_list(text: str) -> set[int]:
    from labkit.lab.room.suite import parse_cpus

    try:
        return parse_cpus(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _room(args) -> int:
    """`labkit room ...`: the room's functions need the `room` extra (Dask distributed,
    cryptography), imported only here."""
    name = ("labkit.lab.room.noise" if args.room_command == "noise" else
            "labkit.lab.room.suite" if args.room_command == "suite" else
            "labkit.lab.room.room")
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:  # the module is there but needs a package
            print(f"labkit room: needs {exc.name}, which is not installed: "
                  "pip install 'labkit[room]'", file=sys.stderr)
            return 2
        print(f"labkit room: not available in this build ({name} is not installed)",
              file=sys.stderr)
        return 2
    try:
        return _room_command(module, args)
    except PermissionError as exc:  # joining as root: a usage error, not a failure
        print(f"labkit room: {exc}", file=sys.stderr)
        return 2


def _room_command(module, args) -> int:
    if args.room_command == "serve":
        module.serve(args.room, host=args.host, interface=args.interface, port=args.port,
                     new=args.new)
    elif args.room_command == "join":
        module.join(args.room, name=args.name, machine_id=args.machine_id,
                    allow_root=args.allow_root, quiet=not args.loud)
    elif args.room_command == "run":
        def table(r):
            print(time.strftime("%H:%M:%S"), "\n" + r.table.to_string(index=False), flush=True)

        res = module.run(args.room, quick=args.quick, only=args.only, params=args.p,
                         out=args.out, on_update=table, timeout=args.timeout,
                         allow_other_commits=args.allow_other_commits,
                         registry=args.registry, predictions=args.predictions)
        for mid, said in res.published.items():
            print(f"registry: {mid}: {said}")
        if res.page is not None:
            print(f"room page: {res.page}")
        if res.comparison is not None:
            print(res.comparison["verdicts"].to_string())
        if res.merge_error:
            print(f"not merged: {res.merge_error}", file=sys.stderr)
        states = set(res.table.state)
        print(f"bundles in {res.out}: {len(res.bundles)}; " + ", ".join(
            f"{s}: {(res.table.state == s).sum()}" for s in module.STATES if s in states))
        return 0 if states <= {"done", "skipped"} else 1
    elif args.room_command == "noise":
        summ = module.noise(blocks=args.blocks, repeats=args.repeats, cpu=args.cpu,
                            quiet=not args.loud)
        print(summ.T.to_string(header=False))
        if args.out:
            out = Path(args.out)
            with atomic_path(out) as tmp:
                summ.to_csv(tmp, index=False)
            with atomic_path(out.with_name(out.stem + "-raw.csv")) as tmp:
                summ.attrs["raw"].to_csv(tmp, index=False)
    elif args.room_command == "suite":
        return module.run_suite(args.into, args.bundle, cpus=args.cpus, quick=args.quick,
                                only=args.only, params=args.p, name=args.name,
                                machine_id=args.machine_id, parent=args.parent)
    return 0


ROOM = Command("room", "one comparison across many machines (needs the room extra)",
               "The room: a Dask scheduler with mutual TLS that runs labkit's suite on every "
               "joined machine and merges their bundles (labkit.lab.room.room).",
               _arguments, _room)
