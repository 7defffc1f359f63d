"""Instructions per switch, counted by valgrind --tool=callgrind: deterministic where time is
not. The switch loop and the empty loop are counted apart, each at two lengths; the
difference between the lengths cancels start-up and set-up, leaving the loop alone."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from labkit.core import entries as _entries
from labkit.core import native
from labkit.core import systems as _systems
from labkit.core import validate as _v
from labkit.errors import CountError, ToolMissingError, UnsupportedInstructionError  # noqa: F401
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

DRIVER = native.BIN_DIR / "lk_count"


def available() -> tuple[bool, str]:
    """(True, "") if instructions can be counted here, else (False, why not)."""
    if shutil.which("valgrind") is None:
        return False, "valgrind is not installed: apt-get install valgrind"
    if not DRIVER.exists():
        return False, f"the counting driver {DRIVER} is not built: run `make setup`"
    return True, ""


def _count(lib: Path, driver: str, index: int, rounds: int, only: int, stack: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        res = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(DRIVER),
             str(lib), driver, str(index), str(rounds), str(only), str(stack)],
            capture_output=True, timeout=600)
        stderr = res.stderr.decode(errors="replace")
        if "unhandled instruction" in stderr or "vex amd64->IR" in stderr:
            raise UnsupportedInstructionError(
                f"valgrind cannot decode an instruction of {lib.name} (built for this CPU's "
                "newest extensions); count a build without -march=native")
        if res.returncode != 0:
            raise CountError(f"callgrind run failed ({res.returncode})", stderr[-1500:])
        want = 2 * rounds if only == 1 else 0
        counted = int.from_bytes(res.stdout[-8:], sys.byteorder) if len(res.stdout) >= 8 else None
        if counted != want:
            raise CountError(f"the counted run did not make {want} switches: {counted}")
        m = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.M)
        if not m:
            raise CountError("no instruction total in callgrind's output")
        return int(m.group(1))


def instructions_per_switch(kernel: str, *, build: str = "O2", stack_size: int | None = None,
                            rounds: tuple[int, int] = (2_000, 6_000)) -> dict:
    """Instructions per switch of a labkit kernel or C++ peer in one of the -O builds:
    `loop` (the switch loop), `base` (the empty loop) and `net` = loop - base, each per
    switch. Raises ToolMissingError where valgrind is missing."""
    ok, why = available()
    if not ok:
        raise ToolMissingError(why)
    kernel = _entries.check_name(kernel)
    size = _entries.check_stack_size(kernel, stack_size) or 0
    if build not in native.builds():
        raise ValueError(f"build must be one of {native.builds()}; got {build!r}")
    if isinstance(rounds, (str, bytes)) or not hasattr(rounds, "__len__") or len(rounds) != 2:
        raise TypeError(f"rounds must be a pair of round counts (fewer, more); got {rounds!r}")
    r1, r2 = (_v.integer("rounds", r) for r in rounds)
    if not 0 < r1 < r2:
        raise ValueError(f"rounds must be two increasing positive integers; got {rounds!r}")
    system = _systems.of(kernel)
    if system.count_driver is None:
        countable = " or a ".join(s.what for s in _systems.SYSTEMS.values() if s.count_driver)
        raise ValueError(f"kernel must be a {countable}; {kernel!r} is a {system.what} "
                         "(callgrind would count the interpreter)")
    lib = system.library_path(kernel, build)
    index = system.index(kernel, build)
    # Counts do not depend on timing, so the four runs share the CPUs.
    runs = [(only, r) for only in (1, 2) for r in (r1, r2)]
    with ThreadPoolExecutor(max_workers=min(len(runs), len(os.sched_getaffinity(0)))) as pool:
        got = dict(zip(runs, pool.map(
            lambda run: _count(lib, system.count_driver, index, run[1], run[0], size), runs)))
    per = {name: (got[(only, r2)] - got[(only, r1)]) / (2 * (r2 - r1))
           for name, only in (("loop", 1), ("base", 2))}
    return {"entry": kernel, "build": build, "loop": per["loop"], "base": per["base"],
            "net": per["loop"] - per["base"]}


def instructions_table(kernels, builds, **kw):
    """instructions_per_switch for every (kernel, build), one row each; a build valgrind
    cannot decode gets NaN counts and the reason in `why`, instead of stopping the table."""
    import pandas as pd

    rows = []
    for k in kernels:
        for b in builds:
            try:
                rows.append({**instructions_per_switch(k, build=b, **kw), "why": ""})
            except UnsupportedInstructionError as exc:
                rows.append({"entry": k, "build": b, "loop": float("nan"),
                             "base": float("nan"), "net": float("nan"), "why": str(exc)})
    return pd.DataFrame(rows)
