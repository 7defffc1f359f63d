"""What Linux says about a process and its limits through /proc (and the few /sys files
printed beside them): the Python side's readers, one per kind of file. The C++ memory runs
read their own VmRSS (labkit/cxx/frames.cpp), inside the run, and do not come here.

    from labkit.core import procfs
    procfs.status_kb("VmRSS")              # this process's resident memory, kB
    procfs.sysctl("vm.overcommit_memory")  # '0', or None where it cannot be read
    procfs.max_map_count()                 # the most mappings one process may hold
"""
from __future__ import annotations

import numbers
import re
from pathlib import Path
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

PROC = Path("/proc")
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
# The kernel's default vm.max_map_count, assumed where /proc/sys cannot be read.
DEFAULT_MAX_MAP_COUNT = 65530
_FIELD = re.compile(r"[A-Za-z_]+")
_SYSCTL = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")


def _pid(pid) -> str:
    if pid == "self":
        return pid
    if isinstance(pid, bool) or not isinstance(pid, numbers.Integral):
        raise TypeError(f"pid must be a process id (an int) or 'self', not "
                        f"{type(pid).__name__} ({pid!r})")
    if pid < 1:
        raise ValueError(f"pid must be a process id, 1 or more, or 'self'; got {pid}")
    return str(int(pid))


def read_text(path, default: str | None = None) -> str | None:
    """The stripped text of a /proc or /sys file, or `default` where it cannot be read (a
    file this kernel, machine or container does not have)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, not {type(path).__name__} ({path!r})")
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def status_kb(field: str, pid="self") -> int:
    """A kB field of /proc/<pid>/status ("VmRSS", "VmPTE", "RssAnon"...), in kB; 0 when the
    process has no such field (a OS thread has no VmRSS)."""
    if not isinstance(field, str) or not _FIELD.fullmatch(field):
        raise ValueError(f"field must name a field of /proc/<pid>/status such as 'VmRSS'; "
                         f"got {field!r}")
    with open(PROC / _pid(pid) / "status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mappings(pid="self") -> int:
    """How many memory mappings (VMAs) process `pid` holds now: the lines of
    /proc/<pid>/maps, what vm.max_map_count limits."""
    with open(PROC / _pid(pid) / "maps") as f:
        return sum(1 for _ in f)


def processes() -> list[dict]:
    """Every process /proc lists now, zombies included: pid, ppid, comm (the command name,
    which may hold spaces) and state (R, S, Z...), from /proc/<pid>/stat. A process that
    ends while the list is read is left out."""
    out = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # comm is in parentheses and may hold either; the fields after it are fixed.
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            out.append({"pid": int(entry.name), "ppid": int(fields[1]), "comm": comm,
                        "state": fields[0]})
        except (OSError, ValueError, IndexError):
            continue
    return out


def listed(pid) -> bool:
    """Whether /proc still lists process `pid` (a zombie stays listed until it is reaped)."""
    return (PROC / _pid(pid)).exists()


def open_fds(pid="self") -> int:
    """How many file descriptors process `pid` holds open."""
    return len(list((PROC / _pid(pid) / "fd").iterdir()))


def context_switches(pid) -> int:
    """Voluntary and involuntary context switches of every thread of process `pid` so far,
    added up: each one a wake-up or a preemption. A thread that ends while it is being read
    is left out."""
    total = 0
    for status in (PROC / _pid(pid) / "task").glob("*/status"):
        try:
            for line in status.read_text().splitlines():
                if "ctxt_switches:" in line:  # voluntary_ and nonvoluntary_
                    total += int(line.split()[-1])
        except (OSError, ValueError):
            pass
    return total


def sysctl(name: str, default: str | None = None) -> str | None:
    """A kernel setting under /proc/sys, named as sysctl names it ("vm.overcommit_memory"),
    as text; `default` where it cannot be read."""
    if not isinstance(name, str) or not _SYSCTL.fullmatch(name):
        raise ValueError(f"name must be a sysctl name such as 'vm.max_map_count'; got {name!r}")
    return read_text(PROC / "sys" / name.replace(".", "/"), default)


def max_map_count() -> int:
    """vm.max_map_count: the most memory mappings (VMAs) one process may hold; a guarded
    stack takes two. The kernel's default where it cannot be read."""
    value = sysctl("vm.max_map_count")
    return int(value) if value else DEFAULT_MAX_MAP_COUNT


def transparent_hugepages() -> str:
    """The transparent-huge-page mode ("always", "madvise" or "never": the bracketed word of
    /sys/kernel/mm/transparent_hugepage/enabled), or "unknown"."""
    text = read_text(THP_ENABLED, "")
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else "unknown"
