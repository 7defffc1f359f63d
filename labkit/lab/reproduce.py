"""`labkit reproduce`: execute every notebook (or some), then build one HTML report.

    labkit reproduce [--quick] [--only 01_stack_size ...] [-p NAME VALUE] [--resume]
    python -m labkit.lab.reproduce ...   (the same)

Every parameter's value for this run (labkit.lab.params: full or quick, any -p NAME VALUE
beating both) is checked before anything runs. Each notebook is then executed by
labkit.lab.notebook_run into reports/[quick/]executed/. A notebook that fails is reported
at the end with its error; the others still run, and results already written stay
(labkit.core.results writes atomically). Quick runs write their data and figures under
reports/quick/, so they never replace a full run's data/ and figures/.

The terminal shows one status line on stderr (labkit.lab.status_line). Ctrl-C ends every
process the run started (labkit.lab.children), keeps every finished notebook and sweep
point, and says how to resume (--resume).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from labkit.core import results
from labkit.core.results import atomic_path
from labkit.lab import params
from labkit.lab.children import kill_children
from labkit.lab.notebook_index import notebook_sources
from labkit.lab.notebook_run import (Outcome, earlier_outcome, ensure_kernel, notebook_parameters,
                                     run_notebook)
from labkit.lab.status_line import StatusLine
from labkit.lab.sweep import PROGRESS_ENV, RESUME_ENV

RESUME_FILE = "resume.json"   # in data/checkpoints/: what an interrupted run finished


def reports_dir(quick: bool) -> Path:
    """Where the executed notebooks and the report go: <results home>/reports[/quick]."""
    return results.home() / "reports" / ("quick" if quick else "")


def _exclusive(out: Path):
    """Hold a lock for this run's lifetime; a second `make reproduce` on the same results
    stops at once with a clear message instead of slowing both down."""
    import fcntl

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


def build_parser(prog: str = "labkit reproduce") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Run every notebook (or some), write data/, figures/ and the "
        "HTML report. Progress shows on stderr; Ctrl-C stops and says how to resume.")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """reproduce's options (shared by `labkit reproduce` and `python -m labkit.lab.reproduce`)."""
    parser.add_argument("--quick", action="store_true",
                        help="small sweeps and few repeats (minutes, what CI runs); results "
                             "go to reports/quick/ and never replace a full run's")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK",
                        help="run only these notebooks (names without .py); the report keeps "
                             "the others' last results, marked as earlier")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"),
                        help="set a notebook parameter (e.g. -p repeats 5), checked against "
                             "its declared type and range (labkit.lab.params) before anything "
                             "runs; beats --quick's value; recorded in the executed notebook "
                             "and the report")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run: skip the notebooks it finished and "
                             "the sweep points already in data/checkpoints/")
    parser.add_argument("--no-progress", action="store_true",
                        help="no status line on stderr")
    parser.add_argument("--timeout", type=int, default=3600, metavar="SECONDS",
                        help="longest a notebook cell may run (default 3600)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser("python -m labkit.lab.reproduce").parse_args(argv)
    return run(args, build_parser())


def run(args, parser: argparse.ArgumentParser) -> int:
    """Run the notebooks the parsed arguments ask for; returns the exit status."""
    try:
        sources = notebook_sources(args.only)
    except ValueError as exc:
        parser.error(str(exc))  # a usage error: the message and exit status 2, no traceback
    given = dict(args.parameter)  # -p NAME VALUE as typed: a resumed run reads them again
    parameters = _checked(parser, sources, given)
    if args.timeout <= 0:
        parser.error(f"--timeout must be a positive number of seconds, got {args.timeout}")

    out = reports_dir(args.quick)
    results_dir = out if args.quick else results.home()
    lock = _exclusive(out)  # two runs at once would time each other's load  # noqa: F841
    ensure_kernel()
    os.environ["LABKIT_RESULTS_DIR"] = str(results_dir)  # for the manifest, here and in kernels
    from labkit.lab import ledger

    resume_path = _resume_path()
    finished_before: list[str] = []
    if args.resume:
        if not resume_path.exists():
            parser.error(f"--resume: nothing to resume in {results_dir} (no interrupted "
                         f"{'quick' if args.quick else 'full'} run)")
        state = json.loads(resume_path.read_text())
        finished_before = state.get("finished", [])
        given = {**state.get("parameters", {}), **given}
        parameters = _checked(parser, sources, given)
        sources = [s for s in sources if s.stem not in finished_before]
        os.environ[RESUME_ENV] = "1"
    else:
        os.environ.pop(RESUME_ENV, None)
    mode = "quick" if args.quick else "full"
    print(f"labkit reproduce ({mode}{', resumed' if args.resume else ''}): {len(sources)} "
          f"notebooks; results in {results_dir}", flush=True)
    from labkit.core import envcheck

    envcheck.announce(sys.stderr)  # once a run, before the status line; data/environment.json

    # A partial run (--only, --resume) keeps what the last run recorded for the others.
    manifest = ledger.read_manifest() if (args.only or args.resume) else {}
    progress_dir = Path(tempfile.mkdtemp(prefix="labkit-progress-"))
    progress = progress_dir / "progress.json"
    os.environ[PROGRESS_ENV] = str(progress)
    status = StatusLine(progress, len(sources), enabled=not args.no_progress).start()
    outcomes: list[Outcome] = []
    finished = list(finished_before)
    current = ""
    _save_resume(resume_path, finished, given, args.quick)  # resumable from the start
    try:
        for k, src in enumerate(sources, 1):
            current = src.stem
            status.notebook(k, src.stem)
            o = run_notebook(src, quick=args.quick, out_dir=out / "executed",
                             results_dir=results_dir, timeout=args.timeout,
                             parameters=parameters)
            status.clear()
            print(f"  {'ok    ' if o.ok else 'FAILED'} {o.name} ({o.seconds:.0f} s)", flush=True)
            outcomes.append(o)
            finished.append(o.name)
            # The ledger reads this: a notebook that failed now has no fresh verdicts, and
            # an older verdict file must not pass for this run's.
            manifest[o.name] = {"ok": o.ok, "seconds": round(o.seconds, 1),
                                "error": o.error[-500:], "quick": args.quick,
                                "finished": time.time(), "parameters": o.parameters,
                                "given": o.given}
            ledger.write_manifest(manifest)
            _save_resume(resume_path, finished, given, args.quick)
    except KeyboardInterrupt:
        status.stop()
        # The interrupted notebook's kernel dies with it; its pending asyncio tasks would
        # log "Task exception was never retrieved ... DeadKernelError" at exit, a traceback
        # after a clean Ctrl-C. What the run kept is said below, not by the libraries' logs.
        logging.disable(logging.CRITICAL)
        n = kill_children()
        again = "labkit reproduce --resume" + (" --quick" if args.quick else "")
        print(f"\ninterrupted during {current}: stopped it and {n} process(es) it started.\n"
              f"finished: {', '.join(finished) or 'no notebook'}; kept their results and "
              f"every measured sweep point (in {results.data_dir() / 'checkpoints'}).\n"
              f"to continue: {again}   (or: make reproduce RESUME=1"
              f"{' QUICK=1' if args.quick else ''})", file=sys.stderr)
        return 130
    finally:
        status.stop()
        os.environ.pop(PROGRESS_ENV, None)
        import shutil

        shutil.rmtree(progress_dir, ignore_errors=True)

    resume_path.unlink(missing_ok=True)  # a whole run: nothing left to resume
    from labkit.lab import report

    # The report always covers every notebook: those not run now come from their last
    # executed copy, marked as such.
    ran = {o.name for o in outcomes}
    for src in notebook_sources():
        earlier = out / "executed" / f"{src.stem}.ipynb"
        if src.stem not in ran and earlier.exists() and manifest.get(src.stem, {}).get("ok", True):
            outcomes.append(earlier_outcome(src.stem, earlier, manifest))
    html = report.build(outcomes, out_dir=out, quick=args.quick)
    print(f"report: {html}")
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        print(f"\nFAILED {o.name}:\n{o.error}\n", file=sys.stderr)
    fresh = [o for o in outcomes if not o.earlier]
    print(f"{len(fresh) - len(failed)} notebooks ok, {len(failed)} failed")
    try:
        counts = ledger.counts(ledger.ledger())
        print("verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    except Exception as exc:  # the counts are a summary; the report above has it all
        print(f"verdicts: not available ({exc})")
    return 1 if failed else 0


def _checked(parser, sources: list[Path], given: dict[str, str]) -> dict:
    """The -p values, each read by its declared type and checked against every notebook
    of this run that has it; a bad one is a usage error (status 2) before anything runs."""
    others = {s.stem: notebook_parameters(s) for s in sources if s.stem not in params.TABLES}
    try:
        return params.parse([s.stem for s in sources], list(given.items()), others)
    except ValueError as exc:
        parser.error(str(exc))


def _save_resume(path: Path, finished: list[str], given: dict[str, str], quick: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"finished": finished, "parameters": given,
                                   "quick": quick}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
