"""The suite as a room task runs it: a subprocess of the joined worker, on the CPUs the
worker's thread does not use, with its results in a private folder, ending with a bundle.

    python -m labkit room suite --into DIR --bundle OUT [--cpus 0,2] [--quick]
        [--only NAME ...] [-p NAME VALUE ...] [--name NAME] [--machine-id ID]

(the options are built in labkit/lab/cli/room.py; `run_suite` is what they call).

It runs the notebooks with labkit.lab.running.notebook_run, as reproduce does, but never touches the
participant's data/, figures/ or reports/ (every result goes under --into), and takes
no lock: two rooms' suites on one machine do not wait for each other. Progress goes to
stdout as lines `labkit-room {json}`, which the worker passes on to the room's client.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
from pathlib import Path

import psutil

from labkit.lab.judging import ledger
from labkit.lab.running import notebook_run, notebooks
from labkit.lab.running import params as _params
from labkit.lab.sharing import bundle

PROGRESS = "labkit-room "


def emit(**event) -> None:
    """One progress line for the worker to pass on."""
    print(PROGRESS + json.dumps(event), flush=True)


def _die_with_parent(parent: int) -> None:
    """If the worker goes (killed, or its machine leaves the room), the suite and every
    kernel it started go too, instead of measuring on for nobody."""
    def kill_tree(*_):
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


def parse_cpus(text: str) -> set[int]:
    """CPU numbers written like 0,2; ValueError if none or not numbers."""
    try:
        cpus = {int(c) for c in text.split(",") if c.strip()}
    except ValueError:
        raise ValueError(f"cpus must be CPU numbers like 0,2, not {text!r}") from None
    if not cpus:
        raise ValueError("cpus must name at least one CPU")
    return cpus


def relabel(bundle_dir: Path, *, name: str | None, machine_id: str | None) -> None:
    """Record the participant's name in the bundle and, when the room was told a machine
    id (several workers on one machine, in tests), use it, keeping the real one beside."""
    if machine_id:
        bundle.relabel(bundle_dir, machine_id)
    meta_path = bundle_dir / "machine.json"
    meta = json.loads(meta_path.read_text())
    meta["room_name"] = name
    meta_path.write_text(json.dumps(meta, indent=1, default=str))


def run_suite(into: Path, bundle_out: Path, *, cpus: set[int] | None = None,
              quick: bool = False, only=None, params=(), name: str | None = None,
              machine_id: str | None = None, parent: int | None = None) -> int:
    """Run the notebooks into the private folder `into`, then pack them as the bundle
    `bundle_out`; returns the exit status (1: no bundle). A bad notebook name or parameter
    is a ValueError before anything runs."""
    if parent:
        _die_with_parent(parent)
    if cpus:
        os.sched_setaffinity(0, cpus)
    into = Path(into)
    os.environ["LABKIT_RESULTS_DIR"] = str(into)  # before labkit reads it

    sources = notebooks.notebook_sources(only)
    # Each value read by its declared type and checked, before anything runs.
    run_kwargs = {"parameters": _params.parse([s.stem for s in sources], list(params))}
    notebook_run.ensure_kernel()  # an installed labkit registers its kernel
    manifest = {}
    n = len(sources)
    emit(state="running", k=0, n=n, notebook="", pid=os.getpid(),
         cpus=sorted(os.sched_getaffinity(0)))
    for k, src in enumerate(sources, 1):
        emit(state="running", k=k, n=n, notebook=src.stem, pid=os.getpid())
        o = notebook_run.run_notebook(src, quick=quick, out_dir=into / "executed",
                                      results_dir=into, **run_kwargs)
        manifest[o.name] = {"ok": o.ok, "seconds": round(o.seconds, 1),
                            "error": o.error[-500:], "quick": quick,
                            "parameters": o.parameters, "given": o.given}
        ledger.write_manifest(manifest)
        emit(state="notebook", k=k, n=n, notebook=o.name, ok=o.ok, seconds=round(o.seconds, 1),
             error=o.error[-300:])
    try:
        out = bundle.make_bundle(bundle_out, quick=quick, replace=True)
    except FileNotFoundError as exc:
        print(f"no bundle: {exc}", file=sys.stderr)
        return 1
    relabel(out, name=name, machine_id=machine_id)
    emit(state="bundled", k=n, n=n, notebook="", bundle=str(out))
    return 0
