"""labkit: measure what a context switch costs, honestly.

    import labkit
    labkit.kernels()                          # what can be measured here
    df = labkit.measure("asm_fpu", switches=10**6)
    labkit.summarize(df)                      # median, spread, noise flag
    labkit.machine_info()                     # where the numbers came from

Every kernel runs in a worker process: a crash comes back as KernelCrashError.
"""
from labkit.checks import check_fp_control, check_registers, probe_stack
from labkit.kernel_switch import KMODES, measure_kernel_switch, measure_yield
from labkit.kernelinfo import KERNEL_NAMES, kernels
from labkit.machine import machine_info
from labkit.native import builds
from labkit.timing import SwitchCountError, measure, measure_ring
from labkit.stats import noise_warnings, summarize
from labkit.validate import KernelUnavailableError
from labkit.worker import KernelCrashError, MeasurementTimeout, WorkerError

__version__ = "0.1.0"

__all__ = [
    # measuring
    "measure", "measure_ring", "summarize", "noise_warnings",
    # kernel threads and processes
    "measure_kernel_switch", "measure_yield", "KMODES",
    # what there is
    "kernels", "KERNEL_NAMES", "builds", "machine_info",
    # correctness checks
    "check_registers", "check_fp_control", "probe_stack",
    # errors
    "KernelCrashError", "KernelUnavailableError", "MeasurementTimeout", "SwitchCountError",
    "WorkerError",
]
