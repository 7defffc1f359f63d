"""Deprecated: the OS hand-offs moved to labkit.core.handoff (measure_handoff, HANDOFF_MODES,
os_counts_agree). The old names keep working for one release, with a DeprecationWarning."""
import warnings

from labkit.core import handoff as _handoff

_RENAMED = {"measure_kernel_switch": "measure_handoff", "KMODES": "HANDOFF_MODES",
            "kernel_counts_agree": "os_counts_agree", "measure_yield": "measure_yield",
            "two_cpus": "two_cpus", "placement": "placement"}


def __getattr__(name):
    if name in _RENAMED:
        warnings.warn(f"labkit.kernel_switch.{name} is now labkit.core.handoff.{_RENAMED[name]}",
                      DeprecationWarning, stacklevel=2)
        return getattr(_handoff, _RENAMED[name])
    raise AttributeError(f"module 'labkit.kernel_switch' has no attribute {name!r}")
