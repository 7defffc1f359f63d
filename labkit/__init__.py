"""labkit: measure what a context switch costs, honestly.

    import labkit
    labkit.catalogue()                        # what can be measured here
    df = labkit.measure("asm_fpu", switches=10**6)
    labkit.summarize(df)                      # median, spread, noise flag
    labkit.machine_info()                     # where the numbers came from

Every kernel runs in a worker process: a crash comes back as KernelCrashError.
"""
from labkit.core.checks import check_fp_control, check_registers, probe_stack
from labkit.core.handoff import HANDOFF_MODES, measure_handoff, measure_yield
from labkit.core.entries import KERNEL_NAMES, catalogue
from labkit.core.machine import machine_info
from labkit.core.native import builds
from labkit.core.timing import measure, measure_ring
from labkit.core.stats import noise_warnings, summarize
from labkit.errors import (KernelCrashError, KernelUnavailableError, MeasurementTimeout,
                           SwitchCountError, WorkerError)

__version__ = "0.1.0"

__all__ = [
    # measuring
    "measure", "measure_ring", "summarize", "noise_warnings",
    # hand-offs between kernel threads and processes
    "measure_handoff", "measure_yield", "HANDOFF_MODES",
    # what there is
    "catalogue", "KERNEL_NAMES", "builds", "machine_info",
    # correctness checks
    "check_registers", "check_fp_control", "probe_stack",
    # errors
    "KernelCrashError", "KernelUnavailableError", "MeasurementTimeout", "SwitchCountError",
    "WorkerError",
]
