"""Deprecated: labkit.kernelinfo is now labkit.core.entries (its kernels() is labkit.catalogue()).
The old names keep working for one release, with a DeprecationWarning."""
import warnings

from labkit.core import entries as _entries


def __getattr__(name):
    new = "catalogue" if name == "kernels" else name
    if not hasattr(_entries, new):
        raise AttributeError(f"module 'labkit.kernelinfo' has no attribute {name!r}")
    warnings.warn(f"labkit.kernelinfo.{name} is now labkit.core.entries.{new}", DeprecationWarning,
                  stacklevel=2)
    return getattr(_entries, new)
