"""The C structs Python reads (samples, pool counters, memory reports), built from the
description each C library exports, so that their fields are declared once: in C.

Every such struct is a field list in its header (labkit/csrc/lk_layout.h); a library that
fills one exports lk_layout_<name>() ("uint64_t loop_ns;int64_t xinuse;...") and
lk_sizeof_<name>(). Both bindings use this module: labkit.core.native (ctypes) for the
optimisation-level builds and the C++ peers, labkit.core._core (Cython) for the extension.
"""
from __future__ import annotations

import ctypes
import functools

_CTYPES = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64,
           "uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32, "double": ctypes.c_double}


@functools.lru_cache(maxsize=None)
def struct_type(name: str, layout: str, size: int) -> type[ctypes.Structure]:
    """The ctypes structure `name` described by `layout` (lk_layout_<name>() of a library),
    checked against the library's sizeof: a library built from another header is refused
    rather than misread."""
    fields = []
    for decl in filter(None, layout.split(";")):
        ctype, _, field = decl.strip().rpartition(" ")
        if ctype not in _CTYPES:
            raise RuntimeError(f"{name}: field {field!r} has type {ctype!r}, which "
                               "labkit.core.structs cannot read; add it to _CTYPES")
        fields.append((field, _CTYPES[ctype]))
    cls = type(name, (ctypes.Structure,), {"_fields_": fields})
    if ctypes.sizeof(cls) != size:
        raise RuntimeError(f"{name} is {size} bytes in the library but its layout gives "
                           f"{ctypes.sizeof(cls)}: the library is stale, run `make setup`")
    return cls


def fields(struct) -> list[str]:
    """The field names of a structure made by struct_type, in C order."""
    return [f for f, _ in struct._fields_]


def as_dict(value: ctypes.Structure) -> dict:
    """One structure as {field: value}."""
    return {f: getattr(value, f) for f in fields(type(value))}


def as_dicts(values) -> list[dict]:
    """An array of structures as one dict each."""
    return [as_dict(v) for v in values]
