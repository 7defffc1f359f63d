"""`labkit reproduce`: execute every notebook with papermill, then build one HTML report.

    labkit reproduce [--quick] [--only 01_stack_size ...] [-p NAME VALUE] [--resume]
    python -m labkit.lab.reproduce ...   (the same)

Notebooks are jupytext percent-format .py files (reviewable diffs, no outputs in git).
Each is converted, executed with every parameter's value for this run (labkit.lab.params:
full or quick, any -p NAME VALUE beating both, checked before anything runs), and saved
to reports/[quick/]executed/, whose injected-parameters cell records those values. A
notebook that fails is reported at the end with its error; the others still run, and
results already written stay (labkit.core.results writes atomically). Quick runs write
their data and figures under reports/quick/, so they never replace a full run's data/ and
figures/.

The terminal shows one status line (notebook k of n, sweep point, elapsed, ETA) on
stderr; none of it goes into the notebooks or the report. Ctrl-C stops the run, keeps
every finished notebook and sweep point, and says how to resume (--resume).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from labkit.core import procfs, results
from labkit.core.results import atomic_path
from labkit.lab import params
from labkit.lab.notebook_index import notebook_sources
from labkit.lab.sweep import PROGRESS_ENV, RESUME_ENV

KERNEL_NAME = "labkit"
RESUME_FILE = "resume.json"   # in data/checkpoints/: what an interrupted run finished


@dataclass
class Outcome:
    name: str
    ok: bool
    seconds: float
    executed: Path | None
    error: str = ""
    outputs: list[str] = field(default_factory=list)
    earlier: bool = False  # not run now: the executed copy of an earlier run
    parameters: dict = field(default_factory=dict)  # every value it ran with
    given: list[str] = field(default_factory=list)  # those set by -p NAME VALUE


def reports_dir(quick: bool) -> Path:
    """Where the executed notebooks and the report go: <results home>/reports[/quick]."""
    return results.home() / "reports" / ("quick" if quick else "")


def notebook_parameters(source: Path) -> set[str]:
    """The names a notebook's `parameters` cell assigns: what -p may set in a notebook
    that has no table in labkit.lab.params (a workshop exercise, a test's own)."""
    import ast

    import jupytext

    names: set[str] = set()
    for cell in jupytext.read(source).cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return names


def _ipc_kernel_manager(stderr_path: Path | None = None):
    """A kernel manager whose kernels listen on Unix sockets in a fresh private directory
    rather than on localhost TCP ports: no other user of a shared machine can reach them,
    ipykernel has no unencrypted-TCP warning to print per notebook, and two runs at once
    (make test beside make reproduce) can never pick the same socket."""
    import atexit
    import shutil
    import tempfile

    from jupyter_client.manager import AsyncKernelManager
    from traitlets import CaselessStrEnum, default

    class IPCKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        @default("ip")
        def _private_socket_prefix(self):
            # Without a connection file yet, jupyter_client's default is the relative name
            # "kernel-ipc": sockets in the notebook's folder, shared by concurrent runs.
            # A 0700 directory under the temp dir keeps them private and the path well
            # under the 107-byte limit of a socket's name.
            folder = tempfile.mkdtemp(prefix="labkit-kernel-")
            atexit.register(shutil.rmtree, folder, True)
            return os.path.join(folder, "kernel")

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            # The kernel's own log (and its complaints when a Ctrl-C stops it) goes to a
            # file beside the executed notebook, not into the terminal's status line.
            if stderr_path is None:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            with open(stderr_path, "ab") as log:  # the kernel keeps its own copy
                kw["stderr"] = log
                return await super()._async_launch_kernel(kernel_cmd, **kw)

        _launch_kernel = _async_launch_kernel

    return IPCKernelManager


def ensure_kernel() -> str:
    """The Jupyter kernel the notebooks run on: `labkit`, registered for this Python (in
    its environment) the first time, as `make setup` does, so that a freshly installed
    labkit runs its notebooks without a set-up step."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
        return KERNEL_NAME
    except NoSuchKernel:
        pass
    from ipykernel.kernelspec import install

    try:
        install(kernel_name=KERNEL_NAME, display_name="labkit (Python 3)", prefix=sys.prefix)
    except OSError:  # a system Python we may not write to: the user's own kernels
        install(kernel_name=KERNEL_NAME, display_name="labkit (Python 3)", user=True)
    return KERNEL_NAME


def run_values(name: str, *, quick: bool, parameters: dict | None = None) -> dict:
    """What papermill passes to notebook `name`: `quick` and, for a notebook with a table
    in labkit.lab.params, every parameter's value (those of `parameters` it has beat the
    mode's), so that its injected-parameters cell records all it runs with."""
    parameters = dict(parameters or {})
    if name not in params.TABLES:
        return {"quick": quick, **parameters}
    mine = {k: v for k, v in parameters.items() if k in {p.name for p in params.table(name)}}
    return {"quick": quick, **params.resolve(name, quick=quick, **mine)}


class _DeclaredNames(logging.Filter):
    """Drops papermill's "Passed unknown parameter" for names of the notebook's table, and
    its "Unable to parse line" for the parameters cell's unpacking of params.resolve(): it
    guesses parameters from `name = value` lines and cannot read that one line; those
    names were checked against the table already."""

    # Where papermill logs each of the two (its package logger and its translators').
    LOGGERS = ("papermill", "papermill.translators")

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("Unable to parse line") and "params.resolve(" in text:
            return not self.names
        head, _, name = text.partition("Passed unknown parameter: ")
        return head != "" or name not in self.names


def run_notebook(source: Path, *, quick: bool, out_dir: Path, results_dir: Path | None = None,
                 timeout: int = 3600, parameters: dict | None = None) -> Outcome:
    """Convert one jupytext notebook and execute it with papermill (`run_values`: quick,
    and the parameters it has of `parameters`, checked); never raises for a failing
    notebook: the Outcome says what went wrong."""
    values = run_values(source.stem, quick=quick, parameters=parameters)
    given = sorted(set(parameters or {}) & set(values))
    ran = {k: v for k, v in values.items() if k != "quick"}
    import jupytext
    import nbformat
    import papermill

    # Absolute: the kernel runs in the notebooks' folder, and opens its log from there.
    out_dir = Path(out_dir).resolve()
    results_dir = None if results_dir is None else Path(results_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    name = source.stem
    start = time.monotonic()
    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "labkit (Python 3)",
                                 "language": "python"}
    src_ipynb = out_dir / f"{name}.source.ipynb"
    nbformat.write(nb, src_ipynb)
    executed = out_dir / f"{name}.ipynb"
    env_before = os.environ.get("LABKIT_RESULTS_DIR")
    if results_dir is not None:
        os.environ["LABKIT_RESULTS_DIR"] = str(results_dir)
    try:
        with atomic_path(executed) as tmp:
            tmp_ipynb = tmp.with_suffix(".ipynb")
            quiet = _DeclaredNames(set(values) if name in params.TABLES else set())
            for logger in quiet.LOGGERS:
                logging.getLogger(logger).addFilter(quiet)
            try:
                papermill.execute_notebook(
                    str(src_ipynb), str(tmp_ipynb), parameters=values,
                    kernel_name=KERNEL_NAME, cwd=str(source.parent), progress_bar=False,
                    execution_timeout=timeout, log_output=False,
                    kernel_manager_class=_ipc_kernel_manager(out_dir / f"{name}.kernel.log"),
                )
            except BaseException:
                # Keep the partly executed copy beside the others, for the error's context.
                if tmp_ipynb.exists():
                    os.replace(tmp_ipynb, out_dir / f"{name}.failed.ipynb")
                raise
            finally:
                for logger in quiet.LOGGERS:
                    logging.getLogger(logger).removeFilter(quiet)
            os.replace(tmp_ipynb, tmp)
        (out_dir / f"{name}.failed.ipynb").unlink(missing_ok=True)
        return Outcome(name, True, time.monotonic() - start, executed, parameters=ran,
                       given=given)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a failing notebook is reported, the others go on
        msg = str(exc).strip() or traceback.format_exc()
        return Outcome(name, False, time.monotonic() - start, None, error=msg[-3000:],
                       parameters=ran, given=given)
    finally:
        src_ipynb.unlink(missing_ok=True)
        log = out_dir / f"{name}.kernel.log"
        if log.exists() and log.stat().st_size == 0:
            log.unlink()
        if results_dir is not None:
            if env_before is None:
                os.environ.pop("LABKIT_RESULTS_DIR", None)
            else:
                os.environ["LABKIT_RESULTS_DIR"] = env_before


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


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


class StatusLine:
    """One line on stderr: notebook k of n, the sweep point it is at, elapsed time and the
    sweep's ETA, read from the progress file the notebook's sweeps write. On a terminal it
    is redrawn in place; elsewhere (CI logs) a line is printed when the point changes."""

    def __init__(self, progress_file: Path, total: int, stream=None, enabled: bool = True):
        self.path, self.total = progress_file, total
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.name, self.index, self.started = "", 0, time.monotonic()
        self.run_started = time.monotonic()
        self._stop = threading.Event()
        self._last = ""
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        if self.enabled:
            self._thread.start()
        return self

    def notebook(self, index: int, name: str):
        self.index, self.name, self.started = index, name, time.monotonic()
        self.path.unlink(missing_ok=True)
        self.draw()

    def text(self) -> str:
        line = f"[{self.index}/{self.total}] {self.name}"
        try:
            p = json.loads(self.path.read_text())
            done, total = int(p["done"]), int(p["total"])
            line += f"  {p['desc']}: point {min(done + 1, total)}/{total}"
            if done > 0 and total > done:
                eta = (time.time() - float(p["started"])) / done * (total - done)
                line += f"  sweep ETA {_clock(eta)}"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return f"{line}  elapsed {_clock(time.monotonic() - self.started)}" \
               f" (run {_clock(time.monotonic() - self.run_started)})"

    def draw(self):
        if not self.enabled:
            return
        line = self.text()
        if self.tty:
            self.stream.write("\r\033[K" + line[:200])
            self.stream.flush()
        else:
            core = line.split("  sweep ETA")[0].split("  elapsed")[0]
            if core != self._last:  # one line per new point in a log, not a flood
                self.stream.write(line + "\n")
                self.stream.flush()
                self._last = core

    def clear(self):
        if self.enabled and self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _loop(self):
        while not self._stop.wait(1.0):
            self.draw()

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self.clear()


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (children first found first), read from /proc."""
    parents: dict[int, list[int]] = {}
    for p in procfs.processes():
        parents.setdefault(p["ppid"], []).append(p["pid"])
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_children(grace: float = 3.0) -> int:
    """End every process this run started (the Jupyter kernel, labkit's workers, servers):
    SIGTERM, then SIGKILL for those still there. Returns how many there were."""
    procs = _descendants(os.getpid())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in procs:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(procfs.listed(p) for p in procs):
            try:
                os.waitpid(-1, os.WNOHANG)  # reap our own children so they leave /proc
            except ChildProcessError:
                pass
            time.sleep(0.05)
    return len(procs)


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


def earlier_outcome(name: str, executed: Path, manifest: dict) -> Outcome:
    """A notebook not run now, from its executed copy and what the manifest recorded."""
    entry = manifest.get(name, {})
    return Outcome(name, True, 0.0, executed, earlier=True,
                   parameters=entry.get("parameters", {}), given=entry.get("given", []))


def _save_resume(path: Path, finished: list[str], given: dict[str, str], quick: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"finished": finished, "parameters": given,
                                   "quick": quick}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
