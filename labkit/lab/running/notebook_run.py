"""One notebook, executed: a jupytext percent-format .py file converted and run by
papermill on the `labkit` Jupyter kernel, with every parameter's value for the run
(labkit.lab.running.params) injected, and saved as an executed .ipynb. A failing notebook is an
Outcome that says why, never an exception: whoever runs several goes on with the others.
"""
from __future__ import annotations

import ast
import atexit
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat
import papermill
from ipykernel.kernelspec import install
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import AsyncKernelManager
from traitlets import CaselessStrEnum, default

from labkit.core.results import atomic_path
from labkit.lab.running import params

KERNEL_NAME = "labkit"


@dataclass
class Outcome:
    """What running one notebook gave (or, with `earlier`, what its last run gave)."""
    name: str
    ok: bool
    seconds: float
    executed: Path | None
    error: str = ""
    outputs: list[str] = field(default_factory=list)
    earlier: bool = False  # not run now: the executed copy of an earlier run
    parameters: dict = field(default_factory=dict)  # every value it ran with
    given: list[str] = field(default_factory=list)  # those set by -p NAME VALUE


def notebook_parameters(source: Path) -> set[str]:
    """The names a notebook's `parameters` cell assigns: what -p may set in a notebook
    that has no table in labkit.lab.running.params (a workshop exercise, a test's own)."""
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
    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
        return KERNEL_NAME
    except NoSuchKernel:
        pass

    try:
        install(kernel_name=KERNEL_NAME, display_name="labkit (Python 3)", prefix=sys.prefix)
    except OSError:  # a system Python we may not write to: the user's own kernels
        install(kernel_name=KERNEL_NAME, display_name="labkit (Python 3)", user=True)
    return KERNEL_NAME


def run_values(name: str, *, quick: bool, parameters: dict | None = None) -> dict:
    """What papermill passes to notebook `name`: `quick` and, for a notebook with a table
    in labkit.lab.running.params, every parameter's value (those of `parameters` it has beat the
    mode's), so that its injected-parameters cell records all it runs with."""
    parameters = dict(parameters or {})
    if name not in params.tables():
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
            quiet = _DeclaredNames(set(values) if name in params.tables() else set())
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


def earlier_outcome(name: str, executed: Path, manifest: dict) -> Outcome:
    """A notebook not run now, from its executed copy and what the manifest recorded."""
    entry = manifest.get(name, {})
    return Outcome(name, True, 0.0, executed, earlier=True,
                   parameters=entry.get("parameters", {}), given=entry.get("given", []))
