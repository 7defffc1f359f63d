"""Every measured row says where it came from; the kernel table and machine info are complete."""
import os
import re

import pandas as pd

import labkit
from labkit.core import envcheck, machine
from labkit.core.machine import ROW_METADATA


def test_rows_carry_machine_and_build_metadata():
    df = labkit.measure("asm", switches=1000, repeats=2)
    for col in ROW_METADATA:
        assert col in df.columns, col
        assert df[col].notna().all(), col
    row = df.iloc[0]
    assert row.tsc_ghz > 0
    assert re.fullmatch(r"[0-9a-f]{12}", row.machine_id)
    assert row.cpu_model and row.cpu_model != "unknown"
    assert re.search(r"\d+\.\d+", row.compiler)  # a version number
    assert row.opt_level.startswith("-O")
    assert row.arch in ("x86_64-sysv", "aarch64-aapcs64")
    assert "CLOCK_MONOTONIC" in row.timer


def test_per_switch_figures_are_consistent():
    df = labkit.measure("ucontext", switches=2000, repeats=3)
    n = df.switches
    # net = raw - baseline floored at 0, by construction; and both clocks saw the same run.
    net = (df.ns_per_switch_raw - df.baseline_ns_per_switch).clip(lower=0)
    assert ((net - df.ns_per_switch).abs() < 1e-9).all()
    assert (df.below_resolution == (df.ns_per_switch_raw <= df.baseline_ns_per_switch)).all()
    # Not speed checks: the cycle counter and the clock both advanced during the run.
    assert df.ticks_per_ns.gt(0).all()
    assert (df.ns_per_switch_raw * n).gt(0).all()


def test_kernel_table_lists_every_kernel_with_a_reason_when_missing():
    from labkit.core.entries import ALL_NAMES

    k = labkit.catalogue()
    assert list(k.entry) == list(ALL_NAMES)
    assert set(k.kind) == {"stackful", "stackless", "baseline"}
    assert (k[~k.available].why_not.str.len() > 0).all()
    assert (k.saves.str.len() > 0).all()


def test_machine_info_fields():
    info = labkit.machine_info()
    for key in ("cpu_model", "tsc_ghz", "cpu_count", "kernel_release", "compiler", "cflags",
                "governor", "turbo", "smt", "virtualization", "labkit_commit", "machine_id",
                "load_avg_1min"):
        assert key in info, key
    assert info["cpu_count"] >= 1


def test_machine_info_says_what_cpuid_says():
    info = labkit.machine_info()
    for key in ("cpu_family", "cpu_model_id", "cpu_stepping", "xsave_bytes", "xsave_max_bytes"):
        assert isinstance(info[key], int), key
    for key in ("cpu_vendor", "microcode", "vector_isa", "xcr0", "xstate_components",
                "hypervisor", "hypervisor_cpuid", "container", "virtualization", "aslr",
                "isolated_cpus", "nohz_full", "env_warnings"):
        assert isinstance(info[key], str) and info[key], key
    assert set(info["vector_isa"].split()) <= set(machine.VECTOR_FLAGS) | {"none"}
    if info["arch"] == "x86_64-sysv":
        assert info["cpu_family"] > 0 and info["cpu_model_id"] >= 0
        xcr0 = int(info["xcr0"], 16)
        assert xcr0 & 0b11 == 0b11  # x87 and SSE: always on where xsave is
        assert info["xstate_components"].split()[:2] == ["x87", "sse"]
        # The legacy region and the xsave header, plus 256 bytes of ymm highs with AVX.
        assert info["xsave_bytes"] >= 576 + (256 if xcr0 & 4 else 0)
        assert info["xsave_max_bytes"] >= info["xsave_bytes"]
    assert set(info["env_warnings"].split()) <= set(envcheck.KEYS) | {"none"}


INTEL_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
microcode\t: 0x2b000461
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw amx_tile amx_bf16 hypervisor
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm sve sve2
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1
"""


def test_cpu_identity_reads_x86_64_and_aarch64_cpuinfo():
    intel = machine.cpu_identity(INTEL_CPUINFO)
    assert (intel["cpu_vendor"], intel["cpu_family"], intel["cpu_model_id"],
            intel["cpu_stepping"], intel["microcode"]) == ("GenuineIntel", 6, 143, 8, "0x2b000461")
    assert intel["vector_isa"] == "sse4_2 avx avx2 fma avx512f avx512bw amx_tile amx_bf16"
    arm = machine.cpu_identity(ARM_CPUINFO)
    assert (arm["cpu_vendor"], arm["cpu_family"], arm["cpu_model_id"], arm["cpu_stepping"],
            arm["microcode"]) == ("0x41", 8, 0xd40, 1, "unknown")
    assert arm["vector_isa"] == "asimd sve sve2"
    empty = machine.cpu_identity("")
    assert (empty["cpu_family"], empty["vector_isa"], empty["microcode"]) == (-1, "none", "unknown")


def test_both_layers_of_virtualisation_are_named(monkeypatch):
    assert machine._virtualization("kvm", "docker") == "docker container in a kvm VM"
    assert machine._virtualization("none", "none") == "none detected"
    assert machine._virtualization("kvm", "none") == "kvm VM"
    # Without systemd-detect-virt or /sys/hypervisor: the CPUID signature names it.
    monkeypatch.setattr(machine, "_detect_virt", lambda flag: None)
    monkeypatch.setattr(machine.procfs, "read_text", lambda path, default=None: default)
    assert machine.hypervisor("KVMKVMKVM") == "kvm"
    assert machine.hypervisor("Microsoft Hv") == "microsoft"
    assert machine.hypervisor("") == "none"


def test_the_environment_check_has_every_condition_with_a_value_and_a_status(
        tmp_path, monkeypatch):
    rows = envcheck.check()
    assert [r["key"] for r in rows] == list(envcheck.KEYS)
    for r in rows:
        assert r["condition"] and r["value"] and r["effect"], r
        assert r["status"] in (envcheck.OK, envcheck.WARN), r
    block = envcheck.text(rows)
    assert block.count("\n") == len(rows)
    assert all(r["condition"] in block for r in rows)
    assert envcheck.warnings(rows) == [r["key"] for r in rows if r["status"] == "warn"]
    # Recorded where the run's results go, and read back by the report and the bundle.
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    assert envcheck.recorded() is None
    assert envcheck.latest()["rows"][0]["key"] == "aslr"
    assert envcheck.save(rows) == tmp_path / "data" / envcheck.FILE
    assert envcheck.recorded()["rows"] == rows


def test_the_environment_check_reads_what_the_kernel_says(monkeypatch):
    files = {"/proc/sys/kernel/randomize_va_space": "0",
             "/sys/devices/system/cpu/smt/active": "1",
             "/sys/devices/system/cpu/intel_pstate/no_turbo": "1",
             "/sys/devices/system/cpu/isolated": "1",
             "/sys/devices/system/cpu/nohz_full": "(null)"}
    files.update({f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor": "performance"
                  for c in os.sched_getaffinity(0)})
    monkeypatch.setattr(envcheck.procfs, "read_text",
                        lambda path, default=None: files.get(str(path), default))
    by = {r["key"]: r for r in envcheck.check()}
    assert (by["aslr"]["value"], by["aslr"]["status"]) == ("0", "ok")
    assert (by["smt"]["value"], by["smt"]["status"]) == ("1", "warn")
    assert (by["governor"]["value"], by["governor"]["status"]) == ("performance", "ok")
    assert (by["turbo"]["value"], by["turbo"]["status"]) == ("off", "ok")
    assert (by["isolated_cpus"]["value"], by["isolated_cpus"]["status"]) == ("1", "ok")
    assert by["nohz_full"]["value"] == "none"
    files.clear()
    by = {r["key"]: r for r in envcheck.check()}
    assert by["governor"]["value"] == by["turbo"]["value"] == "not exposed"
    assert by["governor"]["status"] == by["turbo"]["status"] == "warn"


def test_summarize_flags_noise_by_pyperf_rule():
    # Synthetic values: the rule is std >= 10% of the mean.
    quiet = pd.DataFrame({"entry": "a", "ns_per_switch": [10.0, 10.1, 9.9, 10.0]})
    loud = pd.DataFrame({"entry": "b", "ns_per_switch": [10.0, 20.0, 5.0, 12.0]})
    s = labkit.summarize(pd.concat([quiet, loud]))
    assert list(s.entry) == ["a", "b"]
    assert list(s.noisy) == [False, True]
    assert s.loc[0, "median"] == 10.0
    assert len(labkit.noise_warnings(s)) == 1


def test_a_missing_peer_is_a_row_that_says_why_not_a_crash(tmp_path, monkeypatch):
    from labkit.core import native

    monkeypatch.setattr(native, "BIN_DIR", tmp_path)  # as if Boost had not been there
    k = labkit.catalogue().set_index("entry")
    assert not k.loc["boost_fiber", "available"]
    assert "libboost-context-dev" in k.loc["boost_fiber", "why_not"]
    assert k.loc["asm", "available"]
    import pytest

    with pytest.raises(labkit.EntryUnavailableError, match="libboost"):
        labkit.measure("boost_fiber", switches=100)


def test_peer_rows_say_which_build_measured_them():
    import pytest

    k = labkit.catalogue().set_index("entry")
    if not k.loc["boost_fiber", "available"]:
        pytest.skip(k.loc["boost_fiber", "why_not"])
    df = labkit.measure("boost_fiber", switches=1000, repeats=2)
    assert df.build.iloc[0] == "O2"
    assert "-std=c++20" in df.cflags.iloc[0] and df.opt_level.iloc[0] == "-O2"


def test_ucontext_counts_the_context_it_keeps_on_its_stack():
    k = labkit.catalogue().set_index("entry")
    assert k.loc["ucontext", "frame_bytes"] > 900  # a glibc ucontext_t, at the stack's top
