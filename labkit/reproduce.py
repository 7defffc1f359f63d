"""`make reproduce`: execute every notebook with papermill, then build one HTML report.

    python -m labkit.reproduce [--quick] [--only 01_stack_size ...]

Notebooks live in notebooks/ as jupytext percent-format .py files (reviewable diffs,
no outputs in git). Each is converted, executed with the `quick` parameter, and saved
to reports/[quick/]executed/. A notebook that fails is reported at the end with its
error; the others still run, and results already written stay (labkit.results writes
atomically). Quick runs write their data and figures under reports/quick/, so they
never replace a full run's data/ and figures/.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from labkit.results import REPO, atomic_path

NOTEBOOKS = REPO / "notebooks"
KERNEL_NAME = "labkit"
LEDGER = "00_claims_ledger"  # runs last (it reads everyone's verdicts), shown first


@dataclass
class Outcome:
    name: str
    ok: bool
    seconds: float
    executed: Path | None
    error: str = ""
    outputs: list[str] = field(default_factory=list)
    earlier: bool = False  # not run now: the executed copy of an earlier run


def notebook_sources(only: list[str] | None = None) -> list[Path]:
    """The notebooks in the order they run: the experiments (NN_name.py), then the ledger."""
    found = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"), key=lambda p: (p.stem == LEDGER, p.stem))
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise ValueError(f"only must name notebooks in {NOTEBOOKS}: unknown {sorted(unknown)}; "
                             f"known: {[p.stem for p in found]}")
        found = [p for p in found if p.stem in only]
    return found


def reports_dir(quick: bool) -> Path:
    return REPO / "reports" / ("quick" if quick else "")


def _ipc_kernel_manager():
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

    return IPCKernelManager


def run_notebook(source: Path, *, quick: bool, out_dir: Path, results_dir: Path | None = None,
                 timeout: int = 3600) -> Outcome:
    """Convert one jupytext notebook and execute it with papermill; never raises for a
    failing notebook: the Outcome says what went wrong."""
    import jupytext
    import nbformat
    import papermill

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
            try:
                papermill.execute_notebook(
                    str(src_ipynb), str(tmp_ipynb), parameters={"quick": quick},
                    kernel_name=KERNEL_NAME, cwd=str(source.parent), progress_bar=False,
                    execution_timeout=timeout, log_output=False,
                    kernel_manager_class=_ipc_kernel_manager(),
                )
            except BaseException:
                # Keep the partly executed copy beside the others, for the error's context.
                if tmp_ipynb.exists():
                    os.replace(tmp_ipynb, out_dir / f"{name}.failed.ipynb")
                raise
            os.replace(tmp_ipynb, tmp)
        (out_dir / f"{name}.failed.ipynb").unlink(missing_ok=True)
        return Outcome(name, True, time.monotonic() - start, executed)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a failing notebook is reported, the others go on
        msg = str(exc).strip() or traceback.format_exc()
        return Outcome(name, False, time.monotonic() - start, None, error=msg[-3000:])
    finally:
        src_ipynb.unlink(missing_ok=True)
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
        raise SystemExit(f"another `make reproduce` is running on {out} (lock "
                         f"{out / '.reproduce.lock'}): wait for it; two runs at once would "
                         "disturb each other's timings") from None
    return f


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.reproduce",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI (minutes)")
    parser.add_argument("--only", nargs="*", help="notebook names (without .py) to run")
    args = parser.parse_args(argv)
    try:
        sources = notebook_sources(args.only)
    except ValueError as exc:
        parser.error(str(exc))  # a usage error: the message and exit status 2, no traceback

    out = reports_dir(args.quick)
    results_dir = out if args.quick else REPO
    lock = _exclusive(out)  # two runs at once would time each other's load  # noqa: F841
    mode = "quick" if args.quick else "full"
    print(f"labkit reproduce ({mode}): {len(sources)} notebooks; results in {results_dir}")
    outcomes = []
    os.environ["LABKIT_RESULTS_DIR"] = str(results_dir)  # for the manifest, here and in kernels
    from labkit import ledger

    # A partial run (--only) keeps what the last run recorded for the other notebooks.
    manifest = ledger.read_manifest() if args.only else {}
    for src in sources:
        print(f"  running {src.name} ...", flush=True)
        o = run_notebook(src, quick=args.quick, out_dir=out / "executed", results_dir=results_dir)
        print(f"  {'ok    ' if o.ok else 'FAILED'} {o.name} ({o.seconds:.0f} s)", flush=True)
        outcomes.append(o)
        # The ledger reads this: a notebook that failed now has no fresh verdicts, and an
        # older verdict file must not pass for this run's.
        manifest[o.name] = {"ok": o.ok, "seconds": round(o.seconds, 1), "error": o.error[-500:],
                            "quick": args.quick, "finished": time.time()}
        ledger.write_manifest(manifest)

    from labkit import report

    # The report always covers every notebook: those not run now come from their last
    # executed copy, marked as such.
    ran = {o.name for o in outcomes}
    for src in notebook_sources():
        earlier = out / "executed" / f"{src.stem}.ipynb"
        if src.stem not in ran and earlier.exists() and manifest.get(src.stem, {}).get("ok", True):
            outcomes.append(Outcome(src.stem, True, 0.0, earlier, error="", earlier=True))
    html = report.build(outcomes, out_dir=out, quick=args.quick)
    print(f"report: {html}")
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        print(f"\nFAILED {o.name}:\n{o.error}\n", file=sys.stderr)
    fresh = [o for o in outcomes if not o.earlier]
    print(f"{len(fresh) - len(failed)} notebooks ok, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
