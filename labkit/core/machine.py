"""What machine and build a measurement came from: pyperf's metadata, plus what it
lacks for switch kernels (cycle-counter rate, compiler and flags, virtualisation,
the lab's own commit), and a fingerprint that names the machine in merged results."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess

from labkit.core import _core, procfs, worker


# The columns every measured row carries, so that a row read alone still says where it came from.
ROW_METADATA = (
    "machine_id", "hostname", "cpu_model", "arch", "cpu_count", "kernel_release",
    "compiler", "cflags", "opt_level", "timer", "tsc_ghz", "virtualization",
    "governor", "turbo", "smt", "labkit_commit",
)


def _cpu_model() -> str:
    text = procfs.read_text("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "CPU part"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    return platform.processor() or "unknown"


def _virtualization() -> str:
    """The hypervisor if there is one: timings in a VM include its exits and steal time."""
    try:
        out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, timeout=5)
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    flags = procfs.read_text("/proc/cpuinfo") or ""
    if re.search(r"^flags\s*:.*\bhypervisor\b", flags, re.M):
        return "yes (hypervisor flag)"
    return "none detected"


def _turbo() -> str:
    no_turbo = procfs.read_text("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return "off" if no_turbo == "1" else "on"
    boost = procfs.read_text("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        return "on" if boost == "1" else "off"
    return "unknown"


def labkit_commit() -> str:
    """The lab's git commit, with '-dirty' if its code (not its results) has uncommitted
    changes. An installed labkit (no checkout) reports the commit it was built from."""
    from labkit.core.native import BIN_DIR
    from labkit.core.native_build import source_commit
    from labkit.core.results import checkout

    repo = checkout()
    if repo is None:
        try:
            return json.loads((BIN_DIR / "source.json").read_text())["labkit_commit"]
        except (OSError, ValueError, KeyError):
            return "unknown"
    return source_commit(repo)


def _opt_level(cflags: str) -> str:
    levels = re.findall(r"(?<!\S)-O(\S*)", cflags)
    return f"-O{levels[-1]}" if levels else "unknown"


@functools.lru_cache(maxsize=1)
def _static_info() -> dict:
    import pyperf

    meta = pyperf.Run([1.0], collect_metadata=True).get_metadata()
    build = _core.build_info()
    ticks = worker.call("labkit.core.machine", "worker_ticks_per_ns", ms=200,
                        describe="TSC calibration", timeout=60)
    info = {
        "cpu_model": _cpu_model(),
        "arch": build["arch"],
        "cpu_count": os.cpu_count(),
        "cpu_freq": meta.get("cpu_freq", "unknown"),
        "cpu_config": meta.get("cpu_config", "unknown"),
        "hostname": platform.node(),
        "platform": meta.get("platform", platform.platform()),
        "kernel_release": platform.release(),
        "python": platform.python_version(),
        "compiler": build["compiler"],
        "cflags": build["cflags"],
        "opt_level": _opt_level(build["cflags"]),
        "timer": build["timer"] + " / clock_gettime(CLOCK_MONOTONIC)",
        "tsc_ghz": round(ticks, 4),
        "page_size": build["page_size"],
        "memory_bytes": os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
        "virtualization": _virtualization(),
        "governor": (procfs.read_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                     or "unknown"),
        "turbo": _turbo(),
        "smt": procfs.read_text("/sys/devices/system/cpu/smt/active") or "unknown",
        "isolated_cpus": procfs.read_text("/sys/devices/system/cpu/isolated") or "",
        "aslr": meta.get("aslr", "unknown"),
        "labkit_commit": labkit_commit(),
    }
    key = "|".join(str(info[k]) for k in ("cpu_model", "arch", "cpu_count", "hostname",
                                          "kernel_release", "memory_bytes"))
    info["machine_id"] = hashlib.sha256(key.encode()).hexdigest()[:12]
    return info


def machine_info(refresh: bool = False) -> dict:
    """CPU model, cycle-counter rate, cores, kernel, compiler and flags, governor/turbo/SMT
    where readable, virtualisation, git commit and a machine fingerprint, plus the load now."""
    if refresh:
        _static_info.cache_clear()
    info = dict(_static_info())
    info["load_avg_1min"] = os.getloadavg()[0]
    return info


def row_metadata(build: str | None = None, peer: bool = False, *, cflags: str | None = None,
                 compiler: str | None = None) -> dict:
    """The metadata columns every measured row carries. The compiler flags are the
    extension's unless the code measured was built otherwise: `build` names one of the
    optimisation-level builds (of the C core, or of the C++ peers if peer), or `cflags`
    (and `compiler`) give them directly (a server's, a frames library's)."""
    info = machine_info()
    row = {k: info[k] for k in ROW_METADATA}
    if build is not None and cflags is None:
        from labkit.core import native

        cflags = native.peers_cflags(build) if peer else native.cflags(build)
    if cflags is not None:
        row["cflags"] = cflags
        row["opt_level"] = _opt_level(cflags) + (
            " -march=native" if "-march=native" in cflags else "")
    if compiler is not None:
        row["compiler"] = compiler
    return row


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_ticks_per_ns(ms: int) -> float:
    """TSC ticks per nanosecond, calibrated against CLOCK_MONOTONIC over `ms` milliseconds."""
    return _core.ticks_per_ns(ms)
