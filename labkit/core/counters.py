"""The kernel's own counters of a stretch of work, through perf_event_open(2): software
counters (context switches, CPU migrations, page faults, task clock), which every Linux
kernel keeps, and hardware counters (cycles, instructions, branch and dTLB-load misses),
which exist only where the CPU, or the hypervisor, exposes a PMU. A counter the kernel
refuses is no error: its value is NaN and its kind's reason column says what the kernel
said, with the errno. The syscall itself is in C (labkit/csrc/perf.c, through
labkit.core._core); enabling, reading and closing are file-descriptor work here.

    from labkit.core import counters
    with counters.count() as c:
        work()
    c.result()  # {"sw_context_switches": 3, ..., "hw_cycles": nan, "hw_counters":
                #  "not available here: No such file or directory (errno 2); ..."}

The counters are opened and enabled before the block and read after it, so their
syscalls stay out of whatever the block times. They count the calling thread and the
threads and processes it starts inside the block (inherit), on every CPU.
"""
from __future__ import annotations

import errno
import fcntl
import math
import os
import struct

from labkit.core import procfs
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

# perf_event_attr.type
_HARDWARE, _SOFTWARE, _HW_CACHE = 0, 1, 3
# dTLB, read, miss: PERF_COUNT_HW_CACHE_DTLB | OP_READ << 8 | RESULT_MISS << 16.
_DTLB_LOAD_MISSES = 3 | (0 << 8) | (1 << 16)

# column -> (perf_event_attr.type, .config). The sw_ columns sit beside the lab's own
# switch counts; the hw_ columns are NaN where the machine has no PMU to ask.
SOFTWARE = {
    "sw_context_switches": (_SOFTWARE, 3),
    "sw_cpu_migrations": (_SOFTWARE, 4),
    "sw_page_faults": (_SOFTWARE, 2),
    "sw_task_clock_ns": (_SOFTWARE, 1),
}
HARDWARE = {
    "hw_cycles": (_HARDWARE, 0),
    "hw_instructions": (_HARDWARE, 1),
    "hw_branch_misses": (_HARDWARE, 5),
    "hw_dtlb_load_misses": (_HW_CACHE, _DTLB_LOAD_MISSES),
}
# Each kind's reason column: "counted", or why some or all of its counters are NaN.
REASONS = {"sw_": "sw_counters", "hw_": "hw_counters"}
COLUMNS = (*SOFTWARE, "sw_counters", *HARDWARE, "hw_counters")
COUNTED = "counted"
# Where perf_event_paranoid forbids counting the kernel, these still mean something when
# counted in user space only (a context switch or a migration happens in the kernel, so
# those would always read 0, and are refused instead).
USER_SPACE_OK = ("sw_page_faults", "sw_task_clock_ns", *HARDWARE)

_IOC_ENABLE, _IOC_DISABLE = 0x2400, 0x2401  # _IO('$', 0), _IO('$', 1)

# What an errno from perf_event_open usually means, for the reader of a row.
_HINTS = {
    errno.ENOENT: "the kernel has no such event here (a VM without a virtual PMU exposes "
                  "no hardware events)",
    errno.EOPNOTSUPP: "this PMU cannot count the event for one task",
    errno.EACCES: "this process may not count it (perf_event_paranoid, CAP_PERFMON, or a "
                  "container's seccomp profile)",
    errno.EPERM: "this process may not count it (perf_event_paranoid, CAP_PERFMON, or a "
                 "container's seccomp profile)",
    errno.ENOSYS: "this kernel has no perf events (CONFIG_PERF_EVENTS)",
    errno.EINVAL: "the kernel refuses the event's attributes",
}


def paranoid() -> str:
    """kernel.perf_event_paranoid as text (2: only user-space counting of one's own
    tasks without CAP_PERFMON), or 'unknown'."""
    return procfs.sysctl("kernel.perf_event_paranoid", "unknown")


def _errno(err) -> int:
    if isinstance(err, bool) or not isinstance(err, int) or err <= 0:
        raise ValueError(f"err must be a positive errno; got {err!r}")
    return err


def refusal(err: int) -> str:
    """The text a counter's reason column gives for errno `err` (short: every row of a
    measurement carries it)."""
    err = _errno(err)
    return (f"not available here: {os.strerror(err)} (errno {err}); "
            f"kernel.perf_event_paranoid = {paranoid()}")


def hint(err: int) -> str:
    """What errno `err` from perf_event_open usually means here ('' when nothing is known)."""
    return _HINTS.get(_errno(err), "")


def user_space_only() -> str:
    """The reason text of a counter that counted user space only."""
    return (f"counted in user space only: kernel.perf_event_paranoid = {paranoid()} "
            "forbids counting the kernel")


def _open(kind: int, config: int, user_only: bool = False) -> int:
    """A disabled, inheriting counter of this thread on any CPU (of its user space only,
    with user_only): its fd, or OSError with the kernel's errno."""
    from labkit.core import _core

    return _core.perf_open(kind, config, user_only)


def _events(events) -> dict:
    if events is None:
        return {**SOFTWARE, **HARDWARE}
    if not isinstance(events, dict):
        raise TypeError(f"events must be a dict column -> (type, config), not "
                        f"{type(events).__name__}")
    for name, spec in events.items():
        if not isinstance(name, str) or not name.startswith(tuple(REASONS)):
            raise ValueError(f"events: each column must start with sw_ or hw_; got {name!r}")
        if (not isinstance(spec, tuple) or len(spec) != 2
                or not all(isinstance(v, int) and v >= 0 for v in spec)):
            raise ValueError(f"events[{name!r}] must be (type, config), two ints >= 0; "
                             f"got {spec!r}")
    return dict(events)


class count:
    """Count `events` (default: every software and hardware counter above) over a `with`
    block; result() then gives one value per column (NaN where refused) and each kind's
    reason column."""

    def __init__(self, events: dict | None = None):
        self._events = _events(events)
        self._fds: dict[str, int] = {}
        self._why: dict[str, str] = {}
        self.errors: dict[str, int] = {}  # column -> the errno perf_event_open gave it
        self._values: dict[str, float] | None = None

    def __enter__(self):
        for name, (kind, config) in self._events.items():
            try:
                self._fds[name] = _open(kind, config)
                continue
            except OSError as exc:
                err = self.errors[name] = exc.errno or errno.EIO
            self._why[name] = refusal(err)
            if err in (errno.EACCES, errno.EPERM) and name in USER_SPACE_OK:
                try:
                    self._fds[name] = _open(kind, config, user_only=True)
                    self._why[name] = user_space_only()
                except OSError as again:
                    # No such event at all (ENOENT in a VM) says more than the permission.
                    if again.errno not in (errno.EACCES, errno.EPERM, None):
                        self.errors[name] = again.errno
                        self._why[name] = refusal(again.errno)
        for fd in self._fds.values():
            fcntl.ioctl(fd, _IOC_ENABLE, 0)
        return self

    def __exit__(self, *exc):
        for fd in self._fds.values():
            fcntl.ioctl(fd, _IOC_DISABLE, 0)
        values = {}
        try:
            for name, fd in self._fds.items():
                # perf.c asks for value, time enabled and time running.
                value, enabled, running = struct.unpack("QQQ", os.read(fd, 24))
                if running == 0 and enabled > 0:
                    self._why[name] = "not available here: the PMU never scheduled it"
                    continue
                # Scaled as perf stat scales a counter the PMU multiplexed with others.
                values[name] = value if running in (0, enabled) else value * enabled / running
        finally:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
        self._values = values
        return False

    def result(self) -> dict:
        """column -> count (NaN where refused), and sw_counters / hw_counters: 'counted',
        or the reasons of the counters that were refused or counted user space only (one
        for the kind when all its counters share it)."""
        if self._values is None:
            raise RuntimeError("result() is for after the with-block that counted")
        out = {name: self._values.get(name, math.nan) for name in self._events}
        for prefix, column in REASONS.items():
            refused = {n: w for n, w in self._why.items() if n.startswith(prefix)}
            if not refused:
                out[column] = COUNTED
            elif len(set(refused.values())) == 1 and len(refused) == sum(
                    n.startswith(prefix) for n in self._events):
                out[column] = next(iter(refused.values()))
            else:
                out[column] = "; ".join(f"{n}: {w}" for n, w in refused.items())
        return out


def counted(run) -> dict:
    """run()'s samples, and the OS's counters of it: opened and enabled before, read
    after, so their syscalls stay out of the timed loops run() makes."""
    with count() as c:
        samples = run()
    return {"samples": samples, "counters": c.result()}
