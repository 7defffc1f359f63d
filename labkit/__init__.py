"""labkit: measure what a context switch costs, honestly.

    import labkit
    labkit.catalogue()                        # what can be measured here
    df = labkit.measure("asm_fpu", switches=10**6)
    labkit.summarize(df)                      # median, spread, noise flag
    labkit.machine_info()                     # where the numbers came from

Every kernel runs in a worker process: a crash comes back as KernelCrashError. The
subpackages are reachable from here too: `labkit.experiments.callgrind`,
`labkit.lab.running.params`.
"""
import importlib as _importlib
import sys as _sys
from types import ModuleType as _ModuleType

__version__: str  # the installed package's version (its metadata), read on first use

# The public API and the module that defines each name. They load on first use: a worker
# process imports this package before its job's module, and a fresh process must be cheap
# to start, because processes are what the verdicts replicate.
_API = {
    # measuring
    "measure": "labkit.core.timing", "measure_ring": "labkit.core.timing",
    "summarize": "labkit.core.stats", "noise_warnings": "labkit.core.stats",
    # hand-offs between OS threads and processes
    "measure_handoff": "labkit.core.handoff", "measure_yield": "labkit.core.handoff",
    "HANDOFF_MODES": "labkit.core.handoff",
    # what there is
    "catalogue": "labkit.core.entries", "KERNEL_NAMES": "labkit.core.entries",
    "builds": "labkit.core.native", "machine_info": "labkit.core.machine",
    # correctness checks
    "check_registers": "labkit.core.checks", "check_fp_control": "labkit.core.checks",
    "probe_stack": "labkit.core.checks",
    # a user's own switch
    "add_switch": "labkit.core.user_switch", "check_switch": "labkit.core.user_switch",
    "remove_switch": "labkit.core.user_switch",
    # which design for a workload (the lab layer: it reads data/ and the claims' intervals)
    "advise": "labkit.lab.advising.advice",
    # this machine's reference card (caches, TLB, page size, latencies measured now)
    "card": "labkit.lab.exploring.card",
    # errors
    "KernelCrashError": "labkit.errors", "EntryUnavailableError": "labkit.errors",
    "MeasurementTimeout": "labkit.errors", "SwitchCountError": "labkit.errors",
    "WorkerError": "labkit.errors", "UserSwitchError": "labkit.errors",
    "UserSwitchBuildError": "labkit.errors",
}

__all__ = list(_API)
# Loaded on first use as well, each giving its modules on first use
# (`labkit.experiments.callgrind` after a bare `import labkit`).
_SUBPACKAGES = ("core", "lab", "experiments", "errors")


def __getattr__(name: str):
    if name == "__version__":
        from importlib import metadata

        try:
            value = metadata.version(__name__)
        except metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
            value = "unknown"
        globals()[name] = value
        return value
    if name in _API:
        value = getattr(_importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


class _Package(_ModuleType):
    """labkit's module type, and its subpackages'. Python binds every subpackage to its parent
    once its __init__ has run, whoever imports it first; that moment gives the subpackage its
    lazy submodules, and this type, so that its own subpackages get theirs
    (`labkit.lab.judging.verdicts`)."""

    def __setattr__(self, name, value):
        if hasattr(value, "__path__") and (name in _SUBPACKAGES or self.__name__ != __name__) \
                and getattr(value, "__name__", None) == f"{self.__name__}.{name}":
            vars(value).setdefault("__getattr__", _submodules_of(value.__name__))
            if type(value) is _ModuleType:
                value.__class__ = _Package
        super().__setattr__(name, value)


def _submodules_of(package: str):
    """A package's module-level __getattr__ that imports its submodule of that name."""
    def submodule(name: str):
        if not name.startswith("__"):
            try:
                return _importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":  # the module is there but needs a package
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return submodule


def __dir__():
    return sorted(set(globals()) | set(_API) | set(_SUBPACKAGES))


_sys.modules[__name__].__class__ = _Package
