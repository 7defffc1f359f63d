"""What every machine-readable answer of `labkit compare` and `labkit export` carries: a
schema version and a context block (the machine, the labkit commit, the command, the
date), so that a file read later says where and how it was made."""
from __future__ import annotations

import datetime
import sys

import labkit
from labkit.core import machine as _machine

SCHEMA = "labkit.compare/1"
# The machine's fields a reader needs to judge a comparison: what it ran on and what moves
# timings there (labkit.core.machine.machine_info has them all).
MACHINE_FIELDS = ("machine_id", "cpu_model", "arch", "cpu_count", "cpu_family", "cpu_model_id",
                  "microcode", "vector_isa", "kernel_release", "compiler", "cflags",
                  "tsc_ghz", "virtualization", "governor", "turbo", "smt", "aslr",
                  "isolated_cpus", "env_warnings", "python")


def context(argv=None, *, machine: dict | None = None) -> dict:
    """The context block: `machine` (this machine's, measured now, unless given), labkit's
    version and commit, the command line (argv) and the date (UTC)."""
    info = _machine.machine_info() if machine is None else machine
    argv = sys.argv if argv is None else argv
    return {"machine": {k: info.get(k) for k in MACHINE_FIELDS if k in info},
            "labkit_version": labkit.__version__,
            "labkit_commit": _machine.labkit_commit(),
            "command": " ".join(["labkit", *map(str, argv)]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ")}
