"""What machine and build a measurement came from: pyperf's metadata, plus what it
lacks for switch kernels (the CPU as CPUID reports it: family, model, stepping,
microcode, vector ISA, XCR0 and the xsave area every switch of FP state moves; the
cycle-counter rate, compiler and flags, both layers of virtualisation, the environment
check, the lab's own commit), and a fingerprint that names the machine in merged results."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess

from labkit.core import _core, envcheck, procfs, worker
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).


# The columns every measured row carries, so that a row read alone still says where it came from.
ROW_METADATA = (
    "machine_id", "hostname", "cpu_model", "cpu_family", "cpu_model_id", "cpu_stepping",
    "microcode", "vector_isa", "xcr0", "xsave_bytes", "arch", "cpu_count", "kernel_release",
    "compiler", "cflags", "opt_level", "timer", "tsc_ghz", "virtualization", "hypervisor",
    "container", "governor", "turbo", "smt", "aslr", "isolated_cpus", "env_warnings",
    "labkit_commit",
)

# The vector-ISA flags of /proc/cpuinfo worth a row's column: what the FP state of a
# switch holds (x86-64: SSE up to AMX tiles; AArch64: NEON up to SME), in that order.
VECTOR_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",
    "amx_int8", "asimd", "sve", "sve2", "sme",
)
# XCR0's bits: the state components xsave saves and xrstor restores on every switch
# that moves the whole FP state (asm_xsave here, the OS on a context switch).
XCR0_COMPONENTS = {
    0: "x87", 1: "sse", 2: "avx", 3: "mpx_bndregs", 4: "mpx_bndcsr", 5: "avx512_opmask",
    6: "avx512_zmm_hi256", 7: "avx512_hi16_zmm", 9: "pkru", 17: "amx_tilecfg",
    18: "amx_tiledata",
}
# CPUID leaf 0x40000000's signature -> the hypervisor's name (as systemd-detect-virt names
# it); another signature is shown as it is.
HYPERVISOR_SIGNATURES = {
    "KVMKVMKVM": "kvm", "Microsoft Hv": "microsoft", "VMwareVMware": "vmware",
    "XenVMMXenVMM": "xen", "TCGTCGTCGTCG": "qemu", "bhyve bhyve": "bhyve",
    "ACRNACRNACRN": "acrn",
}


def _cpu_model() -> str:
    text = procfs.read_text("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "CPU part"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    return platform.processor() or "unknown"


def _cpuinfo_field(text: str, *keys: str) -> str | None:
    """The first processor's value of the first of `keys` /proc/cpuinfo has."""
    for key in keys:
        m = re.search(rf"^{key}\s*:\s*(.*)$", text, re.M)
        if m:
            return m.group(1).strip()
    return None


def _number(value: str | None) -> int:
    """A cpuinfo number (decimal, or 0x... on AArch64); -1 where there is none."""
    try:
        return int(value, 0)
    except (TypeError, ValueError):
        return -1


def cpu_identity(text: str | None = None) -> dict:
    """Vendor, family, model number, stepping and microcode of the first CPU, and the
    vector-ISA flags it has, from /proc/cpuinfo (`text`, or the file). On AArch64 the
    family is the architecture, the model the part number, the stepping the revision.
    A field the file lacks is -1 (numbers) or 'unknown'."""
    text = (procfs.read_text("/proc/cpuinfo") or "") if text is None else text
    flags = set((_cpuinfo_field(text, "flags", "Features") or "").split())
    return {
        "cpu_vendor": _cpuinfo_field(text, "vendor_id", "CPU implementer") or "unknown",
        "cpu_family": _number(_cpuinfo_field(text, "cpu family", "CPU architecture")),
        "cpu_model_id": _number(_cpuinfo_field(text, "model", "CPU part")),
        "cpu_stepping": _number(_cpuinfo_field(text, "stepping", "CPU revision")),
        "microcode": _cpuinfo_field(text, "microcode") or "unknown",
        "vector_isa": " ".join(f for f in VECTOR_FLAGS if f in flags) or "none",
    }


def xstate() -> dict:
    """XCR0 as hex and as the names of its components, and the xsave area's bytes for
    them and for all the CPU supports (CPUID leaf 0xD); 'none' and 0 without xsave."""
    state = _core.cpu_state()
    xcr0 = state["xcr0"]
    return {
        "xcr0": "none" if xcr0 is None else f"{xcr0:#x}",
        "xstate_components": "none" if xcr0 is None else " ".join(
            name for bit, name in XCR0_COMPONENTS.items() if xcr0 >> bit & 1) or "none",
        "xsave_bytes": state["xsave_bytes"] or 0,
        "xsave_max_bytes": state["xsave_max_bytes"] or 0,
    }


def _detect_virt(flag: str) -> str | None:
    try:
        out = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True,
                             timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None  # 'none' when it looked and found nothing


def hypervisor(signature: str | None = None) -> str:
    """The VM layer: its name ('kvm') from systemd-detect-virt --vm, /sys/hypervisor or the
    CPUID signature (`signature`, or the CPU's), 'unknown hypervisor' when only the
    cpuinfo flag says there is one, else 'none'."""
    found = _detect_virt("--vm")
    if found:
        return found
    found = procfs.read_text("/sys/hypervisor/type")
    if found:
        return found
    signature = _core.cpu_state()["hypervisor_cpuid"] if signature is None else signature
    if signature.strip():
        return HYPERVISOR_SIGNATURES.get(signature.strip(), signature.strip())
    text = procfs.read_text("/proc/cpuinfo") or ""
    if "hypervisor" in (_cpuinfo_field(text, "flags") or "").split():
        return "unknown hypervisor"
    return "none"


def container() -> str:
    """The container layer: its name ('docker', 'podman', 'lxc'...) from
    systemd-detect-virt --container, /.dockerenv, /run/.containerenv or PID 1's cgroups;
    else 'none'."""
    found = _detect_virt("--container")
    if found:
        return found
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    cgroup = procfs.read_text("/proc/1/cgroup") or ""
    for word, name in (("docker", "docker"), ("kubepods", "kubernetes"), ("lxc", "lxc"),
                       ("containerd", "containerd")):
        if word in cgroup:
            return name
    return "none"


def _virtualization(vm: str, ct: str) -> str:
    """Both layers in one phrase: timings in a VM include its exits and steal time, and a
    container's cgroups may throttle the CPU."""
    layers = []
    if ct != "none":
        layers.append(f"{ct} container")
    if vm != "none":
        layers.append("VM of an unknown hypervisor" if vm == "unknown hypervisor" else f"{vm} VM")
    return " in a ".join(layers) or "none detected"


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
    vm, ct = hypervisor(), container()
    info = {
        "cpu_model": _cpu_model(),
        **cpu_identity(),
        **xstate(),
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
        "virtualization": _virtualization(vm, ct),
        "hypervisor": vm,
        "hypervisor_cpuid": _core.cpu_state()["hypervisor_cpuid"] or "none",
        "container": ct,
        "governor": envcheck.governor(),
        "turbo": envcheck.turbo(),
        "smt": envcheck.smt(),
        "isolated_cpus": envcheck.isolated_cpus(),
        "nohz_full": envcheck.nohz_full(),
        "aslr": envcheck.aslr(),
        "labkit_commit": labkit_commit(),
    }
    key = "|".join(str(info[k]) for k in ("cpu_model", "arch", "cpu_count", "hostname",
                                          "kernel_release", "memory_bytes"))
    info["machine_id"] = hashlib.sha256(key.encode()).hexdigest()[:12]
    return info


def machine_info(refresh: bool = False) -> dict:
    """CPU model and identity (family, model, stepping, microcode, vector ISA, XCR0, xsave
    area), cycle-counter rate, cores, kernel, compiler and flags, governor/turbo/SMT/ASLR
    where readable, the VM and container layers, git commit and a machine fingerprint,
    plus the load now and the conditions of the environment check that warn."""
    if refresh:
        _static_info.cache_clear()
    info = dict(_static_info())
    info["load_avg_1min"] = os.getloadavg()[0]
    info["env_warnings"] = " ".join(envcheck.warnings()) or "none"
    return info


def row_metadata(build: str | None = None, *, cflags: str | None = None,
                 compiler: str | None = None) -> dict:
    """The metadata columns every measured row carries. The compiler flags are the
    extension's unless the code measured was built otherwise: `build` names one of the C
    core's optimisation-level builds, or `cflags` (and `compiler`) give them directly (a
    peer build's, a server's, a frames library's: labkit.core.systems says whose)."""
    info = machine_info()
    row = {k: info[k] for k in ROW_METADATA}
    if build is not None and cflags is None:
        from labkit.core import native

        cflags = native.cflags(build)
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
