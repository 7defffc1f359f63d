"""Entry point of a labkit worker process: reads one JSON job a line on stdin, runs it,
writes one JSON answer a line on stdout. A job names a labkit.*.worker_* function and
its arguments (labkit.worker.job); the module that owns a measurement owns its function.

A kernel that crashes (a stack overflow into the guard page, say) kills only this
process; labkit.worker turns that into a Python exception in the caller.
Only the standard library and labkit._core are imported here, to start fast.
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
    if "op" in job:
        return _run_named(job)
    # A labkit module's worker-side function: measurement modules keep their C calls
    # (ctypes, Cython) in functions named worker_*, run here and never in the caller.
    module, function = job["module"], job["function"]
    if not module.startswith("labkit.") or not function.startswith("worker_"):
        raise ValueError(f"a worker may only run labkit.*.worker_* functions, not "
                         f"{module}.{function}")
    return getattr(importlib.import_module(module), function)(**job.get("kwargs", {}))


def _run_named(job: dict):
    """The ping-pong and ring jobs of labkit.timing, by name (the older protocol)."""
    from labkit import _core

    op = job["op"]
    build = job.get("build")
    if op == "py_pingpong":
        from labkit import pypeers

        return pypeers.pingpong(job["peer"], job["rounds"], job["warmup"], job["repeats"])
    if op == "peer_pingpong":
        from labkit import native

        return native.peer_pingpong(build, job["peer"], job["stack_size"], job["rounds"],
                                    job["warmup"], job["repeats"], job.get("fpctl_mode", 0))
    if op == "pingpong" and build:
        from labkit import native

        return native.pingpong(build, job["kernel"], job["stack_size"], job["prefault"],
                               job["rounds"], job["warmup"], job["repeats"],
                               job.get("fpctl_mode", 0))
    if op == "pingpong":
        return _core.pingpong(job["kernel"], job["stack_size"], job["prefault"],
                              job["rounds"], job["warmup"], job["repeats"],
                              job.get("fpctl_mode", 0))
    if op == "ring":
        return _core.ring(job["kernel"], job["n"], job["asymmetric"], job["stack_size"],
                          job["colour_step"], job["prefault"], job["laps"], job["warmup"],
                          job["repeats"])
    if op == "call":
        return _run({k: v for k, v in job.items() if k != "op"})
    raise ValueError(f"unknown worker op {op!r}")


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
