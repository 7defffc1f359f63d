"""Worker processes: every kernel runs in a child process, so that a crash (a stack
overflow into the guard page, an illegal instruction) comes back to the caller as
a clear Python exception instead of killing it, and a stuck run is killed on time.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from labkit.errors import KernelCrashError, MeasurementTimeout, WorkerError  # noqa: F401

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def _signal_name(returncode: int) -> str:
    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class Worker:
    """One child process running labkit.core._worker_main, started on first use and
    restarted after a crash. Not thread-safe by itself: calls are serialised by a lock."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p
        )
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "labkit.core._worker_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            start_new_session=True,  # a Ctrl-C in Jupyter reaches us, not the worker
        )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def close(self) -> None:
        """Stop the worker process, if any."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.stdin.close()
                try:
                    proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        finally:
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            if self._stderr:
                self._stderr.close()
                self._stderr = None

    def _kill(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self.close()

    def _stderr_tail(self) -> str:
        if not self._stderr:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip()
        return text[-2000:]

    def call(self, job: dict, *, timeout: float | None, describe: str):
        """Send one job and return its result. describe names the kernel and parameters
        for the error messages."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self.close()
                self._start()
            proc = self._proc
            try:
                proc.stdin.write((json.dumps(job) + "\n").encode())
                proc.stdin.flush()
                line = self._read_line(proc, timeout)
            except BrokenPipeError:
                line = b""
            except BaseException:
                # Interrupted (Ctrl-C) or timed out: the worker may be mid-run; kill it
                # so the next call starts clean and nothing is left running.
                self._kill()
                raise
            if not line.endswith(b"\n"):  # EOF, possibly mid-line: the worker died
                proc.wait()
                code = proc.returncode
                tail = self._stderr_tail()
                self.close()
                hint = ""
                if code == -signal.SIGSEGV:
                    hint = (" A SIGSEGV in a switch kernel usually means the context "
                            "overflowed its stack into the guard page: give it a larger "
                            "stack_size.")
                raise KernelCrashError(
                    f"{describe} crashed its worker process ({_signal_name(code)}).{hint}"
                    + (f"\nworker stderr:\n{tail}" if tail else "")
                )
            answer = json.loads(line)
            if not answer["ok"]:
                raise WorkerError(f"{describe} failed in the worker: {answer['error']}")
            return answer["result"]

    def _read_line(self, proc: subprocess.Popen, timeout: float | None) -> bytes:
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = proc.stdout.fileno()
        buf = bytearray()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise MeasurementTimeout(
                        f"the worker did not answer within {timeout:.0f} s and was killed"
                    )
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return bytes(buf)  # EOF: the worker died
                buf += chunk
                if buf.endswith(b"\n"):
                    return bytes(buf)


_shared: Worker | None = None
_shared_lock = threading.Lock()


def shared_worker() -> Worker:
    """The worker that the public API uses by default (one per Python process)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Worker()
            atexit.register(_shared.close)
        return _shared


@contextlib.contextmanager
def shared_as(w: Worker):
    """Within the block, the public API's jobs go to `w` instead of the shared worker (a
    fresh process for labkit.experiments.verdict_design); the shared worker is put back afterwards."""
    global _shared
    with _shared_lock:
        before, _shared = _shared, w
    try:
        yield w
    finally:
        with _shared_lock:
            _shared = before


def job(module: str, function: str, *, pin: int | None = None, **kwargs) -> dict:
    """The one kind of job a worker runs: labkit.<module>.worker_<name>(**kwargs), pinned to
    CPU `pin` for that job only (None: the worker's own CPUs)."""
    return {"module": module, "function": function, "kwargs": kwargs, "cpu": pin}


def call(module: str, function: str, *, describe: str, timeout: float | None = None,
         pin: int | None = None, worker: Worker | None = None, **kwargs):
    """Run labkit.<module>.worker_<name>(**kwargs) in a worker process (the shared one
    unless `worker` is given) and return its JSON-serialisable result. A crash becomes
    KernelCrashError naming `describe`; a time-out kills the worker."""
    try:
        return (worker or shared_worker()).call(job(module, function, pin=pin, **kwargs),
                                                timeout=timeout, describe=describe)
    except MeasurementTimeout as exc:
        raise MeasurementTimeout(f"{describe}: {exc}") from None


# ---- run in the worker process, for the tests of the worker itself ----

def worker_ping() -> int:
    """The worker's process id."""
    return os.getpid()


def worker_sleep(seconds: float) -> None:
    """Sleep: a job that outlives a time-out."""
    time.sleep(seconds)
