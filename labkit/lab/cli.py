"""The `labkit` command (also `python -m labkit`).

    labkit reproduce [--quick] [--only NB ...] [-f params.yaml] [-p NAME VALUE] [--resume] [--json]
    labkit measure asm_fpu [--build O0] [--fp-control differ] [--json | --csv]
    labkit catalogue [--json | --csv]   (or: labkit kernels)
    labkit check [--json]              labkit stability --runs 3 [--quick]
    labkit bundle -o mylaptop          labkit merge a.labkit b.labkit [--json]
    labkit report                      labkit lab          labkit room ...
    labkit publish a.labkit --registry PATH_OR_URL
    labkit registry claims|ladder|machines|effects --registry PATH_OR_URL [--json]
    labkit registry serve [--data DIR] [--address HOST:PORT]
    labkit registry gallery --registry PATH_OR_URL -o DIR
    labkit registry compact --registry PATH_OR_URL

Exit status: 0 ok; 1 a measurement or a notebook failed (one line; --debug shows the
traceback); 2 a usage error (a bad option or value); 130 interrupted; 141 the output's
reader went away (a pipe into head).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from labkit.core.systems import FP_CONTROL_MODES

USAGE_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, NotADirectoryError)
STABILITY = ("Rerun the verdict-bearing notebooks K times, each run into its own results "
             "folder, and report how many claims keep their verdict and whether two runs "
             "ever reached opposite verdicts.")


def _version() -> str:
    from labkit import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global options and one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="labkit", description="labkit: measure what a context switch costs, and check "
        "five articles' claims against this machine.", epilog="Exit status: 0 ok, 1 a "
        "measurement failed, 2 a usage error, 130 interrupted, 141 the output's reader went "
        "away. `labkit COMMAND --help` "
        "describes each command.")
    parser.add_argument("--version", action="version", version=f"labkit {_version()}",
                        help="print labkit's version and exit")
    parser.add_argument("--results", metavar="DIR",
                        help="where data/, figures/ and reports/ go (default: the checkout; "
                             "outside a checkout ./labkit-results)")
    _flag(parser, "--debug", "show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = _command(sub, "reproduce", "run the notebooks and build the HTML report",
                 build_reproduce_description())
    _reproduce_arguments(r)
    parser.set_defaults(reproduce_parser=r)

    m = _command(sub, "measure", "measure one kernel and print its summary",
                 "Time switches between two contexts with one kernel, in a worker process, "
                 "with the empty loop subtracted.")
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
    m.add_argument("--stack-size", type=_size("--stack-size"), default=None, metavar="SIZE",
                   help="stack size: 64KiB, 65536 (K, KB, KiB are 1024; default 64 KiB)")
    m.add_argument("--cpu", type=int, default=None, help="pin the worker to this CPU")
    m.add_argument("--build", default=None, metavar="TAG",
                   help="an optimisation-level build of the C core: O0 O1 O2 O3 Os O2-native "
                        "(default: the extension's own)")
    m.add_argument("--fp-control", default="as-is", choices=list(FP_CONTROL_MODES),
                   help="FP control state of the two contexts (default as-is)")
    m.add_argument("--stack-in-use", type=_size("--stack-in-use"), default=None,
                   metavar="SIZE", help="copy_stack only: what each coroutine holds on its "
                   "stack: 1KiB, 1024 (default 0)")
    _add_format(m, "every repeat's row")

    k = _command(sub, "catalogue", "list what can be measured (kernels and peers), here or why not",
                 "The catalogue: every switch kernel and peer system, what it saves, whether "
                 "it runs here, and if not what to install. (`labkit kernels` is the same.)",
                 aliases=["kernels"])
    _add_format(k, "the whole table")

    c = _command(sub, "check", "the environment check alone: what here moves timings",
                 "The conditions of this machine that move timings (ASLR, SMT, governor, "
                 "turbo, isolated and tickless CPUs, load, counters), as `labkit reproduce` "
                 "checks them first; each warning with what it does to the figures and what "
                 "to do about it. Records nothing.")
    _flag(c, "--json", "print the check as data/environment.json records it")

    s = _command(sub, "stability", "rerun the verdict notebooks K times: do verdicts hold?",
                 STABILITY)
    _stability_arguments(s)
    parser.set_defaults(stability_parser=s)

    b = _command(sub, "bundle", "pack this machine's results into a bundle folder",
                 "Pack the results measured on THIS machine into <out>.labkit/ to compare "
                 "with other machines. Rows measured elsewhere are refused.")
    b.add_argument("-o", "--out", required=True, help="bundle path (.labkit is appended)")
    _flag(b, "--quick", "bundle the quick run's results")
    _flag(b, "--include-host", "also record the hostname and the results' absolute path")
    _flag(b, "--replace", "replace the bundle at --out if there is one (without it, an "
          "existing bundle is left alone and the command stops)")

    g = _command(sub, "merge", "merge bundles from several machines into one comparison",
                 "Put several machines' bundles side by side. Each bundle must be of a "
                 "format this labkit reads ("
                 + " or ".join(map(str, _bundle_formats())) + "), and all of one mode "
                 "(quick/full) and one labkit commit.")
    g.add_argument("bundles", nargs="+", help="bundle folders (<name>.labkit)")
    g.add_argument("-o", "--out", help="also write <out>-verdicts.csv, <out>-ladder.csv and "
                                       "<out>-hardware.csv")
    _flag(g, "--json", "print the comparison as JSON (null where a machine measured nothing)")
    _flag(g, "--allow-other-commits", "merge bundles made from different labkit commits")

    pb = _command(sub, "publish", "send a bundle to a registry of machines",
                  "Store a bundle in a registry (a folder, s3://BUCKET/PREFIX or "
                  "http://HOST:PORT/BUCKET), after recomputing every verdict it states. A "
                  "bundle that is damaged, of an unknown format or commit, already stored, or "
                  "whose verdicts disagree with their recomputation is refused (exit status 2).")
    pb.add_argument("bundle", help="a bundle folder (<name>.labkit)")
    pb.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    _flag(pb, "--include-host", "also store the bundle's hostname and results path, if it has them")
    _flag(pb, "--json", "print what was stored as JSON")
    _registry_arguments(_command(sub, "registry", "query a registry of machines, or serve one",
                                 "Ask a registry (docs/registry.md) about its machines, "
                                 "claims, ladder and machine effects, or start an S3 store."))

    rp = _command(sub, "report", "rebuild the HTML report from the last executed notebooks",
                  "Rebuild reports/[quick/]labkit-report.html without running anything.")
    _flag(rp, "--quick", "the quick run's report")

    lab = _command(sub, "lab", "start JupyterLab on the lab's notebooks",
                   "JupyterLab on the `labkit` kernel, opening start_here.ipynb.")
    lab.add_argument("--port", type=int, default=None, help="port (default 8888 or the next free)")
    _flag(lab, "--no-browser", "do not open a browser")
    lab.add_argument("lab_args", nargs=argparse.REMAINDER,
                     help="more options for `jupyter lab`")

    from labkit.lab.advising import present

    a = _command(sub, "advise", "which design for your workload: time, memory, hazards",
                 "For a workload, every design of the catalogue (and OS threads): "
                 "predicted time per request and share switching with 95% intervals, "
                 "memory per coroutine and for N against vm.max_map_count, the hazards "
                 "that apply with the lab's evidence, and a ranking. Every figure comes "
                 "from this machine's data/ (rows of another machine_id are not used), "
                 "a short measurement made now (said on stderr), or --bundle.")
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
    _flag(a, "--json", "print a list of objects: design, ns_per_request {value, low, high}, "
          "switch_share, bytes_per_coroutine, bytes_total, hazards, rank")

    h = _command(sub, "holdout", "the advice checked on workloads off its calibration grid",
                 "Run the held-out workloads (labkit.lab.advising.holdout: drawn once from a "
                 "fixed seed), each measured by the workload experiment over fresh processes "
                 "and advised as `labkit advise` would, given the work in one warm context; "
                 "print the scores against their targets and write "
                 "data/advisor_holdout.csv (--quick: a few workloads, nothing written). "
                 "Run it after notebook 10, whose grid gives the advice its error.")
    _flag(h, "--quick", "three workloads, two designs, two processes; nothing written")
    _flag(h, "--draw", "print the held-out workloads and measure nothing")

    room = _command(sub, "room", "one comparison across many machines (needs the room extra)",
                    "The room: a Dask scheduler with mutual TLS that runs labkit's suite on "
                    "every joined machine and merges their bundles (labkit.lab.sharing.room).")
    _room_arguments(room)
    return parser


def _room_arguments(parser: argparse.ArgumentParser) -> None:
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
    _flag(s, "--new", "new keys even if the room file exists")
    j = sub.add_parser("join", help="let the room run labkit's suite on this machine",
                       description="Join a room with one Dask worker until Ctrl-C.")
    j.add_argument("room", help="the room file its holder handed you")
    j.add_argument("--name", required=True, help="your name as the room shows it")
    _flag(j, "--allow-root", "join even as root (containers)")
    j.add_argument("--machine-id", help=argparse.SUPPRESS)  # tests: two 'machines' on one
    j.add_argument("--loud", action="store_true", help=argparse.SUPPRESS)  # Dask's defaults
    r = sub.add_parser("run", help="run the suite on every joined machine and merge",
                       description="Run the suite once on every joined machine, save each "
                       "bundle as it arrives and merge them.")
    r.add_argument("room", help="the room file")
    _flag(r, "--quick", "the notebooks' quick mode")
    r.add_argument("--only", nargs="*", metavar="NOTEBOOK", help="only these notebooks")
    r.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a notebook parameter, as `labkit reproduce -p` takes it")
    r.add_argument("-o", "--out", default="room-results", help="folder for the bundles")
    r.add_argument("--timeout", type=float, help="give up on machines after this many s")
    _flag(r, "--allow-other-commits", "merge bundles of different labkit commits")
    r.add_argument("--registry", help="publish each bundle to this registry (folder or S3 URL) "
                   "and write OUT/room.html with the room's tally")
    r.add_argument("--predictions", help="learners' predictions written before measuring "
                   "(CSV: learner,claim_id,predicted), judged on the room page")
    n = sub.add_parser("noise", help="what an idle joined worker costs a measurement",
                       description="Measure asm_fpu and thread_futex beside an idle joined "
                       "worker, running and stopped (labkit.experiments.room_noise).")
    n.add_argument("--blocks", type=int, default=10, help="ABBA pairs of blocks (default 10)")
    n.add_argument("--repeats", type=int, default=5, help="repeats per block (default 5)")
    n.add_argument("--cpu", type=int, default=0, help="the CPU measured on (default 0)")
    _flag(n, "--loud", "the worker with Dask's defaults")
    n.add_argument("-o", "--out", help="also write the summary to this CSV (and every "
                                       "repeat to <out>-raw.csv)")
    u = sub.add_parser("suite", description="What a room's task runs in a subprocess: the "
                       "notebooks into a private folder, then one bundle "
                       "(labkit.lab.sharing.room_suite).")
    u.add_argument("--into", required=True, type=Path, help="the private results folder")
    u.add_argument("--bundle", required=True, type=Path, help="the bundle to write")
    u.add_argument("--cpus", type=_cpu_list, help="run on these CPUs only, e.g. 0,2")
    _flag(u, "--quick", "the notebooks' quick mode")
    u.add_argument("--only", nargs="*", metavar="NOTEBOOK", help="only these notebooks")
    u.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a notebook parameter, as `labkit reproduce -p` takes it")
    u.add_argument("--name", help="the participant's name, recorded in the bundle")
    u.add_argument("--machine-id", help="the machine id the room knows this worker by")
    u.add_argument("--parent", type=int, help="the worker's pid: die with it")


def _cpu_list(text: str) -> set[int]:
    from labkit.lab.sharing.room_suite import parse_cpus

    try:
        return parse_cpus(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    """`labkit reproduce`'s options."""
    parser.add_argument("--quick", action="store_true",
                        help="small sweeps and few repeats (minutes, what CI runs); results "
                             "go to reports/quick/ and never replace a full run's")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK",
                        help="run only these notebooks (names without .py); the report keeps "
                             "the others' last results, marked as earlier")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"),
                        help="set a notebook parameter (e.g. -p repeats 5), checked against "
                             "its declared type and range (labkit.lab.running.params) before "
                             "anything runs; beats --quick's value; recorded in the executed "
                             "notebook and the report")
    parser.add_argument("-f", "--parameters-file", metavar="FILE",
                        help="notebook parameters from a YAML file of NAME: VALUE lines, "
                             "checked like -p (which beats it)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run: skip the notebooks it finished and "
                             "the sweep points already in data/checkpoints/")
    parser.add_argument("--no-progress", action="store_true",
                        help="no status line on stderr")
    parser.add_argument("--timeout", type=int, default=3600, metavar="SECONDS",
                        help="longest a notebook cell may run (default 3600)")
    parser.add_argument("--json", action="store_true",
                        help="print the run's summary as JSON on stdout (verdict counts, each "
                             "claim's verdict, interval and processes, each notebook's time); "
                             "everything else goes to stderr")


def _stability_arguments(parser: argparse.ArgumentParser) -> None:
    """`labkit stability`'s options."""
    parser.add_argument("--runs", type=int, default=3, help="how many runs, 1 to 50 (default 3)")
    parser.add_argument("--quick", action="store_true", help="the notebooks' quick mode")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks")
    parser.add_argument("--out", type=Path,
                        help="folder for the runs (default reports/stability[-quick])")
    parser.add_argument("--with-committed", action="store_true",
                        help="count the committed full run as run 1 and save data/stability.csv")


def _stability(args, parser: argparse.ArgumentParser) -> int:
    """Run what the parsed options ask for and print the table, its figure and the run
    times; a bad option is a usage error (status 2)."""
    from labkit.lab.judging import stability
    from labkit.lab.running.reproduce import bad_parameter

    try:
        table, seconds = stability.run(args.runs, quick=args.quick, only=args.only,
                                       out=args.out, with_committed=args.with_committed)
    except ValueError as exc:  # stability.run names its parameter first: say the option
        msg = str(exc)
        name = msg.split(" ", 1)[0]
        if name in ("runs", "quick", "only", "out", "with_committed"):
            msg = f"--{name.replace('_', '-')}{msg[len(name):]}"
        bad_parameter(parser, msg)
    print(table.to_string(index=False))
    print(stability.figure(table))
    print("run times: " + ", ".join(f"run {i + 1} {s / 60:.1f} min" for i, s in enumerate(seconds))
          + (" (quick)" if args.quick else " (full)"))
    return 0


def _registry_arguments(p) -> None:
    sub = p.add_subparsers(dest="registry_command", required=True, metavar="QUESTION")
    helps = {"claims": "each claim's verdicts across machines, with a tally",
             "ladder": "each design's median ns per switch across CPUs",
             "machines": "the machines in the registry and their hardware",
             "effects": "machine effects: does a claim's value differ between machines?"}
    for name, help in helps.items():
        q = sub.add_parser(name, help=help, description=help)
        q.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
        _machine_filters(q)
        _flag(q, "--quick", "the quick runs' bundles (kept apart from full ones)")
        _flag(q, "--json", "print as JSON")
        if name == "effects":
            q.add_argument("--claim", action="append", default=None,
                           help="a claim to test (repeatable; default: every claim whose "
                                "verdicts differ between machines)")
            q.add_argument("--method", default="holm", choices=("holm", "bonferroni"),
                           help="correction across comparisons (default holm)")
    gl = sub.add_parser("gallery", help="write the registry's gallery: one offline HTML page",
                        description="Write OUT/index.html: claims against machines, the "
                        "ladder across CPUs, each machine's hardware and machine effects; "
                        "static, fetching nothing.")
    gl.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    gl.add_argument("-o", "--out", required=True, help="folder to write index.html into")
    _machine_filters(gl)
    _flag(gl, "--quick", "the quick runs' bundles (kept apart from full ones)")
    c = sub.add_parser("compact", help="compact a registry's index: one file per partition",
                       description="Fold each partition's index files into one (publishes "
                       "do it themselves every 200), and index any whole bundle folder the "
                       "index lacks. Prints what it did as JSON.")
    c.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    _flag(c, "--no-adopt", "leave bundle folders the index lacks unindexed")
    s = sub.add_parser("serve", help="start an S3 store (SeaweedFS) for a registry",
                       description="Start SeaweedFS's S3 server for a registry, on loopback "
                       "unless --address says otherwise; prints the registry URL and where "
                       "the data live; Ctrl-C stops it.")
    s.add_argument("--data", default="labkit-registry-data",
                   help="folder for the store's data (default labkit-registry-data)")
    s.add_argument("--address", default="127.0.0.1:8333",
                   help="HOST:PORT to serve S3 on (default 127.0.0.1:8333)")
    s.add_argument("--bucket", default="labkit", help="the registry's bucket (default labkit)")


def _cpuid_number(text: str) -> str:
    """A CPUID family or model as the registry stores it (decimal), given in decimal or
    0x hex."""
    try:
        return str(int(text, 0))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number such as 25 or 0x19; got {text!r}")


def _model_or_brand(text: str) -> str:
    """A CPUID model number in decimal (given in decimal or 0x hex), else brand text."""
    try:
        return str(int(text, 0))
    except ValueError:
        return text


def _machine_filters(p) -> None:
    """The registry's machine filters (labkit.lab.registry.query.FILTERS)."""
    p.add_argument("--vendor", default=None,
                   help="only machines whose CPUID vendor contains this: amd, GenuineIntel")
    p.add_argument("--family", default=None, type=_cpuid_number,
                   help="only this CPUID family: 25 or 0x19")
    p.add_argument("--model", default=None, type=_model_or_brand,
                   help="only this CPUID model number (17 or 0x11), or brand strings "
                   "containing this text (EPYC)")
    p.add_argument("--layers", default=None, help="only machines under exactly these "
                   "virtualisation layers, outermost first: kvm+docker, bare metal")
    p.add_argument("--commit", default=None, help="only bundles of labkit commits starting "
                   "with this: 1f2bac5")


def _registry(args) -> int:
    try:
        return _registry_command(args)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("labkit"):  # a package of the registry extra
            print(f"labkit {args.command}: needs {exc.name}, which is not installed: "
                  "pip install 'labkit[registry]' (make test installs it)", file=sys.stderr)
            return 2
        raise


def _registry_command(args) -> int:
    import json

    from labkit.lab.registry import effects, query, store

    if args.registry_command == "serve":
        from labkit.lab.registry import serve

        return serve.run_forever(args.data, args.address, args.bucket)
    where = store.open_store(args.registry)
    if where.kind == "local" and not Path(where.root).is_dir():
        raise ValueError(f"--registry {args.registry}: no registry there; publish a bundle to "
                         f"it first (labkit publish B.labkit --registry {args.registry})")
    if args.registry_command == "compact":
        from labkit.lab.registry import index, store

        print(json.dumps(index.compact(store.open_store(args.registry),
                                       adopt=not args.no_adopt)))
        return 0
    filters = {f: getattr(args, f) for f in ("vendor", "family", "model", "layers", "commit")}
    kw = {"filters": filters, "quick": args.quick}
    if args.registry_command == "gallery":
        from labkit.lab.registry import gallery

        print(gallery.build(args.registry, args.out, **kw))
        return 0
    if args.registry_command == "machines":
        df = query.machines(args.registry, **kw)
        print(df.to_json(orient="records", indent=1) if args.json
              else df.to_string(index=False) if not df.empty else "no machines")
    elif args.registry_command == "claims":
        rows = query.tally(query.claims(args.registry, **kw))
        print(json.dumps(rows, indent=1, default=str) if args.json
              else "\n".join(f"{r['line']} ({r['recomputed']} recomputed on publish)"
                             for r in rows) or "no claims")
    elif args.registry_command == "ladder":
        df = query.ladder(args.registry, **kw)
        if args.json:
            print(df.to_json(orient="records", indent=1))
        elif df.empty:
            print("no ladder")
        else:
            print(df.pivot(index="entry", columns="label", values="median_ns").round(2)
                  .to_string())
    else:
        from labkit.lab.judging import rules

        if unknown := [c for c in args.claim or () if c not in rules.RULES]:
            raise ValueError(f"--claim {unknown[0]}: no written rule (labkit.lab.judging.rules) "
                             "reduces it to one ratio per process, so machines cannot be "
                             f"compared on it; claims with one: {', '.join(sorted(rules.RULES))}")
        runs = query.verdict_runs(args.registry, **kw)
        claim_ids = args.claim or effects.differing(query.claims(args.registry, **kw), runs)
        rows = effects.between(runs, claim_ids, method=args.method)
        why = (f"no claim's verdict differs among the {len(runs)} machines with verdict "
               "runs (--claim asks for one)" if len(runs) >= 2 else
               f"{len(runs)} machine with verdict runs (a bundle of format 4 or later carries "
               "them); a machine effect needs two")
        print(json.dumps(rows, indent=1, default=str) if args.json
              else "\n".join(effects.line(r) for r in rows) or f"no comparisons: {why}")
    return 0


def _bundle_formats() -> tuple:
    from labkit.lab.sharing.bundle import READS

    return READS


def build_reproduce_description() -> str:
    return ("Run every notebook (or some) with papermill, write data/, figures/ and the HTML "
            "report. A status line on stderr shows the notebook, the sweep point, elapsed "
            "time and ETA; Ctrl-C stops, keeps what finished, and says how to resume.")


def _command(sub, name: str, help: str, description: str, **kwargs) -> argparse.ArgumentParser:
    """One subcommand: `help` is its line in `labkit --help`, `description` heads its own."""
    return sub.add_parser(name, help=help, description=description, **kwargs)


def _size(option: str):
    """An argparse type: bytes of a size with or without a unit, as `labkit advise` reads."""
    def parse(text: str) -> int:
        from labkit.core import units

        try:
            return units.parse_size(option, text)
        except ValueError as exc:
            msg = str(exc)  # argparse names the option itself
            raise argparse.ArgumentTypeError(msg[len(option):].lstrip()
                                             if msg.startswith(option) else msg) from exc
    return parse


def _flag(p, option: str, help: str) -> None:
    """An on/off option: off unless given."""
    p.add_argument(option, action="store_true", help=help)


def _add_format(p: argparse.ArgumentParser, what: str) -> None:
    fmt = p.add_mutually_exclusive_group()
    _flag(fmt, "--json", f"print {what} as JSON records")
    _flag(fmt, "--csv", f"print {what} as CSV")


def _print_frame(df, args, text) -> None:
    if args.json:
        print(df.to_json(orient="records", indent=1, default_handler=str))
    elif args.csv:
        df.to_csv(sys.stdout, index=False)
    else:
        print(text())


def _run(args, parser) -> int:
    import pandas as pd

    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 60)
    if args.command == "reproduce":
        from labkit.lab.running import reproduce

        return reproduce.run(args, args.reproduce_parser)
    if args.command == "stability":
        return _stability(args, args.stability_parser)
    if args.command == "check":
        import json

        from labkit.core import envcheck

        rows = envcheck.check()
        print(json.dumps(envcheck.record(rows), indent=1) if args.json else envcheck.explain(rows))
        return 0
    if args.command in ("catalogue", "kernels"):
        import labkit

        table = labkit.catalogue()
        _print_frame(table, args, lambda: table[["entry", "system", "kind", "available",
                                                  "why_not"]].to_string(index=False))
    elif args.command == "measure":
        import labkit

        keeps = None if args.keeps_fp_control is None else args.keeps_fp_control == "yes"
        try:
            df = labkit.measure(args.entry, source=args.source, python=args.python,
                                keeps_fp_control=keeps, switches=args.switches,
                                repeats=args.repeats, stack_size=args.stack_size, cpu=args.cpu,
                                build=args.build, fp_control=args.fp_control,
                                stack_in_use=args.stack_in_use)
        except (ValueError, TypeError) as exc:
            if args.python is None or not _about_python(exc):
                raise
            raise ValueError(_python_problem(exc, args.python)) from exc

        def text():
            s = labkit.summarize(df)
            return "\n".join([*labkit.noise_warnings(s), s.T.to_string(header=False)])

        _print_frame(df, args, text)
    elif args.command == "bundle":
        from labkit.lab.running.reproduce import reports_dir
        from labkit.lab.sharing import bundle

        if args.quick:
            os.environ["LABKIT_RESULTS_DIR"] = str(reports_dir(True))
        print(bundle.make_bundle(args.out, quick=args.quick, include_host=args.include_host,
                                 replace=args.replace))
    elif args.command == "publish":
        import json

        from labkit.lab.registry import publish

        out = publish.publish(args.bundle, args.registry, include_host=args.include_host)
        print(json.dumps(out, indent=1) if args.json else
              f"published {out['bundle']} as {out['stored_as']} ({out['recomputed_agree']} of "
              f"{out['claims']} verdicts recomputed and agree"
              + ("" if out["recomputable"] else "; not recomputable: no verdict runs") + ")")
    elif args.command == "registry":
        return _registry(args)
    elif args.command == "merge":
        from labkit.lab.sharing import merge

        try:
            out = merge.merge(args.bundles, same_commit=not args.allow_other_commits)
        except (ValueError, TypeError) as exc:
            kind = ValueError if isinstance(exc, ValueError) else TypeError
            raise kind(_merge_problem(exc)) from exc
        if args.json:
            import json

            print(json.dumps(merge.merged_records(out), indent=1, default=str))
        else:
            said = merge.checked(out)
            print("machines (how their verdicts were checked):",
                  *(f"{m}: {said[m]}" for m in out["machines"]), sep="\n  ")
            print(out["hardware"].to_string())
            print(merge.shown(out["verdicts"]).to_string())
            if not out["ladder"].empty:
                print(merge.shown(out["ladder"]).to_string())
        if args.out:
            out["verdicts"].to_csv(f"{args.out}-verdicts.csv")
            out["ladder"].to_csv(f"{args.out}-ladder.csv")
            out["hardware"].to_csv(f"{args.out}-hardware.csv")
    elif args.command == "advise":
        from labkit.lab.advising import advice as advising

        options = {"work": "--work", "suspensions": "--suspensions (--switches)",
                   "alive": "--alive",
                   "connections": "--connections", "rate": "--rate", "design": "--design",
                   "designs": "--design",
                   "stack_in_use": "--stack-in-use", "fp": "--fp", "stack_size": "--stack-size",
                   "path": "--bundle"}
        try:
            advice = advising.advise(args.work, args.suspensions, args.alive, args.stack_in_use,
                                     args.fp, stack_size=args.stack_size, rate=args.rate,
                                     connections=args.connections, designs=args.design,
                                     bundle=args.bundle)
        except (ValueError, TypeError) as exc:
            name = str(exc).split(" ", 1)[0].strip("`")
            raise ValueError(f"{options.get(name, name)}: {exc}") from exc
        if args.json:
            import json

            print(json.dumps(advice.records(), indent=1))
        else:
            print(advice.text())
    elif args.command == "holdout":
        return _holdout(args)
    elif args.command == "report":
        return _report(args.quick)
    elif args.command == "lab":
        return _lab(args)
    elif args.command == "room":
        return _room(args)
    return 0


def _holdout(args) -> int:
    from labkit.core import machine, results
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


def _about_python(exc: Exception) -> bool:
    """An error of labkit.measure about its `python` switch: the ones naming the parameter
    first, and a switch that failed its check."""
    from labkit.errors import UserSwitchError

    return isinstance(exc, UserSwitchError) or str(exc).startswith("python ")


def _python_problem(exc: Exception, given: str) -> str:
    """The error's first line, naming the option rather than the parameter; for a module
    the worker could not import, where the command line looks for it."""
    said = (str(exc).strip().splitlines() or [""])[0]
    if not said.startswith("python "):
        return f"--python {given}: {said}"
    if said.startswith("python must be importable"):
        said += "; put the module's folder on PYTHONPATH"
    return "--" + said


def _report(quick: bool) -> int:
    from labkit.core import results
    from labkit.lab.judging import ledger
    from labkit.lab.report import page
    from labkit.lab.running import notebook_run, notebooks, reproduce

    out = reproduce.reports_dir(quick)
    os.environ["LABKIT_RESULTS_DIR"] = str(out if quick else results.home())
    manifest = ledger.read_manifest()
    outcomes = []
    for src in notebooks.notebook_sources():
        done = out / "executed" / f"{src.stem}.ipynb"
        if done.exists() and manifest.get(src.stem, {}).get("ok", True):
            outcomes.append(notebook_run.earlier_outcome(src.stem, done, manifest))
    if not outcomes:
        raise FileNotFoundError(f"no executed notebooks in {out / 'executed'}: run "
                                f"`labkit reproduce{' --quick' if quick else ''}` first")
    print(page.build(outcomes, out_dir=out, quick=quick))
    return 0


def _lab(args) -> int:
    from labkit.core import results

    jupyter = Path(sys.executable).with_name("jupyter")
    if not jupyter.exists() and shutil.which("jupyter") is None:
        raise FileNotFoundError("JupyterLab is not installed: pip install 'labkit[lab]'")
    env = dict(os.environ)
    checkout = results.checkout()
    if checkout and (checkout / "jupyter").is_dir():
        # The lab's settings are added to the user's own (the user's still win).
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            p for p in (str(checkout / "jupyter"), env.get("JUPYTER_CONFIG_PATH")) if p)
    notebooks = results.notebooks_dir()
    if checkout is None:
        # Installed: the learner edits a copy in the results folder, never site-packages.
        copy = results.home() / "notebooks"
        if not copy.exists():
            shutil.copytree(notebooks, copy)
            print(f"labkit lab: copied the notebooks to {copy}", file=sys.stderr)
        notebooks = copy
    cmd = [str(jupyter) if jupyter.exists() else "jupyter", "lab",
           f"--ServerApp.root_dir={notebooks}"]
    if args.port:
        cmd.append(f"--port={args.port}")
    if args.no_browser:
        cmd.append("--no-browser")
    if os.geteuid() == 0:  # a VM or a container: the server must be told it may run as root
        cmd.append("--allow-root")
    cmd += [a for a in args.lab_args if a != "--"]
    return subprocess.call(cmd, env=env)


def _room(args) -> int:
    """`labkit room ...`: the room's functions need the `room` extra (Dask distributed,
    cryptography), imported only here."""
    import importlib

    name = ("labkit.experiments.room_noise" if args.room_command == "noise" else
            "labkit.lab.sharing.room_suite" if args.room_command == "suite" else
            "labkit.lab.sharing.room")
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
        return _usage(args, exc)


def _room_command(module, args) -> int:
    if args.room_command == "serve":
        module.serve(args.room, host=args.host, interface=args.interface, port=args.port,
                     new=args.new)
    elif args.room_command == "join":
        module.join(args.room, name=args.name, machine_id=args.machine_id,
                    allow_root=args.allow_root, quiet=not args.loud)
    elif args.room_command == "run":
        import time

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
            from labkit.core.results import atomic_path

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


def main(argv: list[str] | None = None) -> int:
    """Run the `labkit` command line; returns the exit status."""
    argv = _negatives_kept(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "lab":
        args.lab_args = [*args.lab_args, *extra]
    _apply_globals(args)
    from labkit.core.timing import SwitchCountError
    from labkit.core.worker import KernelCrashError, MeasurementTimeout, WorkerError

    try:
        return _run(args, parser)
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
            return _usage(args, exc)
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"labkit {args.command}: {type(exc).__name__}: {first} "
              "(--debug shows the traceback)", file=sys.stderr)
        return 1
    except USAGE_ERRORS as exc:
        if args.debug:
            raise
        return _usage(args, exc)


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


def _merge_problem(exc) -> str:
    """merge.merge's message in the command's words: its `paths` are the BUNDLES given, and
    same_commit=False is --allow-other-commits."""
    msg = str(exc)
    if msg.startswith("paths"):
        msg = "bundles" + msg[len("paths"):]
    return msg.replace("pass same_commit=False (--allow-other-commits)",
                       "pass --allow-other-commits")


def _usage(args, exc) -> int:
    print(f"labkit {args.command}: {exc}", file=sys.stderr)
    return 2


def _apply_globals(args) -> None:
    if args.results:
        from labkit.core import results

        results.set_home(args.results)
        os.environ.pop("LABKIT_RESULTS_DIR", None)


if __name__ == "__main__":
    sys.exit(main())
