"""The envelope of every machine-readable output of the command line (each `--json`,
`labkit export`'s files): a schema (`labkit.<command>/<version>`) and a context block (the
machine, the build, the labkit commit, the command, the date), so that a file read later
says where and how it was made."""
from __future__ import annotations

import datetime
import math

import numpy as np

import labkit
from labkit.core import machine as _machine

SCHEMA_VERSION = 1  # of every --json output: raised when a field changes its meaning
# The machine's fields a reader needs to judge a comparison: what it ran on and what moves
# timings there (labkit.core.machine.machine_info has them all).
MACHINE_FIELDS = ("machine_id", "cpu_model", "arch", "cpu_count", "cpu_family", "cpu_model_id",
                  "microcode", "vector_isa", "kernel_release", "tsc_ghz", "virtualization",
                  "governor", "turbo", "smt", "aslr", "isolated_cpus", "env_warnings")
# How the labkit that ran was built: the extension's compiler and flags, and its Python.
BUILD_FIELDS = ("compiler", "cflags", "opt_level", "python")


def context(argv, *, machine: dict | None = None) -> dict:
    """The context block: `machine` (this machine's, measured now, unless given), `build`
    (labkit's version and how its C core was compiled), labkit's commit, the command line
    (`argv`: the arguments after `labkit`) and the date (UTC)."""
    info = _machine.machine_info() if machine is None else machine
    return {"machine": {k: info.get(k) for k in MACHINE_FIELDS if k in info},
            "build": {"labkit_version": labkit.__version__,
                      **{k: info.get(k) for k in BUILD_FIELDS if k in info}},
            "labkit_commit": _machine.labkit_commit(),
            "command": " ".join(["labkit", *map(str, argv)]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ")}


def schema(command: str) -> str:
    """The schema of a command's --json output: labkit.<command>/<version>."""
    return f"labkit.{command}/{SCHEMA_VERSION}"


def stamped(command: str, body, argv, *, ctx: dict | None = None) -> dict:
    """`body` as --json prints it: `schema` and `context` (ctx, else this machine's now)
    first, then body's keys (a list goes under `records`), NaN and infinities as null."""
    out = {"schema": schema(command), "context": context(argv) if ctx is None else ctx}
    return clean(out | (body if isinstance(body, dict) else {"records": body}))


def clean(v):
    """JSON without NaN or infinities (null)."""
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [clean(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if not math.isfinite(v) else float(v)
    return v
