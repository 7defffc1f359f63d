"""The room: one comparison across many machines, on Dask distributed with mutual TLS.
Its command line (`labkit room serve|join|run`) is built in labkit/lab/cli/room.py.

The teacher (or a fleet's owner) serves a room: a Dask scheduler that accepts only peers
with a certificate of the room's own CA. Each participant joins with one Dask worker
(one thread, resource `labkit-machine=1`). `run` sends one task per machine; the task
runs labkit's suite in a subprocess on the CPUs the worker does not use and returns the
machine's bundle in memory; the client saves each bundle as it arrives and merges them.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import psutil

from labkit.core.machine import machine_info
from labkit.core.results import atomic_path
from labkit.lab.registry import store
from labkit.lab.registry import predictions as judged
from labkit.lab.room import page as room_page
from labkit.lab.room.suite import PROGRESS
from labkit.lab.room.tls import make_credentials, read_room, security, write_room
from labkit.lab.running import params as declared
from labkit.lab.running.notebooks import notebook_sources
from labkit.lab.sharing import merge
# distributed and dask (the room extra) are imported where used: they may be absent.

RESOURCE = "labkit-machine"
TOPIC = "labkit-room"
STATES = ("queued", "running", "done", "failed", "left", "skipped")
TERMINAL = {"done", "failed", "left", "skipped"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")

# An idle joined worker should wake as rarely as Dask allows: no statistical profiler
# (every 10 ms by default), slow event-loop health checks (20 ms by default) and a slow
# memory monitor; heartbeats stay (the scheduler sets their pace). Measured by
# `labkit room noise` (labkit.lab.room.noise).
QUIET_WORKER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.tick.limit": "30s",
    "distributed.worker.memory.monitor-interval": "2s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
}

# Set in a joined worker's environment by join(): the CPUs the suite gets (all but the
# worker's own, when there are two or more). An environment variable rather than a module
# global: the suite runs in a subprocess of the task, which reads it from there.
SUITE_CPUS_ENV = "LABKIT_ROOM_SUITE_CPUS"


def worker_name(name: str, machine_id: str) -> str:
    """The Dask worker name: the participant's name and the machine's id."""
    return f"{name}@{machine_id}"


def split_worker_name(wname) -> tuple[str, str]:
    """(name, machine_id) of a room worker's Dask name."""
    name, _, mid = str(wname).rpartition("@")
    return (name or str(wname)), mid


def _check_name(name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not _NAME.match(name):
        raise ValueError(f"name must be 1-40 letters, digits, '.', '_' or '-', starting with "
                         f"a letter or digit; got {name!r}")
    return name


# --- serve -------------------------------------------------------------------------------

def _print_joins():
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Joins(SchedulerPlugin):
        name = "labkit-room-joins"

        def add_worker(self, scheduler, worker):
            ws = scheduler.workers.get(worker)
            print(f"  joined: {ws.name if ws else worker} ({len(scheduler.workers)} in the room)",
                  flush=True)

        def remove_worker(self, scheduler, worker, **kwargs):
            print(f"  left:   {worker} ({len(scheduler.workers)} in the room)", flush=True)

    return Joins()


def serve(room_path="room.json", *, host: str = "127.0.0.1", interface: str | None = None,
          port: int = 0, new: bool = False, ready=None) -> None:
    """Run the room's scheduler until interrupted. A room file already at `room_path` is
    reused (same keys, same port unless `port` says otherwise) unless `new`."""
    from distributed import Scheduler

    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an int in 0..65535, got {port!r}")
    room_path = Path(room_path)
    creds = None
    if room_path.exists() and not new:
        old = read_room(room_path)
        creds = {k: old[k] for k in ("ca", "scheduler", "client", "worker")}
        if port == 0:
            port = int(old["address"].rsplit(":", 1)[1])
        print(f"reusing the room in {room_path} (its participants need nothing new)")
    if creds is None:
        creds = make_credentials()
    room = {"address": "", **creds}

    async def _run():
        kwargs = {"interface": interface} if interface else {"host": host}
        # Dask always starts an HTTP server beside the scheduler; without TLS it must
        # serve nothing and only on loopback.
        async with Scheduler(port=port, protocol="tls", security=security(room, "scheduler"),
                             dashboard=False, dashboard_address="127.0.0.1:0", **kwargs) as s:
            s.add_plugin(_print_joins())
            write_room(room_path, s.address, creds)
            print(f"room open at {s.address}; room file: {room_path} (mode 0600: hand it to "
                  "the participants yourself, it is the key to the room)")
            print("each participant runs (in the labkit folder, the room file saved there):\n\n"
                  f"    labkit room join {room_path.name} --name THEIR-NAME\n\n"
                  f"(without the labkit command: .venv/bin/python -m labkit room join "
                  f"{room_path.name} --name THEIR-NAME)\n")
            print(f"then run the suite everywhere: labkit room run {room_path} --quick",
                  flush=True)
            if ready is not None:
                ready(s.address)
            await s.finished()

    import dask

    with dask.config.set({"distributed.scheduler.http.routes": []}):
        try:
            asyncio.run(_run())
        except KeyboardInterrupt:
            print("room closed")


# --- join --------------------------------------------------------------------------------

def _pin_worker() -> set[int] | None:
    """Pin this worker process to its last allowed CPU and return the others for the
    suite; with a single CPU nothing is pinned."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    mine = allowed[-1]  # the notebooks measure on the first CPUs by default

    for t in psutil.Process().threads():
        try:
            os.sched_setaffinity(t.id, {mine})
        except OSError:
            pass
    os.sched_setaffinity(0, {mine})  # threads started later inherit this
    return set(allowed[:-1])


def join(room_path, *, name: str, machine_id: str | None = None, allow_root: bool = False,
         quiet: bool = True) -> None:
    """Join the room with one Dask worker (one thread, resource labkit-machine=1) until
    interrupted or the room closes."""
    import dask
    from distributed import Worker

    name = _check_name(name)
    room = read_room(room_path)
    if os.geteuid() == 0 and not allow_root:
        raise PermissionError("joining as root is refused: a room's holder could run code "
                              "as root here; join as your own user (or pass --allow-root in "
                              "a throwaway container)")
    if machine_id is None:
        machine_id = machine_info()["machine_id"]
    elif not isinstance(machine_id, str) or not re.fullmatch(r"[0-9a-f]{6,32}", machine_id):
        raise ValueError(f"machine_id must be 6-32 lowercase hex digits, got {machine_id!r}")
    print(f"joining the room at {room['address']} as {name} (machine {machine_id}).\n"
          "Whoever holds this room file can now run labkit's suite on this machine, as you "
          f"(user {os.getuid()}), and, like any Dask worker, any Python code. Press Ctrl-C "
          "to leave the room.", flush=True)
    suite_cpus = _pin_worker()
    os.environ[SUITE_CPUS_ENV] = ",".join(map(str, sorted(suite_cpus or ())))

    async def _run():
        async with Worker(room["address"], nthreads=1, resources={RESOURCE: 1},
                          name=worker_name(name, machine_id), security=security(room, "worker"),
                          dashboard=False, dashboard_address="127.0.0.1:0",
                          memory_limit=0) as w:
            print(f"joined as {w.name}; the suite will run on CPUs "
                  f"{sorted(suite_cpus) if suite_cpus else 'all (one CPU)'}", flush=True)
            await w.finished()

    with dask.config.set({"distributed.worker.http.routes": [],
                          **(QUIET_WORKER if quiet else {})}):
        try:
            asyncio.run(_run())
        except KeyboardInterrupt:
            pass
    print("left the room")


# --- the task, on the worker -------------------------------------------------------------

def _suite_task(run_id: str, quick: bool, only, params) -> bytes:
    """Run the suite in a subprocess, return the bundle as bytes of a .tar.gz."""
    from distributed import get_worker

    w = get_worker()
    name, mid = split_worker_name(w.name)

    def publish(event):
        w.log_event(TOPIC, {"run": run_id, "worker": w.address, **event})

    with tempfile.TemporaryDirectory(prefix="labkit-room-") as tmp:
        out = Path(tmp) / f"{name}.labkit"
        cmd = [sys.executable, "-m", "labkit", "room", "suite",
               "--into", str(Path(tmp) / "results"), "--bundle", str(out), "--name", name,
               "--machine-id", mid, "--parent", str(os.getpid())]
        if os.environ.get(SUITE_CPUS_ENV):
            cmd += ["--cpus", os.environ[SUITE_CPUS_ENV]]
        if quick:
            cmd.append("--quick")
        if only:
            cmd += ["--only", *only]
        for k, v in params:
            cmd += ["-p", str(k), str(v)]
        tail = []
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            if line.startswith(PROGRESS):
                try:
                    publish(json.loads(line[len(PROGRESS):]))
                except ValueError:
                    pass
            else:
                tail = (tail + [line.rstrip()])[-30:]
        rc = proc.wait()
        if rc != 0 or not out.is_dir():
            raise RuntimeError(f"the suite failed on {name} (status {rc}):\n" + "\n".join(tail))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(out, arcname=out.name)
        return buf.getvalue()


# --- run, on the client ------------------------------------------------------------------

@dataclass
class RoomRun:
    """A run across the room: the live table, the bundles saved so far, the comparison."""
    out: Path
    table: "object" = None            # pandas DataFrame, one row per machine
    bundles: dict = field(default_factory=dict)  # machine_id -> bundle folder
    comparison: dict | None = None   # labkit.lab.sharing.merge.merge() of the bundles so far
    merge_error: str = ""             # why the bundles so far could not be merged
    registry: str | None = None       # where the bundles are published, if anywhere
    predictions: Path | None = None   # the learners' predictions, copied at the run's start
    published: dict = field(default_factory=dict)  # machine_id -> what publishing said
    page: Path | None = None          # the room page (labkit.lab.room.page)


def _save_bundle(data: bytes, out: Path, stem: str) -> Path:
    """Save a returned bundle atomically (the archive, then the unpacked folder)."""
    archive = out / f"{stem}.labkit.tar.gz"
    with atomic_path(archive) as tmp:
        tmp.write_bytes(data)
    folder = out / f"{stem}.labkit"
    staging = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=out))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(staging, filter="data")
        inner = [p for p in staging.iterdir() if p.is_dir()]
        if len(inner) != 1:
            raise ValueError(f"bundle from {stem} holds {len(inner)} folders, expected one")
        if folder.exists():
            shutil.rmtree(folder)
        inner[0].rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _table(rows: dict):
    cols = ["name", "machine_id", "state", "progress", "notebook", "seconds", "detail"]
    return pd.DataFrame([{c: r.get(c, "") for c in cols} for r in rows.values()], columns=cols)


def _merge(run: RoomRun, *, allow_other_commits: bool = False) -> None:
    if len(run.bundles) < 2:
        return
    try:
        run.comparison = merge.merge(sorted(run.bundles.values()),
                                      same_commit=not allow_other_commits)
        run.merge_error = ""
    except ValueError as exc:
        # merge's refusals (two labkit commits, quick beside full...) are reported, and the
        # run goes on collecting bundles: they are saved either way.
        run.merge_error = str(exc)
        return
    with atomic_path(run.out / "room-verdicts.csv") as tmp:
        run.comparison["verdicts"].to_csv(tmp)
    with atomic_path(run.out / "room-ladder.csv") as tmp:
        run.comparison["ladder"].to_csv(tmp)


def _to_registry(run: RoomRun, *, quick: bool = False) -> None:
    """Publish the bundles not yet published and rebuild the room page."""
    if not run.registry:
        return
    for mid, folder in run.bundles.items():
        if mid not in run.published:
            run.published[mid] = room_page.publish_one(folder, run.registry)
    run.page = room_page.build(run.registry, list(run.bundles), run.out,
                               predictions_file=run.predictions, quick=quick)


def _check_run_args(quick, only, params, poll, timeout):
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False, not {quick!r}")
    if only is not None and (isinstance(only, str) or not all(isinstance(o, str) for o in only)):
        raise TypeError(f"only must be a list of notebook names, not {only!r}")

    # An unknown notebook or a bad parameter fails here, before any machine runs anything.
    names = [s.stem for s in notebook_sources(list(only) if only is not None else None)]
    if isinstance(params, dict):
        params = list(params.items())
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in params):
        raise TypeError(f"params must be (name, value) pairs or a dict, not {params!r}")
    # Sent as the text `-p` takes: Python's spelling of numbers, lists, None and booleans.
    params = [(str(k), v if isinstance(v, str) else repr(v)) for k, v in params]
    declared.parse(names, params)
    if not isinstance(poll, (int, float)) or not 0.05 <= poll <= 60:
        raise ValueError(f"poll must be seconds in 0.05..60, got {poll!r}")
    if timeout is not None and (not isinstance(timeout, (int, float)) or not 0 < timeout <= 7 * 86400):
        raise ValueError(f"timeout must be None or seconds in (0, 7 days], got {timeout!r}")
    return params


def run(room_path, *, quick: bool = False, only=None, params=(), out="room-results",
        on_update=None, poll: float = 0.5, timeout: float | None = None,
        allow_other_commits: bool = False, registry=None, predictions=None) -> RoomRun:
    """Run the suite once on every machine joined to the room and merge the bundles as
    they arrive. `on_update(run)` is called whenever the table changes. A machine that
    leaves is marked `left` while the others go on; bundles already saved stay. Bundles
    that merge refuses to compare (say, two labkit commits without
    `allow_other_commits`) are kept, and `merge_error` says why. With `registry`, each
    bundle is published there as it arrives and OUT/room.html shows the room's tally and,
    with `predictions` (a CSV the learners wrote before measuring, copied at the start),
    who predicted what."""
    from distributed import Client

    params = _check_run_args(quick, only, params, poll, timeout)
    if not isinstance(allow_other_commits, bool):
        raise TypeError(f"allow_other_commits must be True or False, not {allow_other_commits!r}")
    if predictions is not None and registry is None:
        raise ValueError("predictions are judged on the room's registry: give registry too")
    if registry is not None:
        store.open_store(registry)  # a bad location fails before any machine runs
        if predictions is not None:
            judged.read(predictions)
    room = read_room(room_path)
    run_ = RoomRun(out=Path(out), registry=None if registry is None else str(registry))
    run_.out.mkdir(parents=True, exist_ok=True)
    if predictions is not None:
        run_.predictions = run_.out / "predictions.csv"
        shutil.copyfile(predictions, run_.predictions)  # fixed before anything is measured
    run_id = uuid.uuid4().hex[:8]
    rows: dict[str, dict] = {}
    futures = {}
    with Client(room["address"], security=security(room, "client"), timeout="20s") as client:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        by_machine: dict[str, str] = {}
        for addr, info in sorted(workers.items(), key=lambda kv: str(kv[1].get("name"))):
            if RESOURCE not in (info.get("resources") or {}):
                continue
            name, mid = split_worker_name(info.get("name"))
            # Names become file names here: anything but join()'s own form is renamed.
            if not _NAME.match(name):
                name = "unnamed"
            if not re.fullmatch(r"[0-9a-f]{6,32}", mid):
                mid = f"unknown{len(rows)}"
            if mid in by_machine:  # never two suites on one machine
                rows[addr] = {"name": name, "machine_id": mid, "state": "skipped",
                              "detail": f"same machine as {rows[by_machine[mid]]['name']}"}
                continue
            by_machine[mid] = addr
            rows[addr] = {"name": name, "machine_id": mid, "state": "queued", "progress": "",
                          "notebook": "", "seconds": 0.0, "detail": ""}
        if not by_machine:
            raise ValueError(f"room {room_path}: no machine has joined yet "
                             "(`labkit room join ROOMFILE --name NAME` on each)")
        for mid, addr in by_machine.items():
            futures[addr] = client.submit(
                _suite_task, run_id, quick, list(only) if only else None, params,
                key=f"labkit-suite-{run_id}-{mid}", workers=[addr], allow_other_workers=False,
                resources={RESOURCE: 1}, pure=False, retries=0)
        start = time.monotonic()
        seen = 0.0  # the time stamp of the last event read (the log is a bounded deque)

        def update():
            run_.table = _table(rows)
            if on_update is not None:
                on_update(run_)

        update()
        while any(r["state"] not in TERMINAL for r in rows.values()):
            changed = False
            events = client.get_events(TOPIC)
            for stamp, ev in list(events):
                if stamp <= seen:
                    continue
                seen = stamp
                r = rows.get(ev.get("worker"))
                if ev.get("run") != run_id or r is None or r["state"] in TERMINAL:
                    continue
                if ev.get("state") == "running":
                    r.update(state="running", progress=f"{ev['k']} of {ev['n']}",
                             notebook=ev.get("notebook", ""))
                elif ev.get("state") == "notebook" and not ev.get("ok"):
                    r["detail"] = (r["detail"] + f" {ev['notebook']} failed;").strip()
                changed = True
            alive = set(client.scheduler_info(n_workers=-1)["workers"])
            for addr, fut in futures.items():
                r = rows[addr]
                if r["state"] in TERMINAL:
                    continue
                r["seconds"] = round(time.monotonic() - start, 1)
                if fut.status == "finished":
                    folder = _save_bundle(fut.result(), run_.out, f"{r['name']}-{r['machine_id']}")
                    run_.bundles[r["machine_id"]] = folder
                    r.update(state="done", notebook="", detail=(r["detail"] + f" {folder.name}").strip())
                    _merge(run_, allow_other_commits=allow_other_commits)
                    _to_registry(run_, quick=quick)
                elif fut.status == "error":
                    r.update(state="failed", detail=str(fut.exception())[-500:])
                elif addr not in alive:
                    fut.cancel()
                    r.update(state="left", detail="the machine left the room mid-run")
                else:
                    continue
                changed = True
            if timeout is not None and time.monotonic() - start > timeout:
                for addr, fut in futures.items():
                    if rows[addr]["state"] not in TERMINAL:
                        fut.cancel()
                        rows[addr].update(state="failed", detail=f"timed out after {timeout} s")
                changed = True
            if changed:
                update()
            time.sleep(poll)
        update()
    return run_
