"""The environment check that pyperf and Google Benchmark print before their results:
the conditions of this machine that move timings (ASLR, SMT, the frequency governor and
turbo, isolated CPUs, the load), one row each with its value, what it does to the
figures, whether it is as a benchmark wants it (ok) or not (warn), and for a warning what
to do about it (the setting or command, and whether it needs root).

    from labkit.core import envcheck
    rows = envcheck.check()       # [{"key", "condition", "value", "status", "effect",
                                  #   "remedy"}, ...]
    print(envcheck.text(rows))    # the short block `labkit reproduce` prints on stderr
    print(envcheck.explain(rows)) # each warning with its effect and remedy (`labkit check`)
    envcheck.save(rows)           # data/environment.json, which the report shows
"""
from __future__ import annotations

import functools
import json
import os
import time

from labkit.core import procfs, results
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

CPU = "/sys/devices/system/cpu"
FILE = "environment.json"  # in data/: the check of the run that wrote the results
# Runnable tasks per CPU (1-minute load average) from which other work competes with the
# measured worker often enough to show in the spread.
LOAD_PER_CPU = 0.5
OK, WARN = "ok", "warn"

# One order for every table of the check: the rows, the block on stderr, the report.
KEYS = ("aslr", "smt", "governor", "turbo", "isolated_cpus", "nohz_full", "load_average",
        "sw_counters", "hw_counters")


def aslr() -> str:
    """kernel.randomize_va_space: 0 off, 1 stack and mmap, 2 also the heap; or 'unknown'."""
    return procfs.sysctl("kernel.randomize_va_space", "unknown")


def smt() -> str:
    """1 when sibling hyperthreads are online, 0 when not; or 'unknown'."""
    return procfs.read_text(f"{CPU}/smt/active") or "unknown"


def governor() -> str:
    """The cpufreq governor of every CPU that has one ('performance', or 'cpu0-1: ...'
    when they differ), or 'not exposed' where the kernel has no cpufreq (most VMs)."""
    found = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        g = procfs.read_text(f"{CPU}/cpu{cpu}/cpufreq/scaling_governor")
        if g is not None:
            found[cpu] = g
    if not found:
        return "not exposed"
    if len(set(found.values())) == 1:
        return next(iter(found.values()))
    return ", ".join(f"cpu{c}: {g}" for c, g in found.items())


def turbo() -> str:
    """'on' or 'off' (intel_pstate's no_turbo, else cpufreq's boost), or 'not exposed'."""
    no_turbo = procfs.read_text(f"{CPU}/intel_pstate/no_turbo")
    if no_turbo is not None:
        return "off" if no_turbo == "1" else "on"
    boost = procfs.read_text(f"{CPU}/cpufreq/boost")
    if boost is not None:
        return "on" if boost == "1" else "off"
    return "not exposed"


def isolated_cpus() -> str:
    """The CPUs isolcpus= keeps the scheduler off (a CPU list such as '1-3'), or 'none'."""
    return procfs.read_text(f"{CPU}/isolated") or "none"


def nohz_full() -> str:
    """The CPUs whose scheduler tick stops while one task runs (nohz_full=), or 'none'."""
    value = procfs.read_text(f"{CPU}/nohz_full") or ""
    return value if value and value != "(null)" else "none"


@functools.lru_cache(maxsize=None)
def _counters(kind: str) -> str:
    """What perf_event_open gives this process for the kind's counters ("sw" or "hw"):
    'counted', or why not, with what the errno usually means."""
    from labkit.core import counters

    with counters.count(counters.SOFTWARE if kind == "sw" else counters.HARDWARE) as c:
        pass
    hints = sorted({counters.hint(e) for e in c.errors.values()} - {""})
    return c.result()[f"{kind}_counters"] + "".join(f" ({h})" for h in hints)


def _row(key, condition, value, ok: bool, effect: str, remedy: str) -> dict:
    return {"key": key, "condition": condition, "value": str(value),
            "status": OK if ok else WARN, "effect": effect, "remedy": remedy if not ok else ""}


# What only the host can change in a VM: the guest has nothing to set.
HOST_ONLY = "nothing to set in this machine: the host (or the hypervisor's admin) controls it"


def _counter_remedy(value: str, kind: str) -> str:
    """What to do about counters perf_event_open refuses, from why it refused."""
    if "perf_event_paranoid" in value and "no such event" not in value:
        return ("allow counting: `sudo sysctl kernel.perf_event_paranoid=1` (needs root; "
                "until reboot), or give the process CAP_PERFMON; in a container, its seccomp "
                "profile must allow perf_event_open (docker: --cap-add PERFMON)")
    if kind == "hw":
        return ("a VM's hypervisor must expose a virtual PMU (KVM: -cpu host,pmu=on); "
                f"{HOST_ONLY}")
    return "the kernel must have perf events (CONFIG_PERF_EVENTS): a kernel that has them"


def check() -> list[dict]:
    """One row per condition, in KEYS order: key, condition, value, status (ok / warn),
    effect (what the condition does to the figures, one sentence) and remedy (for a
    warning, what to do about it and whether that needs root; '' when ok)."""
    rows = []
    a = aslr()
    rows.append(_row("aslr", "ASLR (kernel.randomize_va_space)", a, a != "unknown",
                     "Stacks and heaps move on every run, so their cache sets and TLB "
                     "entries differ from run to run: a spread between runs that repeated "
                     "runs average over" if a != "0" else
                     "Every run has the same address layout: runs agree with each other "
                     "but all share one layout's luck with cache sets",
                     "make /proc/sys/kernel/randomize_va_space readable (a container may "
                     "hide it; no root needed to read it)"))
    s = smt()
    control = procfs.read_text(f"{CPU}/smt/control")
    rows.append(_row("smt", "SMT (hyperthreads)", s + (f" (control: {control})" if control else ""),
                     s == "0",
                     "A sibling hyperthread shares the core's caches and ports: when it "
                     "runs, the switch loops slow down" if s != "0" else
                     "No sibling shares the measured core (in a VM, the host's siblings "
                     "stay invisible and may still run other guests)",
                     "turn SMT off: `echo off | sudo tee /sys/devices/system/cpu/smt/control` "
                     "(needs root; until reboot) or boot with `nosmt`" if control in ("on", "off")
                     else f"SMT cannot be switched from here (control: {control}): {HOST_ONLY}"))
    g = governor()
    rows.append(_row("governor", "CPU frequency governor", g, g == "performance",
                     "The clock follows the load: a short run may finish before it ramps "
                     "up, and ns per switch depend on what ran before" if g != "not exposed"
                     else "The host sets the clock and the guest cannot see it: ns figures "
                          "drift with the host's load and only ratios measured side by side "
                          "travel",
                     "`sudo cpupower frequency-set -g performance` (needs root; package "
                     "linux-cpupower; until reboot)" if g != "not exposed" else
                     f"{HOST_ONLY}; compare ratios measured side by side, not ns"))
    t = turbo()
    rows.append(_row("turbo", "Turbo / boost", t, t == "off",
                     "The clock rises when few cores are busy and falls as they heat, so ns "
                     "per switch move with the rest of the machine" if t != "off" else
                     "The clock stays at nominal: ns figures are steadier, and lower than a "
                     "user with turbo would see",
                     _turbo_remedy()))
    iso = isolated_cpus()
    rows.append(_row("isolated_cpus", "Isolated CPUs (isolcpus)", iso, iso != "none",
                     "The measured CPU also runs other tasks: their preemptions add "
                     "outliers to the spread, although the worker is pinned" if iso == "none"
                     else "The scheduler keeps other tasks off these CPUs: pinned "
                          "measurements there see fewer preemptions",
                     "optional: boot with `isolcpus=1 nohz_full=1` on the kernel command line "
                     "(needs root and a reboot: GRUB_CMDLINE_LINUX in /etc/default/grub, then "
                     "update-grub), then pin the measurements there (`-p cpu 1`)"))
    nohz = nohz_full()
    rows.append(_row("nohz_full", "Tickless CPUs (nohz_full)", nohz, True,
                     "The scheduler tick interrupts a running loop about every "
                     "millisecond: a few hundred ns of noise per tick, averaged into the "
                     "per-switch figures" if nohz == "none" else
                     "A lone task on these CPUs runs without the scheduler tick", ""))
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    rows.append(_row("load_average", "Load average (1 min)", f"{load:.2f} on {cpus} CPUs",
                     load < LOAD_PER_CPU * cpus,
                     "Other work is running: the worker is preempted more often and shares "
                     "caches, so the spread widens and medians rise"
                     if load >= LOAD_PER_CPU * cpus else
                     "Little else is running: the worker has its CPU mostly to itself",
                     "stop other work before measuring (`top` shows what runs; no root "
                     "needed), or measure later"))
    sw = _counters("sw")
    rows.append(_row("sw_counters", "Software counters (perf_event_open)", sw,
                     sw == "counted",
                     "Context switches, migrations and page faults are counted per "
                     "measurement, beside the lab's own switch counts" if sw == "counted" else
                     "Some rows lack the kernel's own counts (the row says why); the lab's own switch "
                     "counts and timings remain", _counter_remedy(sw, "sw")))
    hw = _counters("hw")
    rows.append(_row("hw_counters", "Hardware counters (perf_event_open)", hw,
                     hw == "counted",
                     "Cycles, instructions and misses are counted per measurement"
                     if hw == "counted" else
                     "Rows have no cycle, instruction or miss counts (the row says why), only the "
                     "software counters and the timings", _counter_remedy(hw, "hw")))
    return rows


def _turbo_remedy() -> str:
    if procfs.read_text(f"{CPU}/intel_pstate/no_turbo") is not None:
        return ("`echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo` (needs "
                "root; until reboot)")
    if procfs.read_text(f"{CPU}/cpufreq/boost") is not None:
        return "`echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost` (needs root; until reboot)"
    return f"{HOST_ONLY}; compare ratios measured side by side, not ns"


def warnings(rows: list[dict] | None = None) -> list[str]:
    """The keys of the conditions that warn, in KEYS order."""
    return [r["key"] for r in (check() if rows is None else rows) if r["status"] == WARN]


def text(rows: list[dict] | None = None) -> str:
    """The check as the short block printed before a run: one line per condition."""
    rows = check() if rows is None else rows
    width = max(len(r["condition"]) for r in rows)
    lines = [f"environment check ({len(warnings(rows))} of {len(rows)} conditions warn):"]
    for r in rows:
        value = r["value"] if len(r["value"]) <= 60 else r["value"][:57] + "..."
        lines.append(f"  {r['status']:<4} {r['condition']:<{width}}  {value}")
    return "\n".join(lines)


def explain(rows: list[dict] | None = None) -> str:
    """The check as `labkit check` prints it: the block, then every warning with what it
    does to the figures and what to do about it."""
    rows = check() if rows is None else rows
    lines = [text(rows)]
    for r in rows:
        if r["status"] == WARN:
            lines += ["", f"{r['condition']}: {r['value']}", f"  effect: {r['effect']}.",
                      f"  to do:  {r['remedy']}."]
    return "\n".join(lines)


def save(rows: list[dict] | None = None) -> "os.PathLike":
    """Write the check to data/environment.json (atomically), with when it was taken;
    returns the path."""
    path = results.data_dir() / FILE
    with results.atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record(rows), indent=1))
    return path


def record(rows: list[dict] | None = None) -> dict:
    """The check as data/environment.json holds it: {"taken": UTC time, "rows": rows}
    (also what `labkit check --json` prints)."""
    return {"taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "rows": check() if rows is None else rows}


def recorded() -> dict | None:
    """The check the last run saved ({"taken", "rows"}), or None if there is none."""
    try:
        data = json.loads((results.data_dir() / FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("rows"), list) else None


def latest() -> dict:
    """The check of the run whose results these are (data/environment.json), or, where no
    run saved one, the check taken now."""
    return recorded() or {"taken": "now (no run recorded one)", "rows": check()}


def announce(stream) -> list[dict]:
    """Check, print the block on `stream` and save it: what a run does once, first."""
    rows = check()
    print(text(rows), file=stream, flush=True)
    save(rows)
    return rows
