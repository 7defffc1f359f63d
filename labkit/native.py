"""The C core's optimisation-level builds (labkit/bin/liblabkit_c-<tag>.so) and the
C++ peers (liblabkit_peers-<tag>.so: Boost.Context, Boost.Fiber, C++20 coroutines, plain
calls), called through ctypes. Timed runs happen inside worker processes only; the
look-ups (builds, peer availability, flags) are safe anywhere."""
from __future__ import annotations

import ctypes
import functools
import platform
from pathlib import Path

VARIANTS_DIR = Path(__file__).resolve().parent / "bin"  # labkit.native_build.OUT_NAME
_FIELDS = ("loop_ns", "loop_ticks", "base_ns", "base_ticks", "switches", "counted",
           "minor_faults")


class _Sample(ctypes.Structure):
    # Must match lk_sample in labkit/csrc/labkit_core.h.
    _fields_ = [(name, ctypes.c_uint64) for name in _FIELDS] + [("xinuse", ctypes.c_int64)]


# The build a peer, a frame or a frequency run is measured with unless another is asked for.
DEFAULT_BUILD = "O2"


def check_build(value, *, have: list[str] | None = None, why_none: str = "",
                none_means: str = "") -> str:
    """`value` if it names one of the builds in `have` (default: builds()), else a
    ValueError naming the parameter and the choices (and `why_none`, why there are none or
    few); a TypeError if it is not a str. none_means: what None would have meant, for the
    message of a caller that accepts None."""
    if not isinstance(value, str):
        raise TypeError(f"build must be a str naming a build{' or None' if none_means else ''}, "
                        f"not {type(value).__name__}")
    have = builds() if have is None else have
    if value not in have:
        raise ValueError(f"build must be one of {have}{f' (or None for {none_means})' if none_means else ''}; "
                         f"got {value!r}"
                         + (f": {why_none}" if why_none else "" if have
                            else ": none is built, run `make setup`"))
    return value


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
    lib.lk_pingpong_fp.argtypes = [i, sz, i, u64, i, i, i, ctypes.POINTER(_Sample),
                                   ctypes.c_char_p, sz]
    lib.lk_pingpong_fp.restype = i
    lib.lk_cflags.restype = ctypes.c_char_p
    return lib


def cflags(tag: str) -> str:
    return _lib(tag).lk_cflags().decode()


def _run(fn, repeats, *args):
    out = (_Sample * repeats)()
    err = ctypes.create_string_buffer(512)
    if fn(*args, out, err, len(err)) != 0:
        raise RuntimeError(err.value.decode())
    return [{name: getattr(s, name) for name in (*_FIELDS, "xinuse")} for s in out]


def pingpong(tag, kernel, stack_size, prefault, rounds, warmup, repeats, fpctl_mode=0):
    """lk_pingpong_fp of the given build; the same dicts as labkit._core.pingpong."""
    return _run(_lib(tag).lk_pingpong_fp, repeats, kernel, stack_size, int(prefault), rounds,
                warmup, repeats, fpctl_mode)


# ---- the C++ peers ----

PEER_BUILD = DEFAULT_BUILD


def peers_missing_reason() -> str:
    """Why the peers library is not there ('' if it is)."""
    if (VARIANTS_DIR / f"liblabkit_peers-{PEER_BUILD}.so").exists():
        return ""
    log = VARIANTS_DIR / f"liblabkit_peers-{PEER_BUILD}.so.missing.txt"
    text = log.read_text() if log.exists() else ""
    if text.startswith("missing here:"):
        return text.splitlines()[0]
    lines = [ln for ln in text.splitlines() if "error" in ln]
    detail = f" (compiler said: {lines[0].strip()[:200]})" if lines else ""
    return ("the C++ peers are not built: install Boost and a C++20 compiler "
            "(apt-get install g++ libboost-context-dev libboost-fiber-dev), then run "
            "`make setup`" + detail)


@functools.lru_cache(maxsize=None)
def _peers(tag: str):
    path = VARIANTS_DIR / f"liblabkit_peers-{tag}.so"
    if not path.exists():
        raise FileNotFoundError(peers_missing_reason() or f"no peers build {tag!r} at {path}")
    lib = ctypes.CDLL(str(path))
    u64, sz, i = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int
    lib.lkx_pingpong.argtypes = [i, sz, u64, i, i, ctypes.POINTER(_Sample), ctypes.c_char_p, sz]
    lib.lkx_pingpong.restype = i
    lib.lkx_peer_name.argtypes = [i]
    lib.lkx_peer_name.restype = ctypes.c_char_p
    lib.lkx_peer_saves.argtypes = [i]
    lib.lkx_peer_saves.restype = ctypes.c_char_p
    lib.lkx_cflags.restype = ctypes.c_char_p
    lib.lkx_set_fpctl.argtypes = [ctypes.c_int]
    lib.lkx_cxx20_frame_bytes.restype = ctypes.c_size_t
    return lib


def peer_names(tag: str = PEER_BUILD) -> list[str]:
    lib = _peers(tag)
    names = []
    while True:
        name = lib.lkx_peer_name(len(names)).decode()
        if name == "?":
            return names
        names.append(name)


def peer_saves(name: str, tag: str = PEER_BUILD) -> str:
    return _peers(tag).lkx_peer_saves(peer_names(tag).index(name)).decode()


def peers_cflags(tag: str) -> str:
    return _peers(tag).lkx_cflags().decode()


def cxx20_frame_bytes(tag: str = PEER_BUILD) -> int:
    return int(_peers(tag).lkx_cxx20_frame_bytes())


# The peers whose FP control words can be set apart (MXCSR: x86-64 only).
FPCTL_PEERS = ("boost_fcontext",) if platform.machine() in ("x86_64", "AMD64") else ()


def peer_pingpong(tag, name, stack_size, rounds, warmup, repeats, fpctl_mode=0):
    """lkx_pingpong of the given build; the same dicts as labkit._core.pingpong."""
    index = peer_names(tag).index(name)
    lib = _peers(tag)
    lib.lkx_set_fpctl(fpctl_mode if name in FPCTL_PEERS else 0)
    try:
        return _run(lib.lkx_pingpong, repeats, index, stack_size, rounds, warmup, repeats)
    finally:
        lib.lkx_set_fpctl(0)
