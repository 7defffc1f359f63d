"""The ctypes side of labkit's one binding layer: the C core's optimisation-level builds
(labkit/bin/liblabkit_c-<tag>.so: the timed ping-pong and the switch-frequency runs) and
the C++ library (liblabkit_peers-<tag>.so: Boost.Context, Boost.Fiber, C++20 coroutines,
plain calls, and the coroutine frames of notebooks 07a and 07b). Neither the C functions
Python calls through ctypes nor the structs they fill are declared here: each library
exports its functions' prototypes (lk_functions(), LK_FUNCTIONS in csrc/lk_layout.h) and
its structs' layouts (labkit.core.structs), and the calls are typed from those. The Cython
extension labkit.core._core is the other half of the layer: the same C, built with the
extension's flags.

Timed runs happen inside worker processes only; the look-ups (builds, peer availability,
flags) are safe anywhere."""
from __future__ import annotations

import ctypes
import functools
import re
from pathlib import Path

from labkit.core import native_build, structs

BIN_DIR = native_build.PACKAGE / native_build.OUT_NAME  # labkit/bin/


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
    order = list(native_build.OPT_LEVELS)
    found = {p.name[len("liblabkit_c-"):-len(".so")] for p in BIN_DIR.glob("liblabkit_c-*.so")}
    return [t for t in order if t in found] + sorted(found - set(order))


class Library:
    """A loaded native library: its C functions typed from the prototypes it exports, and
    the structs they fill (made from the library's own layout, lk_layout.h)."""

    def __init__(self, path: Path, struct_names: tuple[str, ...]):
        self._dll = ctypes.CDLL(str(path))
        self.structs = {name: self._struct(name) for name in struct_names}
        exported = self._dll.lk_functions
        exported.restype, exported.argtypes = ctypes.c_char_p, []
        # {name: (restype, argtypes)} of every function the library exports a prototype of
        self.functions = prototypes(exported().decode(), self.structs)
        for fname, (restype, argtypes) in self.functions.items():
            fn = getattr(self._dll, fname)
            fn.restype, fn.argtypes = restype, argtypes

    def _struct(self, name: str):
        layout, size = getattr(self._dll, f"lk_layout_{name}"), getattr(self._dll, f"lk_sizeof_{name}")
        layout.restype, layout.argtypes = ctypes.c_char_p, []
        size.restype, size.argtypes = ctypes.c_size_t, []
        return structs.struct_type(name, layout().decode(), size())

    def __getattr__(self, name):
        # Only what the library exports a prototype of: an untyped call would take every
        # result for an int.
        if name not in self.__dict__.get("functions", ()):
            raise AttributeError(f"{name} is not among the functions this library exports "
                                 "(its header's F(...) list, lk_layout.h)")
        return getattr(self._dll, name)

    def new(self, struct: str, count: int | None = None):
        """A zeroed `struct`, or an array of `count` of them, for a C function to fill."""
        cls = self.structs[struct]
        return cls() if count is None else (cls * count)()

    def samples(self, fname: str, struct: str, repeats: int, *args) -> list[dict]:
        """Call fname(*args, out, err, errlen) with out an array of `repeats` structs:
        one dict per sample, or RuntimeError with the C side's message."""
        out = self.new(struct, repeats)
        check(getattr(self, fname), *args, out)
        return structs.as_dicts(out)


_SCALARS = {"void": None, "int": ctypes.c_int, "size_t": ctypes.c_size_t,
            "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
            "int64_t": ctypes.c_int64, "double": ctypes.c_double}


def _ctype(decl: str, struct_types: dict, where: str):
    """The ctypes type of a C type as the prototypes spell it ("const char *", "lk_sample *")."""
    base = " ".join(t for t in decl.replace("*", " * ").split() if t != "const")
    pointer = base.endswith("*")
    base = base.rstrip("* ").strip()
    if pointer and base == "char":
        return ctypes.c_char_p
    if pointer and base in struct_types:
        return ctypes.POINTER(struct_types[base])
    if base in _SCALARS and (not pointer or _SCALARS[base] is not None):
        return ctypes.POINTER(_SCALARS[base]) if pointer else _SCALARS[base]
    raise RuntimeError(f"{where}: labkit.core.native cannot pass the C type {decl.strip()!r}; "
                       "add it to _SCALARS or the library's struct list")


def prototypes(text: str, struct_types: dict) -> dict:
    """{name: (restype, argtypes)} from a library's lk_functions() text
    ("int lk_ring(int kernel, lk_sample *out);...")."""
    found = {}
    for decl in filter(None, (d.strip() for d in text.split(";"))):
        m = re.fullmatch(r"(.+?)\s*\b(\w+)\s*\((.*)\)", decl, re.S)
        if not m:
            raise RuntimeError(f"cannot read the exported prototype {decl!r}")
        ret, name, params = m.groups()
        args = []
        for param in (p.strip() for p in params.split(",")):
            if param in ("void", ""):
                continue
            pm = re.fullmatch(r"(.*?[\s*])(\w+)", param)
            if not pm:
                raise RuntimeError(f"{name}: cannot read the parameter {param!r}")
            args.append(_ctype(pm.group(1), struct_types, name))
        found[name] = (_ctype(ret, struct_types, name), args)
    return found


def check(fn, *args) -> None:
    """Call fn(*args, err, errlen), the C convention of this lab: 0, or -1 with a message
    in err, raised here as RuntimeError."""
    err = ctypes.create_string_buffer(512)
    if fn(*args, err, len(err)) != 0:
        raise RuntimeError(err.value.decode())


@functools.lru_cache(maxsize=None)
def core(tag: str) -> Library:
    """The C core built at optimisation level `tag` (O0 ... O2-native)."""
    path = BIN_DIR / f"liblabkit_c-{tag}.so"
    if not path.exists():
        raise FileNotFoundError(f"no build {tag!r} at {path}: run `make setup`")
    return Library(path, ("lk_sample", "lk_freq_sample", "lk_xstate_sample", "lk_wl_sample"))


def cflags(tag: str) -> str:
    return core(tag).lk_cflags().decode()


def pingpong(tag, kernel, stack_size, prefault, rounds, warmup, repeats, fpctl_mode=0,
             stack_in_use=0):
    """lk_pingpong_fp of the given build; the same dicts as labkit.core._core.pingpong."""
    lib = core(tag)
    lib.lk_set_stack_in_use(stack_in_use)
    try:
        return lib.samples("lk_pingpong_fp", "lk_sample", repeats, kernel, stack_size,
                           int(prefault), rounds, warmup, repeats, fpctl_mode)
    finally:
        lib.lk_set_stack_in_use(0)


@functools.lru_cache(maxsize=None)
def user_library(path: str) -> Library:
    """A user's switch with the lab's harness (csrc/user_switch.c), as
    labkit.core.user_switch built it: the ping-pong, the ring and the checks."""
    return Library(Path(path), ("lk_sample",))


# ---- the C++ peers ----

PEER_BUILD = DEFAULT_BUILD


def peers_missing_reason() -> str:
    """Why the peers library is not there ('' if it is)."""
    if (BIN_DIR / f"liblabkit_peers-{PEER_BUILD}.so").exists():
        return ""
    log = BIN_DIR / f"liblabkit_peers-{PEER_BUILD}.so.missing.txt"
    text = log.read_text() if log.exists() else ""
    if text.startswith("missing here:"):
        return text.splitlines()[0]
    lines = [ln for ln in text.splitlines() if "error" in ln]
    detail = f" (compiler said: {lines[0].strip()[:200]})" if lines else ""
    packages = " ".join(["g++", *(pkg for _, _, pkg in native_build.peer_libraries())])
    return ("the C++ peers are not built: install their libraries and a C++20 compiler "
            f"(apt-get install {packages}), then run `make setup`" + detail)


@functools.lru_cache(maxsize=None)
def peers(tag: str) -> Library:
    """The C++ library (peers and frames) built at optimisation level `tag`."""
    path = BIN_DIR / f"liblabkit_peers-{tag}.so"
    if not path.exists():
        raise FileNotFoundError(peers_missing_reason() or f"no peers build {tag!r} at {path}")
    return Library(path, ("lk_sample", "lkf_sample", "lkf_pool_stats", "lkf_mem_report",
                         "lk_wl_sample"))


def peer_names(tag: str = PEER_BUILD) -> list[str]:
    lib = peers(tag)
    names = []
    while True:
        name = lib.lkx_peer_name(len(names)).decode()
        if name == "?":
            return names
        names.append(name)


def peer_why_not(name: str, tag: str = PEER_BUILD) -> str:
    """'' if the peer was compiled into the library, else why not and what to install."""
    return peers(tag).lkx_peer_why_not(peer_names(tag).index(name)).decode()


def peers_cflags(tag: str) -> str:
    return peers(tag).lkx_cflags().decode()


def peer_pingpong(tag, name, stack_size, rounds, warmup, repeats, fpctl_mode=0):
    """lkx_pingpong of the given build; the same dicts as labkit.core._core.pingpong.
    fpctl_mode is other than 0 only for a peer whose record (labkit.core.systems) says it
    can set the FP control words apart."""
    index = peer_names(tag).index(name)
    lib = peers(tag)
    lib.lkx_set_fpctl(fpctl_mode)
    try:
        return lib.samples("lkx_pingpong", "lk_sample", repeats, index, stack_size, rounds,
                           warmup, repeats)
    finally:
        lib.lkx_set_fpctl(0)
