"""The suite as a room task runs it: a subprocess of the joined worker, on the CPUs the
worker's thread does not use, with its results in a private folder, ending with a bundle.

    python -m labkit.lab.sharing.room_suite --results DIR --bundle OUT [--cpus 0,2] [--quick]
        [--only NAME ...] [-p NAME VALUE ...] [--name NAME] [--machine-id ID]

It runs the notebooks with labkit.lab.running.notebook_run, as reproduce does, but never touches the
participant's data/, figures/ or reports/ (every result goes under --results), and takes
no lock: two rooms' suites on one machine do not wait for each other. Progress goes to
stdout as lines `labkit-room {json}`, which the worker passes on to the room's client.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

PROGRESS = "labkit-room "


def emit(**event) -> None:
    """One progress line for the worker to pass on."""
    print(PROGRESS + json.dumps(event), flush=True)


def _die_with_parent(parent: int) -> None:
    """If the worker goes (killed, or its machine leaves the room), the suite and every
    kernel it started go too, instead of measuring on for nobody."""
    import ctypes

    def kill_tree(*_):
        import psutil

        for child in psutil.Process().children(recursive=True):
            try:
                child.kill()
            except psutil.Error:
                pass
        os._exit(143)

    signal.signal(signal.SIGTERM, kill_tree)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the worker died before prctl took effect
        kill_tree()


def _parse_cpus(text: str) -> set[int]:
    try:
        cpus = {int(c) for c in text.split(",") if c.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"--cpus must be CPU numbers like 0,2, not {text!r}")
    if not cpus:
        raise argparse.ArgumentTypeError("--cpus must name at least one CPU")
    return cpus


def relabel(bundle_dir: Path, *, name: str | None, machine_id: str | None) -> None:
    """Record the participant's name in the bundle and, when the room was told a machine
    id (several workers on one machine, in tests), use it, keeping the real one beside."""
    import pandas as pd

    meta_path = bundle_dir / "machine.json"
    meta = json.loads(meta_path.read_text())
    meta["room_name"] = name
    real = meta["machine"]["machine_id"]
    if machine_id and machine_id != real:
        meta["machine"]["machine_id"] = machine_id
        meta["machine"]["real_machine_id"] = real
        m_path = bundle_dir / "measurements.parquet"
        m = pd.read_parquet(m_path)
        if "machine_id" in m:
            m["machine_id"] = m["machine_id"].where(m["machine_id"] != real, machine_id)
            m.to_parquet(m_path, index=False)
    meta_path.write_text(json.dumps(meta, indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m labkit.lab.sharing.room_suite",
                                description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, type=Path, help="private results folder")
    p.add_argument("--bundle", required=True, type=Path, help="the bundle to write")
    p.add_argument("--cpus", type=_parse_cpus, help="run on these CPUs only")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", nargs="*")
    p.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a notebook parameter, as `labkit reproduce -p` takes it")
    p.add_argument("--name")
    p.add_argument("--machine-id")
    p.add_argument("--parent", type=int, help="the worker's pid: die with it")
    args = p.parse_args(argv)
    if args.parent:
        _die_with_parent(args.parent)
    if args.cpus:
        os.sched_setaffinity(0, args.cpus)

    os.environ["LABKIT_RESULTS_DIR"] = str(args.results)  # before labkit reads it
    from labkit.lab.judging import ledger
    from labkit.lab.running import notebook_run, notebooks, params
    from labkit.lab.sharing import bundle

    try:
        sources = notebooks.notebook_sources(args.only)
        # Each value read by its declared type and checked, before anything runs.
        run_kwargs = {"parameters": params.parse([s.stem for s in sources], args.p)}
    except ValueError as exc:
        p.error(str(exc))
    notebook_run.ensure_kernel()  # an installed labkit registers its kernel
    manifest = {}
    n = len(sources)
    emit(state="running", k=0, n=n, notebook="", pid=os.getpid(),
         cpus=sorted(os.sched_getaffinity(0)))
    for k, src in enumerate(sources, 1):
        emit(state="running", k=k, n=n, notebook=src.stem, pid=os.getpid())
        o = notebook_run.run_notebook(src, quick=args.quick, out_dir=args.results / "executed",
                                      results_dir=args.results, **run_kwargs)
        manifest[o.name] = {"ok": o.ok, "seconds": round(o.seconds, 1),
                            "error": o.error[-500:], "quick": args.quick,
                            "parameters": o.parameters, "given": o.given}
        ledger.write_manifest(manifest)
        emit(state="notebook", k=k, n=n, notebook=o.name, ok=o.ok, seconds=round(o.seconds, 1),
             error=o.error[-300:])
    try:
        out = bundle.make_bundle(args.bundle, quick=args.quick)
    except FileNotFoundError as exc:
        print(f"no bundle: {exc}", file=sys.stderr)
        return 1
    relabel(out, name=args.name, machine_id=args.machine_id)
    emit(state="bundled", k=n, n=n, notebook="", bundle=str(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
