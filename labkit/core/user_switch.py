"""A user's own switch, measured beside the catalogue without changing the package.

The user brings a C or C++ source, or a prebuilt shared library, that defines

    void *lk_user_make(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg);
    void  lk_user_swap(void **save, void *to);

add_switch builds it with the C core's O2 flags together with the lab's harness
(csrc/user_switch.c) into the results folder (<results>/user_switches/, never the package),
runs the correctness checks on it in a worker process, and adds it to the catalogue of this
process as "user:<name>": labkit.measure, labkit.measure_ring and callgrind's
instructions_per_switch then take that name like any entry (labkit.core.systems' `user`
record). A switch that fails a check is not added: UserSwitchError names what failed.
add_switch(python="package.module:factory") takes a Python-level switch instead
(labkit.core.user_pyswitch)."""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
from pathlib import Path

from labkit.core import checks as _checks
from labkit.core import native_build as _build
from labkit.core import results as _results
from labkit.core import systems as _systems
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.errors import UserSwitchBuildError, UserSwitchError
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

SUFFIXES = (".c", ".cpp", ".so")
CACHE = "user_switches"
# lk_user_stacktest's word for "nothing changed".
_UNCHANGED = 1 << 62
# The System V ABI's red zone: the 128 bytes below rsp.
RED_ZONE = 128


def cache_dir() -> Path:
    """Where the user's switches are built: <results>/user_switches/."""
    return _results.root() / CACHE


def check_source(source) -> Path:
    """source as an existing .c, .cpp or .so file."""
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path (str or Path) to a .c, .cpp or .so file, "
                        f"not {type(source).__name__}")
    path = Path(source).expanduser().resolve()
    if path.suffix not in SUFFIXES:
        raise ValueError(f"source must be a .c, .cpp or .so file (a switch's source, or a "
                         f"prebuilt shared library); got {str(source)!r}")
    if not path.is_file():
        raise ValueError(f"source must be an existing file; {str(source)!r} does not exist")
    return path


def _stem_name(path: Path) -> str:
    """A C switch's default name: its file's stem, other characters made _."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem) or "switch"


def build(source) -> tuple[Path, dict]:
    """The user's switch and the harness built into cache_dir() (once for each content of
    the source, the harness and the flags): (the library, how it was built). A source that
    does not build raises UserSwitchBuildError with the compiler's first error line."""
    path = check_source(source)
    if platform.machine() not in ("x86_64", "AMD64"):
        raise ValueError(f"source must be built for x86-64: labkit's harness for a user's "
                         f"switch probes x86-64's registers, and this is {platform.machine()}")
    spec = _build.user_switch_target(path)
    digest = hashlib.sha256(path.read_bytes())
    source_sha = digest.hexdigest()
    for f in [*spec.get("sources", []), *spec.get("c_objects", []), *spec["headers"]]:
        if not Path(f).is_absolute():
            digest.update((_build.PACKAGE / f).read_bytes())
    digest.update(json.dumps(spec, sort_keys=True).encode())
    out = cache_dir()
    lib = out / f"{path.stem}-{digest.hexdigest()[:16]}.so"
    info_path = lib.with_suffix(".json")
    if lib.exists() and info_path.exists():
        return lib, json.loads(info_path.read_text())
    info, why = _build.build_target(lib.name, spec, out)
    if info is None:
        raise UserSwitchBuildError(
            f"source {str(path)!r} did not build with the lab's flags "
            f"({' '.join(spec['flags'])}): {_first_error(why)}", log=why)
    info = {**info, "source": str(path), "sha256": source_sha}
    with _results.atomic_path(info_path) as tmp:
        tmp.write_text(json.dumps(info, indent=1, sort_keys=True))
    return lib, info


def _first_error(log: str) -> str:
    """The compiler's first error line (file:line:col: error: ...), or the linker's."""
    lines = log.splitlines()
    for pattern in (r"^\S+:\d+(:\d+)?: (fatal )?error: ", r"undefined reference|error:",
                    r"\S"):
        for line in lines[2:] or lines:
            if re.search(pattern, line):
                return line.strip()
    return "the compiler gave no message"


def run_checks(library: Path, *, name: str, timeout: float | None = None) -> dict:
    """Every correctness check of a built switch, each in the worker (a crash or a hang ends
    the worker only: KernelCrashError, MeasurementTimeout naming the check). The alignment
    check first and the stack check next, each alone when it fails: the checks after them
    run C on the stacks the switch made, and call it from frames it would spoil."""
    timeout = _systems.USER_CHECK_TIMEOUT if timeout is None else timeout
    out = {}
    for check, what in (("aligntest", "alignment check"), ("stacktest", "stack check"),
                        ("regtest", "register check"), ("fptest", "FP control check")):
        if "aligntest" in out and (out["aligntest"] + 8) % 16 or (
                "stacktest" in out and _stack_found(out["stacktest"])):
            break
        out[check] = _worker.call("labkit.core.user_switch", f"worker_{check}",
                                  library=str(library), timeout=timeout,
                                  describe=f"the {what} of the user switch {name!r}")
    return out


def _stack_found(found: list) -> str:
    """What the stack check found, in words ("" when the stacks were left alone)."""
    frame, below = found
    if frame >= 0:
        return (f"lk_user_swap wrote into its caller's frame, {8 * frame} bytes above the "
                "return address")
    if below != _UNCHANGED:
        where = ("in its red zone" if -RED_ZONE <= below < 0 else
                 "below its red zone" if below < 0 else "in its frame")
        return (f"the switches of other contexts wrote into a suspended context's stack, "
                f"{abs(below)} bytes {'below' if below < 0 else 'above'} its rsp at the call "
                f"({where})")
    return ""


def verdicts(raw: dict, *, name: str, keeps_fp_control: bool | None) -> list[dict]:
    """One row a check that ran (run_checks stops after a failed alignment or stack check):
    check, passed, and what was found, in words."""
    rows = []
    rsp = raw["aligntest"]
    off = (rsp + 8) % 16
    rows.append({"check": "stack aligned at entry of fn", "passed": off == 0,
                 "found": f"rsp = {rsp:#x} when fn starts: rsp + 8 is "
                          + ("a multiple of 16, as the ABI asks" if off == 0 else
                             f"{off} bytes off a multiple of 16 (the ABI asks for 0; the "
                             "checks that run C on such a stack were not run)")})
    if "stacktest" in raw:
        found = _stack_found(raw["stacktest"])
        rows.append({"check": "red zone and frames left alone", "passed": not found,
                     "found": found + ("; the checks after this one were not run" if found
                                       else "the caller's frame and a suspended context's "
                                       "stack, its red zone included, are left alone")})
    if "regtest" in raw:
        regs = _checks.register_rows(name, raw["regtest"])
        lost = [r for r in regs if not r["survived"]]
        lost_names = list(dict.fromkeys(r["register"] for r in lost))
        rows.append({"check": "callee-saved registers survive", "passed": not lost,
                     "found": (f"lk_user_swap does not preserve {', '.join(lost_names)} ("
                               + "; ".join(f"{r['side']}: loaded {r['loaded']:#x}, found "
                                           f"{r['found']:#x}" for r in lost[:2]) + ")")
                     if lost else "rbx, rbp, r12-r15 survive on both sides"})
    if "fptest" in raw:
        fp = _checks.fp_verdict(name, raw["fptest"])
        kept = fp["kept"]
        found = ("kept per context" if kept else
                 f"shared: main set MXCSR {fp['main_set'][0]:#x}, x87 CW "
                 f"{fp['main_set'][1]:#x} and found {fp['main_after'][0]:#x}, "
                 f"{fp['main_after'][1]:#x} after the other context set its own")
        declared = ("" if keeps_fp_control is None else
                    f" (declared: {'kept per context' if keeps_fp_control else 'shared'})")
        rows.append({"check": "FP control words as declared",
                     "passed": keeps_fp_control is None or keeps_fp_control == kept,
                     "found": f"MXCSR and x87 control word {found}{declared}", "kept": kept})
    return rows


def check_switch(source, *, keeps_fp_control: bool | None = None,
                 timeout: float | None = None):
    """Build a user's switch (a .c, .cpp or .so file) and run the correctness checks on it
    in a worker process. A DataFrame, one row a check: check, passed, found. keeps_fp_control
    declares what lk_user_swap does with MXCSR and the x87 control word (True: keeps them
    per context; False: the contexts share them; None: the check only reports it)."""
    import pandas as pd

    path = check_source(source)
    keeps_fp_control = _declared(keeps_fp_control)
    lib, _ = build(path)
    name = _systems.user_entry(None, _stem_name(path))
    raw = run_checks(lib, name=name, timeout=_v.timeout(timeout))
    return pd.DataFrame(verdicts(raw, name=name, keeps_fp_control=keeps_fp_control))


def _declared(value) -> bool | None:
    return None if value is None else _v.flag("keeps_fp_control", value)


def add_switch(source=None, *, python=None, keeps_fp_control: bool | None = None,
               name: str | None = None, timeout: float | None = None) -> str:
    """Build a user's switch, check it in a worker process and add it to this process's
    catalogue; returns its entry name, "user:<name>" (name: the file's stem unless given),
    which labkit.measure, labkit.measure_ring and callgrind take. keeps_fp_control: as in
    check_switch. A check that fails raises UserSwitchError naming it (a register by name),
    and nothing is added; a crash or a hang raises KernelCrashError or MeasurementTimeout
    (timeout: seconds a check may take, default 60) and the worker alone ends.

    python="package.module:factory" instead of source adds a Python-level switch (name: the
    module's last component unless given), which labkit.measure and the advisor take. The
    factory takes no argument and returns (make, swap): make(fn) -> ctx, a context that runs
    fn() when first resumed and, when fn returns, goes back to the context that made it;
    swap(ctx) resumes ctx and returns when some context swaps back (greenlet:
    make = greenlet.greenlet, swap = lambda g: g.switch()). Workers import it afresh, from
    this process's sys.path: a callable given itself must be reachable by its __module__
    and __qualname__. Not importable: ValueError; the wrong shape: TypeError; a factory or
    swap that raises, or a ping-pong that does not count every switch: UserSwitchError
    (labkit.core.user_pyswitch)."""
    if python is not None:
        if source is not None:
            raise ValueError(f"source must be left unset (None) when python is given: one "
                             f"switch a call; got source={source!r}, python={python!r}")
        if keeps_fp_control is not None:
            raise ValueError("keeps_fp_control must be left unset (None) with python: a "
                             "Python switch runs on one thread's FP control words")
        from labkit.core import user_pyswitch

        return user_pyswitch.add(python, name=name, timeout=timeout)
    if source is None:
        raise TypeError("add_switch needs a source (a .c, .cpp or .so file) or python (an "
                        "import path 'package.module:factory')")
    path = check_source(source)
    keeps_fp_control = _declared(keeps_fp_control)
    entry = _systems.user_entry(name, _stem_name(path))
    lib, info = build(path)
    raw = run_checks(lib, name=entry, timeout=_v.timeout(timeout))
    rows = verdicts(raw, name=entry, keeps_fp_control=keeps_fp_control)
    failed = [r for r in rows if not r["passed"]]
    if failed:
        import pandas as pd

        raise UserSwitchError(f"the user switch {entry!r} ({path}) failed "
                              f"{len(failed)} check{'s' * (len(failed) != 1)}: "
                              + "; ".join(f"{r['check']}: {r['found']}" for r in failed),
                              checks=pd.DataFrame(rows))
    _systems.USER_PY_SWITCHES.pop(entry, None)  # one entry, one system
    _systems.USER_SWITCHES[entry] = _systems.UserSwitch(
        name=entry, source=str(path), library=str(lib),
        keeps_fp_control=next(r["kept"] for r in rows if "kept" in r),
        cflags=info["cflags"], compiler=info["compiler"], sha256=info["sha256"])
    return entry


def remove_switch(entry: str) -> None:
    """Take a user's switch, C or Python, out of this process's catalogue (a C switch's
    library stays cached)."""
    added = [*_systems.USER_SWITCHES, *_systems.USER_PY_SWITCHES]
    if entry not in added:
        raise ValueError(f"entry must be a user switch added in this process "
                         f"({', '.join(added) or 'none is'}); got {entry!r}")
    _systems.USER_SWITCHES.pop(entry, None)
    _systems.USER_PY_SWITCHES.pop(entry, None)


# ---- run in the worker process (labkit.core.worker.call) ----

def _lib(library: str):
    from labkit.core import native

    return native.user_library(library)


def worker_regtest(library: str) -> list:
    """checks.c's register check on lk_user_swap; the rows _core.regtest gives."""
    import ctypes

    lib = _lib(library)
    n = lib.lk_user_regprobe_count()
    arrays = [(ctypes.c_uint64 * n)() for _ in range(4)]
    if lib.lk_user_regtest(*arrays) != 0:
        raise RuntimeError("lk_user_make returned NULL: the register check has no context")
    mi, mo, ci, co = arrays
    return [{"register": lib.lk_user_regprobe_name(i).decode(), "main_in": mi[i],
             "main_out": mo[i], "other_in": ci[i], "other_out": co[i]} for i in range(n)]


def worker_fptest(library: str) -> dict:
    """checks.c's FP control check on lk_user_swap; the dict _core.fptest gives."""
    import ctypes

    arrays = [(ctypes.c_uint32 * 2)() for _ in range(5)]
    if _lib(library).lk_user_fptest(*arrays) != 0:
        raise RuntimeError("lk_user_make returned NULL: the FP control check has no context")
    return dict(zip(("main_set", "main_after", "other_set", "other_after", "mask"),
                    ([a[0], a[1]] for a in arrays)))


def worker_aligntest(library: str) -> int:
    """rsp at the first instruction of the fn a user's context starts in."""
    import ctypes

    rsp = ctypes.c_uint64()
    if _lib(library).lk_user_aligntest(ctypes.byref(rsp)) != 0:
        raise RuntimeError("lk_user_make returned NULL: the alignment check has no context")
    return rsp.value


def worker_stacktest(library: str) -> list:
    """[first changed word of the caller's frame or -1, first changed byte of a suspended
    stack as an offset from its rsp at the call, or 1 << 62]."""
    import ctypes

    out = (ctypes.c_int64 * 2)()
    if _lib(library).lk_user_stacktest(out) != 0:
        raise RuntimeError("lk_user_make returned NULL: the stack check has no context")
    return [out[0], out[1]]
