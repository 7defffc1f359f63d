"""Entry point of a labkit worker process: reads one JSON job a line on stdin, runs it,
writes one JSON answer a line on stdout. A job names a labkit.*.worker_* function and
its arguments (labkit.core.worker.job); the module that owns a measurement owns its function.

A kernel that crashes (a stack overflow into the guard page, say) kills only this
process; labkit.core.worker turns that into a Python exception in the caller.
Starting it imports the labkit package first (Python imports a module's parents), whose
public API loads only on first use, so a fresh worker starts on the standard library
alone. Each job then imports the module that owns its function, and that module's core
imports (the extension labkit.core._core, ctypes; pandas and numpy only inside the
functions that use them).
"""
import json
import os
import sys


# The CPUs this worker may use when a job asks for no pinning: a pin must not outlive
# the job that asked for it.
_AFFINITY = os.sched_getaffinity(0)


def _run(job: dict):
    import importlib

    cpu = job.get("cpu")
    os.sched_setaffinity(0, {cpu} if cpu is not None else _AFFINITY)
    # A labkit module's worker-side function: measurement modules keep their C calls
    # (ctypes, Cython) in functions named worker_*, run here and never in the caller.
    module, function = job["module"], job["function"]
    if not module.startswith("labkit.") or not function.startswith("worker_"):
        raise ValueError(f"a worker may only run labkit.*.worker_* functions, not "
                         f"{module}.{function}")
    return getattr(importlib.import_module(module), function)(**job.get("kwargs", {}))


def main() -> None:
    out = sys.stdout
    for line in sys.stdin:
        job = json.loads(line)
        try:
            text = json.dumps({"ok": True, "result": _run(job)})
        except Exception as exc:  # reported to the caller, who re-raises it
            text = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        out.write(text + "\n")
        out.flush()


if __name__ == "__main__":
    main()
