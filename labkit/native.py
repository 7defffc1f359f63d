"""The C core's optimisation-level builds (labkit/variants/liblabkit_c-<tag>.so), called
through ctypes. Used inside worker processes only; `builds()` is safe anywhere."""
from __future__ import annotations

import ctypes
import functools
from pathlib import Path

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"
_FIELDS = ("loop_ns", "loop_ticks", "base_ns", "base_ticks", "switches", "counted",
           "minor_faults")


class _Sample(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in _FIELDS]


def builds() -> list[str]:
    """Tags of the optimisation-level builds present: O0, O1, O2, O3, Os, O2-native."""
    order = ["O0", "O1", "O2", "O3", "Os", "O2-native"]
    found = {p.name[len("liblabkit_c-"):-len(".so")] for p in VARIANTS_DIR.glob("liblabkit_c-*.so")}
    return [t for t in order if t in found] + sorted(found - set(order))


@functools.lru_cache(maxsize=None)
def _lib(tag: str):
    path = VARIANTS_DIR / f"liblabkit_c-{tag}.so"
    if not path.exists():
        raise FileNotFoundError(f"no build {tag!r} at {path}: run `make setup`")
    lib = ctypes.CDLL(str(path))
    u64, sz, i = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int
    lib.lk_pingpong.argtypes = [i, sz, i, u64, i, i, ctypes.POINTER(_Sample), ctypes.c_char_p, sz]
    lib.lk_pingpong.restype = i
    lib.lk_ring.argtypes = [i, i, i, sz, sz, i, u64, i, i, ctypes.POINTER(_Sample),
                            ctypes.c_char_p, sz]
    lib.lk_ring.restype = i
    lib.lk_cflags.restype = ctypes.c_char_p
    return lib


def cflags(tag: str) -> str:
    return _lib(tag).lk_cflags().decode()


def _run(fn, repeats, *args):
    out = (_Sample * repeats)()
    err = ctypes.create_string_buffer(512)
    if fn(*args, out, err, len(err)) != 0:
        raise RuntimeError(err.value.decode())
    return [{name: getattr(s, name) for name in _FIELDS} for s in out]


def pingpong(tag, kernel, stack_size, prefault, rounds, warmup, repeats):
    """lk_pingpong of the given build; the same dicts as labkit._core.pingpong."""
    return _run(_lib(tag).lk_pingpong, repeats, kernel, stack_size, int(prefault), rounds,
                warmup, repeats)


def ring(tag, kernel, n, asymmetric, stack_size, colour_step, prefault, laps, warmup, repeats):
    """lk_ring of the given build; the same dicts as labkit._core.ring."""
    return _run(_lib(tag).lk_ring, repeats, kernel, n, int(asymmetric), stack_size,
                colour_step, int(prefault), laps, warmup, repeats)
