"""labkit: measure what a context switch costs, honestly.

    import labkit
    labkit.catalogue()                        # what can be measured here
    df = labkit.measure("asm_fpu", switches=10**6)
    labkit.summarize(df)                      # median, spread, noise flag
    labkit.machine_info()                     # where the numbers came from

Every kernel runs in a worker process: a crash comes back as KernelCrashError.
"""
import importlib

__version__ = "0.1.0"

# The public API and the module that defines each name. They load on first use: a worker
# process imports this package before its job's module, and a fresh process must be cheap
# to start, because processes are what the verdicts replicate.
_API = {
    # measuring
    "measure": "labkit.core.timing", "measure_ring": "labkit.core.timing",
    "summarize": "labkit.core.stats", "noise_warnings": "labkit.core.stats",
    # hand-offs between kernel threads and processes
    "measure_handoff": "labkit.core.handoff", "measure_yield": "labkit.core.handoff",
    "HANDOFF_MODES": "labkit.core.handoff",
    # what there is
    "catalogue": "labkit.core.entries", "KERNEL_NAMES": "labkit.core.entries",
    "builds": "labkit.core.native", "machine_info": "labkit.core.machine",
    # correctness checks
    "check_registers": "labkit.core.checks", "check_fp_control": "labkit.core.checks",
    "probe_stack": "labkit.core.checks",
    # errors
    "KernelCrashError": "labkit.errors", "KernelUnavailableError": "labkit.errors",
    "MeasurementTimeout": "labkit.errors", "SwitchCountError": "labkit.errors",
    "WorkerError": "labkit.errors",
}

__all__ = list(_API)


def __getattr__(name: str):
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
