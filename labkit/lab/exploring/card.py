"""The reference card: this machine's caches, TLB and page size as the OS reports them, and
the latencies a learner's predictions are anchored on, measured here in a few seconds.

    card = labkit.card()       # or `labkit card` in a terminal
    print(card)                # the text; card.records() is what --json prints
"""
from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import labkit
from labkit.core import validate
from labkit.core.plots import bytes_label, machine_caption
from labkit.core.stats import quartiles
from labkit.errors import ParameterError

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
CPUINFO = Path("/proc/cpuinfo")
NOT_REPORTED = "not reported"
# The page size Linux counts its "TLB size" in ("3072 4K pages").
TLB_PAGE = 4 << 10
TLB_UNKNOWN = ("not reported: /proc/cpuinfo gives no TLB size here (Intel's kernels print "
               "none), so the card cannot say how much memory the TLB reaches")

# What the card times, in the order it prints them: (label, how, entry or mode).
LATENCIES = (
    ("a direct call", "entry", "direct_call"),
    ("a getppid system call", "entry", "syscall_getppid"),
    ("asm_fpu's switch", "entry", "asm_fpu"),
    ("ucontext's switch", "entry", "ucontext"),
    ("an OS thread hand-off (futex, one CPU)", "handoff", "thread_futex"),
)


@dataclass
class Card:
    """The card's fields: `caches` (one dict per cache of CPU 0), `tlb` (the OS's words
    and the reach they give, or TLB_UNKNOWN), `tlb_entries` (the 4 KiB-page entries the
    OS reports, or None), `page_size` in bytes, `latencies` (one dict each: what, entry,
    ns, low, high, repeats; the interval is the quartiles over repeats) and `machine`."""
    caches: list = field(default_factory=list)
    tlb: str = TLB_UNKNOWN
    tlb_entries: int | None = None
    page_size: int = 0
    latencies: list = field(default_factory=list)
    machine: str = ""

    def records(self) -> dict:
        return {"caches": self.caches, "tlb": self.tlb, "tlb_entries": self.tlb_entries,
                "page_size": self.page_size, "latencies": self.latencies,
                "machine": self.machine}

    def __str__(self):

        lines = ["labkit reference card", "", "caches (CPU 0):"]
        for c in self.caches:
            cpus = c.get("shared_cpus") or ""
            shared = f", shared by CPUs {cpus}" if any(s in cpus for s in ",-") else ""
            ways = f", {c['ways']}-way" if c.get("ways") else ""
            lines.append(f"  L{c['level']} {c['type'].lower():12s} {bytes_label(c['size']):>8s}"
                         f", {c['line']}-byte lines{ways}{shared}")
        if not self.caches:
            lines.append(f"  {NOT_REPORTED}")
        lines += [f"TLB: {self.tlb}", f"page size: {bytes_label(self.page_size)}", "",
                  "latencies measured now (median, quartiles over repeats):"]
        for r in self.latencies:
            if r["ns"] is None:
                lines.append(f"  {r['what']:40s} not measured: {r['why']}")
            else:
                lines.append(f"  {r['what']:40s} {_time(r['ns']):>9s}  "
                             f"[{_time(r['low'])}, {_time(r['high'])}]")
        lines += ["", f"measured on: {self.machine}"]
        return "\n".join(lines)

    def _repr_html_(self):

        return f"<pre>{html.escape(str(self))}</pre>"


def _time(ns: float) -> str:
    """Three figures, in ns below a microsecond and in µs from there."""
    return f"{ns:.3g} ns" if ns < 1000 else f"{ns / 1000:.3g} µs"


def _size(text: str) -> int:
    """sysfs's cache size ("48K", "1024K", "32M") in bytes."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not m:
        return 0
    return int(m[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[m[2]]


def caches(root: Path = CACHE_DIR) -> list[dict]:
    """CPU 0's caches as sysfs describes them: level, type, size and line in bytes, ways,
    and the CPUs that share each one. Empty where sysfs has none (a container may hide it)."""
    out = []
    for d in sorted(root.glob("index[0-9]*")):
        def read(name, d=d):
            try:
                return (d / name).read_text().strip()
            except OSError:
                return ""
        level = read("level")
        if not level:
            continue
        ways = read("ways_of_associativity")
        out.append({"level": int(level), "type": read("type") or "Unknown",
                    "size": _size(read("size")),
                    "line": int(read("coherency_line_size") or 0),
                    "ways": int(ways) if ways.isdigit() else None,
                    "shared_cpus": read("shared_cpu_list")})
    return out


def tlb(cpuinfo: Path = CPUINFO) -> tuple[str, int | None]:
    """The TLB as /proc/cpuinfo says it for the first CPU ("TLB size: 3072 4K pages" on
    AMD: its second-level data and instruction TLBs' 4 KiB entries, from cpuid) with the
    memory those entries reach, and the number of entries; Intel's kernels do not report
    it, and then the card says it cannot (TLB_UNKNOWN, None)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return TLB_UNKNOWN, None
    m = re.search(r"^TLB size\s*:\s*(.+)$", text, re.M)
    if not m:
        return TLB_UNKNOWN, None
    said = m[1].strip()
    n = re.fullmatch(r"(\d+) 4K pages", said)
    if not n:
        return f"{said} (as /proc/cpuinfo says)", None
    entries = int(n[1])
    return (f"{said} (as /proc/cpuinfo says): they reach {bytes_label(entries * TLB_PAGE)} "
            f"of 4 KiB pages", entries)


def _latency(what, how, name, *, switches, repeats, cpu) -> dict:

    row = {"what": what, "entry": name, "ns": None, "low": None, "high": None,
           "repeats": repeats, "why": ""}
    try:
        if how == "handoff":
            # A hand-off costs about a microsecond: fewer of them take the same time.
            df = labkit.measure_handoff(name, cpus=(cpu, cpu), switches=max(2, switches // 50),
                                        repeats=repeats)
        else:
            df = labkit.measure(name, switches=switches, repeats=repeats, cpu=cpu)
    except (labkit.EntryUnavailableError, OSError, RuntimeError) as exc:
        row["why"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return row
    med, q1, q3 = quartiles(df.ns_per_switch)
    row.update(ns=float(med), low=float(q1), high=float(q3))
    return row


def card(*, switches: int = 200_000, repeats: int = 5, cpu: int | None = 0) -> Card:
    """The reference card of this machine: caches, TLB, page size from the OS, and the
    latencies of LATENCIES measured now (`switches` per repeat, `repeats` repeats, pinned
    to `cpu`), each with its quartiles, and the machine they were measured on."""
    switches = validate.switches(switches)
    repeats = validate.repeats(repeats)
    if repeats < 3:
        raise ParameterError("repeats", f"must be at least 3, for quartiles; got {repeats}")
    cpu = validate.cpu(cpu)
    tlb_said, entries = tlb()
    return Card(caches=caches(), tlb=tlb_said, tlb_entries=entries,
                page_size=os.sysconf("SC_PAGE_SIZE"),
                latencies=[_latency(*x, switches=switches, repeats=repeats, cpu=cpu)
                           for x in LATENCIES],
                machine=machine_caption())
