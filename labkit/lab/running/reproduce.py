"""`labkit reproduce` (its options: labkit/lab/cli/running.py): execute every notebook (or some),
then build one HTML report.

    labkit reproduce [--quick] [--only 01_stack_size ...] [-f params.yaml] [-p NAME VALUE]
                     [--resume] [--json]

Every parameter's value for this run (labkit.lab.running.params: full or quick; a parameters
file's beats both, and -p NAME VALUE beats the file) is checked before anything runs. Each
notebook is then executed by labkit.lab.running.notebook_run into reports/[quick/]executed/. A
notebook that fails is reported at the end with its error, and the others still run. A
notebook that fails or is interrupted leaves its data and figures as its last finished run
left them (labkit.lab.running.keep). Quick runs write their data and figures under
reports/quick/, so they never replace a full run's data/ and figures/.

The terminal shows one status line on stderr (labkit.lab.running.status_line). Ctrl-C ends every
process the run started (labkit.lab.running.children), keeps every finished notebook and sweep
point, and says how to resume (--resume). With --json, stdout carries only the run's
summary as JSON (`summary`) and everything else goes to stderr.
"""
from __future__ import annotations

import fcntl
import functools
import json
import logging
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from labkit.core import envcheck, results
from labkit.core.results import atomic_path
from labkit.errors import ParameterError
from labkit.lab import envelope
from labkit.lab.judging import ledger
from labkit.lab.report import page
from labkit.lab.running import keep, params
from labkit.lab.running.children import kill_children
from labkit.lab.running.notebook_run import (Outcome, earlier_outcome, ensure_kernel,
                                             notebook_parameters, run_notebook)
from labkit.lab.running.notebooks import notebook_sources
from labkit.lab.running.status_line import StatusLine, last_seconds
from labkit.lab.running.sweep import PROGRESS_ENV, RESUME_ENV

RESUME_FILE = "resume.json"   # in data/checkpoints/: what an interrupted run finished
SUPERSEDED = "superseded"     # in data/checkpoints/: an earlier run's points a fresh run set aside


def reports_dir(quick: bool) -> Path:
    """Where the executed notebooks and the report go: <results home>/reports[/quick]."""
    return results.home() / "reports" / ("quick" if quick else "")


def _exclusive(out: Path):
    """Hold a lock for this run's lifetime; a second `make reproduce` on the same results
    stops at once with a clear message instead of slowing both down."""
    out.mkdir(parents=True, exist_ok=True)
    f = open(out / ".reproduce.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another `labkit reproduce` is running on {out} (lock "
                         f"{out / '.reproduce.lock'}): wait for it; two runs at once would "
                         "disturb each other's timings") from None
    return f


def _resume_path() -> Path:
    return results.data_dir() / "checkpoints" / RESUME_FILE


def run(args) -> int:
    """Run the notebooks `args` asks for (the command's values by its options' names:
    quick, only, parameter, parameters_file, resume, no_progress, timeout, json); returns
    the exit status. Every value is checked before anything runs: a bad one is a
    ValueError (a ParameterError naming it where it is one value's)."""
    sources = notebook_sources(args.only)
    given = dict(args.parameter)  # -p NAME VALUE as typed: a resumed run reads them again
    from_file = _read_file(args.parameters_file)
    parameters = _checked(sources, given, from_file, args.parameters_file)
    if args.timeout <= 0:
        raise ParameterError("timeout", f"must be a positive number of seconds, got {args.timeout}")

    out = reports_dir(args.quick)
    results_dir = out if args.quick else results.home()
    lock = _exclusive(out)  # two runs at once would time each other's load  # noqa: F841
    ensure_kernel()
    os.environ["LABKIT_RESULTS_DIR"] = str(results_dir)  # for the manifest, here and in kernels

    resume_path = _resume_path()
    finished_before: list[str] = []
    only = args.only
    if args.resume:
        if not resume_path.exists():
            raise ParameterError("resume", f"has nothing to resume in {results_dir} (no "
                                 f"interrupted {'quick' if args.quick else 'full'} run)")
        state = json.loads(resume_path.read_text())
        finished_before = state.get("finished", [])
        if not only and state.get("only"):  # the interrupted run's own selection
            only = state["only"]
            sources = notebook_sources(only)
        given = {**state.get("parameters", {}), **given}
        from_file = {**state.get("file_parameters", {}), **from_file}
        parameters = _checked(sources, given, from_file,
                              args.parameters_file or "(the interrupted run's)")
        sources = [s for s in sources if s.stem not in finished_before]
        os.environ[RESUME_ENV] = "1"
    else:
        os.environ.pop(RESUME_ENV, None)
        # A fresh run measures every point again: an older run's sweep points must not
        # pass for this one's if it is interrupted and resumed. They are set aside, not
        # deleted: an interrupted run's points are results too.
        aside = _clear_checkpoints([s.stem for s in sources], keep_in=SUPERSEDED)
        if aside:
            print(f"set aside {len(aside)} sweep checkpoint(s) of an earlier run in "
                  f"{results.data_dir() / 'checkpoints' / SUPERSEDED} (this run measures "
                  "every point itself; `--resume` would have used them)", file=sys.stderr)
    mode = "quick" if args.quick else "full"
    say = functools.partial(print, file=sys.stderr if args.json else sys.stdout, flush=True)
    say(f"labkit reproduce ({mode}{', resumed' if args.resume else ''}): {len(sources)} "
        f"notebooks; results in {results_dir}")

    envcheck.announce(sys.stderr)  # once a run, before the status line; data/environment.json

    # A partial run (--only, --resume) keeps what the last run recorded for the others.
    manifest = ledger.read_manifest() if (args.only or args.resume) else {}
    progress_dir = Path(tempfile.mkdtemp(prefix="labkit-progress-"))
    progress = progress_dir / "progress.json"
    os.environ[PROGRESS_ENV] = str(progress)
    left = keep.put_back_all()
    if left:
        say(f"put back the last finished results of {', '.join(left)}: a run that stopped "
            "without a chance to put them back had left them half-written")
    # Read before this run rewrites the manifest: the last run's times give the run's ETA.
    expected = last_seconds([s.stem for s in sources], ledger.read_manifest())
    status = StatusLine(progress, len(sources), enabled=not args.no_progress,
                        expected=expected).start()
    outcomes: list[Outcome] = []
    finished = list(finished_before)
    running = ""  # the notebook running, its outcome not yet dealt with
    handlers = _signals()
    _save_resume(resume_path, finished, given, from_file, args.quick, only)  # from the start
    try:
        for k, src in enumerate(sources, 1):
            status.notebook(k, src.stem)
            running = src.stem
            keep.copy_aside(running)
            o = run_notebook(src, quick=args.quick, out_dir=out / "executed",
                             results_dir=results_dir, timeout=args.timeout,
                             parameters=parameters)
            status.clear()
            say(f"  {'ok    ' if o.ok else 'FAILED'} {o.name} ({o.seconds:.0f} s)")
            if o.ok:
                keep.drop(o.name)
            else:
                say(f"         {_put_back(o.name)}")
            running = ""
            outcomes.append(o)
            finished.append(o.name)
            # The ledger reads this: a notebook that failed now has no fresh verdicts, and
            # an older verdict file must not pass for this run's.
            manifest[o.name] = {"ok": o.ok, "seconds": round(o.seconds, 1),
                                "error": o.error[-500:], "quick": args.quick,
                                "finished": time.time(), "parameters": o.parameters,
                                "given": o.given}
            ledger.write_manifest(manifest)
            if o.ok:  # its results are whole; a failed one keeps its points for a resume
                _clear_checkpoints([o.name])
            _save_resume(resume_path, finished, given, from_file, args.quick, only)
    except KeyboardInterrupt:
        status.stop()
        # The interrupted notebook's kernel dies with it; its pending asyncio tasks would
        # log "Task exception was never retrieved ... DeadKernelError" at exit, a traceback
        # after a clean Ctrl-C. What the run kept is said below, not by the libraries' logs.
        logging.disable(logging.CRITICAL)
        n = kill_children()
        if handlers:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this short
        what = (f"{running} did not finish: {_put_back(running)}" if running else
                "it stopped between notebooks")
        home = getattr(args, "results", None)
        again = ("labkit" + (f" --results {home}" if home else "") + " reproduce --resume"
                 + (" --quick" if args.quick else ""))
        make = "" if home else (f"   (or: make reproduce RESUME=1"
                                f"{' QUICK=1' if args.quick else ''})")
        stopped = f" and {n} process(es) still running under it" if n else ""
        during = f" during {running}: stopped it{stopped}" if running else (
            f" after {finished[-1]}" if finished else "")
        print(f"\ninterrupted{during}.\n"
              f"ran: {', '.join(finished) or 'no notebook'}; their results and every measured "
              f"sweep point are kept (in {results.data_dir() / 'checkpoints'}).\n"
              f"{what}.\n"
              f"to continue: {again}{make}", file=sys.stderr)
        return 130
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        status.stop()
        os.environ.pop(PROGRESS_ENV, None)

        shutil.rmtree(progress_dir, ignore_errors=True)

    resume_path.unlink(missing_ok=True)  # a whole run: nothing left to resume

    # The report always covers every notebook: those not run now come from their last
    # executed copy, marked as such.
    ran = {o.name for o in outcomes}
    for src in notebook_sources():
        earlier = out / "executed" / f"{src.stem}.ipynb"
        if src.stem not in ran and earlier.exists() and manifest.get(src.stem, {}).get("ok", True):
            outcomes.append(earlier_outcome(src.stem, earlier, manifest))
    html = page.build(outcomes, out_dir=out, quick=args.quick)
    say(f"report: {html}")
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        print(f"\nFAILED {o.name}:\n{o.error}\n", file=sys.stderr)
    fresh = [o for o in outcomes if not o.earlier]
    say(f"{len(fresh) - len(failed)} notebooks ok, {len(failed)} failed")
    try:
        table = ledger.ledger()
        say("verdicts: " + ", ".join(f"{n} {v}" for v, n in ledger.counts(table).items()))
    except Exception as exc:  # the counts are a summary; the report above has it all
        table = None
        say(f"verdicts: not available ({exc})")
    exit_status = 1 if failed else 0
    if args.json:
        print(json.dumps(envelope.stamped("reproduce", summary(
            outcomes, table, quick=args.quick, results_dir=results_dir, report=html,
            status=exit_status), args.argv), indent=1))
    return exit_status


# A measured value with its interval as the verdict files write it: "1.17 [1.13, 1.21]".
_NUMBER = r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf)"
_INTERVAL = re.compile(rf"({_NUMBER}) \[({_NUMBER}), ({_NUMBER})\]")


def interval(measured_value: str) -> dict | None:
    """{value, low, high} of a measured value that names one interval ("1.17 [1.13, 1.21]",
    "x = 425 [309, 586]; ..."); None for an exact count or a value naming several (the
    text itself says them). An unbounded end is None."""
    found = _INTERVAL.findall(measured_value or "")
    if len(found) != 1:
        return None
    value, low, high = (float(x) for x in found[0])
    return {k: v if math.isfinite(v) else None
            for k, v in (("value", value), ("low", low), ("high", high))}


def summary(outcomes: list[Outcome], table, *, quick: bool, results_dir, report,
            status: int) -> dict:
    """What `reproduce --json` prints: the run (mode, exit status, where), each notebook's
    outcome and time, the verdict counts and each claim's verdict with its interval and
    the processes it stands on (`table`: the ledger, or None when it could not be read)."""
    def claim(row) -> dict:
        processes = str(row.get("processes", "")).strip()
        out = {"claim_id": row["claim_id"], "verdict": row["verdict"],
               "measured_value": row["measured_value"] or None,
               "interval": interval(row["measured_value"]),
               "processes": int(float(processes)) if processes else None,
               "method": row.get("method") or None,
               "notebook": Path(row["notebook"]).stem}
        if "measured_quantity" in row:
            out["measured_quantity"] = row["measured_quantity"] or None
        return out

    rows = [] if table is None else table.fillna("").to_dict("records")
    return {
        "mode": "quick" if quick else "full",
        "status": status,
        "results": str(results_dir),
        "report": str(report),
        "notebooks": [{"name": o.name, "ok": o.ok, "seconds": round(o.seconds, 1),
                       "earlier": o.earlier,
                       "error": (o.error.strip().splitlines() or [""])[-1] if not o.ok else None}
                      for o in outcomes],
        "verdict_counts": (None if table is None else
                           {v: int(n) for v, n in ledger.counts(table).items()}),
        "claims": [claim(r) for r in rows],
    }


def _read_file(path: str | None) -> dict:
    """The parameters file's NAME: VALUE mapping ({} without one); ValueError for a file
    that cannot be read."""
    return {} if path is None else params.read_file(path)


def _checked(sources: list[Path], given: dict[str, str], from_file: dict,
             file: str | None) -> dict:
    """The parameters file's values and the -p values (which beat them), each checked
    against every notebook of this run that has it; ValueError for a bad one."""
    others = {s.stem: notebook_parameters(s) for s in sources if s.stem not in params.tables()}
    return params.parse([s.stem for s in sources], list(given.items()), others,
                        file_values=from_file, file=file)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _signals() -> dict:
    """SIGTERM (`kill`, a CI's cancel) handled as Ctrl-C is; returns the handlers to restore
    (none off the main thread, where Python cannot set them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGTERM, _interrupt)
    return handlers


def _put_back(notebook: str) -> str:
    """Put back a notebook's last finished results; one line saying what was done."""
    back, moved = keep.put_back(notebook)
    if not back and not moved:
        return "its results are as they were"
    where = results.data_dir() / "checkpoints" / keep.UNFINISHED / notebook
    return ((f"its results are its last finished run's ({_files(back)} put back); " if back
             else "it has no finished results yet; ")
            + (f"the {_files(moved)} this run wrote or changed are in {where}" if moved
               else "this run had changed none of them"))


def _files(n: int) -> str:
    return f"{n} file{'' if n == 1 else 's'}"


def _save_resume(path: Path, finished: list[str], given: dict[str, str], from_file: dict,
                 quick: bool, only=None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"finished": finished, "parameters": given,
                                   "file_parameters": from_file, "quick": quick,
                                   "only": list(only) if only else None},
                                  indent=1, default=str))


def _clear_checkpoints(notebooks: list[str], keep_in: str | None = None) -> list[Path]:
    """Remove the sweep checkpoints of these notebooks (data/checkpoints/<nb>[_part].csv),
    or move them into the subfolder `keep_in`; returns the files taken."""
    folder = results.data_dir() / "checkpoints"
    if not folder.is_dir():
        return []
    taken = [f for f in folder.glob("*.csv")
             if any(f.stem == nb or f.stem.startswith(f"{nb}_") for nb in notebooks)]
    for f in taken:
        if keep_in:
            (folder / keep_in).mkdir(exist_ok=True)
            f.replace(folder / keep_in / f.name)
        else:
            f.unlink(missing_ok=True)
    return taken

